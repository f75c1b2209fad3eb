#!/usr/bin/env bash
# Builds the sbx-wasm server image with buildah, from scratch: no Docker
# engine and no base image from a registry. (`deploy/Dockerfile` is the same
# image for machines with a Docker engine and Docker Hub.)
#
#   bash deploy/build-image.sh [--check]     ->  target/image/sbx-wasm-0.1.0.oci.tar
#
# The image holds the release binary, the C libraries it links (glibc's
# loader, libc, libm, libgcc_s: nothing else, no shell, no package
# manager), the Python and JavaScript runners beside the binary (found
# there, no flag needed), and the runners already compiled into a
# read-only artifact cache (/opt/sbx-wasm/cache, its key beside it), so a
# container's first run_python is not a compile. It runs as uid 10001, and
# works with a read-only root file system: the cache is only read (a
# component it lacks is compiled in memory), and what is written goes to
# the volumes at /scratch and /audit (deploy/kubernetes/).
#
# --check then runs the image's binary the way a runtime would, with the
# image's root mounted read-only and as uid 10001 (unshare + chroot; no
# engine needed): `--version`, a Python script and a TypeScript one under
# an empty grant, and prints the image's size and the first run's time.
#
# Needs: buildah (apt-get install buildah), run as root (its storage is
# vfs, so no overlay support is needed), and what quick start 1 needs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
check=0
[ "${1:-}" = "--check" ] && check=1
export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -1)"
out="$root/target/image"
mkdir -p "$out"

echo "== release binary and the runners"
cargo build --release --locked -p sbx-wasm-cli --manifest-path "$root/Cargo.toml"
bash "$root/host/runners/python/build.sh"
bash "$root/host/runners/js/build.sh"
bin="$root/target/release/sbx-wasm"

echo "== the image's root"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
# proc/, dev/ and sys/ are where a runtime mounts its own.
mkdir -p "$stage/usr/local/bin" "$stage/etc" "$stage/opt/sbx-wasm" "$stage/scratch" "$stage/audit" "$stage/tmp" \
    "$stage/proc" "$stage/dev" "$stage/sys" "$stage/work"
cp "$bin" "$stage/usr/local/bin/sbx-wasm"
cp "$root/target/py/sbx-python.wasm" "$root/target/js/sbx-js.wasm" "$stage/usr/local/bin/"
# The binary's shared libraries, as the loader resolves them here.
for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
    mkdir -p "$stage$(dirname "$lib")"
    cp -L "$lib" "$stage$lib"
done
printf 'root:x:0:0::/:/nonexistent\nsbx:x:10001:10001::/nonexistent:/nonexistent\n' > "$stage/etc/passwd"
printf 'root:x:0:\nsbx:x:10001:\n' > "$stage/etc/group"
# The runners compiled for this engine into the image's cache, with the
# paths they have in the image (the cache keys them by content as well).
for runner in sbx-python.wasm sbx-js.wasm; do
    SBX_WASM_CACHE_DIR="$stage/opt/sbx-wasm/cache" SBX_WASM_CACHE_KEY="$stage/opt/sbx-wasm/cache.key" \
        "$bin" compile "$stage/usr/local/bin/$runner"
done
chmod 1777 "$stage/tmp"

echo "== buildah commit"
ctr="$(buildah from scratch)"
trap 'rm -rf "$stage"; buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
# buildah copy makes what it copies root's unless told otherwise: the
# cache (which must be its user's) and the volumes' mount points are 10001's.
buildah copy --quiet "$ctr" "$stage" / >/dev/null
for dir in opt/sbx-wasm scratch audit; do
    buildah copy --quiet --chown 10001:10001 "$ctr" "$stage/$dir" "/$dir" >/dev/null
done
buildah config \
    --user 10001:10001 \
    --env SBX_WASM_CACHE_DIR=/opt/sbx-wasm/cache \
    --env SBX_WASM_CACHE_KEY=/opt/sbx-wasm/cache.key \
    --port 8765 \
    --entrypoint '["/usr/local/bin/sbx-wasm"]' \
    --cmd '["mcp", "--caps", "/etc/sbx/caps.toml", "--http", "0.0.0.0:8765", "--token-file", "/etc/sbx-token/token", "--session-scratch", "--scratch-root", "/scratch", "--audit", "/audit/audit.jsonl"]' \
    --label "org.opencontainers.image.title=sbx-wasm" \
    --label "org.opencontainers.image.version=$version" \
    "$ctr"
image="sbx-wasm:$version"
buildah commit --quiet --rm "$ctr" "$image" >/dev/null
archive="$out/sbx-wasm-$version.oci.tar"
rm -f "$archive"
buildah push --quiet "$image" "oci-archive:$archive:$image"
echo "image $image -> $archive ($(du -h "$archive" | cut -f1))"

[ "$check" = 1 ] || exit 0

