//! P7, resident memory per idle sandbox, measured in a fresh process per
//! side (the harness runs itself with `--p7 ours|bare`).

use super::{Res, bare, join_all, opts};
use sbx_wasm::Capabilities;
use sbx_wasm::wasm::WasmHost;
use std::path::Path;
use std::time::Duration;

pub(crate) use sbx_wasm_bench::rss_kib;

/// P7, in a fresh process per side: hold `n` sandboxes of the `sleepy`
/// guest (each asleep inside a WASI call) at once and print the resident
/// growth per sandbox, in KiB.
pub(crate) fn p7_child(side: &str, guests: &Path, n: usize) -> Res<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let scratch = tempfile::tempdir()?;
    let path = guests.join("sleepy.wasm");
    let hold = Duration::from_millis(1500);
    let before;
    let during;
    if side == "ours" {
        let host = WasmHost::new()?;
        let caps = Capabilities::builder()
            .read_mount(scratch.path(), "/work")
            .max_wall(hold * 2)
            .build()?;
        let agent = host.prepare(&host.load(&path)?)?;
        // Each side's growth counted whole: see `settle_heap`.
        sbx_wasm_bench::settle_heap();
        before = rss_kib();
        during = rt.block_on(async {
            let runs =
                (0..n).map(|_| host.run_prepared_async(&agent, opts(&caps, &[]).in_place(true)));
            let sample = async {
                tokio::time::sleep(hold).await;
                rss_kib()
            };
            let (_, kib) = tokio::join!(join_all(runs), sample);
            kib
        });
    } else {
        let bare = bare::Bare::new()?;
        let pre = bare.prepare(&wasmtime::component::Component::from_file(
            &bare.engine,
            &path,
        )?)?;
        // Each side's growth counted whole: see `settle_heap`.
        sbx_wasm_bench::settle_heap();
        before = rss_kib();
        during = rt.block_on(async {
            let runs = (0..n).map(|_| tokio::time::timeout(hold * 2, bare.run(&pre, &[])));
            let sample = async {
                tokio::time::sleep(hold).await;
                rss_kib()
            };
            let (_, kib) = tokio::join!(join_all(runs), sample);
            kib
        });
    }
    println!("{}", during.saturating_sub(before) as f64 / n as f64);
    Ok(())
}
