#!/usr/bin/env bash
# The seed's worked example, end to end: build sbx-wasm, serve the "internal
# API" on 127.0.0.1:18080, and run the eight model-proposed ops of plan.json
# through the gate. Extra arguments go to `sbx-wasm exec` (e.g. --json).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
port=18080

cargo build --quiet --manifest-path "$root/Cargo.toml" -p sbx-wasm

if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "run.sh: port $port is already in use; stop whatever listens there and retry" >&2
  exit 2
fi
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$here/api" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.05
done

status=0
"$root/target/debug/sbx-wasm" exec --caps "$here/caps.toml" "$here/plan.json" "$@" || status=$?
if [ "$status" -eq 3 ]; then
  echo "(exit code 3: the run was halted by a hard limit, as the seed expects for op 8)"
  exit 0
fi
exit "$status"
