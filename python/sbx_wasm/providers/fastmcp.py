"""A FastMCP server whose ``run_python`` tool runs under the grant.

    from sbx_wasm.providers.fastmcp import server
    server(Sandbox(Caps.from_file("caps.toml"))).run()      # stdio

For a server of your own, ``add_run_python(mcp, sandbox)`` adds the tool.
"""

from __future__ import annotations

from .._sandbox import Sandbox
from . import describe_for_model, run_for_model


def add_run_python(mcp, sandbox: Sandbox, *, name: str = "run_python") -> None:
    """Add ``run_python(code)`` to the FastMCP server ``mcp``."""

    async def run_python(code: str) -> str:
        return await run_for_model(sandbox, code, None)

    mcp.tool(run_python, name=name, description=describe_for_model(sandbox))


def server(sandbox: Sandbox, *, name: str = "sbx-wasm"):
    """A FastMCP server with ``run_python`` on ``sandbox``."""
    from fastmcp import FastMCP

    mcp = FastMCP(name)
    add_run_python(mcp, sandbox)
    return mcp
