//! What P7's idle sandbox holds, split: `p7_heap ours|bare [N]` holds N
//! (default 500) sandboxes of the `sleepy` guest asleep at once, as P7
//! does, and prints per sandbox the resident growth and the live host
//! heap (a counting allocator: bytes allocated and not yet freed). What
//! the resident growth holds beyond the heap is mapped memory: the guest's
//! linear memory and tables, and the fibre stack each async run takes.

use sbx_wasm::Capabilities;
use sbx_wasm::wasm::{RunOptions, WasmHost};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

struct Counting;
static LIVE: AtomicI64 = AtomicI64::new(0);
/// Blocks allocated and not yet freed: each costs the allocator's own
/// header and rounding on top of its bytes, which the resident count sees.
static BLOCKS: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is passed to the system allocator unchanged; the
// counter is the only addition.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        BLOCKS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        BLOCKS.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as for `dealloc`, and the new size is the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Live heap bytes and blocks.
fn live() -> (i64, i64) {
    (LIVE.load(Ordering::Relaxed), BLOCKS.load(Ordering::Relaxed))
}

fn rss_kib() -> f64 {
    sbx_wasm_bench::rss_kib() as f64
}

/// Start `n` runs of `run` (each polled once, up to its sleep), then
/// `sample` while they are held; drops them after.
async fn held<F: std::future::Future, S: std::future::Future>(
    n: usize,
    run: impl Fn() -> F,
    sample: impl FnOnce() -> S,
) -> S::Output {
    let mut runs: Vec<_> = (0..n).map(|_| Box::pin(run())).collect();
    std::future::poll_fn(|cx| {
        for r in runs.iter_mut() {
            let _ = r.as_mut().poll(cx);
        }
        std::task::Poll::Ready(())
    })
    .await;
    let s = sample().await;
    drop(runs);
    s
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let side = argv.get(1).map(String::as_str).unwrap_or("ours");
    let n: usize = argv.get(2).and_then(|s| s.parse().ok()).unwrap_or(500);
    let guests = std::path::PathBuf::from(std::env::var("GUEST_DIR").expect("GUEST_DIR"));
    let path = guests.join("sleepy.wasm");
    let scratch = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let hold = Duration::from_millis(1500);
    let sample = || async move {
        tokio::time::sleep(hold).await;
        if let Ok(to) = std::env::var("P7_SMAPS") {
            std::fs::copy("/proc/self/smaps", to).unwrap();
        }
        (rss_kib(), live())
    };
    let (rss0, heap0, (rss1, heap1));
    if side == "ours" {
        let host = WasmHost::new().unwrap();
        let caps = Capabilities::builder()
            .read_mount(scratch.path(), "/work")
            .max_wall(hold * 2)
            .build()
            .unwrap();
        let agent = host.prepare(&host.load(&path).unwrap()).unwrap();
        let run = || host.run_prepared_async(&agent, RunOptions::new(caps.clone()).in_place(true));
        // One run first (cut short), so what every run shares is made
        // before the count.
        let _ = rt.block_on(async { tokio::time::timeout(hold / 10, run()).await });
        sbx_wasm_bench::settle_heap();
        (rss0, heap0) = (rss_kib(), live());
        (rss1, heap1) = rt.block_on(held(n, run, sample));
    } else {
        let bare = sbx_wasm_bench::bare::Bare::new().unwrap();
        let pre = bare.load_file(&path).unwrap();
        let _ = rt.block_on(async { tokio::time::timeout(hold / 10, bare.run(&pre, &[])).await });
        sbx_wasm_bench::settle_heap();
        (rss0, heap0) = (rss_kib(), live());
        (rss1, heap1) = rt.block_on(held(n, || bare.run(&pre, &[]), sample));
    }
    let per = |a: f64, b: f64| (b - a) / n as f64;
    println!(
        "{side}: {:.1} KiB resident, {:.1} KiB live heap in {:.1} blocks per idle sandbox ({n} held)",
        per(rss0, rss1),
        per(heap0.0 as f64, heap1.0 as f64) / 1024.0,
        per(heap0.1 as f64, heap1.1 as f64)
    );
}
