// An MCP client on the official TypeScript SDK that calls the `codemode` tool with CODE and
// cancels the request (`notifications/cancelled`) after AFTER_MS, then prints one JSON line
// `{ "aborted": true|false, "error": "..." }`.
// usage: node mcp_cancel.mjs FIXTURES_DIR URL AFTER_MS CODE
import { pathToFileURL } from "node:url";
import path from "node:path";

const [fixtures, url, afterMs, code] = process.argv.slice(2);
const sdk = (p) =>
  import(pathToFileURL(path.join(fixtures, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);

const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const client = new Client({ name: "codemode-cancel-test", version: "1.0.0" }, {});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const controller = new AbortController();
setTimeout(() => controller.abort("the user pressed stop"), Number(afterMs));
let out;
try {
  const result = await client.callTool({ name: "codemode", arguments: { code } }, undefined, {
    signal: controller.signal,
    timeout: 120000,
  });
  out = { aborted: false, result };
} catch (e) {
  out = { aborted: controller.signal.aborted, error: String(e) };
}
// Give the cancel notification time to leave before the connection closes.
await new Promise((r) => setTimeout(r, 200));
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
