//! The embedding API as a Rust agent framework uses it: output captured by
//! default (streamed on request), a run cancelled from outside wherever the
//! guest is (spinning, in a slow tool, on a stalled fetch) with its report
//! and audit kept, events in order without ever blocking the guest, and the
//! blocking API called from inside an async runtime.

use super::*;
use sbx_wasm::CancelHandle;
use sbx_wasm::Services;
use sbx_wasm::events::{Event, EventSink};
use sbx_wasm::tools::{ToolError, ToolRegistry};
use std::sync::Arc;

/// Cancel `cancel` after `ms` milliseconds, from another thread.
fn cancel_after(cancel: &CancelHandle, ms: u64) -> std::thread::JoinHandle<()> {
    let cancel = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(ms));
        cancel.cancel();
    })
}

/// A cancelled run: status and violation say so, and it ended long before
/// anything else would have ended it (a 60 s wall, a 30 s effect).
fn assert_cancelled(run: &WasmRun, took: Duration) {
    assert_eq!(run.report.status, Status::Cancelled, "{:?}", run.report);
    assert_eq!(run.report.violation, Some(Violation::Cancelled));
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// A grant with a minute of wall and fuel for days: only a cancel ends a
/// stuck guest early.
fn patient(t: &Tree) -> CapabilitiesBuilder {
    t.caps()
        .max_wall(Duration::from_secs(60))
        .max_fuel(1_000_000_000_000_000)
}

/// A patient grant, a host whose pool has room for one run at a time, and
/// the named guests prepared on it.
fn pool_of_one<const N: usize>(
    t: &Tree,
    names: [&str; N],
) -> (Capabilities, WasmHost, [sbx_wasm::wasm::PreparedAgent; N]) {
    use sbx_wasm::wasm::PoolSizes;
    let caps = patient(t).max_memory_bytes(64 << 20).build().unwrap();
    let pooled = WasmHost::with_pool(PoolSizes::for_caps(&caps, 1)).unwrap();
    let agents = names.map(|n| pooled.prepare(&pooled.load(&guest(n)).unwrap()).unwrap());
    (caps, pooled, agents)
}

#[test]
fn output_is_captured_by_default_and_streamed_on_request() {
    let component = host().load(&guest("benign")).unwrap();
    let t = Tree::new();
    let caps = t.caps().build().unwrap();
    let run = host()
        .run(
            &component,
            RunOptions::new(caps.clone()).services(Services::new().tools(command_tools(&caps))),
        )
        .unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{:?}", run.trap);
    assert!(String::from_utf8_lossy(&run.stdout).starts_with("rows=2 total=42"));
    assert!(run.stderr.is_empty());
    // A run of a few milliseconds still reports its time.
    assert!(run.report.usage.wall_us > 0, "{:?}", run.report.usage);

    // Streamed instead: the sink has it, the run does not.
    let t = Tree::new();
    let caps = t.caps().build().unwrap();
    let (out, buf) = sink();
    let opts = RunOptions::new(caps.clone())
        .services(Services::new().tools(command_tools(&caps)))
        .stdout(out);
    let run = host().run(&component, opts).unwrap();
    assert!(run.stdout.is_empty());
    assert!(String::from_utf8_lossy(&buf.lock().unwrap()).starts_with("rows=2 total=42"));
    assert!(t.path("out/summary.txt").exists());
}

#[test]
fn cancel_ends_a_spinning_guest_with_its_report_blocking_and_async() {
    let component = host().load(&guest("spin")).unwrap();
    let t = Tree::new();
    let caps = patient(&t).build().unwrap();

    let cancel = CancelHandle::new();
    let start = Instant::now();
    let canceller = cancel_after(&cancel, 300);
    let run = host()
        .run(&component, RunOptions::new(caps.clone()).cancel(cancel))
        .unwrap();
    assert_cancelled(&run, start.elapsed());
    assert!(run.report.usage.fuel.unwrap_or(0) > 0, "{:?}", run.report);
    canceller.join().unwrap();

    // The same on the caller's runtime.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cancel = CancelHandle::new();
    let start = Instant::now();
    let run = rt.block_on(async {
        let run = host().run_async(&component, RunOptions::new(caps).cancel(cancel.clone()));
        let stop = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        };
        tokio::join!(run, stop).0
    });
    assert_cancelled(&run.unwrap(), start.elapsed());
}

