#!/usr/bin/env bash
# Run every fuzz target for SECONDS each (default 60) on its corpus, one after
# another, and print libFuzzer's last lines (executions, coverage). Needs the
# nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`).
# A crash stops the script; the input is under fuzz/artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
for t in plan caps egress secrets door flow wasi_http sockets; do
  echo "== $t (${secs}s)"
  mkdir -p "corpus/$t"
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 2>&1 | tail -n 2
  test "${PIPESTATUS[0]}" -eq 0
done
