"""sbx-wasm for Python: run untrusted, model-written code under a
capability grant, in this process.

    from sbx_wasm import Caps, Sandbox

    caps = Caps.from_toml('''
    [fs]
    read = [{ host = "data", guest = "/work" }]
    ''')
    result = Sandbox(caps).run_python("print(open('/work/a.txt').read())")
    print(result.stdout, result.denials)

The guest sees only the folders the grant mounts, reaches the network
only through its egress rules and tools only through its allow-list, and
runs within its budgets. A refused operation is a value (``result.denials``),
never an exception of the host's.
"""

from ._native import (
    CapacityError,
    CapsError,
    LoadError,
    PlanError,
    SbxError,
    __version__,
)
from ._caps import Caps, Secret
from ._results import AuditRecord, Denial, OpResult, PlanResult, RunResult, ScriptError
from ._sandbox import Cancel, Event, RunStream, Sandbox


def build_runner(language: str = "python") -> str:
    """Build a runner (``"python"`` or ``"javascript"``) from the sources
    the library carries into the user's runner folder (tens of seconds,
    once per machine; a first run does it too). Returns its path."""
    from . import _native

    return _native.build_runner(language)


def diagnostics() -> dict:
    """The engine's facts: allocator, page reset, fuel, cache folder."""
    import json

    from . import _native

    return json.loads(_native.diagnostics())


__all__ = [
    "AuditRecord",
    "Cancel",
    "CapacityError",
    "Caps",
    "CapsError",
    "Denial",
    "Event",
    "LoadError",
    "OpResult",
    "PlanError",
    "PlanResult",
    "RunResult",
    "RunStream",
    "Sandbox",
    "SbxError",
    "ScriptError",
    "Secret",
    "build_runner",
    "diagnostics",
    "__version__",
]
