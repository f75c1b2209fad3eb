//! A pooled slot keeps nothing of a run in swap: the `residue` guest fills
//! 8 MiB of fresh memory with a marker and waits while this test pushes
//! the pool's pages out to swap (`MADV_PAGEOUT`, with a swap file of its
//! own switched on for the test); the next run in the same slot reads the
//! same addresses without writing them first and must find zeros, not the
//! marker. wasmtime 48's page scan missed written pages in swap (neither
//! restored nor unmapped); 50.0.2 and later ask for them. Needs root
//! (swapon) and Linux 6.7 (the scan); elsewhere the test says why it did
//! not run.

use sbx_wasm::Capabilities;
use sbx_wasm::wasm::{PageReset, PoolSizes, RunOptions, WasmHost};
use sbx_wasm_tests::{guest, repo_root, utf8};
use std::process::Command;
use std::time::Duration;

/// A swap file switched on for the test's length.
struct Swap {
    _dir: tempfile::TempDir,
    file: std::path::PathBuf,
}

impl Swap {
    fn on() -> Result<Swap, String> {
        // On the disk the build is on (a swap file cannot live on tmpfs).
        let dir = tempfile::tempdir_in(repo_root().join("target")).map_err(|e| e.to_string())?;
        let file = dir.path().join("swap");
        let ok = |c: &mut Command| c.output().map(|o| o.status.success()).unwrap_or(false);
        if !(ok(Command::new("fallocate").args(["-l", "128M"]).arg(&file))
            && std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .is_ok()
            && ok(Command::new("mkswap").arg(&file))
            && ok(Command::new("swapon").arg(&file)))
        {
            return Err("a swap file could not be switched on (needs root and swapon)".into());
        }
        Ok(Swap { _dir: dir, file })
    }
}

impl Drop for Swap {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.file).status();
    }
}

/// Ask the kernel to page out every large private writable mapping of this
/// process (the pool's reservation among them); returns this process's
/// swapped KiB after.
fn page_out_the_pool() -> u64 {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (a, b) = (
            usize::from_str_radix(a, 16).unwrap(),
            usize::from_str_radix(b, 16).unwrap(),
        );
        if perms.starts_with("rw") && perms.ends_with('p') && b - a >= 1 << 20 {
            // SAFETY: advice only; MADV_PAGEOUT never changes contents.
            unsafe { libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_PAGEOUT) };
        }
    }
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmSwap:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_pooled_slot_keeps_nothing_of_a_run_in_swap() {
    if PageReset::detect() != PageReset::Kept {
        eprintln!(
            "skipped: the kept page reset is not in use here ({:?})",
            PageReset::detect()
        );
        return;
    }
    let swap = match Swap::on() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let caps = Capabilities::builder()
        .max_wall(Duration::from_secs(20))
        .build()
        .unwrap();
    // One slot: the second run gets the first one's memory, reset.
    let host = WasmHost::with_pool(PoolSizes::for_caps(&caps, 1)).unwrap();
    let agent = host
        .prepare(&host.load(&guest("residue")).unwrap())
        .unwrap();

    // The neighbour without swap: what a run left is gone for the next.
    let first = host
        .run_prepared(&agent, RunOptions::new(caps.clone()).args(["write", "0"]))
        .unwrap();
    let addr = utf8(&first.stdout).trim().to_string();
    let read = host
        .run_prepared(&agent, RunOptions::new(caps.clone()).args(["read", &addr]))
        .unwrap();
    assert_eq!(utf8(&read.stdout), "0\n", "{}", utf8(&read.stderr));

    // The same with the written pages in swap when the slot is reset.
    let (host2, agent2, caps2) = (host.clone(), agent.clone(), caps.clone());
    let writer = std::thread::spawn(move || {
        host2
            .run_prepared(&agent2, RunOptions::new(caps2).args(["write", "1500"]))
            .unwrap()
    });
    std::thread::sleep(Duration::from_millis(600));
    let swapped_kib = page_out_the_pool();
    let first = writer.join().unwrap();
    let addr = utf8(&first.stdout).trim().to_string();
    if swapped_kib < 4096 {
        eprintln!("skipped: the kernel put only {swapped_kib} KiB in swap; nothing to test");
        drop(swap);
        return;
    }
    let read = host
        .run_prepared(&agent, RunOptions::new(caps).args(["read", &addr]))
        .unwrap();
    drop(swap);
    assert_eq!(
        utf8(&read.stdout),
        "0\n",
        "the next run found the marker of the run before in {swapped_kib} KiB of swap: {}",
        utf8(&read.stderr)
    );
}
