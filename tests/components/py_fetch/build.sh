#!/usr/bin/env bash
# Builds app.py into a wasi:http client command component with
# componentize-py as PyPI ships it (the version the Python runner pins),
# against the WASI and wasi:http WIT of the host's own crates.
#
#   bash tests/components/py_fetch/build.sh OUT.wasm
#
# componentize-py goes into a virtual environment beside OUT (made once:
# the tests build into a folder of the user's cache, keyed by the inputs).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="$(realpath "$1")"
version="$(sed -n 's/^componentize_py_version="\(.*\)"$/\1/p' "$root/host/runners/python/build.sh")"
[ -n "$version" ] || { echo "py_fetch: no componentize-py version in the runner's build" >&2; exit 1; }
venv="$(dirname "$out")/venv"
[ -x "$venv/bin/componentize-py" ] || {
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "componentize-py==$version"
}
http_wit="$(cargo metadata --format-version 1 --manifest-path "$root/host/Cargo.toml" 2>/dev/null \
    | python3 -c 'import json,sys,os
pkgs=json.load(sys.stdin)["packages"]
p=[p for p in pkgs if p["name"]=="wasmtime-wasi-http"][0]
print(os.path.join(os.path.dirname(p["manifest_path"]),"wit","deps"))')"
v="$(sed -n 's/^package wasi:http@\([0-9.]*\);.*/\1/p' "$http_wit/http.wit" | head -1)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/wit/deps"
for f in "$http_wit"/*.wit; do
    name="$(basename "$f" .wit)"
    mkdir -p "$work/wit/deps/$name"
    cp "$f" "$work/wit/deps/$name/"
done
printf 'package test:app;\n\nworld app {\n  include wasi:cli/imports@%s;\n  import wasi:http/outgoing-handler@%s;\n  export wasi:cli/run@%s;\n}\n' \
    "$v" "$v" "$v" > "$work/wit/app.wit"
cp "$here/app.py" "$work/app.py"
"$venv/bin/componentize-py" --quiet -d "$work/wit" -w app componentize -p "$work" app -o "$out"
