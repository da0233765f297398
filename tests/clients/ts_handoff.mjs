// A whole handoff from the owner's side with the official MCP TypeScript client
// (@modelcontextprotocol/client, pinned to 2026-07-28) and its tasks extension
// (@modelcontextprotocol/ext-tasks): callTool("handoff_create") with the extension
// declared, onInputRequest answering the assignee's question, settle() until the
// task ends. Run by tests/e2e/test_mcp_ts_client.py, which plays the assignee.
//
//   node ts_handoff.mjs URL BEARER SUMMARY ANSWER
//
// Prints one JSON line per step on stdout ({"step": ...}); the last is
// {"step": "settled", "status": ..., "result": ...}. Exits 1 on any failure.
//
// ext-tasks needs, for a 2026-07-28 server, a host-owned raw dispatch (the SDK's
// own codecs do not carry task wire shapes) and the request framing: the dispatch
// below POSTs one JSON-RPC request to /mcp with the standard headers and the bearer.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";

const [url, bearer, summary, answer] = process.argv.slice(2);
const VERSION = "2026-07-28";
const TASKS = "io.modelcontextprotocol/tasks";
const clientInfo = { name: "commonroom-ts-test", version: "1.0.0" };
const say = (step, extra = {}) => process.stdout.write(JSON.stringify({ step, ...extra }) + "\n");

let sequence = 0;
async function rawDispatch(request, options = {}) {
  const message = { jsonrpc: "2.0", id: `ts-${++sequence}`, ...request };
  const params = message.params ?? {};
  const name = message.method === "tools/call" ? params.name : params.taskId;
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    Authorization: `Bearer ${bearer}`,
    "MCP-Protocol-Version": VERSION,
    "Mcp-Method": message.method,
    ...(typeof name === "string" ? { "Mcp-Name": name } : {}),
  };
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(message), signal: options.signal });
  const body = await response.json();
  say("wire", { method: message.method, status: response.status, body });
  return "error" in body ? { kind: "error", error: body.error } : { kind: "result", result: body.result };
}

const client = new Client(clientInfo, {
  versionNegotiation: { mode: { pin: VERSION } },
  capabilities: { extensions: { [TASKS]: {} } },
});
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
});

try {
  await client.connect(transport);
  say("connected", { era: client.getProtocolEra() });
  const session = createTaskSessionFromClient(client, {
    endpointId: url,
    rawDispatch,
    v2RequestFraming: { protocolVersion: VERSION, clientInfo, clientCapabilities: { extensions: { [TASKS]: {} } } },
    onInputRequest: async (request, context) => {
      say("input", { kind: request.kind, params: request.params, taskId: context.taskId, delivery: context.delivery });
      return { action: "accept", content: { answer } };
    },
  });
  try {
    const execution = await session.callTool("handoff_create", { summary });
    say("called", { kind: execution.kind, taskId: execution.handle?.taskId ?? null });
    const { outcome } = await execution.settle();
    say("settled", {
      status: outcome.status,
      result: outcome.status === "completed" ? outcome.result : null,
      error: outcome.status === "failed" ? String(outcome.error?.message ?? outcome.error) : null,
    });
  } finally {
    await session.close();
  }
  await client.close();
} catch (error) {
  say("error", { message: String(error?.stack ?? error) });
  process.exit(1);
}