echo "== check: the image's root read-only, as uid 10001"
ctr="$(buildah from "$image")"
api="" server=""
trap 'kill $api 2>/dev/null; [ -z "$server" ] || stop_contained "$server"; buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
rootfs="$(buildah mount "$ctr")"
work="$(mktemp -d)"
printf 'print(6 * 7)\n' > "$work/hello.py"
printf 'const n: number = 6 * 7;\nconsole.log(n);\n' > "$work/hello.ts"
: > "$work/caps.toml"
# The seed's worked example, as quick start 1 runs it: its grant, plan and
# data, its out/ folder the container user's, its API served on loopback.
mkdir -p "$work/seed/out"
cp -r "$root/examples/seed/caps.toml" "$root/examples/seed/plan.json" "$root/examples/seed/data" "$work/seed/"
chown 10001:10001 "$work/seed/out"
chmod -R a+rX "$work"
# In mount and pid namespaces of its own, as a runtime would set it up: the
# root bound read-only, the work folder at /work (read-only too), a private
# /tmp, /proc and /dev; then chroot as 10001.
inner='
        set -e
        mount --bind "$0" "$0" && mount -o remount,bind,ro "$0"
        mount --bind "$1" "$0/work" && mount -o remount,bind,ro "$0/work"
        # The seed example writes into its out/ folder: that one writable.
        mount --bind "$1/seed/out" "$0/work/seed/out"
        mount -t tmpfs tmpfs "$0/tmp"
        mount -t proc proc "$0/proc"
        mount --rbind /dev "$0/dev"
        shift
        c="$(command -v chroot)"
        exec env -i PATH=/usr/local/bin HOME=/nonexistent SBX_WASM_CACHE_DIR=/opt/sbx-wasm/cache \
            SBX_WASM_CACHE_KEY=/opt/sbx-wasm/cache.key "$c" --userspec=10001:10001 "$0" "$@"
    '
contained() {
    unshare --mount --pid --fork --kill-child sh -c "$inner" "$rootfs" "$work" "$@"
}
# The same in the background; its pid (unshare's) in $contained_pid.
contained_bg() {
    unshare --mount --pid --fork --kill-child sh -c "$inner" "$rootfs" "$work" "$@" &
    contained_pid=$!
}
# Ends a container started by contained_bg: its process (the namespace's
# init, so SIGKILL) is unshare's child. unshare ignores SIGTERM while it
# waits, and --kill-child does not reach a child that changed its user.
stop_contained() {
    pkill -KILL -P "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
contained /usr/local/bin/sbx-wasm --version
if contained sh -c true 2>/dev/null; then
    echo "check: the image has a shell" >&2
    exit 1
fi
for script in hello.py hello.ts; do
    start=$(date +%s%N)
    got="$(cd / && contained /usr/local/bin/sbx-wasm run --caps /work/caps.toml --no-stdin "/work/$script")"
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    [ "$got" = "42" ] || { echo "check: $script printed '$got'" >&2; exit 1; }
    echo "$script: 42 in $ms ms (first run in a new container: the runner from the image's cache)"
done
python3 -m http.server 18080 --bind 127.0.0.1 --directory "$root/examples/seed/api" >/dev/null 2>&1 &
api=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/18080) 2>/dev/null && break; sleep 0.05; done
status=0
plan="$(contained /usr/local/bin/sbx-wasm exec --caps /work/seed/caps.toml /work/seed/plan.json)" || status=$?
kill "$api"
decisions="$(printf '%s\n' "$plan" | grep -cE '^ +[1-8]  (fs_read|fs_write|net_fetch) ')"
[ "$status" = 3 ] && [ "$decisions" = 8 ] && [ -f "$work/seed/out/report.txt" ] || {
    printf 'check: the seed plan gave exit %s and %s decisions:\n%s\n' "$status" "$decisions" "$plan" >&2
    exit 1
}
echo "seed plan: its 8 decisions, halted at op 8 (exit 3), report.txt written"
# The root is read-only to the server (an audit stream there cannot be
# opened, as uid 10001 even in the folder it owns); /tmp, its neighbour, is
# writable.
contained /usr/local/bin/sbx-wasm run --caps /work/caps.toml --no-stdin --audit /tmp/a.jsonl /work/hello.py >/dev/null
if err="$(contained /usr/local/bin/sbx-wasm run --caps /work/caps.toml --no-stdin \
        --audit /opt/sbx-wasm/a.jsonl /work/hello.py 2>&1)"; then
    echo "check: the server wrote into the image's root" >&2
    exit 1
fi
case "$err" in
    *"Read-only file system"*) echo "read-only root: the server cannot write into it (/tmp it can)" ;;
    *) echo "check: writing into the root failed otherwise: $err" >&2; exit 1 ;;
esac
# The server as the image starts it (MCP over HTTP), until it listens.
head -c 24 /dev/urandom | base64 > "$work/token"
chmod a+r "$work/token"
port=18765
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "check: port $port is taken; stop whatever listens there" >&2
    exit 1
fi
start=$(date +%s%N)
contained_bg /usr/local/bin/sbx-wasm mcp --caps /work/caps.toml --http "127.0.0.1:$port" \
    --token-file /work/token >/dev/null 2>"$work/mcp.err"
server=$contained_pid
for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || { cat "$work/mcp.err" >&2; exit 1; }
    sleep 0.01
done
echo "mcp --http: listening $(( ($(date +%s%N) - start) / 1000000 )) ms after start (both runners loaded from the image's cache)"
stop_contained "$server"
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "check: the server outlived its container" >&2
    exit 1
fi
echo "image size (uncompressed): $(du -sh "$rootfs" | cut -f1)"
