// A remote MCP server that needs a login, on 127.0.0.1, for host/tests/mcp.rs: the official
// TypeScript SDK's authorization server routes (metadata, dynamic client registration, PKCE
// authorization, token endpoint with refresh) and its bearer-token middleware in front of a
// Streamable HTTP MCP server. Access tokens live KEYLESS_TOKEN_SECONDS (default 2) so a test sees
// one expire and be refreshed. Its tool `admin` needs the scope `admin`, which the metadata does
// not offer: a call without it is refused with 403 insufficient_scope (step-up). The "user" approves at once: the authorization endpoint redirects
// straight back with a code. What happens (grants, tool calls, refused tokens) goes, one JSON line
// each, to KEYLESS_RECORD; no token is ever written there. It prints `KEYLESS_LISTENING PORT` on
// standard error once it listens. With KEYLESS_NO_REGISTRATION=1 no client may register itself.
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import express from "express";
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from "@modelcontextprotocol/sdk/server/auth/router.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { InvalidGrantError, InvalidTokenError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const record = (entry) => appendFileSync(process.env.KEYLESS_RECORD, `${JSON.stringify(entry)}\n`);
const lifetime = Number(process.env.KEYLESS_TOKEN_SECONDS ?? "2");

const clients = new Map();
const codes = new Map();
const access = new Map();
const refresh = new Map();

function issue(clientId, scopes, resource) {
  const token = randomUUID();
  const refreshToken = randomUUID();
  access.set(token, { clientId, scopes, resource, expiresAt: Date.now() + lifetime * 1000 });
  refresh.set(refreshToken, { clientId, scopes, resource });
  return { access_token: token, token_type: "bearer", expires_in: lifetime, refresh_token: refreshToken, scope: scopes.join(" ") };
}

// KEYLESS_NO_REGISTRATION=1: an authorization server that lets no client register itself (only
// pre-registered clients): its metadata names no registration endpoint.
const registration = process.env.KEYLESS_NO_REGISTRATION === "1" ? {} : {
  registerClient: async (c) => {
    // Any scope may be asked for later (step-up), whatever the registration said.
    delete c.scope;
    clients.set(c.client_id, c);
    record({ registered: c.client_name ?? null, redirect_uris: c.redirect_uris });
    return c;
  },
};
const provider = {
  clientsStore: {
    getClient: async (id) => clients.get(id),
    ...registration,
  },
  async authorize(client, params, res) {
    const code = randomUUID();
    codes.set(code, { client, params });
    const back = new URL(params.redirectUri);
    back.searchParams.set("code", code);
    if (params.state !== undefined) back.searchParams.set("state", params.state);
    res.redirect(back.toString());
  },
  async challengeForAuthorizationCode(_client, code) {
    const c = codes.get(code);
    if (!c) throw new InvalidGrantError("unknown code");
    return c.params.codeChallenge;
  },
  async exchangeAuthorizationCode(client, code) {
    const c = codes.get(code);
    if (!c || c.client.client_id !== client.client_id) throw new InvalidGrantError("unknown code");
    codes.delete(code);
    record({ grant: "authorization_code", resource: c.params.resource?.href ?? null, scopes: c.params.scopes ?? [] });
    return issue(client.client_id, c.params.scopes ?? ["mcp:tools"], c.params.resource?.href);
  },
  async exchangeRefreshToken(client, refreshToken) {
    const r = refresh.get(refreshToken);
    if (!r || r.clientId !== client.client_id) throw new InvalidGrantError("unknown refresh token");
    // Rotated: the old refresh token is spent.
    refresh.delete(refreshToken);
    record({ grant: "refresh_token" });
    return issue(client.client_id, r.scopes, r.resource);
  },
  async verifyAccessToken(token) {
    const t = access.get(token);
    if (!t || t.expiresAt < Date.now()) {
      record({ refused: t ? "expired" : "unknown" });
      throw new InvalidTokenError("the token is expired or unknown");
    }
    return { token, clientId: t.clientId, scopes: t.scopes, expiresAt: Math.floor(t.expiresAt / 1000), resource: t.resource ? new URL(t.resource) : undefined };
  },
};

const app = express();
const http = createServer(app);
http.listen(0, "127.0.0.1", () => {
  const { port } = http.address();
  const base = new URL(`http://127.0.0.1:${port}/`);
  const mcpUrl = new URL("/mcp", base);
  app.use(mcpAuthRouter({ provider, issuerUrl: base, resourceServerUrl: mcpUrl, scopesSupported: ["mcp:tools"], resourceName: "protected test server" }));
  const auth = requireBearerAuth({ verifier: provider, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) });
  app.post("/mcp", express.json(), auth, async (req, res) => {
    if (req.body?.method === "tools/call" && req.body?.params?.name === "admin" && !req.auth.scopes.includes("admin")) {
      record({ refused: "insufficient_scope" });
      res.set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:tools admin", resource_metadata="${getOAuthProtectedResourceMetadataUrl(mcpUrl)}"`);
      res.status(403).json({ error: "insufficient_scope", error_description: "admin needs the scope admin" });
      return;
    }
    // Stateless: one server and one transport per request.
    const server = new McpServer({ name: "protected", version: "1.0.0" });
    server.registerTool("whoami", { description: "Who the token says you are." }, async (extra) => {
      record({ tool: "whoami" });
      return { content: [{ type: "text", text: `client ${extra.authInfo?.clientId} with ${extra.authInfo?.scopes.join(" ")}` }] };
    });
    server.registerTool("admin", { description: "Needs the scope admin." }, async () => {
      record({ tool: "admin" });
      return { content: [{ type: "text", text: "admin done" }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  process.stderr.write(`KEYLESS_LISTENING ${port}\n`);
});
