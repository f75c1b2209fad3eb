"""The OpenAI Agents SDK tool, called by an Agent run with the SDK's own
ScriptedModel (no network model)."""

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from conftest import fingerprint, grant  # noqa: E402
from sbx_wasm import Caps, Sandbox  # noqa: E402
from sbx_wasm.providers.openai_agents import python_tool  # noqa: E402


def test_a_run_calls_the_sandbox_and_reads_refusals(tree, monkeypatch):
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    model = ScriptedModel(
        [
            [function_call("run_python", {"code": "print(len(open('/work/a.txt').read()))"}, call_id="c1")],
            [function_call("run_python", {"code": "open('/work/a.txt', 'w').write('x')"}, call_id="c2")],
            [assistant_message("done")],
        ]
    )
    runs = []
    tool = python_tool(Sandbox(Caps.from_toml(grant(tree))), on_run=runs.append)
    before = fingerprint(tree)
    result = Runner.run_sync(Agent(name="analyst", model=model, tools=[tool]), "how long is a.txt?")
    assert result.final_output == "done"
    outputs = [i for i in model.last_call.input if isinstance(i, dict) and i.get("type") == "function_call_output"]
    assert "stdout:\n22\n" in outputs[0]["output"]
    assert "refused: fs_write /work/a.txt: fs_write_denied" in outputs[1]["output"]
    assert fingerprint(tree) == before
    assert [r.ok for r in runs] == [True, False]
