"""Row PYP: a warm `run_python("print(1)")` from Python, sbx-wasm's package
beside pyeryx's `Sandbox.execute`, in one interpreter, alternating, plus
each package's import time (in fresh processes).

    python measure.py [ROUNDS]

Prints one JSON object. A peer that cannot be imported or run is reported
with the reason instead of its numbers.
"""

import json
import statistics
import subprocess
import sys
import time


def import_ms(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print((time.perf_counter() - t) * 1000)"
    runs = [float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout) for _ in range(7)]
    return statistics.median(runs)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    out: dict = {"python": sys.version.split()[0], "rounds": rounds}
    runners = {}

    import sbx_wasm

    ours = sbx_wasm.Sandbox(sbx_wasm.Caps.from_toml(""))
    runners["sbx_wasm"] = lambda: ours.run_python("print(1)").stdout
    try:
        import eryx

        theirs = eryx.Sandbox()
        runners["pyeryx"] = lambda: theirs.execute("print(1)").stdout_text
    except Exception as e:  # the peer is optional: say why it is missing
        out["pyeryx_skipped"] = f"{type(e).__name__}: {e}"

    times: dict = {name: [] for name in runners}
    for name, run in runners.items():
        for _ in range(20):  # warm up: compile caches, warm instances
            assert run() == "1\n", name
    for _ in range(rounds):
        for name, run in runners.items():
            t = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - t) * 1000)
    for name, xs in times.items():
        xs.sort()
        out[name] = {"p50_ms": round(statistics.median(xs), 3), "p90_ms": round(xs[int(len(xs) * 0.9)], 3), "import_ms": round(import_ms("sbx_wasm" if name == "sbx_wasm" else "eryx"), 1)}
    if "pyeryx" in out:
        out["ratio"] = round(out["sbx_wasm"]["p50_ms"] / out["pyeryx"]["p50_ms"], 2)
    print(json.dumps(out))


main()
