// An MCP server of the 2026-07-28 revision only (stateless: `server/discover`, no `initialize`),
// on the official TypeScript SDK v2 (`@modelcontextprotocol/server`), for host/tests/mcp.rs: over
// stdio, or with the argument `http` over Streamable HTTP on 127.0.0.1 (`/mcp`, the port said as
// `KEYLESS_LISTENING PORT` on standard error). When KEYLESS_RECORD names a file, every JSON-RPC message it receives
// goes there, one JSON line each. Its tools: `add` (a + b), `deploy` (asks the user to confirm with
// an input-required result, MRTR, and answers with what came back) and `roots` (asks for the
// client's roots the same way); `survey` asks five forms in one result.
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { McpServer, acceptedContent, createMcpHandler, inputRequired } from "@modelcontextprotocol/server";
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";

const record = (entry) => {
  if (process.env.KEYLESS_RECORD) appendFileSync(process.env.KEYLESS_RECORD, `${JSON.stringify(entry)}\n`);
};

function modern() {
const server = new McpServer({ name: "modern", version: "1.0.0" }, { supportedProtocolVersions: ["2026-07-28"] });

server.registerTool(
  "add",
  { description: "Adds two numbers.", inputSchema: z.object({ a: z.number(), b: z.number() }), annotations: { readOnlyHint: true } },
  async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
);

const confirmation = z.object({ name: z.string().describe("Your name"), go: z.boolean().describe("Deploy now") });
server.registerTool("deploy", { description: "Deploys after the user confirms.", inputSchema: z.object({ env: z.string() }) }, async ({ env }, ctx) => {
  const answer = acceptedContent(ctx.mcpReq.inputResponses, "confirm");
  if (!answer) {
    const declined = ctx.mcpReq.inputResponses?.confirm;
    if (declined) return { content: [{ type: "text", text: `not deployed: ${declined.action}` }] };
    return inputRequired({
      inputRequests: { confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: z.toJSONSchema(confirmation) }) },
      requestState: `env=${env}`,
    });
  }
  return { content: [{ type: "text", text: `${answer.go ? "deployed" : "held"} ${env} for ${answer.name} (state ${ctx.mcpReq.requestState?.() ?? "none"})` }] };
});

// Five forms in one result: more than keyless puts before the user at once.
server.registerTool("survey", { description: "Asks five questions at once.", inputSchema: z.object({}) }, async (_args, ctx) => {
  if (ctx.mcpReq.inputResponses) return { content: [{ type: "text", text: "answered" }] };
  const q = (n) => inputRequired.elicit({ message: `Question ${n}?`, requestedSchema: z.toJSONSchema(z.object({ yes: z.boolean() })) });
  return inputRequired({ inputRequests: { q1: q(1), q2: q(2), q3: q(3), q4: q(4), q5: q(5) } });
});

server.registerTool("roots", { description: "The client's roots.", inputSchema: z.object({}) }, async (_args, ctx) => {
  const listed = ctx.mcpReq.inputResponses?.roots;
  if (!listed) return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
  return { content: [{ type: "text", text: listed.roots.map((r) => r.uri).join("\n") }] };
});

return server;
}

if (process.argv[2] === "http") {
  // The SDK's web-standard handler behind node:http (the SDK leaves that adapter to the host).
  const handler = createMcpHandler(modern, { legacy: "reject" });
  const server = createServer(async (req, res) => {
    if (req.url !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    if (body.length > 0) {
      try {
        record(JSON.parse(body.toString("utf8")));
      } catch {
        // not JSON: the handler answers it
      }
    }
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    const request = new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: req.method === "GET" || req.method === "HEAD" ? undefined : body });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) for await (const chunk of response.body) res.write(chunk);
    res.end();
  });
  server.listen(0, "127.0.0.1", () => process.stderr.write(`KEYLESS_LISTENING ${server.address().port}\n`));
} else {
  // Only the 2026-07-28 revision: an `initialize` is refused with the unsupported-version error.
  const transport = new StdioServerTransport();
  let deliver;
  Object.defineProperty(transport, "onmessage", {
    get: () => deliver && ((message, extra) => {
      record(message);
      deliver(message, extra);
    }),
    set: (f) => {
      deliver = f;
    },
  });
  serveStdio(modern, { legacy: "reject", transport });
}
