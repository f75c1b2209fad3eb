"""The smolagents executor, driving a real CodeAgent with a scripted
model (the code a model would write; no network model)."""

import os

import pytest

pytest.importorskip("smolagents")

from smolagents import CodeAgent, tool  # noqa: E402
from smolagents.models import ChatMessage, MessageRole, Model  # noqa: E402

from conftest import fingerprint, grant  # noqa: E402
from sbx_wasm import Caps  # noqa: E402
from sbx_wasm.providers.smolagents import SbxExecutor  # noqa: E402


class Scripted(Model):
    def __init__(self, replies):
        super().__init__(model_id="scripted")
        self.replies = list(replies)

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kw):
        return ChatMessage(role=MessageRole.ASSISTANT, content=self.replies.pop(0))


def test_a_code_agent_runs_its_actions_in_the_sandbox_with_state_kept_inside(tree):
    looked_up = []

    @tool
    def lookup(word: str) -> str:
        """Look a word up.

        Args:
            word: the word.
        """
        looked_up.append(word)
        return word.upper()

    model = Scripted(
        [
            "Thought: read.\n<code>\nimport json\ndef double(n):\n    return 2 * n\nrows = open('/work/a.txt').read().splitlines()\nprint(len(rows))\n</code>",
            "Thought: use what I had.\n<code>\nword = lookup(word='q3')\ntry:\n    open('/etc/passwd')\nexcept OSError:\n    print('blocked')\nprint(double(len(rows)), word)\n</code>",
            "Thought: oops.\n<code>\n1/0\n</code>",
            "Thought: done.\n<code>\nfinal_answer(json.dumps({'n': double(len(rows)), 'w': word}))\n</code>",
        ]
    )
    executor = SbxExecutor(Caps.from_toml(grant(tree)))
    agent = CodeAgent(tools=[lookup], model=model, executor=executor, max_steps=6, verbosity_level=0)
    before = fingerprint(tree)
    answer = agent.run("How many rows, doubled?")
    assert answer == '{"n": 4, "w": "Q3"}'
    steps = agent.memory.steps[1:]
    assert "2\n" in steps[0].observations
    assert steps[1].error is None, steps[1].error.message
    assert "blocked" in steps[1].observations and "4 Q3" in steps[1].observations
    assert "refused: fs_read /etc/passwd: fs_read_denied" in steps[1].observations
    assert "ZeroDivisionError" in steps[2].error.message
    assert looked_up == ["q3"]
    assert fingerprint(tree) == before
    # Every action was a run of its own, with the tool call through the gate.
    assert len(executor.runs) == 4
    assert any(a.op == "tool_call" and a.decision == "allowed" for a in executor.runs[1].audit)
    state = executor._state
    assert os.path.isdir(state)
    agent.cleanup()
    assert not os.path.exists(state)
