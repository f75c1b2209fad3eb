"""A runtime adapter for the WASI test suite's own runner (its
`run-tests -r ADAPTER`): each test runs under `sbx-wasm run` (or, for the
`wasi:http/service` world, `sbx-wasm serve`) with the grant the test needs
and no more: its `root` folder as a write mount at `/`, its environment
variables in `[env]`, and, where the suite started HTTP servers for it
(`HTTP_SERVER_*` in the environment), an egress rule for each. A grant is
written per test into a work folder ($SBX_CONFORMANCE_WORK).

$SBX_WASM names the sbx-wasm binary (default: `sbx-wasm` on PATH). The
suite's p1 tests are core modules and sbx-wasm runs components: each is
wrapped first by $SBX_WRAP_P1 (`wrap/`, wasmtime's own preview 1 adapter)
into $SBX_CONFORMANCE_WORK, never beside the suite's files (its runner
takes every `.wasm` there for a test)."""

import hashlib
import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Tuple

SBX = shlex.split(os.getenv("SBX_WASM", "sbx-wasm"))
WORK = Path(os.getenv("SBX_CONFORMANCE_WORK", "/tmp/sbx-conformance"))
WRAP = os.getenv("SBX_WRAP_P1", "sbx-wrap-p1")


def get_name() -> str:
    return "sbx-wasm"


def get_version() -> str:
    out = subprocess.run(SBX + ["--version"], encoding="UTF-8", capture_output=True, check=True)
    return out.stdout.split()[1]


def get_wasi_versions() -> List[str]:
    return ["wasm32-wasip1", "wasm32-wasip3"]


def get_wasi_worlds() -> List[str]:
    return ["wasi:cli/command", "wasi:http/service"]


def get_timeout_seconds() -> float:
    return 120.0


def _toml_string(s: str) -> str:
    # A JSON string is a TOML basic string (quotes, backslashes, control
    # characters escaped alike).
    return json.dumps(s, ensure_ascii=False)


# What a sockets test gets: its own loopback listeners and peers, TCP and
# UDP, on both families, and nothing off this machine.
SOCKETS_ALLOW = ["tcp://127.0.0.1:*", "tcp://[::1]:*", "udp://127.0.0.1:*", "udp://[::1]:*"]
SOCKETS_LISTEN = ["127.0.0.1:*", "[::1]:*"]


def _caps(env: Dict[str, str], root: Optional[str], sockets: bool) -> str:
    lines = []
    if root:
        host = os.path.abspath(root)
        lines += ["[fs]", f"write = [{{ host = {_toml_string(host)}, guest = \"/\" }}]"]
    servers = sorted(v for k, v in env.items() if k.startswith("HTTP_SERVER_"))
    rules = [f"http://{s}" for s in servers] + (SOCKETS_ALLOW if sockets else [])
    if rules:
        allow = ", ".join(_toml_string(r) for r in rules)
        lines += ["[net]", f"allow = [{allow}]"]
        if sockets:
            listen = ", ".join(_toml_string(r) for r in SOCKETS_LISTEN)
            lines.append(f"listen = [{listen}]")
    if env:
        lines.append("[env]")
        lines += [f"{_toml_string(k)} = {_toml_string(v)}" for k, v in sorted(env.items())]
    lines += ["[budget]", "max_wall_ms = 100000"]
    return "\n".join(lines) + "\n"


def compute_argv(test_path: str,
                 args_env_root: Tuple[List[str], Dict[str, str], Optional[str]],
                 proposals: List[str],
                 wasi_world: str,
                 wasi_version: str) -> List[str]:
    args, env, root = args_env_root
    text = _caps(env, root, "sockets" in proposals)
    key = hashlib.sha256((test_path + text).encode()).hexdigest()[:16]
    WORK.mkdir(parents=True, exist_ok=True)
    caps = WORK / f"{key}.toml"
    caps.write_text(text)
    component = test_path
    if wasi_version == "wasm32-wasip1":
        component = str(WORK / (hashlib.sha256(test_path.encode()).hexdigest()[:16] + ".wasm"))
        if not os.path.exists(component):
            subprocess.run([WRAP, test_path, component], check=True)
    # Compiled ahead: a service's first line on stderr must be its address.
    # (One it refuses is refused again by the run, which says why.)
    subprocess.run(SBX + ["compile", component], check=False, capture_output=True)
    if wasi_world == "wasi:http/service":
        return SBX + ["serve", "--caps", str(caps), "--addr", "127.0.0.1:0", component]
    return SBX + ["run", "--caps", str(caps), component, "--"] + list(args)
