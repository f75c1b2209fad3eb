"""``Sandbox``: runs under one grant, with its tools and warm runners."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Iterable, Optional, Union

from . import _native
from ._caps import Caps
from ._results import PlanResult, RunResult
from ._tools import BoundTool


class Cancel:
    """Ends a run from another thread or task: guest code within about
    10 ms, a guest waiting on I/O at once. The run's status is then
    ``cancelled``, with its report and audit so far."""

    __slots__ = ("_native",)

    def __init__(self) -> None:
        self._native = _native.NativeCancel()

    def cancel(self) -> None:
        self._native.cancel()

    @property
    def cancelled(self) -> bool:
        return self._native.cancelled()


@dataclass(frozen=True)
class Event:
    """Something a run did, as it happened.

    ``kind`` is ``stdout`` or ``stderr`` (``data``: the text, a whole line
    at a time), ``started`` (an allowed op's effect begins: ``data`` has
    ``seq``, ``op``, ``target``) or ``decision`` (``data``: the audit
    record as a dict).
    """

    kind: str
    data: Any


class RunStream:
    """A run's events as an async iterator; ``await stream.result()`` is
    its ``RunResult`` once the events end. Leaving the iteration early
    (``break``, or the task cancelled) cancels the run."""

    def __init__(self, start: Callable[..., Any], code: Any, kwargs: dict):
        self._events = _native.NativeEvents()
        self._cancel = kwargs.pop("cancel", None) or Cancel()
        self._start = start
        self._code = code
        self._kwargs = kwargs
        self._future: Optional[asyncio.Future] = None

    def _begin(self) -> None:
        if self._future is None:
            loop = asyncio.get_running_loop()
            self._future = loop.run_in_executor(
                None,
                lambda: self._start(self._code, cancel=self._cancel, _events=self._events, **self._kwargs),
            )

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Event]:
        self._begin()
        finished = False
        try:
            while True:
                got = await asyncio.to_thread(self._events.next, 0.25)
                if got is None:
                    finished = True
                    return
                kind, payload = got
                if kind == "idle":
                    continue
                if kind in ("stdout", "stderr"):
                    yield Event(kind, payload.decode("utf-8", "replace"))
                elif kind in ("decision", "started"):
                    yield Event(kind, json.loads(payload))
        finally:
            # A consumer that stopped early (break, an error, its task
            # cancelled) ends the run it no longer reads.
            if not finished and self._future is not None and not self._future.done():
                self._cancel.cancel()

    async def result(self) -> Any:
        """The run's result (waits for it to end)."""
        self._begin()
        assert self._future is not None
        return await self._future


