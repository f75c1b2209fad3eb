"""The FastMCP server, reached by FastMCP's own client (in memory)."""

import asyncio

import pytest

pytest.importorskip("fastmcp")

from fastmcp import Client  # noqa: E402

from conftest import fingerprint, grant  # noqa: E402
from sbx_wasm import Caps, Sandbox  # noqa: E402
from sbx_wasm.providers.fastmcp import server  # noqa: E402


def test_run_python_over_mcp_runs_under_the_grant(tree):
    mcp = server(Sandbox(Caps.from_toml(grant(tree))))
    before = fingerprint(tree)

    async def main():
        async with Client(mcp) as client:
            tools = await client.list_tools()
            ok = await client.call_tool("run_python", {"code": "print(open('/work/a.txt').read().split(',')[0])"})
            denied = await client.call_tool("run_python", {"code": "open('/work/out/../../canary.txt', 'w').write('x')"})
            return tools, ok, denied

    tools, ok, denied = asyncio.run(main())
    assert [t.name for t in tools] == ["run_python"]
    assert "/work" in tools[0].description
    assert "stdout:\nquarter\n" in ok.content[0].text
    assert "refused: fs_" in denied.content[0].text
    assert fingerprint(tree) == before
