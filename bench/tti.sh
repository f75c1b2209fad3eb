#!/usr/bin/env bash
# Time to interactive, as the hosted sandbox providers' benchmarks measure
# it: ask for a sandbox, run a first command (`print(1)` in Python under a
# grant with two mounts), hold its result. Through the CLI, the library and
# MCP; sequential, staggered and burst; median, p95, p99:
#
#   bash bench/tti.sh              # 100 sandboxes a pattern
#   TTI_N=20 TTI_GAP_MS=50 bash bench/tti.sh
#
# Builds, in release, sbx-wasm, the harness (bench/src/bin/tti.rs) and the
# Python runner; artifacts are cached in bench/.tools/cache, as compare.sh's.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
mkdir -p "$here/.tools"
echo "tti: building sbx-wasm, the harness and the Python runner (release)" >&2
(cd "$root" && cargo build --quiet --release -p sbx-wasm-cli -p sbx-wasm-bench --bin sbx-wasm --bin sbx-wasm-tti)
bash "$root/host/runners/python/build.sh"
export SBX_WASM_CACHE_DIR="$here/.tools/cache"
export SBX_BIN="$root/target/release/sbx-wasm"
export PYTHON_RUNNER="$root/target/py/sbx-python.wasm"
echo "tti: $(nproc) cores, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exec "$root/target/release/sbx-wasm-tti"
