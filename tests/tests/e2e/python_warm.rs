//! Pooled and warm Python runners: slots reused and instances made ahead
//! of runs, never state; a warm instance meets the grant, the budgets and
//! the refusals of the run that takes it.

use sbx_wasm::wasm::{ArtifactCache, PoolSizes, PythonRunner, RunOptions, WasmHost};
use sbx_wasm::{Capabilities, Violation};
use sbx_wasm_tests::{mount_tree, python_runner, utf8};

#[test]
fn nothing_of_one_run_is_seen_by_the_next_on_a_pooled_host() {
    // A pooled host reuses instance slots (and their memory) from run to
    // run: run 1 leaves marks everywhere a script can reach, run 2 on the
    // same slots finds none of them.
    let (host, py) = pooled_runner(1);
    leaves_no_marks(&host, &py);
}

#[test]
fn nothing_of_one_run_is_seen_by_the_next_on_a_runner_kept_warm() {
    // Kept warm: each run takes an instance made ahead of it, in a slot a
    // finished run's instance was torn down in; still nothing crosses.
    let (host, py) = pooled_runner(2);
    let py = py.keep_warm(1).unwrap();
    leaves_no_marks(&host, &py);
    assert_eq!(
        py.agent().warm_runs(),
        4,
        "every run started on a warm instance"
    );
}

#[test]
fn a_warm_instance_runs_under_the_grant_of_the_run_that_takes_it() {
    // The instance is made with no grant; the run's own grant (its mount,
    // its denials, its audit) is what the script meets.
    let (host, py) = pooled_runner(2);
    let py = py.keep_warm(1).unwrap();
    let tree = mount_tree(&[("data/notes.txt", "granted")]);
    let before = sbx_wasm_tests::snapshot(tree.path());
    let caps = Capabilities::builder()
        .read_mount(tree.path().join("data"), "/work")
        .build()
        .unwrap();
    let run = py
        .run_source(
            &host,
            "print(open('/work/notes.txt').read())\n\
             try:\n    open('/etc/passwd')\nexcept OSError:\n    print('refused')",
            RunOptions::new(caps.clone()),
        )
        .unwrap();
    assert_eq!(
        utf8(&run.stdout),
        "granted\nrefused\n",
        "{}",
        utf8(&run.stderr)
    );
    assert!(
        run.audit
            .iter()
            .any(|e| e.target.contains("/etc/passwd") && e.decision != "allowed"),
        "{:?}",
        run.audit
    );
    // The next run, without that mount, cannot read it.
    let bare = Capabilities::builder().build().unwrap();
    let run = py
        .run_source(
            &host,
            "import os\nprint(os.path.exists('/work/notes.txt'))",
            RunOptions::new(bare),
        )
        .unwrap();
    assert_eq!(utf8(&run.stdout), "False\n", "{}", utf8(&run.stderr));
    assert_eq!(sbx_wasm_tests::snapshot(tree.path()), before);
    assert_eq!(py.agent().warm_runs(), 2);
}

#[test]
fn a_warm_instance_is_charged_to_its_run_and_left_when_it_does_not_fit() {
    let (host, py) = pooled_runner(2);
    let warm = py.keep_warm(1).unwrap();
    // Fuel: a warm run reports what a cold one does (instantiation runs no
    // guest code here), within the noise of hash randomisation.
    // print(1) under `caps`, cold and then on the warm agent.
    let both = |caps: Capabilities| {
        let cold = py.run_source(&host, "print(1)", RunOptions::new(caps.clone()));
        let hot = warm.run_source(&host, "print(1)", RunOptions::new(caps));
        (cold.unwrap(), hot.unwrap())
    };
    let (cold, hot) = both(Capabilities::builder().build().unwrap());
    assert_eq!(warm.agent().warm_runs(), 1);
    let (c, h) = (
        cold.report.usage.fuel.unwrap(),
        hot.report.usage.fuel.unwrap(),
    );
    assert!(h > c / 2 && h < c * 2, "cold {c}, warm {h}");
    assert_eq!(
        cold.report.usage.memory_peak_bytes,
        hot.report.usage.memory_peak_bytes
    );
    // Memory: a grant smaller than the runner's first memory is not given
    // the instance made beyond it; the run meets its limit as a cold one.
    let (cold, hot) = both(
        Capabilities::builder()
            .max_memory_bytes(8 << 20)
            .build()
            .unwrap(),
    );
    assert_eq!(cold.report.violation, Some(Violation::MaxMemory));
    assert_eq!(hot.report.violation, cold.report.violation);
    assert_eq!(warm.agent().warm_runs(), 1, "the instance did not fit");
}

#[test]
fn a_confined_run_is_refused_on_an_agent_kept_warm() {
    // The warming thread would stay outside the kernel wall. (A policy of
    // the whole file system: were it applied, it would take nothing away.)
    let (host, py) = pooled_runner(2);
    let py = py.keep_warm(1).unwrap();
    let caps = Capabilities::builder().build().unwrap();
    let everything = sbx_wasm::confine::Policy {
        read: vec!["/".into()],
        write: vec!["/".into()],
        runtime_read: Vec::new(),
        runtime_write_files: Vec::new(),
        tcp_connect: None,
        tcp_bind: Default::default(),
        tcp_note: None,
        seccomp: false,
    };
    let err = py
        .run_source(
            &host,
            "print(1)",
            RunOptions::new(caps).confine(everything, false),
        )
        .unwrap_err();
    assert!(err.to_string().contains("kept warm"), "{err}");
    assert_eq!(py.agent().warm_runs(), 0);
}

