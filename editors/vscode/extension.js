// Wires the .as language to `keyless-host as lsp` (diagnostics, formatting, hover, definition).
"use strict";
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("keyless").get("hostPath") || "keyless-host";
  const server = { command, args: ["as", "lsp"] };
  client = new LanguageClient(
    "keyless-as",
    "keyless .as programs",
    { run: server, debug: server },
    { documentSelector: [{ scheme: "file", language: "keyless-as" }] },
  );
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
