//! Prepared and pooled runs, and the run's clock deciding the wall.

use super::*;
use sbx_wasm::Services;
use std::sync::Arc;

/// One prepared agent, many runs: each run gets its own store, grant and
/// budgets; nothing leaks from one run into the next.
fn prepared_runs_on(h: &WasmHost) {
    let agent = h.prepare(&h.load(&guest("benign")).unwrap()).unwrap();
    for _ in 0..3 {
        let t = Tree::new();
        let caps = t.caps().build().unwrap();
        let opts =
            RunOptions::new(caps.clone()).services(Services::new().tools(command_tools(&caps)));
        let run = h.run_prepared(&agent, opts).unwrap();
        assert_eq!(run.report.exit_code, Some(0), "{:?}", run.trap);
        assert_eq!(
            std::fs::read_to_string(t.path("out/summary.txt")).unwrap(),
            "rows=2 total=42 api=no url words=3\n"
        );
    }
    // The same prepared agent under a grant without the write mount.
    let t = Tree::new();
    let caps = Capabilities::builder()
        .read_mount(t.path("data"), "/work")
        .allow_tool("word_count")
        .tool_command("word_count", vec!["wc".into(), "-w".into()])
        .build()
        .unwrap();
    let opts = RunOptions::new(caps.clone()).services(Services::new().tools(command_tools(&caps)));
    let run = h.run_prepared(&agent, opts).unwrap();
    assert!(
        run.report
            .denials
            .iter()
            .any(|d| d.violation == Violation::FsWriteDenied),
        "{:?}",
        run.report
    );
    assert!(!t.path("out/summary.txt").exists());
}

#[test]
fn a_prepared_agent_runs_many_times_each_under_its_own_grant() {
    prepared_runs_on(host());
    // Another host's engine cannot run it: an error, not a panic.
    let other = WasmHost::new().unwrap();
    let agent = host()
        .prepare(&host().load(&guest("benign")).unwrap())
        .unwrap();
    let caps = Tree::new().caps().build().unwrap();
    let err = other
        .run_prepared(&agent, RunOptions::new(caps))
        .expect_err("ran on another host");
    assert!(
        err.to_string().contains("prepared by another WasmHost"),
        "{err}"
    );
}

#[test]
fn pooled_host_runs_guests_and_enforces_memory_from_its_slots() {
    use sbx_wasm::wasm::{Allocator, PoolSizes};
    let t = Tree::new();
    let caps = t.caps().max_memory_bytes(64 << 20).build().unwrap();
    let h = WasmHost::with_pool(PoolSizes::for_caps(&caps, 4)).unwrap();
    assert!(
        matches!(h.allocator(), Allocator::Pooling(p) if p.max_memory_bytes == 64 << 20),
        "{:?}",
        h.allocator()
    );
    prepared_runs_on(&h);
    let component = h.load(&guest("membomb")).unwrap();
    let run = h.run(&component, RunOptions::new(caps)).unwrap();
    assert_eq!(run.report.violation, Some(Violation::MaxMemory));
}

#[test]
fn a_pool_that_cannot_be_reserved_falls_back_to_on_demand() {
    use sbx_wasm::wasm::{Allocator, PoolSizes};
    let caps = Tree::new().caps().build().unwrap();
    // A billion sandboxes of 256 MiB each: more address space than exists.
    let h = WasmHost::with_pool(PoolSizes::for_caps(&caps, 1_000_000_000)).unwrap();
    assert!(
        matches!(h.allocator(), Allocator::OnDemandFallback(why) if !why.is_empty()),
        "{:?}",
        h.allocator()
    );
    prepared_runs_on(&h);
}

