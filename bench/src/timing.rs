//! Timing helpers of the side-by-side harness: interleaved medians, the
//! rate on 2 threads, a minimal `join_all`.

use super::Res;
use std::time::{Duration, Instant};

/// The middle of `v` once sorted.
pub(crate) fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Time `a` and `b` in `rounds` interleaved rounds; their medians.
pub(crate) fn side_by_side(
    rounds: usize,
    mut a: impl FnMut() -> Res<()>,
    mut b: impl FnMut() -> Res<()>,
) -> Res<(Duration, Duration)> {
    // One warm-up each (page cache, lazy init).
    a()?;
    b()?;
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        a()?;
        ta.push(t.elapsed());
        let t = Instant::now();
        b()?;
        tb.push(t.elapsed());
    }
    Ok((median(ta), median(tb)))
}

pub(crate) fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

/// Poll every future to completion concurrently on the current task.
pub(crate) async fn join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut pending: Vec<_> = futures.map(|f| Some(Box::pin(f))).collect();
    let mut out: Vec<Option<F::Output>> = (0..pending.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut left = false;
        for (i, slot) in pending.iter_mut().enumerate() {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        out[i] = Some(v);
                        *slot = None;
                    }
                    std::task::Poll::Pending => left = true,
                }
            }
        }
        if left {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter()
        .map(|o| o.expect("every future finished"))
        .collect()
}

/// Operations per second of the closure `make()` builds, run on 2 threads
/// for `window`.
pub(crate) fn rate<F>(window: Duration, make: F) -> f64
where
    F: Fn() -> Box<dyn FnMut()> + Send + Sync + Clone + 'static,
{
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let make = make.clone();
            std::thread::spawn(move || {
                let mut op = make();
                op();
                let start = Instant::now();
                let mut n = 0u64;
                while start.elapsed() < window {
                    op();
                    n += 1;
                }
                n as f64 / start.elapsed().as_secs_f64()
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).sum()
}
