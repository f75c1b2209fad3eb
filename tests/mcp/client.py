"""Drive `sbx-wasm mcp` with the official MCP Python SDK (`mcp`, pinned by
the tests' set-up), and print what happened as one JSON object.

    client.py CONFIG_JSON

CONFIG_JSON: {"transport": "stdio", "command": ..., "args": [...], "env": {...}}
          or {"transport": "http", "url": ..., "token": ... or null}
plus "granted" (an origin the grant allows) and "other" (one it does not).
"""

import json
import sys

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def shape(r):
    text = "".join(getattr(c, "text", "") for c in r.content)
    return {"is_error": r.is_error, "text": text, "structured": r.structured_content}


HOSTILE = """
import os, sbx
tried = {}
for name, attempt in [
    ("read_etc", lambda: open("/etc/passwd").read()),
    ("write_data", lambda: open("/work/planted.txt", "w").write("x")),
    ("escape", lambda: open("/work/out/../../x", "w").write("x")),
    ("fetch_other", lambda: sbx.fetch(OTHER + "/status")),
    ("tool_denied", lambda: sbx.call_tool("rm_rf", "/")),
    ("socket", lambda: __import__("socket").create_connection(("127.0.0.1", 22))),
]:
    try:
        attempt()
        tried[name] = "allowed"
    except Exception as e:
        tried[name] = type(e).__name__ + ": " + str(getattr(e, "violation", ""))
print(tried)
"""


async def scenario(session, cfg):
    out = {}
    init = await session.initialize()
    out["server"] = init.server_info.name
    tools = await session.list_tools()
    out["tools"] = sorted(t.name for t in tools.tools)
    out["word_count_description"] = next(
        (t.description for t in tools.tools if t.name == "word_count"), None
    )

    out["benign"] = shape(
        await session.call_tool(
            "run_python",
            {"code": "import sys\nprint(open('/work/a.txt').read().upper(), sys.argv[1:], sys.stdin.read())",
             "args": ["x"], "stdin": "in"},
        )
    )
    out["hostile"] = shape(
        await session.call_tool(
            "run_python", {"code": HOSTILE.replace("OTHER", repr(cfg["other"]))}
        )
    )
    out["code_mode"] = shape(
        await session.call_tool(
            "run_python",
            {"code": "import sbx\n"
                     f"r = sbx.fetch({cfg['granted']!r} + '/status')\n"
                     "import json\n"
                     "n = sbx.call_tool('word_count', json.dumps({'text': 'one two three'}))\n"
                     "try:\n"
                     "    sbx.call_tool('word_count', 'one two three')\n"
                     "    print('plain text taken')\n"
                     "except sbx.Denied as e:\n"
                     "    print(e.violation)\n"
                     "print(r.status, r.text(), n.strip())"},
        )
    )
    out["read_outside"] = shape(await session.call_tool("read_file", {"path": "/etc/passwd"}))
    out["read_inside"] = shape(await session.call_tool("read_file", {"path": "/work/a.txt"}))
    out["granted_tool"] = shape(await session.call_tool("word_count", {"text": "a b"}))

    progress = []

    async def on_progress(value, total, message):
        progress.append((value, message))

    out["streamed"] = shape(
        await session.call_tool(
            "run_python",
            {"code": "import sys\nprint('first', flush=True)\n"
                     "try:\n    open('/etc/shadow')\nexcept OSError:\n    pass\n"
                     "print('second', file=sys.stderr, flush=True)"},
            progress_callback=on_progress,
        )
    )
    # Notifications may be handled out of order; their values count up.
    out["progress"] = [m for _, m in sorted(progress)]

    # A run that never ends, abandoned after 1 s: the SDK sends
    # notifications/cancelled; the server cancels the run. (It mostly
    # sleeps: a spinning loop could spend its fuel first on a fast machine.)
    started = anyio.current_time()
    with anyio.move_on_after(1.0):
        await session.call_tool(
            "run_python", {"code": "import time\nwhile True:\n    time.sleep(0.01)"}
        )
    out["cancel_returned_after_s"] = anyio.current_time() - started
    # The session still serves after a cancel.
    out["after_cancel"] = shape(await session.call_tool("run_python", {"code": "print(7)"}))
    return out


async def main():
    cfg = json.loads(sys.argv[1])
    if cfg["transport"] == "stdio":
        params = StdioServerParameters(command=cfg["command"], args=cfg["args"], env=cfg["env"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                result = await scenario(session, cfg)
    else:
        headers = {"Authorization": f"Bearer {cfg['token']}"} if cfg.get("token") else {}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with streamable_http_client(cfg["url"], http_client=http) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    result = await scenario(session, cfg)
    print(json.dumps(result))


anyio.run(main)
