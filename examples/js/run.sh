#!/usr/bin/env bash
# The JavaScript examples: build the runner (once; then from the cache),
# then run the TypeScript data-analysis agent (exit 0, writes
# out/summary.json) and the hostile script (every attempt denied, then
# halted by a hard limit: exit 124).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bash "$root/guest-examples/js/build.sh"
# The same build as the seed example's (see examples/seed/run.sh).
(cd "$root" && cargo build --quiet --workspace --bins --tests)
sbx="$root/target/debug/sbx-wasm"
rm -f "$here/out/summary.json"

echo "== analyze.ts: allowed work =="
"$sbx" run --caps "$here/caps.toml" --summary "$here/analyze.ts"
cat "$here/out/summary.json"

echo "== hostile.ts: each attempt denied, then a hard halt =="
set +e
"$sbx" run --caps "$here/caps.toml" --summary --report "$root/target/js-hostile-report.json" "$here/hostile.ts"
code=$?
set -e
if [ "$code" -ne 124 ]; then
    echo "hostile.ts: expected exit 124 (hard limit), got $code" >&2
    exit 1
fi
echo "hostile.ts halted as expected (exit 124); report: target/js-hostile-report.json"