class Sandbox:
    """Runs code under ``caps``.

    Each run is fresh: nothing of one run (files in its private ``/tmp``,
    memory, interpreter state) reaches the next; the grant's mounts are
    the only lasting state. Every sandbox of the process shares the
    engine and runners: each runner is compiled once per machine (the
    artifact cache), loaded once per process, and keeps one fresh instance
    ready, used by one run only, so a snippet starts with its own code.

    Runners are found where the command line finds them (``$SBX_WASM_PYTHON_RUNNER``,
    the user's runner folder ...) or built there at first use.
    """

    def __init__(
        self,
        caps: Caps,
        *,
        python_runner: Union[str, os.PathLike, None] = None,
        js_runner: Union[str, os.PathLike, None] = None,
    ):
        if not isinstance(caps, Caps):
            raise TypeError(f"caps must be a Caps, not {type(caps).__name__}")
        self.caps = caps
        self._tools: dict[str, BoundTool] = {}
        self._native = _native.NativeSandbox(
            caps._native,
            os.fspath(python_runner) if python_runner is not None else None,
            os.fspath(js_runner) if js_runner is not None else None,
        )

    # Tools ---------------------------------------------------------------

    def add_tool(
        self,
        fn: Callable,
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        schema: Optional[dict] = None,
    ) -> Callable:
        """Let guests call ``fn`` as the tool ``name`` (default: its
        ``__name__``), if the grant allows that name: ``sbx.tools.NAME(**args)``
        in Python, ``await tools.NAME({...})`` in JavaScript. Its arguments'
        JSON schema comes from the type hints; input that does not fit is
        refused before ``fn`` runs (``schema`` gives it by hand instead: an
        object schema of ``fn``'s keyword arguments). Returns ``fn``."""
        bound = BoundTool(fn, name=name, description=description, schema=schema)
        self._native.add_tool(bound.name, bound.description, json.dumps(bound.schema), bound.call, bound.check)
        self._tools[bound.name] = bound
        return fn

    def tool(self, fn: Optional[Callable] = None, *, name: Optional[str] = None, description: Optional[str] = None):
        """Decorator form of ``add_tool``."""
        if fn is None:
            return lambda f: self.add_tool(f, name=name, description=description)
        return self.add_tool(fn, name=name, description=description)

    def tool_definitions(self) -> list[dict]:
        """The tools a guest can reach (registered and allowed), with their
        schemas: what to show a model."""
        return json.loads(self._native.tool_definitions())

    def room_for_model(self) -> str:
        """The grant in words for a model: folders, origins, reachable
        tools, limits."""
        reachable = [d["name"] for d in self.tool_definitions()]
        return self.caps.room_for_model(reachable)

    # Runs ----------------------------------------------------------------

    def run_python(self, code: str, *, args: Iterable[str] = (), stdin: Optional[bytes] = None, cancel: Optional[Cancel] = None, _events: Any = None) -> RunResult:
        """Run Python source (as ``snippet.py``), blocking; the GIL is
        released while it runs."""
        return RunResult._from_native(self._native.run_python(_text(code, "code"), _call(args, stdin, cancel, _events)))

    def run_javascript(self, code: str, *, args: Iterable[str] = (), stdin: Optional[bytes] = None, cancel: Optional[Cancel] = None, _events: Any = None) -> RunResult:
        """Run JavaScript or TypeScript source (as ``snippet.ts``), blocking."""
        return RunResult._from_native(self._native.run_javascript(_text(code, "code"), _call(args, stdin, cancel, _events)))

    def run_wasm(self, path: Union[str, os.PathLike], *, args: Iterable[str] = (), stdin: Optional[bytes] = None, cancel: Optional[Cancel] = None, _events: Any = None) -> RunResult:
        """Run a WASI 0.2 component (``wasi:cli/run``), compiled once per
        file (again when it changes), blocking."""
        return RunResult._from_native(self._native.run_wasm(os.fspath(path), _call(args, stdin, cancel, _events)))

    def exec_plan(self, plan: Union[str, list], *, cancel: Optional[Cancel] = None, _events: Any = None) -> PlanResult:
        """Run a plan (a list of ops, or its JSON) through the gate: each op
        checked, then performed or refused, with no code at all."""
        text = plan if isinstance(plan, str) else json.dumps(plan)
        return PlanResult._from_native(self._native.exec_plan(text, _call((), None, cancel, _events)))

    async def arun_python(self, code: str, *, cancel: Optional[Cancel] = None, **kw: Any) -> RunResult:
        """``run_python`` from async code: on a worker thread, the GIL
        released; cancelling the awaiting task cancels the run."""
        return await _in_thread(self.run_python, code, cancel, kw)

    async def arun_javascript(self, code: str, *, cancel: Optional[Cancel] = None, **kw: Any) -> RunResult:
        return await _in_thread(self.run_javascript, code, cancel, kw)

    async def arun_wasm(self, path: Union[str, os.PathLike], *, cancel: Optional[Cancel] = None, **kw: Any) -> RunResult:
        return await _in_thread(self.run_wasm, path, cancel, kw)

    async def aexec_plan(self, plan: Union[str, list], *, cancel: Optional[Cancel] = None) -> PlanResult:
        return await _in_thread(self.exec_plan, plan, cancel, {})

    def stream_python(self, code: str, **kw: Any) -> RunStream:
        """Run Python and read its output and decisions as they happen::

            stream = sandbox.stream_python(code)
            async for event in stream:
                ...
            result = await stream.result()
        """
        return RunStream(self.run_python, code, kw)

    def stream_javascript(self, code: str, **kw: Any) -> RunStream:
        return RunStream(self.run_javascript, code, kw)

    def __repr__(self) -> str:
        return f"Sandbox({self.caps!r}, tools={sorted(self._tools)!r})"


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value


def _call(args: Iterable[str], stdin: Optional[bytes], cancel: Optional[Cancel], events: Any) -> dict:
    if isinstance(args, str):
        raise TypeError("args is a list of strings, not one string")
    args = [_text(a, "each argument") for a in args]
    if stdin is not None and not isinstance(stdin, (bytes, bytearray)):
        raise TypeError("stdin must be bytes")
    return {
        "args": args,
        "stdin": bytes(stdin) if stdin is not None else None,
        "cancel": cancel._native if cancel is not None else None,
        "events": events,
    }


async def _in_thread(fn: Callable, first: Any, cancel: Optional[Cancel], kw: dict) -> Any:
    cancel = cancel or Cancel()
    task = asyncio.ensure_future(asyncio.to_thread(fn, first, cancel=cancel, **kw))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        cancel.cancel()
        raise
