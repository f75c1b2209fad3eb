//! What a hostile component costs the host as it is instantiated, before
//! its code runs: every memory and table of the instance counts against
//! `max_memory_bytes` together (not each alone), the report's peak is
//! their sum, and an instance made ahead of its run (no run's budget known
//! yet) is made under bounds of its own.

use sbx_wasm::Capabilities;
use sbx_wasm::wasm::{RunOptions, WasmHost};

/// A WASI command component whose one core module declares `memories`
/// linear memories of `pages` 64 KiB pages each and `tables` tables of
/// `elements` elements, with `start` as its start function's body.
fn component(memories: usize, pages: u32, tables: usize, elements: u32, start: &str) -> Vec<u8> {
    let mut m = String::new();
    for _ in 0..memories {
        m += &format!("(memory {pages})\n");
    }
    for _ in 0..tables {
        m += &format!("(table {elements} funcref)\n");
    }
    let text = format!(
        r#"(component
  (core module $m
    {m}
    (func $start {start})
    (start $start)
    (func (export "run") (result i32) i32.const 0))
  (core instance $i (instantiate $m))
  (func $run (result (result)) (canon lift (core func $i "run")))
  (instance $ri (export "run" (func $run)))
  (export "wasi:cli/run@0.2.0" (instance $ri)))"#
    );
    wat::parse_str(text).unwrap()
}

/// `sbx-wasm ARGS` in `dir`, with a cache and key of its own there.
fn sbx_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(sbx_wasm_tests::sbx_bin())
        .current_dir(dir)
        .env("SBX_WASM_CACHE_DIR", dir.join("cache"))
        .env("SBX_WASM_CACHE_KEY", dir.join("cache.key"))
        .args(args)
        .output()
        .unwrap()
}

fn caps(max_memory_mib: u64) -> Capabilities {
    Capabilities::builder()
        .max_memory_bytes(max_memory_mib << 20)
        .build()
        .unwrap()
}

#[test]
fn a_hundred_memories_count_together_against_max_memory() {
    let host = WasmHost::new().unwrap();
    // The allowed neighbour: ten memories of 1 MiB fit under 16 MiB, and
    // the report's peak is their sum, not the largest alone.
    let ten = host
        .load_bytes(&component(10, 16, 0, 0, ""), "ten.wasm")
        .unwrap();
    let run = host.run(&ten, RunOptions::new(caps(16))).unwrap();
    assert!(run.trap.is_none(), "{:?}", run.trap);
    let peak = run.report.usage.memory_peak_bytes.unwrap();
    assert!(peak >= 10 << 20, "peak {peak}");
    // A hundred, each under the limit alone: halted as max_memory.
    let hundred = host
        .load_bytes(&component(100, 16, 0, 0, ""), "hundred.wasm")
        .unwrap();
    let run = host.run(&hundred, RunOptions::new(caps(16))).unwrap();
    assert_eq!(run.report.violation.map(|v| v.as_str()), Some("max_memory"));
    let peak = run.report.usage.memory_peak_bytes.unwrap();
    assert!(peak <= 16 << 20, "the peak is what was allowed: {peak}");
}

#[test]
fn tables_count_against_max_memory_too() {
    let host = WasmHost::new().unwrap();
    // One table of 100k elements (800 KiB) fits; a hundred (the most a
    // module may declare) of 100k, 80 MB in all, do not.
    let one = host
        .load_bytes(&component(0, 0, 1, 100_000, ""), "one.wasm")
        .unwrap();
    let run = host.run(&one, RunOptions::new(caps(16))).unwrap();
    assert!(run.trap.is_none(), "{:?}", run.trap);
    assert!(run.report.usage.memory_peak_bytes.unwrap() >= 800_000);
    let many = host
        .load_bytes(&component(0, 0, 100, 100_000, ""), "many.wasm")
        .unwrap();
    let run = host.run(&many, RunOptions::new(caps(16))).unwrap();
    assert_eq!(run.report.violation.map(|v| v.as_str()), Some("max_memory"));
}

