// The TypeScript MCP SDK's client (what the Inspector, Claude Desktop and Claude Code build on)
// timing tool calls against `weaver serve` over stdio. Run by `tests/benchmarks/clients.py`
// from a folder where npm installed @modelcontextprotocol/sdk:
//
//   node ts_client.mjs CASES_JSON
//
// CASES_JSON: {"command": [...], "cwd": dir, "calls": N, "warmup": N,
//              "cases": [[label, tool, args], ...]}.
// Prints one JSON line: {label: {"seconds": [...], "tool_seconds": [...], "bytes": [...]}}
// (bytes: the structured content's JSON, measured once, after the timed calls). The SDK checks each
// result's structured content against the tool's output schema (ajv), as it does for any client.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const [command, ...args] = spec.command;
const transport = new StdioClientTransport({ command, args, cwd: spec.cwd, stderr: "ignore" });
const client = new Client({ name: "weaver-bench", version: "1" });
await client.connect(transport);
await client.listTools(); // the output schemas the results are checked against

async function call(tool, args) {
  const started = performance.now();
  const result = await client.callTool({ name: tool, arguments: args });
  const elapsed = (performance.now() - started) / 1000;
  if (result.isError || !result.structuredContent?.success) {
    throw new Error(`${tool} failed: ${JSON.stringify(result.content)}`);
  }
  return [elapsed, result.structuredContent.metadata.executionTime / 1000, result];
}

const measured = {};
for (const [label, tool, args] of spec.cases) {
  for (let i = 0; i < spec.warmup; i++) await call(tool, args);
  const seconds = [];
  const toolSeconds = [];
  let last;
  for (let i = 0; i < spec.calls; i++) {
    const [elapsed, spent, result] = await call(tool, args);
    seconds.push(elapsed);
    toolSeconds.push(spent);
    last = result;
  }
  const bytes = [Buffer.byteLength(JSON.stringify(last.structuredContent))];
  measured[label] = { seconds, tool_seconds: toolSeconds, bytes };
}
await client.close();
console.log(JSON.stringify(measured));
