#!/usr/bin/env bash
# Builds the Python runner component: CPython inside a WASI 0.2 command
# component of the sbx world, made by componentize-py (pinned below).
#
#   bash guest-examples/python/build.sh    ->  target/py/sbx-python.wasm
#
# Everything lives in the project's build folder (target/py): a virtual
# environment for componentize-py, the staged WIT, the component. Nothing is
# installed globally. A rebuild happens only when an input changed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/target/py"
componentize_py_version="0.25.1"
mkdir -p "$out"

venv="$out/venv"
if [ ! -x "$venv/bin/componentize-py" ] \
    || [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("componentize-py"))' 2>/dev/null)" != "$componentize_py_version" ]; then
    echo "python runner: installing componentize-py $componentize_py_version into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "componentize-py==$componentize_py_version"
fi

# The WASI packages are the ones the host's wasmtime-wasi implements, read
# from its crate source so the runner never asks for a version the host lacks.
wasi_wit="$(cargo metadata --format-version 1 --manifest-path "$root/host/Cargo.toml" 2>/dev/null \
    | python3 -c 'import json,sys,os
pkgs=json.load(sys.stdin)["packages"]
p=[p for p in pkgs if p["name"]=="wasmtime-wasi"][0]
print(os.path.join(os.path.dirname(p["manifest_path"]),"src","p2","wit","deps"))')"
[ -d "$wasi_wit" ] || { echo "python runner: WASI WIT not found at $wasi_wit" >&2; exit 1; }

stamp="$( (cat "$here/build.sh" "$here/requirements.txt" "$here/wit/runner.wit" "$root"/wit/*.wit "$here"/app/*.py; ls "$wasi_wit"; echo "$componentize_py_version") | sha256sum | cut -d' ' -f1)"
if [ -f "$out/sbx-python.wasm" ] && [ "$(cat "$out/sbx-python.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "python runner: up to date ($out/sbx-python.wasm)" >&2
    exit 0
fi

wit="$out/wit"
rm -rf "$wit"
mkdir -p "$wit/deps/sbx-agent"
cp "$here/wit/runner.wit" "$wit/"
cp "$root"/wit/*.wit "$wit/deps/sbx-agent/"
for f in "$wasi_wit"/*.wit; do
    name="$(basename "$f" .wit)"
    mkdir -p "$wit/deps/$name"
    cp "$f" "$wit/deps/$name/"
done

# The bundled pure-Python packages (requirements.txt, pinned by hash).
pylib="$out/pylib"
rm -rf "$pylib"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes -r "$here/requirements.txt" --target "$pylib"

echo "python runner: building with componentize-py $componentize_py_version" >&2
"$venv/bin/componentize-py" --quiet -d "$wit" -w sbx:python/runner \
    componentize -p "$here/app" -p "$pylib" runner -o "$out/sbx-python.wasm.tmp"
mv "$out/sbx-python.wasm.tmp" "$out/sbx-python.wasm"
echo "$stamp" > "$out/sbx-python.stamp"
echo "python runner: $out/sbx-python.wasm ($(du -h "$out/sbx-python.wasm" | cut -f1))" >&2
