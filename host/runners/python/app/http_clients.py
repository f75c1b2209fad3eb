"""The HTTP clients scripts already use, through the egress broker.

A script calls `urllib.request.urlopen`, `http.client.HTTPSConnection` or
`requests.get` and never `sbx.fetch`; the runner has no socket that reaches
the network and no TLS. Here each of those clients gets a connection whose
bytes go to `sbx.fetch` instead: the request the client wrote is parsed when
it is complete, sent through the host's gate (the same allow rules, secret
slots, per-hop redirect checks, output charging and audit as `sbx.fetch`),
and the response handed back as the HTTP/1.1 bytes a server would have sent,
so the client's own parser, cookies, redirects and errors work as usual.

- http.client: `HTTPConnection.connect` makes a broker connection, and
  `HTTPSConnection` exists (TLS is the host's: always verified, with the
  host's roots; a `context` argument is accepted and has no effect).
- urllib.request: through http.client, `HTTPSHandler` included.
- urllib3 and requests: the connection pool's `urlopen` goes to the broker
  (one attempt: the broker decides redirects hop by hop; `verify=False`
  does not turn verification off).
- httpx (in a runner built with it): its transports, sync and async, go
  to the broker (the async one blocks the event loop while it waits).
- Raw sockets: `connect` and `create_connection` raise PermissionError
  naming egress; name lookups raise `socket.gaierror` saying why.

A refusal raises `sbx.Denied` (a PermissionError whose `violation` is
`egress_denied`, `invalid_request`, ...) inside the client, which wraps it
in its own error type (`urllib.error.URLError`,
`requests.exceptions.ConnectionError`) with the denial's words in the
message. Nothing was sent.
"""

import contextlib
import errno
import http
import http.client
import io
import socket
import sys
import types

import sbx

# Headers a client writes for its connection, not for the server: the
# broker makes its own connection and sets these itself (and refuses them
# from a guest), so they are left out rather than refused.
_CONNECTION_HEADERS = {
    "connection", "keep-alive", "proxy-connection", "content-length",
    "transfer-encoding", "te", "trailer", "upgrade", "expect",
}

_NO_RAW_SOCKETS = (
    "egress_denied: the sbx sandbox has no raw network sockets; HTTP(S) goes "
    "through the host's egress broker (urllib.request, http.client, requests "
    "or sbx.fetch) to the origins the grant allows"
)


