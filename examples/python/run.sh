#!/usr/bin/env bash
# The Python examples: build the runner (once), then run the data-analysis
# agent (exit 0, writes out/summary.json) and the hostile script (every
# attempt denied, then halted by a hard limit: exit 124).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bash "$root/guest-examples/python/build.sh"
# The same build as the seed example's (see examples/seed/run.sh).
(cd "$root" && cargo build --quiet --workspace --bins --tests)
sbx="$root/target/debug/sbx-wasm"
rm -f "$here/out/summary.json"

echo "== analyze.py: allowed work =="
"$sbx" run --caps "$here/caps.toml" --summary "$here/analyze.py"
cat "$here/out/summary.json"

echo "== hostile.py: each attempt denied, then a hard halt =="
set +e
"$sbx" run --caps "$here/caps.toml" --summary --report "$root/target/python-hostile-report.json" "$here/hostile.py"
code=$?
set -e
if [ "$code" -ne 124 ]; then
    echo "hostile.py: expected exit 124 (hard limit), got $code" >&2
    exit 1
fi
echo "hostile.py halted as expected (exit 124); report: target/python-hostile-report.json"
