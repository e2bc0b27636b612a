// A stdio MCP server on the official TypeScript SDK that records what a client sends it, for
// host/tests/mcp.rs: every JSON-RPC message it receives goes, one JSON line each, to the file
// KEYLESS_RECORD names. Its tools: `wait` (answers only when cancelled: it records the abort),
// `roots` (asks the client for its roots and answers with them) and `ask` (asks the user a form,
// elicitation, and answers with what came back).
import { appendFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const record = (entry) => appendFileSync(process.env.KEYLESS_RECORD, `${JSON.stringify(entry)}\n`);

const server = new Server({ name: "recorder", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
// `grow` adds `extra` and says the tools changed (notifications/tools/list_changed).
let grown = false;
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    ...(grown ? [{ name: "extra", description: "Came later.", inputSchema: { type: "object", properties: {} } }] : []),
    { name: "grow", description: "Adds the tool extra.", inputSchema: { type: "object", properties: {} } },
    { name: "wait", description: "Waits until cancelled.", inputSchema: { type: "object", properties: {} } },
    { name: "roots", description: "The client's roots.", inputSchema: { type: "object", properties: {} } },
    { name: "ask", description: "Asks the user a form.", inputSchema: { type: "object", properties: {} } },
    { name: "steps", description: "Three steps, with progress.", inputSchema: { type: "object", properties: {} } },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  if (request.params.name === "ask") {
    try {
      const answer = await server.elicitInput({
        message: "Deploy \u001b[31mnow\u001b[0m?",
        requestedSchema: {
          type: "object",
          properties: {
            name: { type: "string", title: "Your name" },
            count: { type: "integer", minimum: 1, maximum: 9, default: 3 },
            go: { type: "boolean", default: false },
          },
          required: ["name"],
        },
      });
      return { content: [{ type: "text", text: JSON.stringify(answer) }] };
    } catch (e) {
      return { content: [{ type: "text", text: `no form: ${e.message}` }], isError: true };
    }
  }
  if (request.params.name === "grow") {
    grown = true;
    await server.sendToolListChanged();
    return { content: [{ type: "text", text: "grown" }] };
  }
  if (request.params.name === "extra") {
    return { content: [{ type: "text", text: "extra here" }] };
  }
  if (request.params.name === "steps") {
    const token = request.params._meta?.progressToken;
    for (let i = 1; i <= 3 && token !== undefined; i++) {
      await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: i, total: 3, message: `step ${i}\u001b[2J` } });
      await new Promise((r) => setTimeout(r, 30));
    }
    return { content: [{ type: "text", text: "three steps" }] };
  }
  if (request.params.name === "roots") {
    const { roots } = await server.listRoots();
    return { content: [{ type: "text", text: JSON.stringify(roots) }] };
  }
  await new Promise((resolve) => {
    extra.signal.addEventListener("abort", () => {
      record({ aborted: String(extra.requestId) });
      resolve();
    });
  });
  return { content: [{ type: "text", text: "cancelled" }] };
});

const transport = new StdioServerTransport();
await server.connect(transport);
const deliver = transport.onmessage;
transport.onmessage = (message, extra) => {
  record(message);
  deliver?.(message, extra);
};
