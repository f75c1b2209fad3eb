//! `sbx-data-adapt IN.wasm OUT.wasm`: makes the data runner's component.
//!
//! The data runner's CPython (numpy, pandas, matplotlib... compiled in) is
//! a WASI preview 1 *reactor* module: it exports `_initialize` and `run`
//! (argv in, exit status out), and imports one host function of its own,
//! `host.call`, a tool door its own host provides. sbx-wasm runs WASI 0.2
//! components, under a gate that sits on the 0.2 interfaces, so the module
//! is turned into an ordinary 0.2 command:
//!
//! - a `_start` is added that calls `_initialize` (when the module has
//!   one: its pre-initialized form does not), then `run`, and passes a
//!   non-zero status to `proc_exit`; the module's other exports are dropped
//!   (nothing but `_start` and the memory is reachable from outside);
//! - `host.call` is met inside the component by a one-function module that
//!   answers -1 ("no host"), so the component imports nothing but WASI;
//! - WASI preview 1 is met by wasmtime's own preview 1 adapter, so every
//!   file, clock and random call the interpreter makes is a 0.2 call the
//!   host's gate sees.

use anyhow::{Context, Result, bail};
use wasm_encoder::{
    CodeSection, ExportKind, ExportSection, Function, FunctionSection, Instruction, Module,
    RawSection, SectionId, TypeSection, ValType,
};
use wasmparser::{ExternalKind, Parser, Payload, TypeRef};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output] = args.as_slice() else {
        bail!("usage: sbx-data-adapt IN.wasm OUT.wasm");
    };
    let module = std::fs::read(input).with_context(|| format!("reading {input}"))?;
    let command = with_start(&module)?;
    let component = wit_component::ComponentEncoder::default()
        .module(&command)?
        .adapter(
            "wasi_snapshot_preview1",
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER,
        )?
        .adapter("host", &no_host())?
        .validate(true)
        .encode()
        .context("encoding the component")?;
    std::fs::write(output, component).with_context(|| format!("writing {output}"))?;
    Ok(())
}

/// What the module holds that `_start` needs.
#[derive(Default)]
struct Found {
    types: u32,
    imported_funcs: u32,
    defined_funcs: u32,
    proc_exit: Option<u32>,
    initialize: Option<u32>,
    run: Option<u32>,
    memory: Option<u32>,
}

/// `module` with `_start` added and every export but it and the memory
/// dropped. Sections are copied as they are but for the four that change
/// (types, functions, exports, code), to which one entry is appended (the
/// export section is rebuilt), so no index in the module moves.
fn with_start(module: &[u8]) -> Result<Vec<u8>> {
    let mut found = Found::default();
    for payload in Parser::new(0).parse_all(module) {
        match payload? {
            Payload::TypeSection(r) => {
                for group in r {
                    let group = group?;
                    if group.is_explicit_rec_group() {
                        bail!("the module has a recursive type group: not a CPython build");
                    }
                    found.types += 1;
                }
            }
            Payload::ImportSection(r) => {
                for import in r.into_imports() {
                    let import = import?;
                    if let TypeRef::Func(_) = import.ty {
                        if import.module == "wasi_snapshot_preview1" && import.name == "proc_exit" {
                            found.proc_exit = Some(found.imported_funcs);
                        }
                        found.imported_funcs += 1;
                    }
                }
            }
            Payload::FunctionSection(r) => found.defined_funcs = r.count(),
            Payload::ExportSection(r) => {
                for export in r {
                    let export = export?;
                    match (export.kind, export.name) {
                        (ExternalKind::Func, "_initialize") => {
                            found.initialize = Some(export.index)
                        }
                        (ExternalKind::Func, "run") => found.run = Some(export.index),
                        (ExternalKind::Memory, "memory") => found.memory = Some(export.index),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let (Some(proc_exit), Some(run), Some(memory)) = (found.proc_exit, found.run, found.memory)
    else {
        bail!("the module lacks proc_exit, run or memory: not the data runner's CPython");
    };
    let start_type = found.types;
    let start = found.imported_funcs + found.defined_funcs;

    let mut out = Module::new();
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload?;
        match &payload {
            Payload::TypeSection(r) => {
                // `() -> ()`, after the module's own types (copied as they are).
                let data = appended(module, r.range(), r.count(), &[0x60, 0, 0]);
                out.section(&raw(SectionId::Type, &data));
            }
            Payload::FunctionSection(r) => {
                let mut ty = Vec::new();
                leb(&mut ty, start_type.into());
                let data = appended(module, r.range(), r.count(), &ty);
                out.section(&raw(SectionId::Function, &data));
            }
            Payload::ExportSection(_) => {
                let mut exports = ExportSection::new();
                exports.export("memory", ExportKind::Memory, memory);
                exports.export("_start", ExportKind::Func, start);
                out.section(&exports);
            }
            Payload::CodeSectionStart { range, .. } => {
                // The bodies are copied raw; ours goes after them.
                let mut body = Function::new([(1, ValType::I32)]);
                if let Some(init) = found.initialize {
                    body.instruction(&Instruction::Call(init));
                }
                body.instruction(&Instruction::Call(run));
                body.instruction(&Instruction::LocalTee(0));
                body.instruction(&Instruction::If(wasm_encoder::BlockType::Empty));
                body.instruction(&Instruction::LocalGet(0));
                body.instruction(&Instruction::Call(proc_exit));
                body.instruction(&Instruction::End);
                body.instruction(&Instruction::End);
                let mut ours = Vec::new();
                wasm_encoder::Encode::encode(&body, &mut ours);
                let data = appended(module, range.clone(), found.defined_funcs, &ours);
                out.section(&raw(SectionId::Code, &data));
            }
            Payload::CodeSectionEntry(_) => {}
            Payload::Version { .. } | Payload::End(_) => {}
            other => {
                if let Some((id, range)) = other.as_section() {
                    out.section(&RawSection {
                        id,
                        data: &module[range.start as usize..range.end as usize],
                    });
                }
            }
        }
    }
    Ok(out.finish())
}

/// A vector section of `module` (its bytes at `range`: a count, then
/// `count` entries) with one more entry, `extra`, encoded already.
fn appended(module: &[u8], range: std::ops::Range<u64>, count: u32, extra: &[u8]) -> Vec<u8> {
    let (start, end) = (range.start as usize, range.end as usize);
    let entries = &module[start + leb_len(&module[start..])..end];
    let mut data = Vec::with_capacity(entries.len() + extra.len() + 5);
    leb(&mut data, u64::from(count) + 1);
    data.extend_from_slice(entries);
    data.extend_from_slice(extra);
    data
}

fn raw(id: SectionId, data: &[u8]) -> RawSection<'_> {
    RawSection { id: id as u8, data }
}

fn leb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn leb_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|b| b & 0x80 == 0)
        .map_or(bytes.len(), |i| i + 1)
}

/// The module that meets `host.call`: -1 for every call, which the
/// interpreter reads as "no host" (its tool door is not sbx-wasm's).
fn no_host() -> Vec<u8> {
    let mut m = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32; 4], [ValType::I32]);
    m.section(&types);
    let mut funcs = FunctionSection::new();
    funcs.function(0);
    m.section(&funcs);
    let mut exports = ExportSection::new();
    exports.export("call", ExportKind::Func, 0);
    m.section(&exports);
    let mut code = CodeSection::new();
    let mut f = Function::new([]);
    f.instruction(&Instruction::I32Const(-1));
    f.instruction(&Instruction::End);
    code.function(&f);
    m.section(&code);
    m.finish()
}
