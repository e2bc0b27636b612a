#!/usr/bin/env bash
# The MCP client the official conformance suite (@modelcontextprotocol/conformance, client
# scenarios) drives: `cargo xtask test` runs the suite with `--command "bash THIS"`, and the suite
# appends the URL of the server it starts for each scenario and names the scenario in
# MCP_CONFORMANCE_SCENARIO. This script is what a user does with that server: declare it in their
# own keyless.json (in a fresh HOME), then use it through keyless-host's own commands. It adds no
# protocol of its own; every byte on the wire is keyless-host's.
set -euo pipefail
url="${*: -1}"
host="${KEYLESS_HOST_BIN:?KEYLESS_HOST_BIN names the keyless-host binary}"
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
export HOME="$home" XDG_CONFIG_HOME="$home/.config"
unset KEYLESS_CONFIG_DIR || true
mkdir -p "$XDG_CONFIG_HOME/keyless" "$home/work"
# Mcp.Servers is a trust key: the user's own keyless.json declares the server. A scenario that
# pre-registers a client names it in MCP_CONFORMANCE_CONTEXT: it becomes ClientId, its secret an
# environment variable (ClientSecretEnv), as a user would write them.
context="${MCP_CONFORMANCE_CONTEXT:-{\}}"
client_id="$(node -e 'const c = JSON.parse(process.argv[1]); process.stdout.write(c.client_id ?? "")' "$context")"
export CONFORMANCE_CLIENT_SECRET="$(node -e 'const c = JSON.parse(process.argv[1]); process.stdout.write(c.client_secret ?? "")' "$context")"
extra=""
if [ -n "$client_id" ]; then
  extra=", \"ClientId\": \"$client_id\""
  if [ -n "$CONFORMANCE_CLIENT_SECRET" ]; then extra="$extra, \"ClientSecretEnv\": \"CONFORMANCE_CLIENT_SECRET\""; fi
fi
printf '{"Mcp": {"Servers": {"conformance": {"Url": "%s"%s}}}}\n' "$url" "$extra" >"$XDG_CONFIG_HOME/keyless/keyless.json"
cd "$home/work"
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  initialize)
    "$host" mcp list ;;
  tools_call)
    "$host" mcp call conformance.add_numbers --args '{"a": 5, "b": 3}' ;;
  sse-retry)
    "$host" mcp call conformance.test_reconnection ;;
  elicitation-sep1034-client-defaults)
    # The server asks for a form; the user accepts it as it is (its defaults).
    "$host" mcp call conformance.test_client_elicitation_defaults --answer accept ;;
  sep-2322-client-request-state)
    # 2026-07-28's input-required results (MRTR): each tool asks a form in its result; the user
    # confirms, and keyless calls again with the answer and the request state echoed.
    for tool in test_mrtr_echo_state test_mrtr_no_state test_mrtr_unrelated test_mrtr_no_result_type; do
      "$host" mcp call "conformance.$tool" --answer '{"confirmed": true}'
    done ;;
  http-custom-headers)
    # Arguments a tool marks with x-mcp-header are mirrored into HTTP headers; these are the
    # scenario's own values (ASCII, numbers, booleans, Unicode, spaces, control characters).
    "$host" mcp call conformance.test_custom_headers --args "$(node -e 'process.stdout.write(JSON.stringify({region: "us-west1", priority: 42, verbose: false, debug: true, empty_val: "", method_val: "test-method", float_val: 3.14159, non_ascii_val: "Hello, \u4e16\u754c", whitespace_val: " padded ", leading_space_val: " us-west1", trailing_space_val: "us-west1 ", internal_space_val: "us west 1", control_char_val: "line1\nline2", crlf_val: "line1\r\nline2", tab_val: "\tindented", query: "SELECT * FROM users"}))')" || true
    "$host" mcp call conformance.test_custom_headers_null --args '{"region": "us-east1", "priority": 1, "verbose": null, "query": "SELECT 1"}' || true ;;
  http-invalid-tool-headers)
    # A tool whose header annotations are invalid is left out; the valid one is still offered.
    "$host" mcp call conformance.valid_tool --args '{}' ;;
  json-schema-2020-12-preservation)
    # The tool's input schema, as keyless read it from tools/list, sent back to be compared.
    schema="$("$host" mcp list --json | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { const t = JSON.parse(s)[0].tools.find((t) => t.name === "json_schema_2020_12_tool"); process.stdout.write(JSON.stringify({ schema: JSON.parse(t.input_schema) })); })')"
    "$host" mcp call conformance.json_schema_echo --args "$schema" ;;
  auth/*)
    # The authorization scenarios: log in (the "browser" is curl, which follows the
    # authorization server's redirect back to keyless-host on 127.0.0.1), then list the tools and
    # call the first one with the stored token (a call that needs more scopes logs in again).
    export BROWSER="curl -fsSL -o /dev/null"
    # Before the login, a server that refuses to start without a token is listed as needing a
    # login (not as a bare failure).
    listed="$("$host" mcp list || true)"
    if grep -q KA_MCP_UNAVAILABLE <<<"$listed" &&
      ! grep -q "needs login: run \`keyless-host mcp login conformance\`" <<<"$listed"; then
      echo "mcp list did not say the server needs a login" >&2
      exit 1
    fi
    "$host" mcp login conformance
    # A server that asks for a login again right after (its authorization server changed, the
    # tokens were refused) gets one, as the user does when `mcp list` says so.
    again="$("$host" mcp list || true)"
    if grep -q "needs login: run" <<<"$again"; then "$host" mcp login conformance; fi
    tool="$("$host" mcp list --json | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { const l = JSON.parse(s); process.stdout.write(l[0]?.tools?.[0]?.name ?? ""); })')"
    if [ -n "$tool" ]; then "$host" mcp call "conformance.$tool" --args '{}'; fi ;;
  *)
    "$host" mcp list ;;
esac
