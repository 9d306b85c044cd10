// An MCP client on the official TypeScript SDK: lists the tools of a codemode server and
// calls the `codemode` tool (or the tool named by an "@TOOL " prefix) once per code argument,
// printing one JSON document.
// usage: node mcp_client.mjs FIXTURES_DIR stdio BIN [ARGS...] -- CODE...
//        node mcp_client.mjs FIXTURES_DIR http URL -- CODE...
import { pathToFileURL } from "node:url";
import path from "node:path";

const [fixtures, mode, ...rest] = process.argv.slice(2);
const sep = rest.lastIndexOf("--");
const target = rest.slice(0, sep);
const codes = rest.slice(sep + 1);
const sdk = (p) =>
  import(pathToFileURL(path.join(fixtures, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);

const { Client } = await sdk("client/index.js");
let transport;
if (mode === "stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  // PASS_ENV=1: the server sees this process's whole environment (e.g. a token variable).
  const env = process.env.PASS_ENV ? { ...process.env } : undefined;
  transport = new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: "inherit", env });
} else {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(target[0]));
}
// With ELICIT=accept|decline the client supports elicitation and answers every request so.
const elicit = process.env.ELICIT;
const client = new Client(
  { name: "codemode-test", version: "1.0.0" },
  elicit ? { capabilities: { elicitation: {} } } : {},
);
const asked = [];
if (elicit) {
  const { ElicitRequestSchema } = await sdk("types.js");
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return elicit === "accept" ? { action: "accept", content: {} } : { action: elicit };
  });
}
await client.connect(transport);
const { tools } = await client.listTools();
const calls = [];
for (const arg of codes) {
  // "@TOOL CODE" calls another tool than `codemode` (e.g. `search`, `execute`).
  const m = arg.match(/^@(\w+) ([\s\S]*)$/);
  const [name, code] = m ? [m[1], m[2]] : ["codemode", arg];
  calls.push(await client.callTool({ name, arguments: { code } }));
}
await client.close();
console.log(JSON.stringify({ tools, calls, asked }));