/// The epoch deadline reads the run's clock: advancing an injected clock
/// past the wall budget halts a spinning guest at the next epoch tick, with
/// no real time spent near the budget, and the report's wall time is the
/// clock's.
#[test]
fn the_wall_deadline_reads_the_injected_clock() {
    let t = Tree::new();
    let clock = Arc::new(sbx_wasm::ManualClock::new());
    let component = host().load(&guest("spin")).unwrap();
    let opts = spinning(&t, Duration::from_secs(30), clock.clone());
    let run = std::thread::spawn(move || host().run(&component, opts).unwrap());
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !run.is_finished(),
        "the clock has not moved: the guest spins on"
    );
    let advanced = Instant::now();
    clock.advance(Duration::from_millis(30_001));
    let run = run.join().unwrap();
    assert_eq!(
        run.report.violation,
        Some(Violation::MaxWall),
        "{:?}",
        run.report
    );
    // Ticks come every 10 ms; the real-time backstop is 30 s away.
    assert!(
        advanced.elapsed() < Duration::from_secs(10),
        "halted by the backstop, not the clock"
    );
    assert_eq!(run.report.usage.wall_ms, 30_001);
}

/// A clock slower than real time (here: stopped) never lets a guest outlive
/// the real-time backstop at `max_wall_ms`.
#[test]
fn a_stopped_clock_does_not_outlive_the_real_time_backstop() {
    let t = Tree::new();
    let clock = Arc::new(sbx_wasm::ManualClock::new());
    let component = host().load(&guest("spin")).unwrap();
    let opts = spinning(&t, Duration::from_millis(500), clock);
    let started = Instant::now();
    let run = host().run(&component, opts).unwrap();
    assert_eq!(
        run.report.violation,
        Some(Violation::MaxWall),
        "{:?}",
        run.report
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "ran {:?}",
        started.elapsed()
    );
    // The neighbour: the same guest under the real clock ends the same way.
    let caps = t
        .caps()
        .max_wall(Duration::from_millis(500))
        .build()
        .unwrap();
    let run = host().run(&component, RunOptions::new(caps)).unwrap();
    assert!(matches!(
        run.report.violation,
        Some(Violation::MaxWall | Violation::MaxFuel)
    ));
    assert!(run.report.usage.wall_ms >= 400, "{:?}", run.report.usage);
}

/// Options for the spinning guest: fuel for days, a wall of `wall` on
/// `clock`, output captured.
fn spinning(t: &Tree, wall: Duration, clock: Arc<sbx_wasm::ManualClock>) -> RunOptions {
    let caps = t
        .caps()
        .max_wall(wall)
        .max_fuel(1_000_000_000_000_000)
        .build()
        .unwrap();
    RunOptions::new(caps).services(Services::new().clock(clock))
}

/// A grant's folders are opened by its first run and lent to the next
/// (checked at each run's first use of them): a folder removed and made
/// again at its path is the grant's again; one replaced by a link to a
/// folder elsewhere is refused, never followed, by the run that reaches
/// it, while a run that never reaches it runs.
#[test]
fn a_folder_removed_between_runs_is_opened_again_or_refused_never_followed() {
    let h = host();
    let benign = h.prepare(&h.load(&guest("benign")).unwrap()).unwrap();
    let noop = h.prepare(&h.load(&guest("noop")).unwrap()).unwrap();
    let t = Tree::new();
    let out = t.path("out");
    let caps = t.caps().build().unwrap();
    let run = |agent| {
        let services = Services::new().tools(command_tools(&caps));
        h.run_prepared(agent, RunOptions::new(caps.clone()).services(services))
            .unwrap()
    };
    let summary = "rows=2 total=42 api=no url words=3\n";
    let first = run(&benign);
    assert_eq!(first.report.exit_code, Some(0), "{:?}", first.trap);
    // Removed and made again: the next run writes into the new folder.
    std::fs::remove_dir_all(&out).unwrap();
    std::fs::create_dir(&out).unwrap();
    let again = run(&benign);
    assert_eq!(again.report.exit_code, Some(0), "{:?}", again.trap);
    assert_eq!(
        std::fs::read_to_string(out.join("summary.txt")).unwrap(),
        summary
    );
    // Removed and replaced by a link to a folder outside the grant.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &out).unwrap();
    let untouched = run(&noop);
    assert_eq!(untouched.report.exit_code, Some(0), "{:?}", untouched.trap);
    let refused = run(&benign);
    assert_ne!(refused.report.exit_code, Some(0));
    let why = refused.trap.clone().unwrap_or_default();
    assert!(
        why.contains("no longer the folder the grant named"),
        "{why}"
    );
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "the run wrote through the planted link"
    );
}
