"""The corpus's hostile scripts through the package: every attempt
refused, the host tree and a canary beside it unchanged, no connection to
a server the grant does not name."""

import os
import pathlib
import shutil

import pytest

from conftest import fingerprint
from sbx_wasm import Caps, Sandbox

CORPUS = pathlib.Path(os.environ.get("SBX_TEST_CORPUS", "")) if os.environ.get("SBX_TEST_CORPUS") else None
HOSTILE = sorted(p for p in CORPUS.glob("hostile_*.py")) if CORPUS else []


def test_the_corpus_is_there():
    assert len(HOSTILE) >= 6, "SBX_TEST_CORPUS names no hostile scripts"


@pytest.mark.parametrize("script", HOSTILE, ids=lambda p: p.stem)
def test_a_hostile_script_is_contained(script, tmp_path, server, other_server):
    shutil.copytree(CORPUS / "data", tmp_path / "work")
    (tmp_path / "out").mkdir()
    (tmp_path / "canary.txt").write_text("untouched\n")
    caps = Caps.from_dict(
        {
            "fs": {
                "read": [{"host": "work", "guest": "/work"}],
                "write": [{"host": "out", "guest": "/work/out"}],
            },
            "net": {"allow": [server.origin]},
        },
        base=tmp_path,
    )
    source = script.read_text().replace("127.0.0.1:8999", f"127.0.0.1:{server.port}").replace("127.0.0.1:8998", f"127.0.0.1:{other_server.port}")
    before = fingerprint(tmp_path)
    r = Sandbox(caps).run_python(source)
    lines = r.stdout.splitlines()
    assert r.ok, r
    assert lines and all(l.startswith("blocked") and not l.endswith("False") for l in lines), r.stdout
    assert fingerprint(tmp_path) == before
    assert other_server.connections == 0
    if "socket" not in script.name and "subprocess" not in script.name:
        assert r.denials, "no denial on record"
