import os
import pathlib

import pytest

import sbx_wasm
from sbx_wasm import Caps, CapsError, Sandbox, Secret


def test_relative_paths_resolve_against_the_file_folder_or_the_current_one(tmp_path, monkeypatch):
    (tmp_path / "conf" / "data").mkdir(parents=True)
    (tmp_path / "conf" / "data" / "f.txt").write_text("from the file's folder")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "f.txt").write_text("from the current folder")
    text = '[fs]\nread = [{ host = "data", guest = "/work" }]\n'
    (tmp_path / "conf" / "caps.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    code = "print(open('/work/f.txt').read())"
    from_file = Sandbox(Caps.from_file(tmp_path / "conf" / "caps.toml")).run_python(code)
    assert from_file.stdout.strip() == "from the file's folder"
    from_text = Sandbox(Caps.from_toml(text)).run_python(code)
    assert from_text.stdout.strip() == "from the current folder"
    from_dict = Sandbox(Caps.from_dict({"fs": {"read": [{"host": "data", "guest": "/work"}]}})).run_python(code)
    assert from_dict.stdout.strip() == "from the current folder"


def test_an_invalid_grant_is_a_caps_error_naming_the_key():
    with pytest.raises(CapsError, match="max_ops"):
        Caps.from_toml("[budget]\nmax_ops = -1\n")
    with pytest.raises(CapsError, match="nope"):
        Caps.from_dict({"nope": 1})
    with pytest.raises(CapsError, match="not plain data"):
        Caps.from_dict({"fs": object()})
    with pytest.raises(CapsError):
        Caps.from_file("/nonexistent/caps.toml")
    # Every error is an SbxError.
    assert issubclass(CapsError, sbx_wasm.SbxError)
    # The allowed neighbour: the same key with a valid value.
    assert Caps.from_toml("[budget]\nmax_ops = 5\n")


def test_a_secret_never_shows_its_value(server):
    value = "ghp_" + "s3cr3t" * 4
    caps = Caps.from_dict({"net": {"allow": [server.origin]}}).with_secret(
        "TOKEN", Secret(value), hosts=[server.origin], headers=["Authorization"]
    )
    assert value not in repr(caps) and value not in caps.to_toml()
    assert value not in repr(Secret(value)) and value not in str(Secret(value))
    assert caps.secret_names == ["TOKEN"]
    code = f"""
import sbx, urllib.request
token = sbx.secret("TOKEN")
print(token)
urllib.request.urlopen(urllib.request.Request("{server.origin}/x", headers={{"Authorization": "Bearer " + token}})).read()
"""
    r = Sandbox(caps).run_python(code)
    assert r.ok, r
    assert value not in r.stdout and value not in repr(r) and value not in str(r.audit)
    # The server received the real value, and only there.
    assert f"authorization: bearer {value}".lower() in [h.lower() for h in server.headers]
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(Secret(value))


def test_sandbox_takes_only_caps():
    with pytest.raises(TypeError):
        Sandbox("[fs]")


def test_the_package_reports_its_engine():
    d = sbx_wasm.diagnostics()
    assert d["allocator"] and "page_reset" in d
    assert sbx_wasm.__version__


def test_the_wheel_carries_its_type_information():
    root = pathlib.Path(sbx_wasm.__file__).parent
    assert (root / "py.typed").exists() and (root / "_native.pyi").exists()
    # Every class and function of the extension is in its stub.
    stub = (root / "_native.pyi").read_text()
    from sbx_wasm import _native

    for name in dir(_native):
        if not name.startswith("_"):
            assert f" {name}" in stub or f"{name}:" in stub, name
