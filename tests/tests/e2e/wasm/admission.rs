//! The library for framework authors: admission control (a host runs at
//! most `max_concurrent` guests at once; a run past that waits for a slot
//! and says how long, fails fast when asked, and gives up at its deadline
//! as `LoadError::Capacity`, never as the guest's fault; 100 runs at once
//! on a pool of 10 all complete) and async events (a tokio channel; a
//! `Started` event before each op's effect).

use super::*;
use sbx_wasm::wasm::{Admission, LoadError, PoolSizes};

/// A grant whose runs of `sleepy` end at `ms` of wall.
fn walled(t: &Tree, ms: u64) -> Capabilities {
    t.caps()
        .max_wall(Duration::from_millis(ms))
        .build()
        .unwrap()
}

#[test]
fn a_run_past_max_concurrent_waits_for_a_slot_and_says_how_long() {
    let t = Tree::new();
    let host = WasmHost::new().unwrap().max_concurrent(1);
    assert_eq!(host.concurrency(), Some(1));
    let sleepy = host.prepare(&host.load(&guest("sleepy")).unwrap()).unwrap();
    let caps = walled(&t, 400);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // Each may wait longer than its own wall (the default wait).
    let patient =
        || RunOptions::new(caps.clone()).admission(Admission::Wait(Duration::from_secs(30)));
    let (a, b) = rt.block_on(async {
        tokio::join!(
            host.run_prepared_async(&sleepy, patient()),
            host.run_prepared_async(&sleepy, patient()),
        )
    });
    let (a, b) = (a.unwrap(), b.unwrap());
    for r in [&a, &b] {
        assert_eq!(
            r.report.violation,
            Some(Violation::MaxWall),
            "{:?}",
            r.report
        );
    }
    let (first, second) = if a.queued < b.queued { (a, b) } else { (b, a) };
    assert!(
        first.queued < Duration::from_millis(100),
        "{:?}",
        first.queued
    );
    assert!(
        second.queued >= Duration::from_millis(300),
        "{:?}",
        second.queued
    );
}

#[test]
fn fail_fast_and_a_deadline_give_up_as_capacity_while_the_slot_is_held() {
    let t = Tree::new();
    let host = WasmHost::new().unwrap().max_concurrent(1);
    let sleepy = host.prepare(&host.load(&guest("sleepy")).unwrap()).unwrap();
    let noop = host.prepare(&host.load(&guest("noop")).unwrap()).unwrap();
    let caps = walled(&t, 1500);
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        let opts = RunOptions::new(caps.clone()).events(sbx_wasm::events::EventSink::new(tx));
        let holder = s.spawn(|| host.run_prepared(&sleepy, opts));
        // The holder has its slot once its guest prints.
        rx.recv_timeout(Duration::from_secs(30)).unwrap();
        let fast = host.run_prepared(
            &noop,
            RunOptions::new(caps.clone()).admission(Admission::FailFast),
        );
        match fast {
            Err(LoadError::Capacity { message }) => {
                assert!(message.contains("max_concurrent = 1"), "{message}")
            }
            other => panic!("expected capacity, got {other:?}"),
        }
        let start = Instant::now();
        let waited = host.run_prepared(
            &noop,
            RunOptions::new(caps.clone()).admission(Admission::Wait(Duration::from_millis(100))),
        );
        assert!(
            matches!(waited, Err(LoadError::Capacity { .. })),
            "{waited:?}"
        );
        assert!(start.elapsed() >= Duration::from_millis(100));
        assert!(start.elapsed() < Duration::from_millis(1000));
        holder.join().unwrap().unwrap();
    });
    // The slot is free: the neighbour runs at once.
    let run = host
        .run_prepared(&noop, RunOptions::new(caps).admission(Admission::FailFast))
        .unwrap();
    assert_eq!(run.report.status, Status::Completed);
}

#[test]
fn a_hundred_runs_at_once_on_a_pool_of_ten_all_complete() {
    let t = Tree::new();
    let caps = t.caps().max_memory_bytes(64 << 20).build().unwrap();
    let host = WasmHost::with_pool(PoolSizes::for_caps(&caps, 10))
        .unwrap()
        .max_concurrent(2);
    let noop = host.prepare(&host.load(&guest("noop")).unwrap()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let runs = rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..100 {
            let (host, noop, caps) = (host.clone(), noop.clone(), caps.clone());
            set.spawn(async move { host.run_prepared_async(&noop, RunOptions::new(caps)).await });
        }
        set.join_all().await
    });
    let done = runs
        .iter()
        .filter(|r| {
            r.as_ref()
                .is_ok_and(|r| r.report.status == Status::Completed)
        })
        .count();
    assert_eq!(done, 100, "{:?}", runs.iter().find(|r| r.is_err()));
}

#[test]
fn async_events_say_when_each_op_starts_and_how_it_ended() {
    use sbx_wasm::events::{Event, EventSink};
    let server = LoopbackServer::start();
    let caps = Capabilities::builder()
        .allow_egress(server.origin())
        .build()
        .unwrap();
    let host = WasmHost::new().unwrap();
    let agent = host
        .prepare(&host.load(&guest("summarizer")).unwrap())
        .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let events = rt.block_on(async {
        let (sink, mut rx) = EventSink::channel(256);
        let opts = RunOptions::new(caps)
            .args([format!("{}/status", server.origin())])
            .events(sink);
        let run = host.run_prepared_async(&agent, opts).await.unwrap();
        assert_eq!(run.report.status, Status::Completed, "{:?}", run.report);
        // Every sender is gone with the run: the stream ends.
        let mut got = Vec::new();
        while let Ok(Some(e)) = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            got.push(e);
        }
        got
    });
    let started = events.iter().position(|e| {
        matches!(e, Event::Started { op, target, .. } if *op == "net_fetch" && target.ends_with("/status"))
    });
    let decided = events.iter().position(|e| {
        matches!(e, Event::Decision(d) if d.op == "net_fetch" && d.decision == sbx_wasm::Decision::Allowed)
    });
    let (Some(s), Some(d)) = (started, decided) else {
        panic!("{events:?}");
    };
    assert!(s < d, "started before decided: {events:?}");
    let (Event::Started { seq, .. }, Event::Decision(rec)) = (&events[s], &events[d]) else {
        unreachable!()
    };
    assert_eq!(*seq, rec.seq);
    assert!(events.iter().any(|e| matches!(e, Event::Stdout(_))));
}
