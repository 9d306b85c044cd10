// An MCP client on the official TypeScript SDK that runs code whose approvals come in
// batches: after each paused answer it approves through the control API and picks the run
// up again over MCP, until the run ends; then it lists the demo's tasks. It prints one JSON
// document: the size of each answer as the SDK client hands it over (whole, its text, its
// structured content), its status and pending seqs, and the task titles at the end.
// usage: node mcp_batches.mjs FIXTURES_DIR MCP_URL API_BASE -- CODE
import { pathToFileURL } from "node:url";
import path from "node:path";

const [fixtures, url, api, sep, code] = process.argv.slice(2);
if (sep !== "--") throw new Error("usage: mcp_batches.mjs FIXTURES_DIR MCP_URL API_BASE -- CODE");
const sdk = (p) =>
  import(pathToFileURL(path.join(fixtures, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);

const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const client = new Client({ name: "codemode-batches-test", version: "1.0.0" }, {});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const options = { timeout: 120000 };
const call = (args) => client.callTool({ name: "codemode", arguments: args }, undefined, options);

const answers = [];
let r = await call({ code });
for (;;) {
  const s = r.structuredContent ?? {};
  answers.push({
    chars: JSON.stringify(r).length,
    text_chars: (r.content ?? []).map((c) => c.text ?? "").join("").length,
    structured_chars: JSON.stringify(r.structuredContent ?? null).length,
    keys: Object.keys(r).sort(),
    status: s.status,
    pending: (s.pending ?? []).map((p) => p.seq),
    result: s.result,
    text: answers.length === 0 ? r.content?.[0]?.text : undefined,
  });
  if (s.status !== "paused" || answers.length > 50) break;
  const res = await fetch(`${api}/api/executions/${s.executionId}/approve`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  if (!res.ok) throw new Error(`approve: ${res.status} ${await res.text()}`);
  await res.json();
  r = await call({ executionId: s.executionId });
}
const listed = await call({ code: "return (await tasks.list_tasks({})).tasks.map((t) => t.title)" });
await client.close();
process.stdout.write(JSON.stringify({ answers, titles: listed.structuredContent?.result }) + "\n");
