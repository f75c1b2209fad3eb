//! `sbx-data-preinit PYTHON.wasm FILES TMP OUT.wasm CODE`: the data runner's
//! interpreter started once at build time, `CODE` run in it (the data
//! packages imported), and the memory it left written out as the data of a
//! new module (wasmtime's own pre-initializer, wizer).
//!
//! A run of the result starts where this left off: `import pandas` costs a
//! dictionary lookup instead of about a second of unzipping and executing
//! module code under the meter. The interpreter is made for this: its `run`
//! reads its folders, arguments and environment afresh and reseeds `random`
//! and `numpy.random` (seeds drawn here would otherwise repeat in every
//! run); what the session left that a script must not see (exit() and
//! quit() that end a session) the runner's prelude puts back each run.
//!
//! The interpreter sees only the runner's own files here, read-only, at the
//! places a run sees them (`FILES/usr` at `/usr`, `FILES/mpl-data` inside
//! the zip's path), an empty scratch folder at `/tmp` (where a run's
//! private folder is), no environment and no clock but the real one:
//! nothing of the build machine can reach the snapshot but those files.

use std::future::Future;
use std::path::Path;
use std::pin::pin;
use std::task::{Context as TaskContext, Poll, Waker};
use wasmtime::error::Context as _;
use wasmtime::{Config, Engine, Linker, Module, Result, Store, bail};
use wasmtime_wasi::p1::{self, WasiP1Ctx};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};
use wasmtime_wizer::{WasmtimeWizer, Wizer};

/// Where the runner's matplotlib data is lent (as in the host's runner
/// mounts): inside the zip's path, where matplotlib looks for it.
const MPL_DATA: &str = "/usr/local/lib/python315.zip/matplotlib/mpl-data";

/// Functions of the interpreter's C library called after CODE, as its own
/// pre-initializer (`wizer.initialize`) calls them last; not exported, so
/// found by name and exported for the snapshot (the runner's adapter keeps
/// none of them).
const AFTER: &[&str] = &["__wasilibc_reset_preopens", "clear_unused_stack"];

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, files, tmp, output, code] = args.as_slice() else {
        bail!("usage: sbx-data-preinit PYTHON.wasm FILES TMP OUT.wasm CODE");
    };
    let wasm = std::fs::read(input).with_context(|| format!("reading {input}"))?;
    let files = Path::new(files);

    let mut wizer = Wizer::new();
    wizer.init_func("wizer.initialize");
    let wasm = with_exports(&wasm, AFTER)?;
    let (cx, instrumented) = wizer.instrument(&wasm).context("instrumenting")?;

    let mut config = Config::new();
    config
        .wasm_exceptions(true)
        .wasm_gc(true)
        .wasm_function_references(true);
    let engine = Engine::new(&config)?;
    let module = Module::new(&engine, &instrumented).context("compiling")?;

    let wasi = WasiCtxBuilder::new()
        .inherit_stdout()
        .inherit_stderr()
        .arg("python")
        .preopened_dir(files.join("usr"), "/usr", FsPerms::ReadOnly)?
        .preopened_dir(files.join("mpl-data"), MPL_DATA, FsPerms::ReadOnly)?
        .preopened_dir(tmp, "/tmp", FsPerms::ReadWrite)?
        .build_p1();
    let mut store = Store::new(&engine, wasi);
    let mut linker: Linker<WasiP1Ctx> = Linker::new(&engine);
    p1::add_to_linker_sync(&mut linker, |cx| cx)?;
    // The interpreter's own host door: "no host", as in the runner.
    linker.func_wrap("host", "call", |_: i32, _: i32, _: i32, _: i32| -> i32 {
        -1
    })?;
    let instance = linker.instantiate(&mut store, &module)?;

    if let Some(init) = instance.get_func(&mut store, "_initialize") {
        init.typed::<(), ()>(&store)?.call(&mut store, ())?;
    }
    instance
        .get_typed_func::<(), ()>(&mut store, wizer.get_init_func())?
        .call(&mut store, ())
        .context("starting the interpreter")?;

    // `turn(ptr, len)` runs CODE in the interpreter's session (its memory
    // from `host_alloc`) and answers 0 when CODE raised nothing. `run`, the
    // runner's entry, refuses to follow a turn, by flags that `turn` and
    // `run` set as they start: those are put back as they were before the
    // turn, so the snapshot's `run` (the run's own) starts as a first call.
    let guards = entry_flags(&wasm, &["turn", "run"])?;
    let memory = instance
        .get_memory(&mut store, "memory")
        .context("the module exports no memory")?;
    let before: Vec<u8> = guards.iter().map(|&at| memory.data(&store)[at]).collect();
    let alloc = instance.get_typed_func::<i32, i32>(&mut store, "host_alloc")?;
    let turn = instance.get_typed_func::<(i32, i32), i32>(&mut store, "turn")?;
    let len = i32::try_from(code.len()).context("CODE is too long")?;
    let at = alloc.call(&mut store, len)?;
    memory.write(&mut store, at as u32 as usize, code.as_bytes())?;
    let status = turn.call(&mut store, (at, len)).context("running CODE")?;
    if status != 0 {
        bail!("CODE failed in the interpreter (status {status}); see its output above");
    }
    for (&at, &was) in guards.iter().zip(&before) {
        memory.data_mut(&mut store)[at] = was;
    }
    // What the interpreter's own pre-initializer does last: forget the
    // folders it was lent here (a run finds its own afresh) and zero the
    // stack it no longer uses.
    for name in AFTER {
        instance
            .get_typed_func::<(), ()>(&mut store, name)?
            .call(&mut store, ())
            .with_context(|| format!("calling {name}"))?;
    }

    let snapshot = block_on(wizer.snapshot(
        &cx,
        &mut WasmtimeWizer {
            store: &mut store,
            instance,
        },
    ))?;
    std::fs::write(output, snapshot).with_context(|| format!("writing {output}"))?;
    Ok(())
}

