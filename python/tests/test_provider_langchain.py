"""The LangChain tool, called through LangChain's own tool-call path: a
chat model's tool call in, a ToolMessage out."""

import asyncio

import pytest

pytest.importorskip("langchain_core")

from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import BaseTool  # noqa: E402

from conftest import fingerprint, grant  # noqa: E402
from sbx_wasm import Caps, Sandbox  # noqa: E402
from sbx_wasm.providers.langchain import python_tool  # noqa: E402


def call(tool, code, id="call-1"):
    msg = AIMessage(content="", tool_calls=[{"name": "run_python", "args": {"code": code}, "id": id}])
    return tool.invoke(msg.tool_calls[0])


def test_a_model_tool_call_runs_in_the_sandbox_and_a_refusal_is_an_answer(tree):
    runs = []
    tool = python_tool(Sandbox(Caps.from_toml(grant(tree))), on_run=runs.append)
    assert isinstance(tool, BaseTool)
    assert "/work" in tool.description and tool.args["code"]["type"] == "string"
    before = fingerprint(tree)
    ok = call(tool, "print(open('/work/a.txt').read().count('Q3'))")
    assert isinstance(ok, ToolMessage) and ok.tool_call_id == "call-1"
    assert "status: completed" in ok.content and "stdout:\n1\n" in ok.content
    denied = call(tool, "open('/work/../canary.txt').read()", id="call-2")
    assert "refused: fs_read" in denied.content and "error: " in denied.content
    assert fingerprint(tree) == before
    assert [r.ok for r in runs] == [True, False]


def test_the_tool_runs_from_async_code(tree):
    tool = python_tool(Sandbox(Caps.from_toml(grant(tree))))
    out = asyncio.run(tool.ainvoke({"code": "print(6*7)"}))
    assert "42" in out
