"""Python callables as tools: reached only through the gate."""

import dataclasses
from typing import Literal, Optional

from conftest import grant
from sbx_wasm import Caps, Sandbox


def test_a_tool_is_called_with_typed_arguments_and_its_result_decoded(tree):
    sb = Sandbox(Caps.from_toml(grant(tree, '[tools]\nallow = ["lookup"]\n')))
    calls = []

    @dataclasses.dataclass
    class Hit:
        name: str
        score: float

    @sb.tool
    def lookup(query: str, limit: int = 2, mode: Literal["fast", "full"] = "fast") -> list:
        """Search the catalogue."""
        calls.append((query, limit, mode))
        return [dataclasses.asdict(Hit(f"{query}-{i}", i / 2)) for i in range(limit)]

    defs = sb.tool_definitions()
    assert defs[0]["name"] == "lookup" and defs[0]["description"] == "Search the catalogue."
    props = defs[0]["input_schema"]["properties"]
    assert props["query"] == {"type": "string"} and props["mode"]["enum"] == ["fast", "full"]
    r = sb.run_python("import sbx\nhits = sbx.tools.lookup(query='q', limit=3)\nprint(len(hits), hits[2]['name'])")
    assert r.ok and r.stdout == "3 q-2\n", r
    assert calls == [("q", 3, "fast")]
    assert any(a.op == "tool_call" and a.decision == "allowed" for a in r.audit)


def test_input_that_does_not_fit_never_reaches_the_function(tree):
    sb = Sandbox(Caps.from_toml(grant(tree, '[tools]\nallow = ["add"]\n')))
    calls = []

    @sb.tool
    def add(a: int, b: Optional[int] = None) -> int:
        calls.append((a, b))
        return a + (b or 0)

    code = """
import sbx
for args in ({'a': 'x'}, {'b': 1}, {'a': 1, 'c': 2}, {'a': True}):
    try:
        sbx.tools.add(**args); print('CALLED')
    except Exception as e:
        print('refused', type(e).__name__)
print(sbx.tools.add(a=1, b=2))
"""
    r = sb.run_python(code)
    assert r.stdout.count("refused") == 4 and "CALLED" not in r.stdout and r.stdout.endswith("3\n"), r
    assert calls == [(1, 2)]
    assert [d.violation for d in r.denials] == ["invalid_request"] * 4


def test_a_tool_the_grant_does_not_name_is_never_called(tree):
    sb = Sandbox(Caps.from_toml(grant(tree, '[tools]\nallow = ["shown"]\n')))
    called = []
    sb.add_tool(lambda: called.append("hidden") or "x", name="hidden")
    sb.add_tool(lambda: called.append("shown") or "y", name="shown")
    assert [d["name"] for d in sb.tool_definitions()] == ["shown"]
    r = sb.run_python("""
import sbx
try:
    sbx.call_tool('hidden', '{}'); print('CALLED')
except PermissionError:
    print('blocked')
print(sbx.call_tool('shown', '{}'))
""")
    assert r.stdout == "blocked\ny\n", r
    assert called == ["shown"]
    assert r.denials[0].violation == "tool_denied"


def test_a_tool_that_raises_is_a_failed_call_not_a_host_crash(tree):
    sb = Sandbox(Caps.from_toml(grant(tree, '[tools]\nallow = ["boom"]\n')))

    @sb.tool
    def boom() -> str:
        raise RuntimeError("the database is down")

    r = sb.run_python("""
import sbx
try:
    sbx.tools.boom()
except Exception as e:
    print('failed:', e)
""")
    assert r.ok and "the database is down" in r.stdout, r
