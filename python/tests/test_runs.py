"""Runs through the package: each denial beside its allowed neighbour,
and the host tree checked unchanged where a denial must have no effect."""

import asyncio
import threading
import time

import pytest

from conftest import fingerprint, grant, guest
from sbx_wasm import Cancel, Caps, LoadError, PlanError, Sandbox


def test_python_reads_its_mount_and_is_refused_outside_it(tree):
    sb = Sandbox(Caps.from_toml(grant(tree)))
    before = fingerprint(tree)
    r = sb.run_python("print(open('/work/a.txt').read().splitlines()[1])")
    assert r.ok and r.stdout == "Q3,42\n" and r.denials == []
    code = """
for p in ('/etc/passwd', '/work/../canary.txt'):
    try:
        open(p).read(); print('READ', p)
    except OSError as e:
        print('blocked', type(e).__name__)
"""
    r = sb.run_python(code)
    assert "READ" not in r.stdout and r.stdout.count("blocked") == 2, r
    assert {d.violation for d in r.denials} <= {"fs_read_denied", "path_traversal"}
    assert r.denials and all(d.reason and not d.hard for d in r.denials)
    assert fingerprint(tree) == before


def test_writes_land_in_the_write_mount_only(tree):
    sb = Sandbox(Caps.from_toml(grant(tree)))
    r = sb.run_python("open('/work/out/r.txt','w').write('done')")
    assert r.ok and (tree / "out" / "r.txt").read_text() == "done"
    before = fingerprint(tree)
    r = sb.run_python("""
try:
    open('/work/a.txt','w').write('x'); print('WROTE')
except OSError:
    print('blocked')
""")
    assert r.stdout == "blocked\n" and r.denials[0].violation == "fs_write_denied"
    assert fingerprint(tree) == before


def test_egress_reaches_the_granted_origin_only(tree, server, other_server):
    sb = Sandbox(Caps.from_toml(grant(tree, f'[net]\nallow = ["{server.origin}"]\n')))
    r = sb.run_python(f"import urllib.request\nprint(urllib.request.urlopen('{server.origin}/a').read().decode(), end='')")
    assert r.ok and r.stdout == "ok\n", r
    assert server.connections == 1
    r = sb.run_python(f"""
import urllib.request, urllib.error
try:
    urllib.request.urlopen('{other_server.origin}/steal', data=b'x'); print('SENT')
except urllib.error.URLError as e:
    print('blocked', 'egress_denied' in str(e.reason))
""")
    assert r.stdout == "blocked True\n", r
    assert r.denials[0].violation == "egress_denied"
    assert other_server.connections == 0


def test_a_script_failure_is_a_value(tree):
    sb = Sandbox(Caps.from_toml(grant(tree)))
    r = sb.run_python("x = 1\nraise ValueError('bad input')\n")
    assert r.status == "exited" and r.exit_code == 1 and not r.ok
    assert (r.error.kind, r.error.message, r.error.line) == ("ValueError", "bad input", 2)
    r = sb.run_python("import sys\nsys.exit(3)")
    assert r.exit_code == 3 and r.error is None
    ok = sb.run_python("print('fine')")
    assert ok.ok and ok.error is None


def test_budgets_halt_the_run(tree):
    caps = Caps.from_toml(grant(tree, "[budget]\nmax_ops = 2\nmax_wall_ms = 3000\n"))
    r = Sandbox(caps).run_python("for _ in range(5):\n    open('/work/a.txt').read()\n")
    assert r.status == "hard_limit" and r.violation == "max_ops"
    assert r.denials[-1].hard
    # The neighbour: within the budget.
    r = Sandbox(caps).run_python("open('/work/a.txt').read()\nprint('one')")
    assert r.ok and r.stdout == "one\n"


def test_javascript_runs_under_the_same_grant(tree):
    sb = Sandbox(Caps.from_toml(grant(tree)))
    r = sb.run_javascript("import { readFileSync } from 'node:fs';\nconsole.log(readFileSync('/work/a.txt', 'utf8').length);")
    assert r.ok and r.stdout == "22\n", r
    r = sb.run_javascript("import { readFileSync } from 'node:fs';\ntry { readFileSync('/etc/passwd'); console.log('READ') } catch (e) { console.log('blocked') }")
    assert r.stdout == "blocked\n" and r.denials[0].violation == "fs_read_denied", r


def test_a_component_runs_and_a_spinning_one_is_halted(tree):
    caps = Caps.from_toml(grant(tree, "[budget]\nmax_wall_ms = 500\n"))
    sb = Sandbox(caps)
    r = sb.run_wasm(guest("noop"))
    assert r.ok, r
    r = sb.run_wasm(guest("spin"))
    assert r.status == "hard_limit" and r.violation in ("max_wall", "max_fuel"), r
    with pytest.raises(LoadError):
        sb.run_wasm(tree / "data" / "a.txt")


