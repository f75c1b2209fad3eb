// The official MCP TypeScript SDK (v2, `@modelcontextprotocol/client`,
// pinned in this folder's lock file) against `sbx-wasm mcp`, printing what
// happened as one JSON object on stdout.
//
//   node client.mjs MODE http URL [TOKEN]
//   node client.mjs MODE stdio COMMAND [ARG...]
//
// MODE is `legacy` (the 2025-11-25 handshake) or `2026-07-28` (pinned: the
// sessionless revision). Five run_python calls: three append to
// /scratch/n.txt and print its length (so the numbers show /scratch outlived
// each call), one tries to write outside the grant (a soft denial: a result
// with isError, never a crash), and the fifth shows whether the session's
// call total (the server runs with --session-max-calls 4) tripped.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [mode, kind, target, ...rest] = process.argv.slice(2);

const APPEND =
  "f = open('/scratch/n.txt', 'a'); f.write('x'); f.close()\nprint(len(open('/scratch/n.txt').read()))";
const ESCAPE = "open('/etc/sbx-ts-planted', 'w').write('x')";

function transport() {
  if (kind === "http") {
    const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
    return new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
  }
  return new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: "ignore" });
}

function shape(r) {
  const text = (r.content || []).map((c) => c.text || "").join("");
  return {
    is_error: Boolean(r.isError),
    text: text.trim().slice(0, 400),
    stdout: r.structuredContent ? r.structuredContent.stdout : null,
    violation: r.structuredContent ? r.structuredContent.violation : null,
  };
}

const versionNegotiation = mode === "legacy" ? { mode: "legacy" } : { mode: { pin: mode } };
const client = new Client({ name: "sbx-ts-test", version: "1.0.0" }, { versionNegotiation });
await client.connect(transport());
const out = { version: client.getNegotiatedProtocolVersion() };
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
const call = async (code) => shape(await client.callTool({ name: "run_python", arguments: { code } }));
out.calls = [];
for (let i = 0; i < 3; i++) out.calls.push(await call(APPEND));
out.escape = await call(ESCAPE);
out.after_total = await call(APPEND);
await client.close();
console.log(JSON.stringify(out));
