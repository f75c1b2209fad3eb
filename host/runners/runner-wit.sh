# What the script runners' builds share (sourced by python/build.sh and
# js/build.sh): the WIT a runner is built against.

# The WASI WIT folder of the host's own wasmtime-wasi (read from its crate
# source), so a runner never asks for a version the host lacks.
wasi_wit_dir() {
    local root="$1" dir
    dir="$(cargo metadata --format-version 1 --manifest-path "$root/host/Cargo.toml" 2>/dev/null \
        | python3 -c 'import json,sys,os
pkgs=json.load(sys.stdin)["packages"]
p=[p for p in pkgs if p["name"]=="wasmtime-wasi"][0]
print(os.path.join(os.path.dirname(p["manifest_path"]),"src","p2","wit","deps"))')"
    [ -d "$dir" ] || { echo "runner build: WASI WIT not found at $dir" >&2; return 1; }
    echo "$dir"
}

# The WASI version of that folder (its wasi:cli package), e.g. 0.2.12.
wasi_version() {
    sed -n 's/^package wasi:cli@\([0-9.]*\);.*/\1/p' "$1/cli.wit" | head -1
}

# stage_wit ROOT WASI_WIT RUNNER_WIT DEST: DEST made anew with the runner's
# world (@WASI@ in it written as the WASI version), the sbx:agent package
# (the host crate's wit/) and each WASI package, in the deps/ layout WIT tools read.
stage_wit() {
    local root="$1" wasi="$2" runner="$3" dest="$4" f name
    rm -rf "$dest"
    mkdir -p "$dest/deps/sbx-agent"
    sed "s/@WASI@/$(wasi_version "$wasi")/g" "$runner" > "$dest/$(basename "$runner")"
    cp "$root"/host/wit/*.wit "$dest/deps/sbx-agent/"
    for f in "$wasi"/*.wit; do
        name="$(basename "$f" .wit)"
        mkdir -p "$dest/deps/$name"
        cp "$f" "$dest/deps/$name/"
    done
}

# publish_runner FILE: FILE (a runner just built or found up to date) copied
# into the user's runner folder, where an sbx-wasm that sits beside no
# checkout (`cargo install`) finds it. Only a build's default runner goes
# there: a runner built with other packages (-o) never replaces it.
publish_runner() {
    local file="$1" dir
    dir="${XDG_CACHE_HOME:-$HOME/.cache}/sbx-wasm/runners"
    mkdir -p "$dir" 2>/dev/null || return 0
    cmp -s "$file" "$dir/$(basename "$file")" && return 0
    cp "$file" "$dir/.$(basename "$file").$$" && mv "$dir/.$(basename "$file").$$" "$dir/$(basename "$file")"
}
