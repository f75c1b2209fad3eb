"""The sandbox's two ways out, as Python functions.

`fetch` goes through the host's egress gate and `call_tool` through its tool
allow-list. A refusal by the grant raises `Denied`, whose `violation` is the
stable name the host's report uses (`egress_denied`, `tool_denied`,
`invalid_request`, ...); nothing was performed. An allowed call that failed
(network error, tool failure) raises `FetchError` or `ToolError`.
Hard limits (operations, output bytes, wall time, fuel, memory) are not
exceptions: the host halts the run.
"""

from componentize_py_types import Err
from wit_world.imports import net, tools, types

__all__ = ["Denied", "FetchError", "ToolError", "Response", "fetch", "call_tool", "granted_tools"]


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


def _raise(error, failure):
    if isinstance(error, types.Error_Denied):
        raise Denied(error.value.violation, error.value.message) from None
    raise failure(error.value) from None


def fetch(url, method="GET", headers=None, body=b""):
    """Perform an HTTP(S) request through the egress gate.

    `headers` is a dict or a list of pairs; `body` bytes or str.
    Raises `Denied` if the grant refuses it, `FetchError` if it fails.
    """
    if isinstance(body, str):
        body = body.encode()
    if headers is None:
        pairs = []
    elif isinstance(headers, dict):
        pairs = list(headers.items())
    else:
        pairs = list(headers)
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
    if not isinstance(input, str):
        import json

        input = json.dumps(input)
    try:
        return tools.call(name, input)
    except Err as e:
        _raise(e.value, ToolError)


def granted_tools():
    """The names of the tools the grant allows."""
    return list(tools.granted())
