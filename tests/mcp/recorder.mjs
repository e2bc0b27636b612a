// A stdio MCP server on the official TypeScript SDK that records what a client sends it, for
// host/tests/mcp.rs: every JSON-RPC message it receives goes, one JSON line each, to the file
// KEYLESS_RECORD names. Its tools: `wait` (answers only when cancelled: it records the abort) and
// `roots` (asks the client for its roots and answers with them).
import { appendFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const record = (entry) => appendFileSync(process.env.KEYLESS_RECORD, `${JSON.stringify(entry)}\n`);

const server = new Server({ name: "recorder", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: "wait", description: "Waits until cancelled.", inputSchema: { type: "object", properties: {} } },
    { name: "roots", description: "The client's roots.", inputSchema: { type: "object", properties: {} } },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
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
