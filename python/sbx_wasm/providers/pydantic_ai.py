"""A Pydantic AI toolset whose ``run_python`` runs under the grant.

    from sbx_wasm.providers.pydantic_ai import python_toolset
    agent = Agent(model, toolsets=[python_toolset(Sandbox(caps))])
"""

from __future__ import annotations

from .._sandbox import Sandbox
from . import OnRun, describe_for_model, run_for_model


def python_toolset(
    sandbox: Sandbox,
    *,
    name: str = "run_python",
    on_run: OnRun = None,
):
    """A ``FunctionToolset`` with one tool, ``run_python(code)``: the
    answer the model reads (output, how it ended, refusals); ``on_run`` is
    called with every ``RunResult``."""
    from pydantic_ai import Tool
    from pydantic_ai.toolsets import FunctionToolset

    async def run_python(code: str) -> str:
        return await run_for_model(sandbox, code, on_run)

    tool = Tool(run_python, name=name, description=describe_for_model(sandbox), takes_ctx=False)
    return FunctionToolset(tools=[tool])
