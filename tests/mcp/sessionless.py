"""Per-session totals and /scratch in both protocol eras, driven by the
official MCP Python SDK (`mcp`, pinned by the tests' set-up) against
`sbx-wasm mcp --http ... --session-max-calls 3 --session-scratch`, and
print what happened as one JSON object.

    sessionless.py URL

Four `run_python` calls in each of: a handshake session (mode "legacy"),
the sessionless revision without a workspace (mode "auto", which picks
2026-07-28 when the server offers it), and a workspace the server issues.
Each call appends to /scratch/n.txt and prints its length, so the numbers
show whether /scratch outlived the call, and the fourth shows whether the
total tripped.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

APPEND = "f = open('/scratch/n.txt', 'a'); f.write('x'); f.close()\nprint(len(open('/scratch/n.txt').read()))"


def shape(r):
    text = "".join(getattr(c, "text", "") for c in r.content)
    return {"is_error": r.is_error, "text": text.strip(), "structured": r.structured_content}


async def four_calls(url, mode, headers=None):
    async with httpx2.AsyncClient(headers=headers or {}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as c:
            calls = [shape(await c.call_tool("run_python", {"code": APPEND})) for _ in range(4)]
            return {"version": str(c.protocol_version), "calls": calls}


async def one_call(url, headers):
    """One call with `headers`; the HTTP status if the transport failed."""
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        try:
            async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as c:
                return shape(await c.call_tool("run_python", {"code": "print(1)"}))
        except BaseException as e:  # an ExceptionGroup from the task group
            return {"failed": repr(e)[:400]}


async def main(url):
    out = {"legacy": await four_calls(url, "legacy")}
    out["sessionless"] = await four_calls(url, "auto")
    async with httpx2.AsyncClient(timeout=60) as http:
        issued = await http.post(url + "/workspaces")
        handle = issued.json()["workspace"]
        out["issued"] = {"status": issued.status_code, "header": issued.headers.get("sbx-workspace") == handle}
        out["workspace"] = await four_calls(url, "auto", {"Sbx-Workspace": handle})
        first = await http.delete(f"{url}/workspaces/{handle}")
        again = await http.delete(f"{url}/workspaces/{handle}")
        out["closed"] = [first.status_code, again.status_code]
        forged = await http.post(
            url,
            headers={"Sbx-Workspace": "w_" + "0" * 32, "Content-Type": "application/json",
                     "Accept": "application/json, text/event-stream"},
            content=b"{}",
        )
        out["forged_status"] = forged.status_code
    out["after_close"] = await one_call(url, {"Sbx-Workspace": handle})
    print(json.dumps(out))


asyncio.run(main(sys.argv[1]))