def test_a_standard_wasi_http_component_reaches_its_grant_and_nothing_else(tree, server, other_server):
    # A component written against wasi:http alone, as most toolchains make
    # them: its requests go through the same egress rules as sbx.fetch.
    sb = Sandbox(Caps.from_toml(grant(tree, f'[net]\nallow = ["{server.origin}"]\n')))
    r = sb.run_wasm(
        guest("wasi_http"),
        args=[f"first POST {server.origin}/x 5000", f"first GET {other_server.origin}/x"],
    )
    assert r.ok, r
    lines = r.stdout.splitlines()
    assert lines[0] == "0: HTTP 200, 3 bytes: ok", r.stdout
    assert lines[2] == "1: error ErrorCode::HttpRequestDenied", r.stdout
    assert [d.violation for d in r.denials] == ["egress_denied"]
    assert server.requests == ["POST /x"] and "content-length: 5000" in [h.lower() for h in server.headers]
    assert other_server.connections == 0


def test_a_plan_runs_through_the_gate(tree, server):
    sb = Sandbox(Caps.from_toml(grant(tree, f'[net]\nallow = ["{server.origin}"]\n')))
    plan = [
        {"op": "fs_read", "path": "/work/a.txt"},
        {"op": "fs_read", "path": "/etc/passwd"},
        {"op": "net_fetch", "url": f"{server.origin}/s"},
        {"op": "net_fetch", "url": "http://evil.example/x"},
    ]
    r = sb.exec_plan(plan)
    assert [x.ok for x in r.results] == [True, False, True, False], r
    assert [x.violation for x in r.results] == [None, "fs_read_denied", None, "egress_denied"]
    assert r.stopped_reason == "completed" and len(r.audit) == 4
    with pytest.raises(PlanError):
        sb.exec_plan("{not a list")


def test_cancel_ends_a_spinning_script_from_another_thread(tree):
    sb = Sandbox(Caps.from_toml(grant(tree, "[budget]\nmax_wall_ms = 60000\n")))
    cancel = Cancel()
    threading.Timer(0.3, cancel.cancel).start()
    t = time.monotonic()
    r = sb.run_python("while True:\n    pass\n", cancel=cancel)
    assert r.status == "cancelled" and time.monotonic() - t < 10
    assert sb.run_python("print(2)").stdout == "2\n"


def test_async_runs_release_the_loop_and_cancel_with_the_task(tree):
    sb = Sandbox(Caps.from_toml(grant(tree, "[budget]\nmax_wall_ms = 60000\n")))

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        t = asyncio.create_task(ticker())
        results = await asyncio.gather(*(sb.arun_python(f"print({i})") for i in range(4)))
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(4)]
        spin = asyncio.create_task(sb.arun_python("while True:\n    pass\n"))
        await asyncio.sleep(0.3)
        spin.cancel()
        with pytest.raises(asyncio.CancelledError):
            await spin
        t.cancel()
        return ticks

    # The loop kept ticking while guests ran on other threads.
    assert asyncio.run(main()) > 5


def test_events_stream_as_the_run_goes(tree):
    sb = Sandbox(Caps.from_toml(grant(tree)))

    async def main():
        stream = sb.stream_python("print('a')\nopen('/work/a.txt').read()\ntry:\n    open('/etc/passwd')\nexcept OSError:\n    pass\nprint('b')\n")
        events = [e async for e in stream]
        return events, await stream.result()

    events, result = asyncio.run(main())

    async def leave_early():
        stream = sb.stream_python("import time\nwhile True:\n    print('tick')\n    time.sleep(0.01)\n")
        async for event in stream:
            if event.kind == "stdout":
                break
        return await asyncio.wait_for(stream.result(), 30)

    # Leaving the iteration ends the run it no longer reads.
    assert asyncio.run(leave_early()).status == "cancelled"
    kinds = [(e.kind, e.data if e.kind == "stdout" else e.data.get("decision")) for e in events if e.kind != "started"]
    assert ("stdout", "a\n") in kinds and ("stdout", "b\n") in kinds
    assert ("decision", "allowed") in kinds and ("decision", "denied") in kinds
    assert result.ok and result.stdout == "a\nb\n"


def test_hostile_inputs_from_the_caller_are_refused_cleanly(tree):
    sb = Sandbox(Caps.from_toml(grant(tree)))
    with pytest.raises(TypeError):
        sb.run_python(b"print(1)")
    with pytest.raises(TypeError):
        sb.run_python("print(1)", args="not-a-list")
    with pytest.raises(TypeError):
        sb.run_python("print(1)", stdin="text")
    # A script over the runner's limit (4 MiB) is refused before any run;
    # one under it runs.
    with pytest.raises(LoadError, match="limited to"):
        sb.run_python("x = '" + "a" * (4 << 20) + "'\nprint(len(x))")
    r = sb.run_python("x = '" + "a" * (1 << 20) + "'\nprint(len(x))")
    assert r.ok and r.stdout == f"{1 << 20}\n", r


