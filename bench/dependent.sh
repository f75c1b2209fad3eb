#!/usr/bin/env bash
# Does a crate outside this workspace that depends on sbx-wasm get the
# workspace's pooled speed? Builds one program twice: inside the workspace
# (the bench crate's `pooled-print`) and as `bench/dependent/`, a crate of
# its own that depends on the library by path and adds nothing else. Each runs
# `print(1)` on a pooled Python runner 210 times back to back; the row is the
# dependent's median over the workspace's, beside the page faults per run.
#
#   bash bench/dependent.sh [--release] [--check]
#
# --release builds both in release (as bench/compare.sh does); the default
# dev profile (dependencies optimized, the same for both) shares most of the
# workspace's build. --check exits 1 when the dependent's pooled runs do not
# keep written pages (its host diagnostics), fault more than twice as often,
# or take more than twice as long (a ratio, so a loaded machine moves both).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
profile=dev; dir=debug; check=0
for a in "$@"; do
  case "$a" in
    --release) profile=release; dir=release ;;
    --check) check=1 ;;
    *) echo "usage: bash bench/dependent.sh [--release] [--check]" >&2; exit 2 ;;
  esac
done
target="${CARGO_TARGET_DIR:-$root/target}"
# The dependent resolves to the workspace's versions (its own lock file is a
# copy, not committed), so both builds share their compiled dependencies.
cp "$root/Cargo.lock" "$here/dependent/Cargo.lock"
echo "bench: building pooled-print in the workspace and as a dependent ($profile)" >&2
(cd "$root" && cargo build --quiet --locked --profile "$profile" -p sbx-wasm-bench --bin pooled-print)
# --offline: cargo fits the copied lock to this crate (it drops what the
# dependent does not use) without asking the registry for anything newer.
# Its own target folder, kept in the user's cache: the workspace unifies more
# features (serde's `rc`, futures' `std`, ...) than this crate asks, so the
# dependent's wasmtime and most of its tree compile apart from the
# workspace's anyway; in the workspace's folder a fresh clone spent 9 minutes
# of CI on them, in the cache cargo rebuilds only what changed (sbx-wasm).
dep_target="${SBX_DEPENDENT_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/sbx-wasm/dependent-target}"
CARGO_TARGET_DIR="$dep_target" cargo build --quiet --offline --profile "$profile" --manifest-path "$here/dependent/Cargo.toml"

runner="${PYTHON_RUNNER:-}"
ours=$("$target/$dir/pooled-print" $runner)
theirs=$("$dep_target/$dir/pooled-print-dependent" $runner)
python3 - "$ours" "$theirs" "$check" <<'PY'
import json, sys
ours, theirs, check = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3] == "1"
ratio = theirs["median_us"] / max(ours["median_us"], 1)
met = "yes" if ratio <= 1.1 else "**no**"
print(f"| DEP | pooled print(1) back to back, from a crate outside the workspace that depends on "
      f"sbx-wasm (vs the workspace's own build), median of 200 | {theirs['median_us']} µs | "
      f"{ours['median_us']} µs | {ratio:.2f}x | <= 1.1x | {met} |")
print(f"DEP: page faults per run {theirs['faults_per_run']} (workspace {ours['faults_per_run']}); "
      f"the dependent's page reset: {theirs['host'].get('page_reset')}")
bad = []
reset = theirs["host"].get("page_reset") or {}
if reset.get("kind") != "kept" and ours["host"].get("page_reset", {}).get("kind") == "kept":
    bad.append("the dependent's pooled slots do not keep written pages")
if theirs["faults_per_run"] > 2 * ours["faults_per_run"] + 20:
    bad.append("the dependent's runs fault more than twice as often")
if ratio > 2:
    bad.append("the dependent's runs take more than twice as long")
if check and bad:
    sys.exit("bench/dependent.sh --check: " + "; ".join(bad))
PY
