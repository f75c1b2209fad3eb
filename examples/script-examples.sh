#!/usr/bin/env bash
# A language's two examples, as examples/python/run.sh and examples/js/run.sh
# ask for them (`script-examples.sh DIR EXT`): build the runner (once; then
# from the cache), run DIR/analyze.EXT (allowed work: exit 0, writes
# out/summary.json) and DIR/hostile.EXT (every attempt denied, then halted
# by a hard limit: exit 124), both under DIR/caps.toml.
set -euo pipefail
here="$(cd "$1" && pwd)"
ext="$2"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lang="$(basename "$here")"
bash "$root/host/runners/$lang/build.sh"
# The same build as the seed example's (see examples/seed/run.sh).
(cd "$root" && cargo build --quiet --workspace --bins --tests)
sbx="$root/target/debug/sbx-wasm"
rm -f "$here/out/summary.json"

echo "== analyze.$ext: allowed work =="
"$sbx" run --caps "$here/caps.toml" --summary "$here/analyze.$ext"
cat "$here/out/summary.json"

echo "== hostile.$ext: each attempt denied, then a hard halt =="
set +e
"$sbx" run --caps "$here/caps.toml" --summary --report "$root/target/$lang-hostile-report.json" "$here/hostile.$ext"
code=$?
set -e
if [ "$code" -ne 124 ]; then
    echo "hostile.$ext: expected exit 124 (hard limit), got $code" >&2
    exit 1
fi
echo "hostile.$ext halted as expected (exit 124); report: target/$lang-hostile-report.json"