#[test]
fn an_instance_made_ahead_with_a_start_function_that_spins_is_a_clear_error() {
    let host = WasmHost::new().unwrap();
    let spin = host
        .load_bytes(&component(1, 1, 0, 0, "(loop br 0)"), "spin.wasm")
        .unwrap();
    let agent = host.prepare(&spin).unwrap();
    let err = agent.instantiate_ahead().err().expect("it cannot be made");
    let msg = err.to_string();
    assert!(msg.contains("passed its bounds"), "{msg}");
    // The allowed neighbour: a start function that returns is made ahead
    // and serves a run.
    let quiet = host
        .load_bytes(&component(1, 1, 0, 0, ""), "quiet.wasm")
        .unwrap();
    let agent = host.prepare(&quiet).unwrap().instantiate_ahead().unwrap();
    let run = host
        .run_prepared(&agent, RunOptions::new(caps(16)))
        .unwrap();
    assert!(run.trap.is_none(), "{:?}", run.trap);
    assert_eq!(agent.warm_runs(), 1);
}

#[test]
fn a_component_using_async_types_that_is_no_command_is_refused_saying_so() {
    let host = WasmHost::new().unwrap();
    // A component using the component model's async types (a stream), as
    // every WASI 0.3 component does, and exporting no `run`: it compiles
    // (on the 0.3 engine), and is no command of either WASI.
    let p3 = wat::parse_str(
        r#"(component
  (type $s (stream u8))
  (core module $m)
  (core instance (instantiate $m)))"#,
    )
    .unwrap();
    let loaded = host.load_bytes(&p3, "p3.wasm").unwrap();
    let err = host.prepare(&loaded).err().expect("refused").to_string();
    assert!(
        err.contains("not a WASI command (no wasi:cli/run export, of 0.2 or 0.3)"),
        "{err}"
    );
    // The neighbour: a WASI 0.2 command loads and prepares.
    let p2 = host
        .load_bytes(&component(1, 1, 0, 0, ""), "p2.wasm")
        .unwrap();
    host.prepare(&p2).unwrap();
    // Through the CLI: exit 125, and the report asked for says why.
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("caps.toml"), "").unwrap();
    std::fs::write(t.path().join("p3.wasm"), &p3).unwrap();
    let out = sbx_in(
        t.path(),
        &[
            "run",
            "--caps",
            "caps.toml",
            "--report",
            "r.json",
            "p3.wasm",
        ],
    );
    assert_eq!(out.status.code(), Some(125));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "refused");
    assert!(
        report["notes"][0]
            .as_str()
            .unwrap()
            .contains("not a WASI command"),
        "{report}"
    );
}

