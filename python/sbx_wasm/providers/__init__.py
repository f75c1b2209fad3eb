"""Ready providers for agent frameworks, each a small module importing its
framework only when used:

- ``sbx_wasm.providers.langchain``: a LangChain tool (``python_tool``).
- ``sbx_wasm.providers.pydantic_ai``: a Pydantic AI toolset (``python_toolset``).
- ``sbx_wasm.providers.openai_agents``: an OpenAI Agents SDK tool (``python_tool``).
- ``sbx_wasm.providers.smolagents``: a smolagents executor (``SbxExecutor``).
- ``sbx_wasm.providers.fastmcp``: a FastMCP server exposing ``run_python``.

Each tells the model its room (from the grant) and answers with what the
run printed, how it ended and every refused attempt: a refusal is an
answer the model reads, never an exception in the framework.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .._results import RunResult
from .._sandbox import Sandbox

#: What a provider calls with every finished run (the report and audit the
#: model never sees).
OnRun = Optional[Callable[[RunResult], Any]]

#: Longest output a model is shown, per stream; the rest is cut with a note.
MODEL_OUTPUT_CHARS = 20_000


def describe_for_model(sandbox: Sandbox) -> str:
    """A tool description: what the tool does, and the grant's room."""
    return (
        "Run a Python 3 script in a sandbox and get what it printed. "
        + sandbox.room_for_model()
        + " Open files with open(); fetch with urllib, requests or sbx.fetch; call a "
        "tool with sbx.tools.NAME(**args). A refused attempt fails as if the file, host "
        "or tool were not there (sbx raises PermissionError) and nothing happens; the "
        "answer lists every refused attempt."
    )


def _clip(text: str) -> str:
    if len(text) <= MODEL_OUTPUT_CHARS:
        return text
    return text[:MODEL_OUTPUT_CHARS] + f"\n[... {len(text) - MODEL_OUTPUT_CHARS} more characters not shown]"


def answer(result: RunResult) -> str:
    """A run as the model reads it: how it ended, its output, refusals."""
    head = f"status: {result.status}"
    if result.exit_code is not None:
        head += f", exit code {result.exit_code}"
    if result.violation:
        head += f", halted by {result.violation}"
    parts = [head]
    if result.error is not None:
        where = f" at line {result.error.line}" if result.error.line else ""
        parts.append(f"error: {result.error.kind}{where}: {result.error.message}")
    parts.append("stdout:\n" + _clip(result.stdout) if result.stdout else "stdout: (empty)")
    if result.stderr:
        parts.append("stderr:\n" + _clip(result.stderr))
    refused = refusals(result)
    if refused:
        parts.append(refused.rstrip("\n"))
    return "\n".join(parts)


def refusals(result: RunResult) -> str:
    """One line per refused attempt: op, target, violation, reason."""
    return "".join(f"refused: {d.op} {d.target}: {d.violation} ({d.reason})\n" for d in result.denials)


async def run_for_model(sandbox: Sandbox, code: str, on_run: OnRun) -> str:
    """Run ``code`` (the GIL released, on a worker thread), hand the result
    to ``on_run``, and answer the model."""
    result = await sandbox.arun_python(code)
    if on_run is not None:
        on_run(result)
    return answer(result)