def _authority(scheme, host, port):
    """`host[:port]` as a URL writes it: IPv6 in brackets, the scheme's
    default port left out."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    return host if port in (None, default) else f"{host}:{port}"


def _same_authority(host_header, authority):
    """Whether a `Host` value names `authority` (which leaves out the
    scheme's default port; a client may write it)."""
    value = host_header.strip().lower()
    return authority.lower() in (value, value.removesuffix(":80"), value.removesuffix(":443"))


def _request_headers(pairs, authority):
    """The headers to hand the broker: connection headers dropped, and
    `Host` dropped when it names the URL's own authority (the broker sets
    it); any other `Host` is passed on, for the broker to refuse by name."""
    out = []
    for name, value in pairs:
        low = name.lower()
        if low in _CONNECTION_HEADERS:
            continue
        if low == "host" and _same_authority(value, authority):
            continue
        out.append((name, value))
    return out


def _reason(status):
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def exchange(method, url, headers, body):
    """Send one request through the broker; return `(status, reason,
    headers, body)` with the body as the server sent it (still encoded, as
    `Content-Encoding` says). Raises `sbx.Denied` or `sbx.FetchError`."""
    r = sbx.fetch(url, method=method, headers=headers, body=body)
    return r.status, _reason(r.status), r.headers, r.body


def _response_headers(method, headers, body):
    """The response's headers for the client: the body's length in
    `Content-Length` (the broker has read and de-chunked it), every other
    header as the server sent it, `Set-Cookie` repeats included. A HEAD
    response keeps the server's length (its body is not sent)."""
    out = []
    for name, value in headers:
        low = name.lower()
        if low == "transfer-encoding" or (low == "content-length" and method != "HEAD"):
            continue
        out.append((name, value))
    if method != "HEAD":
        out.append(("Content-Length", str(len(body))))
    return out


def _response_bytes(method, status, reason, headers, body):
    """The response as the HTTP/1.1 bytes a server would have sent."""
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines += [f"{name}: {value}" for name, value in _response_headers(method, headers, body)]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape")
    return head + body


class _Incomplete(Exception):
    """More bytes are needed before the request is whole."""


def _body_end(buf, start, headers):
    """Where the body that begins at `start` ends, by the framing the
    request's headers declare; raises _Incomplete until it is all here."""
    length = None
    chunked = False
    for name, value in headers:
        low = name.lower()
        if low == "content-length":
            length = int(value.strip())
        elif low == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    if chunked:
        pos, parts = start, []
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                raise _Incomplete
            size = int(bytes(buf[pos:eol]).split(b";")[0].strip() or b"0", 16)
            pos = eol + 2
            if size == 0:
                # Trailers (ignored) up to an empty line.
                end = buf.find(b"\r\n\r\n", pos - 2)
                if end < 0:
                    raise _Incomplete
                return end + 4, b"".join(parts)
            if len(buf) < pos + size + 2:
                raise _Incomplete
            parts.append(bytes(buf[pos:pos + size]))
            pos += size + 2
    end = start + (length or 0)
    if len(buf) < end:
        raise _Incomplete
    return end, bytes(buf[start:end])


def _take_request(buf):
    """The first whole request in `buf` as `(method, target, headers,
    body, consumed)`, or None while it is incomplete."""
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    lines = bytes(buf[:head_end]).decode("iso-8859-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise OSError(errno.EPROTO, f"not an HTTP request line: {lines[0][:80]!r}")
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise OSError(errno.EPROTO, f"not an HTTP header line: {line[:80]!r}")
        headers.append((name.strip(), value.strip()))
    try:
        end, body = _body_end(buf, head_end + 4, headers)
    except _Incomplete:
        return None
    except ValueError as e:
        raise OSError(errno.EPROTO, f"bad request framing: {e}") from None
    return parts[0], parts[1], headers, body, end


class BrokerSocket:
    """What an HTTP client writes to and reads from in place of a TCP
    connection to `scheme://host:port`: each whole request it writes goes
    through the broker, and the response waits to be read. Requests on one
    connection are sent one after another, as keep-alive would."""

    def __init__(self, scheme, host, port, timeout=None):
        self.scheme = scheme
        self.authority = _authority(scheme, host, port)
        self._out = bytearray()
        self._in = bytearray()
        self._timeout = timeout
        self._closed = False

    # The socket calls clients make on a connection; none reaches the host.
    def settimeout(self, timeout):
        self._timeout = timeout

    def gettimeout(self):
        return self._timeout

    def setblocking(self, flag):
        pass

    def setsockopt(self, *args):
        pass

    def shutdown(self, how):
        pass

    def close(self):
        self._closed = True

    def fileno(self):
        return -1

    def sendall(self, data):
        if self._closed:
            raise OSError(errno.EBADF, "the connection is closed")
        self._out += memoryview(data).cast("B")
        while (request := _take_request(self._out)) is not None:
            method, target, headers, body, used = request
            del self._out[:used]
            if target.startswith(("http://", "https://")):
                url = target  # absolute form, as to a proxy: the broker goes direct
            else:
                url = f"{self.scheme}://{self.authority}{target}"
            status, reason, rheaders, rbody = exchange(
                method, url, _request_headers(headers, self.authority), body
            )
            self._in += _response_bytes(method, status, reason, rheaders, rbody)

    def send(self, data):
        self.sendall(data)
        return len(data)

    def recv(self, n):
        data = bytes(self._in[:n])
        del self._in[:n]
        return data

    def makefile(self, mode="rb", buffering=None, **kwargs):
        # The responses written so far, for the client's reader; a later
        # request's response goes to the next reader made.
        data = bytes(self._in)
        self._in.clear()
        return io.BufferedReader(io.BytesIO(data))


class _HostTLS:
    """Stands where an `ssl.SSLContext` would: TLS is the broker's, on the
    host, always verified. Settings made on it have no effect."""

    check_hostname = True
    post_handshake_auth = None


def _connect(self):
    """HTTPConnection.connect: a broker connection. A tunnel (a proxy's
    CONNECT) is not made: the broker reaches the tunnel's host itself."""
    host, port = self.host, self.port
    if self._tunnel_host:
        host, port = self._tunnel_host, self._tunnel_port
    self.sock = BrokerSocket(self._broker_scheme, host, port, self.timeout)


class HTTPSConnection(http.client.HTTPConnection):
    """http.client's HTTPS connection, through the broker."""

    default_port = http.client.HTTPS_PORT
    _broker_scheme = "https"

    def __init__(self, host, port=None, *, timeout=socket._GLOBAL_DEFAULT_TIMEOUT,
                 source_address=None, context=None, blocksize=8192, **_tls_options):
        super().__init__(host, port, timeout, source_address, blocksize=blocksize)
        self._context = context if context is not None else _HostTLS()


def _no_raw_connect(self, address):
    raise PermissionError(errno.EACCES, _NO_RAW_SOCKETS)


def _no_create_connection(address, *args, **kwargs):
    raise PermissionError(errno.EACCES, _NO_RAW_SOCKETS)


def _no_lookup(*args, **kwargs):
    raise socket.gaierror(
        socket.EAI_FAIL,
        "name lookup is not available in the sbx sandbox: the host's egress "
        "broker resolves and checks each origin (urllib.request, http.client, "
        "requests or sbx.fetch)",
    )


def _no_socket(self, *args, **kwargs):
    raise PermissionError(errno.EACCES, _NO_RAW_SOCKETS)


def refuse_sockets():
    """Making a socket raises PermissionError naming egress (the host
    refuses one anyway). While the runner is built this also keeps a socket
    out of the snapshot: urllib3 probes for IPv6 at import, and a socket
    made then would be a WASI handle no run has, so every later socket call
    would trap on it. Such probes take the error as "no"."""
    socket.socket.__init__ = _no_socket


def install_http_client():
    """Patch http.client and socket. Must run before urllib.request is
    first imported: it defines its HTTPS handler only when http.client has
    an HTTPSConnection."""
    assert "urllib.request" not in sys.modules, "urllib.request imported too early"
    http.client.HTTPConnection._broker_scheme = "http"
    http.client.HTTPConnection.connect = _connect
    http.client.HTTPSConnection = HTTPSConnection
    http.client._create_https_context = lambda http_version: _HostTLS()
    if "HTTPSConnection" not in http.client.__all__:
        http.client.__all__.append("HTTPSConnection")
    socket.socket.connect = _no_raw_connect
    socket.socket.connect_ex = _no_raw_connect
    socket.create_connection = _no_create_connection
    socket.getaddrinfo = _no_lookup
    socket.gethostbyname = _no_lookup
    socket.gethostbyname_ex = _no_lookup
    socket.gethostbyaddr = _no_lookup


def install_urllib3():
    """Patch urllib3's pools (and so requests), when it is bundled."""
    pools = sys.modules.get("urllib3.connectionpool")
    if pools is None:
        return
    import urllib3
    from urllib3.exceptions import ProtocolError

    def urlopen(self, method, url, body=None, headers=None, retries=None,
                redirect=True, assert_same_host=True, timeout=None,
                pool_timeout=None, release_conn=None, chunked=False,
                body_pos=None, preload_content=True, decode_content=True,
                **response_kw):
        scheme = self.scheme or "http"
        authority = _authority(scheme, self.host, self.port)
        full = url if url.startswith(("http://", "https://")) else f"{scheme}://{authority}{url}"
        data = _body_bytes(body)
        pairs = list((headers or self.headers or {}).items())
        try:
            status, reason, rheaders, rbody = exchange(
                method, full, _request_headers(pairs, authority), data
            )
        except OSError as e:
            raise ProtocolError(str(e), e) from None
        raw = http.client.HTTPResponse(_Replay(
            _response_bytes(method, status, reason, rheaders, rbody)), method=method)
        raw.begin()
        return urllib3.response.HTTPResponse(
            body=raw, headers=urllib3.HTTPHeaderDict(raw.msg.items()),
            status=raw.status, version=raw.version, version_string="HTTP/1.1",
            reason=raw.reason, preload_content=preload_content,
            decode_content=decode_content, original_response=raw,
            request_method=method, request_url=full,
            retries=retries if isinstance(retries, urllib3.Retry) else None,
        )

    pools.HTTPConnectionPool.urlopen = urlopen
    adapters = sys.modules.get("requests.adapters")
    if adapters is not None:
        # The CA bundle is the host's: the file requests looks for is not
        # in the sandbox (looking would be a denied probe of the host).
        adapters.HTTPAdapter.cert_verify = lambda self, conn, url, verify, cert: None


def _body_bytes(body):
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if hasattr(body, "read"):
        data = body.read()
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return b"".join(c.encode("utf-8") if isinstance(c, str) else bytes(c) for c in body)


class _Replay:
    """A socket that only replays one response, for http.client's parser."""

    def __init__(self, data):
        self._data = data

    def makefile(self, mode="rb", buffering=None, **kwargs):
        return io.BufferedReader(io.BytesIO(self._data))


# --- httpx ------------------------------------------------------------------

# Packages that import `ssl` at the top for its names alone (annotations,
# except clauses) and use TLS only through the transports patched here.
_IMPORT_SSL_FOR_NAMES = {"httpx", "httpcore", "anyio"}


class _NoTLSHere(OSError):
    pass


def _import_only_ssl():
    """An `ssl` with the names those packages read while they are
    imported, and nothing that does TLS. It is in sys.modules only while
    one of them is imported into the runner: a script's `import ssl`
    still fails, saying why."""
    ssl = types.ModuleType("ssl", "Names only, for importing httpx: TLS is the broker's.")

    class SSLContext:
        def __init__(self, *args, **kwargs):
            raise _NoTLSHere("there is no TLS inside the runner: https goes through the broker")

    ssl.SSLContext = SSLContext
    for name in ("SSLError", "SSLSyscallError", "SSLWantReadError", "SSLWantWriteError"):
        setattr(ssl, name, type(name, (_NoTLSHere,), {}))
    return ssl


@contextlib.contextmanager
def ssl_names_for(module):
    """While `module` is imported at build time, if it is one of the
    packages above, let its `import ssl` find the names it reads."""
    if module.split(".")[0] not in _IMPORT_SSL_FOR_NAMES or "ssl" in sys.modules:
        yield
        return
    sys.modules["ssl"] = _import_only_ssl()
    try:
        yield
    finally:
        del sys.modules["ssl"]


def _httpx_exchange(httpx, request):
    body = request.read()
    pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
    authority = request.url.netloc.decode("ascii")
    try:
        status, reason, headers, data = exchange(
            request.method, str(request.url), _request_headers(pairs, authority), body
        )
    except OSError as e:
        raise httpx.ConnectError(str(e), request=request) from e
    return httpx.Response(
        status, headers=_response_headers(request.method, headers, data),
        stream=httpx.ByteStream(data), request=request,
        extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason.encode("ascii", "replace")},
    )


def install_httpx():
    """Patch httpx's transports, when it is bundled: no connection pool
    (and no TLS context) is made, each request goes to the broker."""
    httpx = sys.modules.get("httpx")
    if httpx is None:
        return

    def init(self, *args, **kwargs):
        pass

    def handle_request(self, request):
        return _httpx_exchange(httpx, request)

    async def handle_async_request(self, request):
        # Read the (async) body first; the exchange itself blocks the loop.
        await request.aread()
        return _httpx_exchange(httpx, request)

    async def aclose(self):
        pass

    def enter(self):
        return self

    def exit(self, *exc):
        pass

    async def aenter(self):
        return self

    async def aexit(self, *exc):
        pass

    httpx.HTTPTransport.__enter__ = enter
    httpx.HTTPTransport.__exit__ = exit
    httpx.AsyncHTTPTransport.__aenter__ = aenter
    httpx.AsyncHTTPTransport.__aexit__ = aexit
    httpx.HTTPTransport.__init__ = init
    httpx.HTTPTransport.handle_request = handle_request
    httpx.HTTPTransport.close = lambda self: None
    httpx.AsyncHTTPTransport.__init__ = init
    httpx.AsyncHTTPTransport.handle_async_request = handle_async_request
    httpx.AsyncHTTPTransport.aclose = aclose
