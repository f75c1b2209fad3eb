"""Fixtures for the package's tests: real folders, a real HTTP server on
127.0.0.1 that counts its connections, and the tree's fingerprint.

The Rust harness (tests/tests/python_package.rs) runs this suite against
a wheel installed in a fresh virtual environment and points it at the
built runners and guests with environment variables.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import pathlib
import threading

import pytest


class Server:
    """An HTTP server on 127.0.0.1: answers ``ok`` (``/redirect-to/HOST:PORT/PATH``:
    a 302 there) and counts connections."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[str] = []
        self.headers: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def setup(self) -> None:
                outer.connections += 1
                super().setup()

            def _answer(self) -> None:
                outer.requests.append(f"{self.command} {self.path}")
                outer.headers.extend(f"{k}: {v}" for k, v in self.headers.items())
                n = int(self.headers.get("content-length") or 0)
                if n:
                    self.rfile.read(n)
                if self.path.startswith("/redirect-to/"):
                    # A granted origin that sends the client elsewhere.
                    self.send_response(302)
                    self.send_header("location", "http://" + self.path[len("/redirect-to/"):])
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                body = b"ok\n"
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = _answer

            def log_message(self, *a) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


@pytest.fixture
def other_server():
    s = Server()
    yield s
    s.close()


def fingerprint(root: pathlib.Path) -> dict:
    """Every path under ``root`` with its kind and the SHA-256 of its bytes."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_dir():
            out[rel] = ("dir",)
        else:
            out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
    return out


@pytest.fixture
def tree(tmp_path: pathlib.Path) -> pathlib.Path:
    """``data/`` (for a read mount) with a file, ``out/`` (for a write
    mount), and a canary beside them that no grant names."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("quarter,revenue\nQ3,42\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "canary.txt").write_text("untouched\n")
    return tmp_path


def grant(tree: pathlib.Path, extra: str = "") -> str:
    return (
        "[fs]\n"
        f'read = [{{ host = "{tree / "data"}", guest = "/work" }}]\n'
        f'write = [{{ host = "{tree / "out"}", guest = "/work/out" }}]\n' + extra
    )


def guest(name: str) -> pathlib.Path:
    p = pathlib.Path(os.environ["SBX_TEST_GUESTS"]) / f"{name}.wasm"
    assert p.exists(), p
    return p
