// An MCP client on the official TypeScript SDK, without elicitation, that waits in the call:
// calls the `codemode` tool once per argument (JSON tool arguments), printing each progress
// notification as a line `PROGRESS <message>` as it arrives, then one JSON document.
// usage: node mcp_wait.mjs FIXTURES_DIR URL -- ARGS_JSON...
import { pathToFileURL } from "node:url";
import path from "node:path";

const [fixtures, url, sep, ...calls] = process.argv.slice(2);
if (sep !== "--") throw new Error("usage: mcp_wait.mjs FIXTURES_DIR URL -- ARGS_JSON...");
const sdk = (p) =>
  import(pathToFileURL(path.join(fixtures, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);

const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const client = new Client({ name: "codemode-wait-test", version: "1.0.0" }, {});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const { tools } = await client.listTools();
const results = [];
const progress = [];
for (const args of calls) {
  const onprogress = (p) => {
    progress.push(p);
    process.stdout.write(`PROGRESS ${p.message ?? ""}\n`);
  };
  const options = { onprogress, timeout: 120000, resetTimeoutOnProgress: true };
  results.push(await client.callTool({ name: "codemode", arguments: JSON.parse(args) }, undefined, options));
}
await client.close();
process.stdout.write(JSON.stringify({ tools, results, progress }) + "\n");
