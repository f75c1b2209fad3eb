"""An OpenAI Agents SDK tool whose ``run_python`` runs under the grant.

    from sbx_wasm.providers.openai_agents import python_tool
    agent = Agent(name="analyst", tools=[python_tool(Sandbox(caps))])

The SDK's own sandbox clients (``SandboxAgent``) hand the model a shell;
this sandbox runs Python, JavaScript and components, not a shell, so it
joins an agent as a function tool.
"""

from __future__ import annotations

import json
from typing import Any

from .._sandbox import Sandbox
from . import OnRun, describe_for_model, run_for_model


def python_tool(
    sandbox: Sandbox,
    *,
    name: str = "run_python",
    on_run: OnRun = None,
):
    """A ``FunctionTool`` running ``code`` in ``sandbox``; ``on_run`` is
    called with every ``RunResult``."""
    from agents import FunctionTool

    async def invoke(_ctx: Any, arguments: str) -> str:
        try:
            args = json.loads(arguments or "{}")
            code = args["code"]
            if not isinstance(code, str):
                raise TypeError("code must be a string")
        except (ValueError, KeyError, TypeError) as e:
            return f"invalid arguments: {e}"
        return await run_for_model(sandbox, code, on_run)

    return FunctionTool(
        name=name,
        description=describe_for_model(sandbox),
        params_json_schema={
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The Python source to run."}},
            "required": ["code"],
            "additionalProperties": False,
        },
        on_invoke_tool=invoke,
        strict_json_schema=True,
    )
