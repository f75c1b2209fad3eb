"""A smolagents executor: each code action of a ``CodeAgent`` runs under
the grant.

    from sbx_wasm.providers.smolagents import SbxExecutor
    agent = CodeAgent(tools=[...], model=model, executor=SbxExecutor(caps))

Every action runs in a fresh interpreter, as every sbx-wasm run does. What
smolagents promises the model, that variables, functions and imports
persist between actions, is kept inside the wall: at the end of an action
the guest pickles its picklable variables into a folder of its own (a
write mount private to this executor, removed by ``cleanup()``), and the
next action's guest loads them; functions, classes and imports the earlier
actions defined are defined again from their source (never re-running the
rest of an action). The host never unpickles anything the guest wrote.

The agent's tools run on the host, reached from the guest through the gate
(``web_search(query=...)`` in the model's code is a gated, audited tool
call): the executor adds their names to the grant's tool allow-list, since
the developer gave them to the agent. ``final_answer`` ends the run as it
does with smolagents' own executors.
"""

from __future__ import annotations

import ast
import json
import os
import pickle
import secrets
import shutil
import tempfile
from typing import Any, Optional

from smolagents.local_python_executor import CodeOutput, PythonExecutor

from .._caps import Caps
from .._results import RunResult
from .._sandbox import Sandbox
from . import _clip, refusals

#: Where the guest keeps its variables between actions.
STATE = "/.sbx-agent-state"

