#!/usr/bin/env bash
# The seed's worked example, end to end: build sbx-wasm and the wasm guests,
# serve the "internal API" on 127.0.0.1:18080, run the eight model-proposed
# ops of plan.json through the gate, then run the same actions as a wasm
# agent (guest-examples/agents/src/bin/seed.rs) under the same caps file,
# then the Python and the JavaScript (TypeScript) examples.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
port=18080

# The toolchain rust-toolchain.toml pins, with its components and the
# wasm32-wasip2 target (rustup does not install it on first use).
(cd "$root" && rustup toolchain install >/dev/null)

if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "run.sh: port $port is already in use; stop whatever listens there and retry" >&2
  exit 2
fi

# The whole workspace, tests included, in one build: the CLI then shares
# its dependencies' features with `cargo test --workspace`, which builds
# nothing twice. (A narrower build, `-p sbx-wasm-cli`, resolves other
# features for crates wasmtime uses and compiles wasmtime a second time.)
# The plan needs only the CLI: it runs as soon as cargo reports the binary
# linked, while the rest of the build goes on.
build_log="$(mktemp)"
cargo build --quiet --message-format json-render-diagnostics \
  --manifest-path "$root/Cargo.toml" --workspace --bins --tests > "$build_log" &
build=$!
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$here/api" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; kill "$build" 2>/dev/null || true; rm -f "$build_log"' EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.05
done
# cargo's artifact message for the binary comes once it is linked.
until grep -q '"executable":"[^"]*/target/debug/sbx-wasm"' "$build_log"; do
  if ! kill -0 "$build" 2>/dev/null; then
    wait "$build" || { echo "run.sh: the build failed (its messages are above)" >&2; exit 1; }
    break
  fi
  sleep 1
done

echo "== the plan, through sbx-wasm exec"
status=0
"$root/target/debug/sbx-wasm" exec --caps "$here/caps.toml" "$here/plan.json" || status=$?
if [ "$status" -ne 3 ]; then
  echo "run.sh: expected exit code 3 (halted by max_ops at op 8), got $status" >&2
  exit 1
fi
echo "(exit code 3: the run was halted by a hard limit, as the seed expects for op 8)"

echo
echo "(waiting for the rest of the build: the tests and the wasm guests)"
wait "$build" || { echo "run.sh: the build failed (its messages are above)" >&2; exit 1; }
cargo build --quiet --release --target wasm32-wasip2 --manifest-path "$root/guest-examples/Cargo.toml"

echo
echo "== the same actions as a wasm agent, through sbx-wasm run"
status=0
"$root/target/debug/sbx-wasm" run --summary --caps "$here/caps.toml" --audit "$root/target/seed-wasm-audit.jsonl" \
  "$root/guest-examples/target/wasm32-wasip2/release/seed.wasm" -- "http://127.0.0.1:$port/status" || status=$?
if [ "$status" -ne 124 ]; then
  echo "run.sh: expected exit code 124 (halted by max_ops at op 8), got $status" >&2
  exit 1
fi
echo "(exit code 124: the guest was halted by a hard limit; every decision is in target/seed-wasm-audit.jsonl)"

echo
echo "== the Python examples, through sbx-wasm run script.py"
bash "$root/examples/python/run.sh"

echo
echo "== the JavaScript examples, through sbx-wasm run agent.ts"
bash "$root/examples/js/run.sh"
