"""The Pydantic AI toolset, called by an Agent driven by Pydantic AI's own
FunctionModel (the code the model would write, no network model)."""

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import FunctionModel  # noqa: E402

from conftest import fingerprint, grant  # noqa: E402
from sbx_wasm import Caps, Sandbox  # noqa: E402
from sbx_wasm.providers.pydantic_ai import python_toolset  # noqa: E402


def scripted(*codes):
    """A model that runs each of ``codes`` in turn, then answers with
    every tool return it saw."""

    def model(messages, info):
        assert [t.name for t in info.function_tools] == ["run_python"]
        returns = [p.content for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if len(returns) < len(codes):
            return ModelResponse(parts=[ToolCallPart("run_python", {"code": codes[len(returns)]})])
        return ModelResponse(parts=[TextPart("\n---\n".join(returns))])

    return FunctionModel(model)


def test_the_agent_runs_model_code_in_the_sandbox(tree):
    runs = []
    agent = Agent(scripted("print(open('/work/a.txt').read().count(','))", "open('/etc/shadow')"), toolsets=[python_toolset(Sandbox(Caps.from_toml(grant(tree))), on_run=runs.append)])
    before = fingerprint(tree)
    out = agent.run_sync("count the commas").output
    first, second = out.split("\n---\n")
    assert "status: completed" in first and "stdout:\n2\n" in first
    assert "refused: fs_read /etc/shadow: fs_read_denied" in second
    assert fingerprint(tree) == before
    assert [r.ok for r in runs] == [True, False]