#[test]
fn an_import_no_host_provides_is_refused_by_name_before_compiling() {
    let host = WasmHost::new().unwrap();
    let importing = |name: &str| {
        wat::parse_str(format!(r#"(component (import "{name}" (instance)))"#)).unwrap()
    };
    for (name, said) in [
        (
            "wasi:keyvalue/store@0.2.0-draft",
            "wasi:keyvalue/store@0.2.0-draft",
        ),
        (
            "wasi:http/incoming-handler@0.2.0",
            "wasi:http/incoming-handler@0.2.0",
        ),
        ("acme:secrets/vault@1.0.0", "acme:secrets/vault@1.0.0"),
        // WASI 0.3's handler is exported by services, never lent.
        ("wasi:http/handler@0.3.0", "wasi:http/handler@0.3.0"),
    ] {
        let err = host
            .load_bytes(&importing(name), "c.wasm")
            .unwrap_err()
            .to_string();
        assert!(err.contains(said), "{name}: {err}");
    }
    // The neighbours: imports of the families the host provides pass the
    // check (an empty instance of any of them satisfies its linking).
    for name in [
        "wasi:cli/environment@0.2.0",
        "wasi:http/types@0.2.3",
        "wasi:cli/environment@0.3.0",
        "wasi:http/types@0.3.0",
        "wasi:http/client@0.3.0",
        "wasi:sockets/types@0.3.0",
        "sbx:agent/net",
    ] {
        host.load_bytes(&importing(name), "c.wasm")
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Before compiling: a component the compiler could not finish within
    // a 1 ms bound is refused for its import, not for the bound.
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("caps.toml"), "").unwrap();
    let mut big = branchy(20_000);
    // Its import, appended as a section of its own at the top level.
    let import = importing("wasi:keyvalue/store@0.2.0-draft");
    big.extend_from_slice(&import[8..]);
    std::fs::write(t.path().join("big.wasm"), &big).unwrap();
    let out = sbx_in(
        t.path(),
        &[
            "run",
            "--caps",
            "caps.toml",
            "--max-compile-ms",
            "1",
            "big.wasm",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(err.contains("wasi:keyvalue/store@0.2.0-draft"), "{err}");
    assert!(err.contains("refused before compiling"), "{err}");
}

/// A command component whose `run` calls one function of `blocks` if/else
/// blocks in a row: compiling 20,000 of them takes the compiler past a few hundred MiB.
fn branchy(blocks: usize) -> Vec<u8> {
    let block = "(if (local.get 0) (then (local.set 1 (i32.add (local.get 1) (i32.const 3)))) \
                 (else (local.set 1 (i32.mul (local.get 1) (i32.const 5)))))\n";
    let body = block.repeat(blocks);
    let text = format!(
        r#"(component
  (core module $m
    (func $big (param i32) (result i32) (local i32)
      {body}
      local.get 1)
    (func (export "run") (result i32) (drop (call $big (i32.const 0))) i32.const 0))
  (core instance $i (instantiate $m))
  (func $run (result (result)) (canon lift (core func $i "run")))
  (instance $ri (export "run" (func $run)))
  (export "wasi:cli/run@0.2.0" (instance $ri)))"#
    );
    wat::parse_str(text).unwrap()
}

#[test]
fn a_component_that_takes_the_compiler_past_its_bounds_is_refused_with_the_bounds_named() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    std::fs::write(dir.join("caps.toml"), "").unwrap();
    std::fs::write(dir.join("big.wasm"), branchy(20_000)).unwrap();
    std::fs::write(dir.join("small.wasm"), branchy(10)).unwrap();
    let run = |file: &str| {
        let bound = ["--max-compile-memory-bytes", "268435456"];
        sbx_in(
            dir,
            &[&["run", "--caps", "caps.toml"][..], &bound, &[file]].concat(),
        )
    };
    // The allowed neighbour: the same shape, small, compiles and runs
    // under the same bounds.
    let out = run("small.wasm");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run("big.wasm");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(err.contains("passed its memory or time bound"), "{err}");
    assert!(
        err.contains("--max-compile-memory-bytes 268435456"),
        "{err}"
    );
    // Nothing of it was cached: one entry, the small one's.
    let entries = std::fs::read_dir(dir.join("cache"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "cwasm")
        })
        .count();
    assert_eq!(entries, 1);
}

#[test]
fn a_component_file_over_the_size_limit_is_refused_unread() {
    let t = tempfile::tempdir().unwrap();
    // Sparse: its length says 513 MiB, no disk is spent, and reading it
    // would fill the host's memory with zeros.
    let big = t.path().join("big.wasm");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(sbx_wasm::wasm::MAX_COMPONENT_BYTES + (1 << 20))
        .unwrap();
    let host = WasmHost::new().unwrap();
    let err = host.load(&big).unwrap_err().to_string();
    assert!(err.contains("limit on components"), "{err}");
    // The neighbour: a component file of ordinary size loads.
    let small = t.path().join("small.wasm");
    std::fs::write(&small, component(1, 1, 0, 0, "")).unwrap();
    host.load(&small).unwrap();
}