#[test]
fn an_instance_made_ahead_serves_the_next_run_alone_under_its_grant() {
    // `instantiate_ahead`: one instance made on this thread, no thread of
    // its own (so a kernel wall could be set up by the run that takes it:
    // the CLI's warm workers do, see python_serve). The run meets its own
    // grant; the run after it instantiates as usual and sees nothing of
    // the first.
    let cache = ArtifactCache::open(super::python::warm_cache()).unwrap();
    let host = WasmHost::new().unwrap().with_cache(cache);
    let agent = host
        .prepare(&host.load(&python_runner()).unwrap())
        .unwrap()
        .instantiate_ahead()
        .unwrap();
    let tree = mount_tree(&[("data/notes.txt", "granted")]);
    let caps = Capabilities::builder()
        .read_mount(tree.path().join("data"), "/work")
        .build()
        .unwrap();
    let script = |source: &str| {
        let args = sbx_wasm::wasm::python::runner_args(source, "s.py", &[]).unwrap();
        RunOptions::new(caps.clone()).args(args)
    };
    let first = host
        .run_prepared(
            &agent,
            script(
                "import builtins\nbuiltins.LEFT = 1\nprint(open('/work/notes.txt').read())\n\
                 try:\n    open('/etc/passwd')\nexcept OSError:\n    print('refused')",
            ),
        )
        .unwrap();
    assert_eq!(
        utf8(&first.stdout),
        "granted\nrefused\n",
        "{}",
        utf8(&first.stderr)
    );
    assert_eq!(agent.warm_runs(), 1);
    assert_eq!(agent.warm_ready(), 0, "nothing refills it");
    let second = host
        .run_prepared(
            &agent,
            script("import builtins\nprint(hasattr(builtins, 'LEFT'))"),
        )
        .unwrap();
    assert_eq!(utf8(&second.stdout), "False\n", "{}", utf8(&second.stderr));
    assert_eq!(agent.warm_runs(), 1, "the second run made its own instance");
}

#[test]
fn a_warm_run_finds_the_pages_its_slot_wrote_before_still_mapped() {
    // The reset of a finished run's memory copies the original bytes back
    // into every page the run wrote and leaves them mapped (wasmtime 50's
    // page reset), so the next snippet in that
    // slot takes (next to) no page faults. With wasmtime's stock 32-region
    // scan a print(1) takes about 240 here, most of its time. Counted on
    // the calling thread, where the guest runs; each run waits for its
    // warm instance so that instantiation is not counted.
    let caps = Capabilities::builder().build().unwrap();
    if PoolSizes::for_caps(&caps, 2).keep_resident_bytes == 0 {
        eprintln!("skipped: this kernel does not report dirty pages (PAGEMAP_SCAN)");
        return;
    }
    let (host, py) = pooled_runner(2);
    let py = py.keep_warm(1).unwrap();
    let mut faults = Vec::new();
    for i in 0..9 {
        let waited = std::time::Instant::now();
        while py.agent().warm_ready() == 0 && waited.elapsed().as_secs() < 30 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let before = minor_faults();
        let run = py
            .run_source(&host, "print(1)", RunOptions::new(caps.clone()))
            .unwrap();
        let after = minor_faults();
        assert_eq!(utf8(&run.stdout), "1\n", "{}", utf8(&run.stderr));
        // Both slots have served a run after the first two.
        if i >= 4 {
            faults.push(after - before);
        }
    }
    faults.sort_unstable();
    assert!(
        faults[faults.len() / 2] < 60,
        "page faults per run: {faults:?}"
    );
    assert_eq!(py.agent().warm_runs(), 9);
}

/// Minor page faults of the calling thread so far.
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    // Fields after the command name, which is in parentheses: minflt is
    // the 10th field of the line, the 8th after the name.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(7).unwrap().parse().unwrap()
}

/// A pooled host for `sandboxes` runs at once, and the runner on it.
fn pooled_runner(sandboxes: u32) -> (WasmHost, PythonRunner) {
    let caps = Capabilities::builder().build().unwrap();
    let cache = ArtifactCache::open(super::python::warm_cache()).unwrap();
    let host = WasmHost::with_pool(PoolSizes::for_caps(&caps, sandboxes))
        .unwrap()
        .with_cache(cache);
    let py = PythonRunner::load(&host, &python_runner()).unwrap();
    (host, py)
}

/// Twice: a run leaves marks everywhere a script can reach (globals,
/// builtins, modules, sys.path, env, /tmp); the next finds none of them.
fn leaves_no_marks(host: &WasmHost, py: &PythonRunner) {
    let caps = Capabilities::builder().build().unwrap();
    let leave = r#"
import builtins, json, os, sys, types
LEAK = "global"
builtins.LEAK = "builtin"
json.LEAK = "module attribute"
sys.modules["leak"] = types.ModuleType("leak")
os.environ["LEAK"] = "env"
sys.path.append("/leak")
open("/tmp/leak", "w").write("file")
print("left")
"#;
    let look = r#"
import builtins, json, os, sys
print([
    "LEAK" in globals(), hasattr(builtins, "LEAK"), hasattr(json, "LEAK"),
    "leak" in sys.modules, "LEAK" in os.environ, "/leak" in sys.path,
    os.listdir("/tmp"),
])
"#;
    for _ in 0..2 {
        let run = py
            .run_source(host, leave, RunOptions::new(caps.clone()))
            .unwrap();
        assert_eq!(utf8(&run.stdout), "left\n", "{}", utf8(&run.stderr));
        let run = py
            .run_source(host, look, RunOptions::new(caps.clone()))
            .unwrap();
        assert_eq!(
            utf8(&run.stdout),
            "[False, False, False, False, False, False, []]\n",
            "{}",
            utf8(&run.stderr)
        );
    }
}
