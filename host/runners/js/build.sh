#!/usr/bin/env bash
# Builds the JavaScript runner component: StarlingMonkey (SpiderMonkey as a
# WASI 0.2 component) with the runner's own modules pre-initialised in,
# made by componentize-js, a command component of the sbx world.
#
#   bash host/runners/js/build.sh            ->  target/js/sbx-js.wasm
#   bash host/runners/js/build.sh -o OUT.wasm
#   bash host/runners/js/build.sh --tools    ->  prints the build tools' folder
#                                                (installed first if need be)
#
# Every tool comes from the npm registry, pinned by package-lock.json
# (componentize-js with its StarlingMonkey engine and wizer, esbuild,
# sucrase) and installed with `npm ci --ignore-scripts` into the user's
# cache folder by the lock's hash: nothing is downloaded from elsewhere, no
# install script runs, and weval (which componentize-js lists) is never
# called (no ahead-of-time compilation).
#
# The runner is kept by the hash of its inputs in the user's cache folder
# too, so a fresh clone with the same inputs copies it instead of building
# it; a changed input is a new hash, never a stale runner. Nothing is
# written into the source tree but target/ (or $SBX_WASM_JS_BUILD_DIR).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="${SBX_WASM_JS_BUILD_DIR:-$root/target/js}"
target="$out/sbx-js.wasm"
publish=1
tools_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        -o) target="$2"; publish=0; shift 2 ;;
        --tools) tools_only=1; shift ;;
        *) echo "usage: build.sh [-o OUT.wasm | --tools]" >&2; exit 2 ;;
    esac
done
command -v node >/dev/null && command -v npm >/dev/null || {
    echo "js runner: node and npm are needed to build the runner (Node.js 20 or later)" >&2
    exit 1
}

# The build tools, by the lock's hash: one install per lock, shared by
# every clone. Sets $tools.
install_tools() {
    local cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/sbx-wasm" lock_hash tmp
    lock_hash="$(sha256sum "$here/package-lock.json" | cut -c1-16)"
    tools="$cache_root/npm/js-runner-$lock_hash"
    if [ ! -d "$tools/node_modules" ]; then
        echo "js runner: installing the build tools (npm ci, pinned) into $tools" >&2
        tmp="$tools.tmp.$$"
        rm -rf "$tmp"
        mkdir -p "$tmp"
        cp "$here/package.json" "$here/package-lock.json" "$tmp/"
        (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --silent)
        mv "$tmp" "$tools" 2>/dev/null || rm -rf "$tmp"
    fi
}
if [ "$tools_only" = 1 ]; then
    install_tools
    echo "$tools"
    exit 0
fi

# The WASI packages are the ones the host's wasmtime-wasi implements, as
# for the Python runner.
. "$here/../runner-wit.sh"
# The default runner, once made or found up to date, is also the user's.
trap 'status=$?; [ "$status" -ne 0 ] || [ "$publish" = 0 ] || publish_runner "$target"; exit "$status"' EXIT
wasi_wit="$(wasi_wit_dir "$root")"
wasi_version="$(wasi_version "$wasi_wit")"

stamp="$( (cat "$here/build.sh" "$here/../runner-wit.sh" "$here/package-lock.json" "$here/wit/runner.wit" "$root"/host/wit/*.wit "$here"/app/*.js; echo "$wasi_wit"; ls "$wasi_wit") | sha256sum | cut -d' ' -f1)"
if [ -f "$target" ] && [ "$(cat "$target.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "js runner: up to date ($target)" >&2
    exit 0
fi
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/sbx-wasm"
cache="${SBX_WASM_RUNNER_CACHE_JS:-$cache_root/js-runners}"
mkdir -p "$(dirname "$target")"
if [ -f "$cache/$stamp.wasm" ]; then
    cp "$cache/$stamp.wasm" "$target.tmp"
    mv "$target.tmp" "$target"
    echo "$stamp" > "$target.stamp"
    echo "js runner: from the cache ($cache/$stamp.wasm)" >&2
    exit 0
fi

started=$SECONDS
install_tools
work="$out/build"
rm -rf "$work"
stage_wit "$root" "$wasi_wit" "$here/wit/runner.wit" "$work/wit"

echo "js runner: building with componentize-js (StarlingMonkey); under a minute" >&2
# One module: the runner's files and sucrase, bundled; the WIT imports stay
# imports, for componentize-js to bind. The WASI version the imports name
# is the host's (app/wasi.js holds it as @WASI@).
mkdir -p "$work/app"
cp "$here"/app/*.js "$work/app/"
sed -i "s/@WASI@/$wasi_version/g" "$work/app/wasi.js"
NODE_PATH="$tools/node_modules" "$tools/node_modules/.bin/esbuild" "$work/app/runner.js" \
    --bundle --keep-names --format=esm --platform=neutral --main-fields=module,main --log-level=warning \
    --external:'wasi:*' --external:'sbx:*' --outfile="$work/runner.bundle.js"
# From the work folder, with relative paths: componentize-js reads the WIT
# from inside its own WASI sandbox, which sees the current folder only.
# Without http and fetch-event, StarlingMonkey imports no wasi:http; the
# runner's fetch is its own, over sbx:agent/net.
(cd "$work" && "$tools/node_modules/.bin/componentize-js" runner.bundle.js \
    -w wit -n runner -d http -d fetch-event -o runner.wasm)
mv "$work/runner.wasm" "$target"
echo "$stamp" > "$target.stamp"
if mkdir -p "$cache" 2>/dev/null && cp "$target" "$cache/$stamp.wasm.tmp" 2>/dev/null; then
    mv "$cache/$stamp.wasm.tmp" "$cache/$stamp.wasm"
fi
echo "js runner: $target ($(du -h "$target" | cut -f1), built in $((SECONDS - started)) s)" >&2
