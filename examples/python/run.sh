#!/usr/bin/env bash
# The Python examples: build the runner (once), then run the data-analysis
# agent (exit 0, writes out/summary.json) and the hostile script (every
# attempt denied, then halted by a hard limit: exit 124).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/../script-examples.sh" "$here" py
