// The TypeScript MCP SDK's client (what Claude Desktop, Claude Code and the Inspector build on)
// against `weaver serve` over stdio or Streamable HTTP: resources in pages, a read, the template, prompts,
// completions, and a subscription that hears of an edit made on disk. Run by
// tests/mcp_server/test_real_clients.py from a folder where npm installed the SDK:
//
//   node ts_surface.mjs SPEC_JSON      SPEC: {"command": [...] or "url": ..., "cwd": dir, ...}
//
// Prints one JSON line with what it saw.
import { readFileSync, appendFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
function open(spec) {
  if (spec.url) return new StreamableHTTPClientTransport(new URL(spec.url));
  const [command, ...args] = spec.command;
  return new StdioClientTransport({ command, args, cwd: spec.cwd, stderr: "ignore" });
}
const transport = open(spec);
const client = new Client({ name: "weaver-surface-test", version: "1" });
await client.connect(transport);

const seen = {};
seen.protocol = transport._protocolVersion ?? null;
seen.capabilities = client.getServerCapabilities();
const uris = [];
let cursor = undefined;
do {
  const page = await client.listResources(cursor ? { cursor } : {});
  uris.push(...page.resources.map((r) => r.uri));
  cursor = page.nextCursor;
} while (cursor);
seen.resources = uris;
seen.templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
seen.read = (await client.readResource({ uri: spec.read })).contents[0].text;
seen.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
const prompt = await client.getPrompt({ name: "connect_note", arguments: { path: spec.note } });
seen.prompt = prompt.messages[0].content.text;
seen.completion = (
  await client.complete({
    ref: { type: "ref/resource", uri: "weaver://note/{+path}" },
    argument: { name: "path", value: spec.prefix },
  })
).completion.values;
const big = await client.callTool({ name: "get_file_content", arguments: { path: spec.big } });
seen.bigLength = big.content[0].text.length;

const updated = new Promise((resolve) => {
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri));
});
await client.subscribeResource({ uri: spec.read });
const started = performance.now();
appendFileSync(spec.edit, "\nedited by the test\n");
// The timer is cleared once the race is decided: a pending one keeps Node running to its end,
// which held every run up for ten seconds after the notification came.
let timer;
seen.updated = await Promise.race([
  updated,
  new Promise((resolve) => {
    timer = setTimeout(() => resolve(null), 10000);
  }),
]);
clearTimeout(timer);
seen.updatedMs = performance.now() - started;
await client.close();
console.log(JSON.stringify(seen));
