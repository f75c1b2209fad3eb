#!/usr/bin/env bash
# Runs the official WASI test suite against sbx-wasm, and against the same
# wasmtime's CLI side by side when `wasmtime` of the host's version is on
# PATH (else that column is skipped, saying so). The suite is read from the
# folder given (a checkout of github.com/WebAssembly/wasi-testsuite's
# prebuilt tests: its `prod/testsuite-base` branch); nothing of it is kept
# here. Its own runner (`run-tests`) runs each test with the runtime
# adapter beside this script, which grants each test what it needs.
#
#   bash scripts/wasi-conformance/run.sh SUITE_DIR
#
# $PYTHON names a Python 3.12 or later for the suite's runner if python3
# is older.
#
# Prints each runtime's results; the per-test JSON goes to
# target/wasi-conformance/. The p1 tests are core modules, wrapped into
# components first by wrap/ (built once into the user's cache folder).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
[ $# -eq 1 ] || { echo "usage: run.sh SUITE_DIR" >&2; exit 2; }
suite="$(realpath "$1")"
[ -f "$suite/run-tests" ] || { echo "conformance: $suite holds no run-tests (the suite's prebuilt tests)" >&2; exit 2; }
cache="${XDG_CACHE_HOME:-$HOME/.cache}/sbx-wasm"
out="$root/target/wasi-conformance"
mkdir -p "$out"

(cd "$root" && cargo build --quiet --release -p sbx-wasm-cli)
export SBX_WASM="$root/target/release/sbx-wasm"
CARGO_TARGET_DIR="$cache/conformance-target" \
    cargo build --quiet --release --locked --manifest-path "$here/wrap/Cargo.toml"
export SBX_WRAP_P1="$cache/conformance-target/release/sbx-wrap-p1"
export SBX_CONFORMANCE_WORK="$out/work"
rm -rf "$SBX_CONFORMANCE_WORK"

# The runner needs Python 3.12 or later, and its own dependencies, in a
# venv of their own (once).
py=""
for c in ${PYTHON:-} python3 python3.14 python3.13 python3.12; do
    if command -v "$c" >/dev/null && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
        py="$c"; break
    fi
done
[ -n "$py" ] || { echo "conformance: the suite's runner needs Python 3.12 or later" >&2; exit 1; }
venv="$cache/conformance-venv-$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[ -x "$venv/bin/python" ] || { "$py" -m venv "$venv" && "$venv/bin/pip" install --quiet colorama requests; }

status=0
echo "== sbx-wasm $("$SBX_WASM" --version | cut -d' ' -f2)"
(cd "$suite" && "$venv/bin/python" run-tests --disable-colors -r "$here/sbx_wasm_adapter.py" \
    --json-output-location "$out/sbx-wasm.json") | tee "$out/sbx-wasm.txt" || status=1
want="$(cd "$root" && cargo metadata --format-version 1 --locked 2>/dev/null \
    | python3 -c 'import json,sys; print([p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="wasmtime"][0])')"
if command -v wasmtime >/dev/null && wasmtime --version | grep -q " $want "; then
    echo "== wasmtime $want"
    (cd "$suite" && "$venv/bin/python" run-tests --disable-colors -r "$suite/adapters/wasmtime.py" \
        --json-output-location "$out/wasmtime.json") | tee "$out/wasmtime.txt" || true
else
    echo "== wasmtime $want: skipped (no \`wasmtime\` $want on PATH)"
fi
exit "$status"
