// An independent MCP client (the official TypeScript SDK) for `sessiontree mcp`.
//
//   node client.mjs SERVER_BINARY [SERVER_ARG...] < calls.json > results.jsonl
//
// Starts the server over stdio, lists its tools, then makes each call of calls.json
// (a JSON array of {name, arguments, follow?, repeat?}) and prints one JSON line per
// call: {name, arguments, pages: [{result, ms}]}. `follow: true` calls again with
// `cursor` set to the last result's structuredContent.nextCursor until there is none
// (at most 500 pages); `repeat: N` makes the same call N times (for timings). The first
// line is {tools: [...]} as tools/list gave them. Every protocol error is printed as
// {name, arguments, error}; the process exits 1 only when the server cannot be started.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
let input = "";
for await (const chunk of process.stdin) input += chunk;
const calls = JSON.parse(input || "[]");

const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "sessiontree-mcp-tests", version: "1.0.0" });
try {
  await client.connect(transport);
} catch (e) {
  console.error(`cannot start ${command}: ${e}`);
  process.exit(1);
}
const print = (o) => process.stdout.write(JSON.stringify(o) + "\n");
print({ tools: (await client.listTools()).tools, server: client.getServerVersion() });

for (const c of calls) {
  const pages = [];
  let args = { ...(c.arguments ?? {}) };
  const times = Math.max(1, c.repeat ?? 1);
  try {
    for (let n = 0; n < 500; n++) {
      const t0 = performance.now();
      const result = await client.callTool({ name: c.name, arguments: args });
      const ms = performance.now() - t0;
      pages.push({ result, ms });
      if (pages.length < times) continue;
      const next = c.follow ? result.structuredContent?.nextCursor : null;
      if (!next) break;
      args = { ...args, cursor: next };
    }
    print({ name: c.name, arguments: c.arguments ?? {}, pages });
  } catch (e) {
    print({ name: c.name, arguments: c.arguments ?? {}, pages, error: String(e) });
  }
}
await client.close();