#: smolagents' input types as JSON schema.
_TYPES = {
    "string": {"type": "string"},
    "boolean": {"type": "boolean"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "array": {"type": "array"},
    "object": {"type": "object"},
    "null": {"type": "null"},
}

# Runs in the guest around each action. The names it defines start with
# `_sbx` (not saved as variables); `final_answer` ends the action.
_PRELUDE = r'''
import ast as _sbx_ast, json as _sbx_json, pickle as _sbx_pickle, sys as _sbx_sys, types as _sbx_types

class FinalAnswerException(BaseException):
    def __init__(self, value):
        self.value = value

def final_answer(answer):
    raise FinalAnswerException(answer)

def _sbx_tool(_sbx_name, _sbx_params):
    def call(*args, **kwargs):
        import sbx
        kwargs.update(zip(_sbx_params, args))
        return getattr(sbx.tools, _sbx_name)(**kwargs)
    call.__name__ = _sbx_name
    return call

for _sbx_name, _sbx_params in _SBX_TOOLS:
    globals()[_sbx_name] = _sbx_tool(_sbx_name, _sbx_params)

for _sbx_src in _SBX_DEFS:
    try:
        exec(compile(_sbx_src, "<earlier action>", "exec"), globals())
    except Exception:
        pass

try:
    with open(_SBX_STATE + "/vars.pkl", "rb") as _sbx_f:
        _sbx_saved = _sbx_pickle.load(_sbx_f)
except (OSError, EOFError, _sbx_pickle.UnpicklingError):
    _sbx_saved = {}
for _sbx_k, _sbx_v in _sbx_saved.items():
    try:
        globals()[_sbx_k] = _sbx_pickle.loads(_sbx_v)
    except Exception:
        pass

_sbx_out = {"final": False, "value": None, "error": None}
_sbx_last = None
try:
    _sbx_tree = _sbx_ast.parse(_SBX_CODE, "<code>")
    if _sbx_tree.body and isinstance(_sbx_tree.body[-1], _sbx_ast.Expr):
        _sbx_e = _sbx_tree.body[-1]
        _sbx_tree.body[-1] = _sbx_ast.copy_location(
            _sbx_ast.Assign(targets=[_sbx_ast.Name("_sbx_last", ctx=_sbx_ast.Store())], value=_sbx_e.value), _sbx_e)
        _sbx_ast.fix_missing_locations(_sbx_tree)
    exec(compile(_sbx_tree, "<code>", "exec"), globals())
    _sbx_out["value"] = _sbx_last
except FinalAnswerException as _sbx_fa:
    _sbx_out["final"], _sbx_out["value"] = True, _sbx_fa.value
except BaseException as _sbx_err:
    import traceback as _sbx_tb
    _sbx_out["error"] = "".join(_sbx_tb.format_exception(_sbx_err)[-3:]).strip()

_sbx_keep = {}
for _sbx_k, _sbx_v in list(globals().items()):
    if _sbx_k.startswith("_") or _sbx_k in ("final_answer", "FinalAnswerException") or isinstance(_sbx_v, (_sbx_types.ModuleType, _sbx_types.FunctionType, type)):
        continue
    try:
        _sbx_keep[_sbx_k] = _sbx_pickle.dumps(_sbx_v)
    except Exception:
        pass
try:
    with open(_SBX_STATE + "/vars.pkl", "wb") as _sbx_f:
        _sbx_pickle.dump(_sbx_keep, _sbx_f)
except OSError:
    pass

try:
    _sbx_value = _sbx_json.dumps(_sbx_out["value"])
    _sbx_out["value"] = {"json": _sbx_out["value"]}
except (TypeError, ValueError):
    _sbx_out["value"] = {"repr": repr(_sbx_out["value"])}
_sbx_sys.stdout.flush()
print("\n" + _SBX_MARK + _sbx_json.dumps(_sbx_out))
'''


def _definitions(code: str) -> list[str]:
    """The imports, functions and classes ``code`` defines at top level,
    as source (what the next action must see again)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    out = []
    for node in tree.body:
        if isinstance(node, keep):
            segment = ast.get_source_segment(code, node)
            if segment:
                out.append(segment)
    return out


class SbxExecutor(PythonExecutor):
    """Runs a ``CodeAgent``'s actions under ``caps``. Give it to the agent
    as ``CodeAgent(..., executor=SbxExecutor(caps))``."""

    def __init__(self, caps: Caps, **sandbox_kw: Any):
        self.caps = caps
        self._sandbox_kw = sandbox_kw
        self._state = tempfile.mkdtemp(prefix="sbx-agent-state-")
        self._mark = "\x1esbx-final-" + secrets.token_hex(8) + ":"
        self._tools: list[tuple[str, list[str]]] = []
        self._defs: list[str] = []
        self._sandbox: Optional[Sandbox] = None
        self.runs: list[RunResult] = []

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._make_sandbox({})
        assert self._sandbox is not None
        return self._sandbox

    def _make_sandbox(self, tools: dict) -> None:
        caps = self.caps.with_write_mount(self._state, STATE)
        names = [n for n in tools if n != "final_answer"]
        if names:
            caps = caps.with_tools(names)
        sandbox = Sandbox(caps, **self._sandbox_kw)
        self._tools = []
        for name in names:
            tool = tools[name]
            inputs = getattr(tool, "inputs", {}) or {}
            props = {k: {**_TYPES.get(v.get("type"), {}), "description": v.get("description", "")} for k, v in inputs.items()}
            required = [k for k, v in inputs.items() if not v.get("nullable")]
            schema = {"type": "object", "properties": props, "required": required}
            sandbox.add_tool(_host_call(tool), name=name, description=getattr(tool, "description", ""), schema=schema)
            self._tools.append((name, list(inputs)))
        self._sandbox = sandbox

    # smolagents' executor interface -----------------------------------

    def send_tools(self, tools: dict) -> None:
        self._make_sandbox(tools)

    def send_variables(self, variables: dict) -> None:
        """Start the guest's variables with ``variables`` (those that
        pickle; pickled here, loaded only inside the guest)."""
        keep = {}
        for k, v in variables.items():
            try:
                keep[k] = pickle.dumps(v)
            except Exception:
                continue
        with open(os.path.join(self._state, "vars.pkl"), "wb") as f:
            pickle.dump(keep, f)

    def __call__(self, code_action: str) -> CodeOutput:
        source = (
            f"_SBX_TOOLS = {json.dumps(self._tools)}\n"
            f"_SBX_DEFS = {json.dumps(self._defs)}\n"
            f"_SBX_STATE = {json.dumps(STATE)}\n"
            f"_SBX_MARK = {json.dumps(self._mark)}\n"
            f"_SBX_CODE = {json.dumps(code_action)}\n" + _PRELUDE
        )
        result = self.sandbox.run_python(source)
        self.runs.append(result)
        self._defs.extend(_definitions(code_action))
        logs, sep, tail = result.stdout.rpartition("\n" + self._mark)
        refused = refusals(result)
        if not sep:
            # No verdict: the run ended early (a budget, cancellation).
            raise RuntimeError(
                f"the sandbox ended the action: {result.status}"
                + (f" ({result.violation})" if result.violation else "")
                + f"\n{_clip(result.stdout)}{_clip(result.stderr)}{refused}"
            )
        try:
            verdict = json.loads(tail.strip().splitlines()[0])
        except (ValueError, IndexError):
            raise RuntimeError(f"the action's result could not be read\n{_clip(logs)}") from None
        logs = _clip(logs + ("\n" if logs and not logs.endswith("\n") else "")) + refused
        if verdict.get("error"):
            raise RuntimeError(f"{logs}{verdict['error']}")
        value = verdict.get("value") or {}
        output = value["json"] if "json" in value else value.get("repr")
        return CodeOutput(output=output, logs=logs, is_final_answer=bool(verdict.get("final")))

    def cleanup(self) -> None:
        """Remove the guest's state folder."""
        shutil.rmtree(self._state, ignore_errors=True)

    def __del__(self) -> None:
        self.cleanup()


def _host_call(tool: Any):
    def call(**kwargs: Any) -> Any:
        return tool(**kwargs)

    return call
