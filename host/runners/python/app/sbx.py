"""The sandbox's ways out, as Python functions.

`fetch` goes through the host's egress gate, `call_tool` through its tool
allow-list, and `kv_get`, `kv_put`, `kv_delete`, `kv_list` reach the run's
key-value store (when the grant holds one: `[kv]`). A refusal by the grant raises `Denied`, whose `violation` is the
stable name the host's report uses (`egress_denied`, `tool_denied`,
`invalid_request`, ...); nothing was performed. An allowed call that failed
(network error, tool failure) raises `FetchError` or `ToolError`.
Hard limits (operations, output bytes, wall time, fuel, memory) are not
exceptions: the host halts the run.
"""

from componentize_py_types import Err
from wit_world.imports import kv, net, types
from wit_world.imports import tools as _tools

# The world's file interface (sbx:agent/fs) has no functions here: Python's
# own open() and os reach the same mounts through WASI (`process_env` uses
# its `disk-space`). Its bindings are imported all the same, into the
# snapshot: componentize-py loads every interface's module as it builds,
# after the runner's import hook is up.
from wit_world.imports import fs as _fs  # noqa: F401

__all__ = [
    "Denied", "FetchError", "ToolError", "KvError", "Response", "fetch", "call_tool",
    "granted_tools", "tool_definitions", "tools", "kv_get", "kv_put", "kv_delete", "kv_list",
]


class Denied(PermissionError):
    """The grant does not allow this call; nothing was performed."""

    def __init__(self, violation: str, message: str):
        super().__init__(f"{violation}: {message}")
        self.violation = violation
        self.message = message


class FetchError(OSError):
    """The request was allowed and failed (DNS, connect, TLS, timeout...)."""


class ToolError(RuntimeError):
    """The tool was allowed and failed."""


class KvError(LookupError):
    """The key-value call was allowed and failed (no such key)."""


class Response:
    """An HTTP response: `status`, `headers` (list of pairs), `body` (bytes)."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def text(self, encoding="utf-8"):
        return self.body.decode(encoding, errors="replace")

    def json(self):
        import json

        return json.loads(self.body)

    def header(self, name):
        """The first value of header `name` (case-insensitive), or None."""
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def __repr__(self):
        return f"<Response {self.status}, {len(self.body)} bytes>"


def _text(value, what):
    """`value` if it is a str, else a TypeError naming `what`: a wrong type
    must be Python's error, never a crash of the runner at the host
    boundary."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value


def _raise(error, failure):
    if isinstance(error, types.Error_Denied):
        raise Denied(error.value.violation, error.value.message) from None
    raise failure(error.value) from None


def fetch(url, method="GET", headers=None, body=b""):
    """Perform an HTTP(S) request through the egress gate.

    `headers` is a dict or a list of pairs; `body` bytes or str.
    Raises `Denied` if the grant refuses it, `FetchError` if it fails.
    """
    url = _text(url, "url")
    method = _text(method, "method")
    if body is None:
        body = b""
    elif isinstance(body, str):
        body = body.encode()
    elif not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError(f"body must be bytes or str, not {type(body).__name__}")
    if headers is None:
        items = []
    elif isinstance(headers, dict):
        items = list(headers.items())
    else:
        try:
            items = [tuple(pair) for pair in headers]
        except TypeError:
            raise TypeError("headers must be a dict or a list of (name, value) pairs") from None
    pairs = []
    for item in items:
        if len(item) != 2:
            raise TypeError("headers must be a dict or a list of (name, value) pairs")
        pairs.append((_text(item[0], "a header name"), _text(item[1], f"header {item[0]!r}")))
    try:
        r = net.fetch(net.Request(method=method, url=url, headers=pairs, body=bytes(body)))
    except Err as e:
        _raise(e.value, FetchError)
    return Response(r.status, r.headers, r.body)


def call_tool(name, input=""):
    """Call host tool `name` with `input` (JSON text by convention; a dict or
    list is encoded as JSON). Returns the tool's output text.
    Raises `Denied` if the tool is not granted, `ToolError` if it fails.
    """
    name = _text(name, "the tool name")
    if not isinstance(input, str):
        import json

        try:
            input = json.dumps(input)
        except (TypeError, ValueError) as e:
            raise TypeError(f"input must be a str or JSON-serialisable: {e}") from None
    try:
        return _tools.call(name, input)
    except Err as e:
        _raise(e.value, ToolError)


def granted_tools():
    """The names of the tools a call can reach (allowed by the grant and
    provided by the host)."""
    return list(_tools.granted())


def tool_definitions():
    """What a model is told of each tool `granted_tools()` lists: dicts with
    `name`, `description` and `input_schema` (the JSON schema of its input,
    as a dict)."""
    import json

    return [
        {"name": d.name, "description": d.description, "input_schema": json.loads(d.input_schema)}
        for d in _tools.definitions()
    ]


class _Tools:
    """The host's tools as functions: `sbx.tools.search(query="x")` (or
    `sbx.tools["my-tool"]({...})`) calls the tool with its arguments as a
    JSON object and returns its result decoded: JSON as Python values,
    other text as str. Raises `Denied` for a tool off the grant's list,
    `ToolError` when the tool fails. `call_tool` is the same with the
    result's text as it is."""

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self[name]

    def __getitem__(self, name):
        name = _text(name, "the tool name")

        def call(args=None, /, **kwargs):
            if args is not None and kwargs:
                raise TypeError("give the arguments as one dict or as keywords, not both")
            out = call_tool(name, args if args is not None else kwargs)
            import json

            try:
                return json.loads(out)
            except ValueError:
                return out

        call.__name__ = call.__qualname__ = name
        return call

    def __dir__(self):
        return granted_tools()

    def __repr__(self):
        return f"<sbx.tools: {', '.join(granted_tools())}>"


tools = _Tools()


def secret(name):
    """The placeholder of the grant's secret `name` (from the caps file's
    `[secrets]`). Send it in a header the secret is bound to, to a host it
    is bound to, and the host puts the value in its place; the value itself
    never reaches this script. Raises KeyError if the grant has no such
    secret.
    """
    import os

    name = _text(name, "the secret's name")
    try:
        return os.environ[name]
    except KeyError:
        raise KeyError(f"the grant has no secret {name!r}") from None


def kv_get(key, default=None):
    """The value (bytes) at `key` in the run's key-value store, or `default`
    when there is none. Raises `Denied` without a `[kv]` grant."""
    key = _text(key, "the key")
    try:
        return kv.get(key)
    except Err as e:
        if isinstance(e.value, types.Error_Failed):
            return default
        _raise(e.value, KvError)


def kv_put(key, value):
    """Set `key` to `value` (bytes, or a str stored as UTF-8). Raises
    `Denied` without a `[kv]` grant, or when the store would pass its
    `max_keys` or `max_bytes`."""
    key = _text(key, "the key")
    if isinstance(value, str):
        value = value.encode()
    if not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"value must be bytes or str, not {type(value).__name__}")
    try:
        kv.put(key, bytes(value))
    except Err as e:
        _raise(e.value, KvError)


def kv_delete(key):
    """Remove `key`. Raises `KvError` if there is no such key."""
    key = _text(key, "the key")
    try:
        kv.delete(key)
    except Err as e:
        _raise(e.value, KvError)


def kv_list(prefix=""):
    """The keys starting with `prefix`, sorted."""
    prefix = _text(prefix, "the prefix")
    try:
        return list(kv.list(prefix))
    except Err as e:
        _raise(e.value, KvError)
