#!/usr/bin/env bash
# Builds app.js into a wasi:http/proxy component with componentize-js as
# the npm registry ships it (default features: StarlingMonkey's own fetch
# over wasi:http), against the wasi:http WIT of the host's wasmtime-wasi-http.
#
#   bash tests/components/js_fetch/build.sh TOOLS OUT.wasm
#
# TOOLS is the folder holding node_modules of the JS runner's pinned build
# tools (host/runners/js/build.sh installs it into the user's cache).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
tools="$1"
out="$2"
http_wit="$(cargo metadata --format-version 1 --manifest-path "$root/host/Cargo.toml" 2>/dev/null \
    | python3 -c 'import json,sys,os
pkgs=json.load(sys.stdin)["packages"]
p=[p for p in pkgs if p["name"]=="wasmtime-wasi-http"][0]
print(os.path.join(os.path.dirname(p["manifest_path"]),"wit","deps"))')"
# The WASI 0.2 version StarlingMonkey was built against (its exports name
# it); the host links any 0.2 at or below its own.
engine="$tools/node_modules/@bytecodealliance/componentize-js/lib/starlingmonkey_embedding.wasm"
version="$(grep -ao 'wasi:http/incoming-handler@0\.2\.[0-9]*' "$engine" | head -1 | sed 's/.*@//')"
[ -n "$version" ] || { echo "js_fetch: cannot read the engine's WASI version" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/wit"
printf 'package test:app;\n\nworld app {\n  include wasi:http/proxy@%s;\n}\n' "$version" > "$work/wit/app.wit"
for f in "$http_wit"/*.wit; do
    name="$(basename "$f" .wit)"
    mkdir -p "$work/wit/deps/$name"
    # Every 0.2 version past the engine's (the packages' own and their
    # feature gates) written as the engine's.
    V="$version" P="${version##*.}" perl -pe 's/\b0\.2\.(\d+)\b/$1 > $ENV{P} ? $ENV{V} : $&/ge' "$f" \
        > "$work/wit/deps/$name/$name.wit"
done
cp "$here/app.js" "$work/app.js"
# Relative paths: componentize-js reads its inputs from inside its own WASI
# sandbox, which sees the current folder only.
(cd "$work" && "$tools/node_modules/.bin/componentize-js" app.js -w wit -n app -o app.wasm)
mv "$work/app.wasm" "$out"
