"""Python callables as tools: a JSON schema from the type hints, and the
binding of a guest's JSON arguments to the signature before the call.

A guest reaches a tool only through the gate: allowed by name in the
grant, its input checked here (input that does not fit never reaches the
function), budgeted and audited. The function runs on the host, in this
interpreter, with the caller's privileges: register only what a model may
be trusted to ask for.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import types
import typing
from typing import Any, Callable, Optional

_PRIMITIVE = {str: "string", int: "integer", float: "number", bool: "boolean"}


def schema_of(tp: Any) -> dict:
    """The JSON schema of the type hint ``tp`` (the common ones: primitives,
    lists, dicts, Optional/Union, Literal, enums, dataclasses, TypedDicts,
    pydantic models)."""
    if tp is inspect.Parameter.empty or tp is Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    if tp in _PRIMITIVE:
        return {"type": _PRIMITIVE[tp]}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        inner = schema_of(args[0])
        for extra in args[1:]:
            if isinstance(extra, str):
                inner = {**inner, "description": extra}
        return inner
    if origin in (list, tuple, set, frozenset) or tp in (list, tuple, set, frozenset):
        items = schema_of(args[0]) if args and args[0] is not Ellipsis else {}
        return {"type": "array", "items": items} if items else {"type": "array"}
    if origin is dict or tp is dict:
        if len(args) == 2:
            return {"type": "object", "additionalProperties": schema_of(args[1])}
        return {"type": "object"}
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return {"anyOf": [schema_of(a) for a in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if hasattr(tp, "model_json_schema"):  # pydantic v2
        return tp.model_json_schema()
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _object({f.name: (f.type, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING) for f in dataclasses.fields(tp)}, typing.get_type_hints(tp))
    if isinstance(tp, type) and typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp)
        required = getattr(tp, "__required_keys__", set(hints))
        return _object({k: (v, k in required) for k, v in hints.items()}, hints)
    return {}


def _object(fields: dict, hints: dict) -> dict:
    props = {name: schema_of(hints.get(name, tp)) for name, (tp, _) in fields.items()}
    required = [name for name, (_, req) in fields.items() if req]
    out = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


def signature_schema(fn: Callable) -> dict:
    """The schema of ``fn``'s keyword arguments, from its hints."""
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn, include_extras=True)
    props: dict = {}
    required = []
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        props[name] = schema_of(hints.get(name, p.annotation))
        if p.default is inspect.Parameter.empty:
            required.append(name)
        else:
            try:
                json.dumps(p.default)
                props[name] = {**props[name], "default": p.default}
            except (TypeError, ValueError):
                pass
    out: dict = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = required
    return out


_CHECKERS = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list, "object": dict, "null": type(None)}


def _fits(value: Any, schema: dict) -> Optional[str]:
    """Why ``value`` does not fit ``schema`` (the subset ``schema_of``
    writes), or None."""
    if "anyOf" in schema:
        if any(_fits(value, s) is None for s in schema["anyOf"]):
            return None
        return "matches none of the allowed types"
    if "enum" in schema and value not in schema["enum"]:
        return f"must be one of {schema['enum']!r}"
    t = schema.get("type")
    if t in _CHECKERS:
        ok = isinstance(value, _CHECKERS[t])
        # JSON has no bool/int distinction Python would keep.
        if t in ("integer", "number") and isinstance(value, bool):
            ok = False
        if not ok:
            return f"must be {t}, not {type(value).__name__}"
        if t == "array" and "items" in schema:
            for i, v in enumerate(value):
                why = _fits(v, schema["items"])
                if why:
                    return f"[{i}] {why}"
    return None


class BoundTool:
    """A function with its schema: ``check`` and ``call`` are what the
    gate runs, each taking the guest's JSON text."""

    def __init__(
        self,
        fn: Callable,
        name: Optional[str] = None,
        description: Optional[str] = None,
        schema: Optional[dict] = None,
    ):
        if not callable(fn):
            raise TypeError(f"a tool must be callable, not {type(fn).__name__}")
        self.fn = fn
        self.name = name or fn.__name__
        self.description = description or inspect.getdoc(fn) or ""
        if schema is not None and (schema.get("type") != "object" or not isinstance(schema.get("properties", {}), dict)):
            raise ValueError("a tool's schema is a JSON object schema with `properties`")
        self.schema = schema if schema is not None else signature_schema(fn)
        self.schema.setdefault("properties", {})

    def _decode(self, text: str) -> dict:
        args = json.loads(text) if text.strip() else {}
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
        return args

    def check(self, text: str) -> Optional[str]:
        try:
            args = self._decode(text)
        except ValueError as e:
            return f"{self.name}: {e}"
        props = self.schema["properties"]
        for name in self.schema.get("required", []):
            if name not in args:
                return f"{self.name}: missing argument {name!r}"
        for name, value in args.items():
            if name not in props:
                return f"{self.name}: unknown argument {name!r}"
            why = _fits(value, props[name])
            if why:
                return f"{self.name}: argument {name!r} {why}"
        return None

    def call(self, text: str) -> str:
        out = self.fn(**self._decode(text))
        if inspect.isawaitable(out):
            out = _run_coroutine(out)
        if isinstance(out, str):
            return out
        if dataclasses.is_dataclass(out) and not isinstance(out, type):
            out = dataclasses.asdict(out)
        elif hasattr(out, "model_dump"):
            out = out.model_dump(mode="json")
        return json.dumps(out, default=str)


def _run_coroutine(coro: Any) -> Any:
    """An async tool's result: run on a loop of its own (the gate calls
    tools from the guest's thread, never from the caller's loop)."""
    import asyncio

    return asyncio.run(coro)