/// The flags the exports `names` set as they start: bytes at constant
/// addresses each stores a constant 1 into (`i32.const 0`, `i32.const 1`,
/// `i32.store8 offset=A`). Each export must have at least one.
fn entry_flags(wasm: &[u8], names: &[&str]) -> Result<Vec<usize>> {
    use wasmparser::{ExternalKind, Operator, Parser, Payload, TypeRef};
    let (mut wanted, mut imported, mut index) = (Vec::new(), 0u32, 0u32);
    let mut flags = Vec::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::ImportSection(r) => {
                for import in r.into_imports() {
                    if let TypeRef::Func(_) = import?.ty {
                        imported += 1;
                    }
                }
            }
            Payload::ExportSection(r) => {
                for export in r {
                    let export = export?;
                    if export.kind == ExternalKind::Func && names.contains(&export.name) {
                        wanted.push((export.index, export.name));
                    }
                }
                index = imported;
            }
            Payload::CodeSectionEntry(body) => {
                if let Some(&(_, name)) = wanted.iter().find(|(i, _)| *i == index) {
                    let found = flags.len();
                    let mut last = [None, None];
                    let mut ops = body.get_operators_reader()?;
                    while !ops.eof() {
                        let op = ops.read()?;
                        if let (Operator::I32Store8 { memarg }, [Some(0), Some(1)]) = (&op, last) {
                            flags.push(usize::try_from(memarg.offset)?);
                        }
                        let value = match op {
                            Operator::I32Const { value } => Some(value),
                            _ => None,
                        };
                        last = [last[1], value];
                    }
                    if flags.len() == found {
                        bail!("the interpreter's `{name}` sets no flag: not the expected build");
                    }
                }
                index += 1;
            }
            _ => {}
        }
    }
    if wanted.len() != names.len() {
        bail!("the module lacks one of the exports {names:?}");
    }
    flags.sort_unstable();
    flags.dedup();
    Ok(flags)
}

/// `wasm` with the functions `names` (by the name section) exported under
/// those names. The export section is rebuilt; every other section is
/// copied as it is.
fn with_exports(wasm: &[u8], names: &[&str]) -> Result<Vec<u8>> {
    use wasm_encoder::{ExportKind, ExportSection, Module, RawSection};
    use wasmparser::{KnownCustom, Name, Parser, Payload};
    let mut found = vec![None; names.len()];
    for payload in Parser::new(0).parse_all(wasm) {
        let Payload::CustomSection(c) = payload? else {
            continue;
        };
        let KnownCustom::Name(reader) = c.as_known() else {
            continue;
        };
        for part in reader {
            if let Name::Function(map) = part? {
                for naming in map {
                    let naming = naming?;
                    if let Some(i) = names.iter().position(|n| *n == naming.name) {
                        found[i] = Some(naming.index);
                    }
                }
            }
        }
    }
    let mut out = Module::new();
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload?;
        if let Payload::ExportSection(r) = &payload {
            let mut exports = ExportSection::new();
            for export in r.clone() {
                let export = export?;
                exports.export(export.name, ExportKind::from(export.kind), export.index);
            }
            for (name, index) in names.iter().zip(&found) {
                let Some(index) = *index else {
                    bail!("the interpreter has no function named {name}: not the expected build");
                };
                exports.export(name, ExportKind::Func, index);
            }
            out.section(&exports);
        } else if let Some((id, range)) = payload.as_section() {
            out.section(&RawSection {
                id,
                data: &wasm[range.start as usize..range.end as usize],
            });
        }
    }
    Ok(out.finish())
}

/// Wizer's snapshot is written as a future for hosts that run async; over a
/// synchronous store it never waits, so one poll finishes it.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = TaskContext::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}
