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
# Mcp.Servers is a trust key: the user's own keyless.json declares the server.
printf '{"Mcp": {"Servers": {"conformance": {"Url": "%s"}}}}\n' "$url" >"$XDG_CONFIG_HOME/keyless/keyless.json"
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
  *)
    # The authorization scenarios: list the server's tools, then call the first one.
    tool="$("$host" mcp list --json | sed -n 's/.*"tools":\[{"server":"conformance","name":"\([^"]*\)".*/\1/p')"
    if [ -n "$tool" ]; then "$host" mcp call "conformance.$tool" --args '{}'; fi ;;
esac
