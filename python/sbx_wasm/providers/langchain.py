"""A LangChain tool that runs model-written Python under the grant.

    from sbx_wasm.providers.langchain import python_tool
    tool = python_tool(Sandbox(caps))
    agent = create_agent(model, tools=[tool])   # or model.bind_tools([tool])
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from .._sandbox import Sandbox
from . import OnRun, answer, describe_for_model, run_for_model


class PythonArgs(BaseModel):
    """Arguments of ``run_python``."""

    code: str = Field(description="The Python source to run.")


def python_tool(
    sandbox: Sandbox,
    *,
    name: str = "run_python",
    on_run: OnRun = None,
):
    """A ``StructuredTool`` (sync and async) that runs ``code`` in
    ``sandbox``. ``on_run`` is called with every ``RunResult`` (the report
    and audit the model never sees)."""
    from langchain_core.tools import StructuredTool

    def run(code: str) -> str:
        result = sandbox.run_python(code)
        if on_run is not None:
            on_run(result)
        return answer(result)

    async def arun(code: str) -> str:
        return await run_for_model(sandbox, code, on_run)

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=name,
        description=describe_for_model(sandbox),
        args_schema=PythonArgs,
    )
