// Sequential MCP tools/call over streamable HTTP with Node's fetch (undici keeps the
// connection alive), as the TypeScript SDK's client transport does.
//   node fetch_calls.mjs URL TOOL  -> opens a session, makes 20 warm-up calls, prints "ready";
//   then each line N on stdin makes N timed calls and prints a JSON list of per-call ms.
import { createInterface } from "node:readline";

const [url, tool] = process.argv.slice(2);
const base = { "content-type": "application/json", accept: "application/json, text/event-stream" };
let session = null;
let nextId = 1;

async function rpc(method, params, notification = false) {
  const headers = { ...base };
  if (session) headers["mcp-session-id"] = session;
  if (session) headers["mcp-protocol-version"] = "2025-11-25";
  const message = { jsonrpc: "2.0", method, params };
  if (!notification) message.id = nextId++;
  const answer = await fetch(url, { method: "POST", headers, body: JSON.stringify(message) });
  if (!session) session = answer.headers.get("mcp-session-id");
  const text = await answer.text();
  if (notification) return null;
  const data = text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data: ")).slice(6);
  const parsed = JSON.parse(data);
  if (parsed.error) throw new Error(JSON.stringify(parsed.error));
  return parsed.result;
}

async function calls(count) {
  const times = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const result = await rpc("tools/call", { name: tool, arguments: { text: "hello" } });
    if (result.isError) throw new Error(JSON.stringify(result));
    times.push(performance.now() - started);
  }
  return times;
}

await rpc("initialize", {
  protocolVersion: "2025-11-25",
  capabilities: {},
  clientInfo: { name: "bench-fetch", version: "0" },
});
await rpc("notifications/initialized", {}, true);
const deadline = Date.now() + 60000;
while (!(await rpc("tools/list", {})).tools.some((t) => t.name === tool)) {
  if (Date.now() > deadline) throw new Error(`${tool} never listed`);
  await new Promise((r) => setTimeout(r, 100));
}
await calls(20);
console.log("ready");
for await (const line of createInterface({ input: process.stdin })) {
  console.log(JSON.stringify(await calls(Number(line))));
}