#[test]
fn a_handle_never_cancelled_changes_nothing() {
    let component = host().load(&guest("benign")).unwrap();
    let t = Tree::new();
    let caps = t.caps().build().unwrap();
    let opts = RunOptions::new(caps.clone())
        .services(Services::new().tools(command_tools(&caps)))
        .cancel(CancelHandle::new());
    let run = host().run(&component, opts).unwrap();
    assert_eq!(run.report.status, Status::Completed, "{:?}", run.trap);
    assert!(t.path("out/summary.txt").exists());
}

#[test]
fn cancel_ends_a_guest_waiting_in_a_slow_tool_and_nothing_after_it_happens() {
    let component = host().load(&guest("benign")).unwrap();
    for in_process in [true, false] {
        let t = Tree::new();
        let (caps, tools) = if in_process {
            // An in-process tool that never looks at the cancel switch...
            let mut slow = ToolRegistry::new();
            slow.register("word_count", |_: &str| {
                std::thread::sleep(Duration::from_secs(30));
                Ok::<_, ToolError>("late".into())
            });
            (patient(&t).build().unwrap(), slow)
        } else {
            // ...and a command tool the host kills.
            let caps = patient(&t)
                .tool_command("word_count", vec!["sleep".into(), "30".into()])
                .build()
                .unwrap();
            let tools = command_tools(&caps);
            (caps, tools)
        };
        let before = t.outside_out();
        let cancel = CancelHandle::new();
        let start = Instant::now();
        let canceller = cancel_after(&cancel, 300);
        let opts = RunOptions::new(caps)
            .services(Services::new().tools(tools))
            .cancel(cancel);
        let run = host().run(&component, opts).unwrap();
        assert_cancelled(&run, start.elapsed());
        canceller.join().unwrap();
        // What was done before is on record; the tool call is the cancel;
        // the summary the guest would write after it is not written.
        let ops: Vec<(&str, Option<Violation>)> = run
            .audit
            .iter()
            .map(|e| (e.op.as_str(), e.violation))
            .collect();
        assert!(ops.contains(&("fs_read", None)), "{ops:?}");
        assert!(
            ops.contains(&("tool_call", Some(Violation::Cancelled))),
            "{ops:?}"
        );
        assert!(!t.path("out/summary.txt").exists());
        assert_eq!(t.outside_out(), before);
    }
}

#[test]
fn cancel_ends_a_guest_waiting_on_a_stalled_fetch() {
    let server = LoopbackServer::start();
    let component = host().load(&guest("benign")).unwrap();
    let t = Tree::new();
    let caps = patient(&t).allow_egress(server.origin()).build().unwrap();
    let cancel = CancelHandle::new();
    let start = Instant::now();
    let canceller = cancel_after(&cancel, 300);
    let url = format!("{}/stall", server.origin());
    let opts = RunOptions::new(caps.clone())
        .args([url])
        .services(Services::new().tools(command_tools(&caps)))
        .cancel(cancel);
    let run = host().run(&component, opts).unwrap();
    assert_cancelled(&run, start.elapsed());
    canceller.join().unwrap();
    let fetch = run.audit.iter().find(|e| e.op == "net_fetch").unwrap();
    assert_eq!(fetch.violation, Some(Violation::Cancelled), "{fetch:?}");
    // The request did go out before the cancel (it was allowed); nothing
    // after it did.
    assert_eq!(server.connections(), 1);
    assert!(!run.audit.iter().any(|e| e.op == "tool_call"));
}

