#!/usr/bin/env bash
# Row PYP: the Python package's warm `run_python("print(1)")` beside
# pyeryx (CPython in wasmtime, from PyPI), in one CPython 3.12+ interpreter
# (pyeryx's wheels need 3.12), alternating, plus each package's import time.
#
#   bash bench/python-package.sh [ROUNDS]
#
# Builds the wheel in release (maturin, from a venv kept in the bench's
# tools folder), installs it and pyeryx into a venv of their own (made once
# per requirements file), and prints the row. Skipped, with the reason,
# when no CPython 3.12 or later is found; pyeryx's column is skipped, with
# the reason, when it cannot be installed or started.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
tools="${SBX_BENCH_TOOLS:-$root/bench/.tools}"
rounds="${1:-300}"

python=""
for p in python3.14 python3.13 python3.12 python3; do
    if command -v "$p" >/dev/null && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
        python="$(command -v "$p")"; break
    fi
done
if [ -z "$python" ]; then
    echo "PYP  skipped: no CPython 3.12 or later on PATH (pyeryx's wheels need it)"
    exit 0
fi

key=$(cat "$here/python-package/requirements.txt" "$root/python/build-requirements.txt" | sha256sum | cut -c1-16)
venv="$tools/pyp-$key"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv.tmp"
    "$venv.tmp/bin/pip" install --quiet --disable-pip-version-check -r "$root/python/build-requirements.txt"
    "$venv.tmp/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: -r "$here/python-package/requirements.txt" \
        || echo "bench: pyeryx could not be installed; its column is skipped" >&2
    rm -rf "$venv" && mv "$venv.tmp" "$venv"
    # The venv's scripts name the folder they were made in: call the tools
    # through its python.
fi
echo "bench: building the Python package's wheel (release)" >&2
rm -rf "$root/target/wheels/pyp"
"$venv/bin/python" -m maturin build --quiet --release --manifest-path "$root/python/Cargo.toml" --out "$root/target/wheels/pyp" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$root"/target/wheels/pyp/*.whl
export SBX_WASM_PYTHON_RUNNER="${PYTHON_RUNNER:-$root/target/py/sbx-python.wasm}"
json=$(cd "$tools" && "$venv/bin/python" "$here/python-package/measure.py" "$rounds")
"$venv/bin/python" - "$json" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
ours = d["sbx_wasm"]
line = f"PYP  warm run_python('print(1)') from Python {d['python']}: sbx_wasm p50 {ours['p50_ms']} ms (p90 {ours['p90_ms']}), import {ours['import_ms']} ms"
if "pyeryx" in d:
    p = d["pyeryx"]
    line += f"; pyeryx p50 {p['p50_ms']} ms (p90 {p['p90_ms']}), import {p['import_ms']} ms; ratio {d['ratio']}x (goal: p50 <= 1 ms, import <= 50 ms)"
else:
    line += f"; pyeryx skipped: {d.get('pyeryx_skipped')}"
print(line)
PY
