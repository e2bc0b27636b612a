// Preloaded into an npm MCP server that listens on a port (node --import ./loopback.mjs): it
// binds 127.0.0.1 on a free port whatever the server asks for, and prints the port on stderr as
// "KEYLESS_LISTENING <port>", so the tests reach it only over loopback.
import http from "node:http";

const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (...args) {
  const done = args.find((a) => typeof a === "function");
  this.once("listening", () => {
    process.stderr.write(`KEYLESS_LISTENING ${this.address().port}\n`);
  });
  return listen.call(this, 0, "127.0.0.1", done);
};