#[test]
fn events_arrive_in_order_and_a_full_channel_never_blocks_the_guest() {
    let component = host().load(&guest("benign")).unwrap();
    let t = Tree::new();
    let caps = t.caps().build().unwrap();
    let (tx, rx) = std::sync::mpsc::sync_channel(1024);
    let opts = RunOptions::new(caps.clone())
        .services(Services::new().tools(command_tools(&caps)))
        .events(EventSink::new(tx));
    let run = host().run(&component, opts).unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{:?}", run.trap);
    let events: Vec<Event> = rx.try_iter().collect();
    let decisions: Vec<&sbx_wasm::AuditEvent> = events
        .iter()
        .filter_map(|e| match e {
            Event::Decision(d) => Some(d),
            _ => None,
        })
        .collect();
    // Every decision, in the audit's order.
    assert_eq!(
        decisions.iter().map(|d| d.seq).collect::<Vec<_>>(),
        run.audit.iter().map(|d| d.seq).collect::<Vec<_>>()
    );
    // The guest prints its summary after writing it: the output chunk
    // comes after the write's decision.
    let write = events
        .iter()
        .position(|e| matches!(e, Event::Decision(d) if d.op == "fs_write"))
        .unwrap();
    let printed = events
        .iter()
        .position(|e| matches!(e, Event::Stdout(b) if b.starts_with(b"rows=2")))
        .unwrap();
    assert!(write < printed, "{events:?}");
    assert!(run.report.notes.is_empty(), "{:?}", run.report.notes);

    // A channel of one that nobody reads: the run is not held, and the
    // report says what was dropped.
    let t = Tree::new();
    let caps = t.caps().build().unwrap();
    let (tx, _rx) = std::sync::mpsc::sync_channel(1);
    let opts = RunOptions::new(caps.clone())
        .services(Services::new().tools(command_tools(&caps)))
        .events(EventSink::new(tx));
    let run = host().run(&component, opts).unwrap();
    assert_eq!(run.report.exit_code, Some(0));
    assert!(t.path("out/summary.txt").exists());
    assert!(
        run.report
            .notes
            .iter()
            .any(|n| n.contains("events were dropped")),
        "{:?}",
        run.report.notes
    );
}

#[test]
fn the_blocking_api_works_inside_an_async_runtime() {
    let component = host().load(&guest("benign")).unwrap();
    let t = Tree::new();
    let caps = t.caps().build().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = rt.block_on(async {
        host().run(
            &component,
            RunOptions::new(caps.clone()).services(Services::new().tools(command_tools(&caps))),
        )
    });
    assert_eq!(run.unwrap().report.exit_code, Some(0));
}

#[test]
fn a_full_pool_is_a_host_error_not_a_guest_trap() {
    use sbx_wasm::wasm::LoadError;
    let t = Tree::new();
    let (caps, pooled, [sleepy, noop]) = pool_of_one(&t, ["sleepy", "noop"]);
    std::thread::scope(|s| {
        // One run holds the only slot, asleep in WASI...
        let cancel = CancelHandle::new();
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        let opts = RunOptions::new(caps.clone())
            .cancel(cancel.clone())
            .events(EventSink::new(tx));
        let first = s.spawn(|| pooled.run_prepared(&sleepy, opts));
        let started = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert!(matches!(started, Event::Stdout(_)), "{started:?}");
        // ...so another cannot start: the host says so, no guest is blamed.
        match pooled.run_prepared(&noop, RunOptions::new(caps.clone())) {
            Err(LoadError::Capacity { message }) => {
                assert!(message.contains("concurrent limit"), "{message}")
            }
            other => panic!("expected a capacity error, got {other:?}"),
        }
        cancel.cancel();
        let first = first.join().unwrap().unwrap();
        assert_eq!(first.report.status, Status::Cancelled);
    });
    // The slot is free again: the same run now completes.
    let run = pooled
        .run_prepared(&noop, RunOptions::new(caps.clone()))
        .unwrap();
    assert_eq!(run.report.status, Status::Completed, "{:?}", run.trap);
}

