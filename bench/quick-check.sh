#!/usr/bin/env bash
# The bench's quick regression guard, as CI runs it: the in-process rows
# (P3 instantiate+run, P4 gated tool calls, P5 metered CPU-bound guests)
# measured side by side in the dev profile, each ratio compared with the
# one recorded in bench/quick-baseline.tsv for the same row. A ratio more
# than 2x worse fails; absolute times never do (these machines are shared).
#
#   bash bench/quick-check.sh                  # check (after the workspace's build)
#   bash bench/quick-check.sh --write-baseline # record this machine's ratios
#
# Needs the guests built (guest-examples, release; the tests build them).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build --quiet -p sbx-wasm-cli -p sbx-wasm-bench --bin sbx-wasm --bin sbx-wasm-compare)
export GUEST_DIR="$root/guest-examples/target/wasm32-wasip2/release"
[ -f "$GUEST_DIR/callloop.wasm" ] || cargo build --quiet --release --target wasm32-wasip2 --manifest-path "$root/guest-examples/Cargo.toml"
export SBX_BIN="$target/debug/sbx-wasm" SBX_BENCH_ONLY=P3,P4,P5
# A cache of its own: the ratios must not depend on what the user's holds.
export SBX_WASM_CACHE_DIR="$target/quick-bench-cache"
case "${1:-}" in
  --write-baseline) exec "$target/debug/sbx-wasm-compare" --write-baseline "$here/quick-baseline.tsv" ;;
  "") exec "$target/debug/sbx-wasm-compare" --baseline "$here/quick-baseline.tsv" ;;
  *) echo "usage: bash bench/quick-check.sh [--write-baseline]" >&2; exit 2 ;;
esac