def test_a_forked_child_has_its_own_engine_and_its_wall_clock_holds(tree):
    # multiprocessing's default on Linux: the child inherits the engine
    # without its threads (the epoch ticker, the warm instances' refill).
    import os

    sb = Sandbox(Caps.from_toml(grant(tree, "[budget]\nmax_wall_ms = 300\nmax_fuel = \"off\"\n")))
    assert sb.run_python("print(1)").stdout == "1\n"
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            t = time.monotonic()
            spun = sb.run_python("while True:\n    pass\n")
            ok = sb.run_python("print(2)").stdout
            # Within a few ticks of 300 ms; with the parent's engine (its
            # threads missing) the second run waited 10 s for a slot.
            late = time.monotonic() - t > 5
            os.write(w, f"{spun.status} {spun.violation} {ok.strip()} late={late}".encode())
        finally:
            os._exit(0)
    os.close(w)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise AssertionError("the child's spinning run was never halted")
    said = os.read(r, 1000).decode()
    assert said == "hard_limit max_wall 2 late=False", said
    # The parent's engine is untouched.
    assert sb.run_python("print(3)").stdout == "3\n"


def test_a_forked_child_and_its_parent_never_share_a_private_tmp_and_leave_none(tree):
    # The parent's folder made ahead for its next run is inherited by a
    # forked child: the child must not run in it (the parent's next run
    # would see the child's files), and the child, ending with os._exit
    # (no exit handlers), must leave no folder of its own behind.
    import os
    import subprocess
    import sys

    temp = tree / "temp"
    temp.mkdir()
    code = (
        "import os\n"
        "from sbx_wasm import Caps, Sandbox\n"
        "sb = Sandbox(Caps.from_toml(''))\n"
        "assert sb.run_python('print(1)').ok\n"
        # The folder for the next run is made ahead, on a thread (after
        # the last run's is removed): wait until it is the one there, so
        # the fork copies it. Only this user may enter it.
        "import time\n"
        "root = os.environ['TMPDIR']\n"
        "deadline = time.monotonic() + 10\n"
        "while len(os.listdir(root)) != 1 and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "print('modes', [oct(os.stat(os.path.join(root, n)).st_mode & 0o777) for n in os.listdir(root)])\n"
        "r, w = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        "        out = sb.run_python(\"open('/tmp/child.txt', 'w').write('c')\\nimport os\\nprint(os.listdir('/tmp'))\")\n"
        "        os.write(w, out.stdout.encode())\n"
        "    finally:\n"
        "        os._exit(0)\n"
        "os.close(w)\n"
        "os.waitpid(pid, 0)\n"
        "print('child', os.read(r, 1000).decode(), end='')\n"
        "print('parent', sb.run_python(\"import os\\nprint(os.listdir('/tmp'))\").stdout, end='')\n"
    )
    env = {**os.environ, "TMPDIR": str(temp)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout == "modes ['0o700']\nchild ['child.txt']\nparent []\n", out.stdout + out.stderr
    assert list(temp.iterdir()) == []


def test_each_private_tmp_is_removed_after_its_run_and_none_outlives_the_process(tree):
    # Removal happens after the run returns (off its path); a process that
    # exits at once still leaves nothing in its temp folder.
    import os
    import subprocess
    import sys

    temp = tree / "temp"
    temp.mkdir()
    code = (
        "from sbx_wasm import Caps, Sandbox\n"
        "r = Sandbox(Caps.from_toml('')).run_python(\"open('/tmp/left.txt', 'w').write('x' * 1000)\\nimport os\\nprint(os.listdir('/tmp'))\")\n"
        "print(r.stdout, end='')\n"
    )
    env = {**os.environ, "TMPDIR": str(temp)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout == "['left.txt']\n", out.stderr
    assert list(temp.iterdir()) == []

    # In a process that goes on, each run's folder goes soon after the
    # run; what stays is the one empty folder made ahead for the next run.
    code = (
        "import os, time\n"
        "from sbx_wasm import Caps, Sandbox\n"
        "sb = Sandbox(Caps.from_toml(''))\n"
        "for _ in range(5):\n"
        "    assert sb.run_python(\"open('/tmp/f', 'w').write('y')\").ok\n"
        "root = os.environ['TMPDIR']\n"
        # A folder may go between listing the root and listing it.
        "def left():\n"
        "    out = []\n"
        "    for n in os.listdir(root):\n"
        "        try:\n"
        "            out.append((n, os.listdir(os.path.join(root, n))))\n"
        "        except FileNotFoundError:\n"
        "            pass\n"
        "    return out\n"
        "deadline = time.monotonic() + 10\n"
        "while [f for _, f in left()] != [[]] and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        "print([files for _, files in left()])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout == "[[]]\n", out.stdout + out.stderr
    assert list(temp.iterdir()) == []