#[test]
fn dropping_the_async_run_cancels_it() {
    use sbx_wasm::wasm::LoadError;
    let t = Tree::new();
    let (caps, pooled, [spin, noop]) = pool_of_one(&t, ["spin", "noop"]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The caller gives up on a spinning guest after 300 ms...
    let gave_up = rt.block_on(async {
        let run = pooled.run_prepared_async(&spin, RunOptions::new(caps.clone()));
        tokio::time::timeout(Duration::from_millis(300), run).await
    });
    assert!(gave_up.is_err(), "the spinning guest cannot have finished");
    // ...and the guest stops: the pool's only slot frees up.
    let start = Instant::now();
    loop {
        match pooled.run_prepared(&noop, RunOptions::new(caps.clone())) {
            Ok(run) => {
                assert_eq!(run.report.status, Status::Completed, "{:?}", run.trap);
                break;
            }
            Err(LoadError::Capacity { .. }) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("the dropped run still holds the slot: {e}"),
        }
    }
}

#[test]
fn an_async_tool_runs_on_the_callers_runtime_and_a_cancel_aborts_it() {
    let component = host().load(&guest("benign")).unwrap();
    let agent = host().prepare(&component).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let handle = rt.handle().clone();
    let aborted = Arc::new(std::sync::atomic::AtomicBool::new(true));

    let t = Tree::new();
    let mut tools = ToolRegistry::new();
    tools.register_async("word_count", handle.clone(), |input: String| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(input.split_whitespace().count().to_string())
    });
    let opts = RunOptions::new(patient(&t).build().unwrap()).services(Services::new().tools(tools));
    let run = rt
        .block_on(host().run_prepared_async(&agent, opts))
        .unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{:?}", run.trap);
    assert!(String::from_utf8_lossy(&run.stdout).ends_with("words=3\n"));

    // A tool that would take 30 s: the cancel aborts its task.
    let t = Tree::new();
    let mut tools = ToolRegistry::new();
    let finished = aborted.clone();
    tools.register_async("word_count", handle, move |_: String| {
        let finished = finished.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            finished.store(false, std::sync::atomic::Ordering::SeqCst);
            Ok("late".to_string())
        }
    });
    let cancel = CancelHandle::new();
    let opts = RunOptions::new(patient(&t).build().unwrap())
        .services(Services::new().tools(tools))
        .cancel(cancel.clone());
    let start = Instant::now();
    let run = rt.block_on(async {
        let stop = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        };
        tokio::join!(host().run_prepared_async(&agent, opts), stop).0
    });
    assert_cancelled(&run.unwrap(), start.elapsed());
    assert!(!t.path("out/summary.txt").exists());
    assert!(aborted.load(std::sync::atomic::Ordering::SeqCst));
}

#[test]
fn a_wall_only_grant_runs_unmetered_and_the_report_says_fuel_was_off() {
    let t = Tree::new();
    let wall_only = t
        .caps()
        .max_wall(Duration::from_millis(500))
        .no_fuel()
        .build()
        .unwrap();
    let unmetered = WasmHost::new_unmetered().unwrap();
    let spin = unmetered.load(&guest("spin")).unwrap();
    let run = unmetered
        .run(&spin, RunOptions::new(wall_only.clone()))
        .unwrap();
    // The wall ends it, fuel was no budget.
    assert_eq!(
        run.report.violation,
        Some(Violation::MaxWall),
        "{:?}",
        run.report
    );
    assert_eq!(run.report.usage.fuel, None);
    assert_eq!(run.report.limits.fuel, None);
    // The same grant on a metering host: counted, never short.
    let run = host()
        .run(
            &host().load(&guest("spin")).unwrap(),
            RunOptions::new(wall_only),
        )
        .unwrap();
    assert_eq!(run.report.violation, Some(Violation::MaxWall));
    assert_eq!(run.report.limits.fuel, None);
    // A grant with a fuel budget is never run unmetered.
    let metered = t.caps().max_fuel(1_000).build().unwrap();
    match unmetered.run(&spin, RunOptions::new(metered)) {
        Err(e) => assert!(e.to_string().contains("does not meter fuel"), "{e}"),
        Ok(run) => panic!("ran a fuel budget unmetered: {:?}", run.report),
    }
}

#[test]
fn an_async_run_in_place_runs_on_the_callers_runtime() {
    let component = host().load(&guest("benign")).unwrap();
    let t = Tree::new();
    let caps = t.caps().build().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let opts = RunOptions::new(caps.clone())
        .services(Services::new().tools(command_tools(&caps)))
        .in_place(true);
    let run = rt.block_on(host().run_async(&component, opts)).unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{:?}", run.trap);
    assert!(t.path("out/summary.txt").exists());
}
