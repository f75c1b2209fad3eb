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
//!   non-zero status to `proc_exit`; every `proc_exit` first tells the host
//!   a non-zero code (`sbx:agent/outcome`'s `exit-code`: WASI 0.2's exit
//!   carries only failure); the module's other exports are dropped (nothing but
//!   `_start` and the memory is reachable from outside);
//! - `host.call` is met inside the component by a one-function module that
//!   answers -1 ("no host"), so the component imports nothing but WASI and
//!   that one function of the host's;
//! - WASI preview 1 is met by wasmtime's own preview 1 adapter, so every
//!   file, clock and random call the interpreter makes is a 0.2 call the
//!   host's gate sees.

use anyhow::{Context, Result, bail};
use std::convert::Infallible;
use wasm_encoder::reencode::{self, Reencode};
use wasm_encoder::{
    CodeSection, EntityType, ExportKind, ExportSection, Function, FunctionSection, ImportSection,
    Instruction, Module, TypeSection, ValType,
};
use wasmparser::{
    CodeSectionReader, ExportSectionReader, ExternalKind, FunctionSectionReader,
    ImportSectionReader, Parser, Payload, TypeRef, TypeSectionReader,
};

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

/// The host's interface a script's exit code is told through (WASI 0.2's
/// exit carries only success or failure); the runner imports this one
/// function of it.
const OUTCOME_WIT: &str = r#"
package sbx:agent@0.1.0;

interface outcome {
    exit-code: func(code: s32);
}

world data-runner {
    import outcome;
}
"#;
const OUTCOME: &str = "sbx:agent/outcome@0.1.0";

fn scan(module: &[u8]) -> Result<Found> {
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
    Ok(found)
}

/// `module` with one import added (the host's `exit-code`, after the
/// module's own imports, so every defined function's index moves up by
/// one), two functions appended (`_start`, and `exit`, which every call of
/// `proc_exit` now reaches: it tells the host a non-zero code first, so
/// `os._exit(3)` ends a run with 3 as `sys.exit(3)` does), and every
/// export but `_start` and the memory dropped; re-encoded whole by
/// wasm-encoder, which renumbers each use of a function index (calls,
/// tables, names) through `function_index`.
struct Start {
    found: Found,
    /// The types appended: `(i32) -> ()` for the import, `() -> ()` for
    /// `_start`.
    exit_code_type: u32,
    start_type: u32,
    /// Whether function bodies are being re-encoded: only calls there are
    /// sent to `exit` (the name section keeps naming `proc_exit`).
    in_code: bool,
}

impl Start {
    fn exit_code(&self) -> u32 {
        self.found.imported_funcs
    }
    fn start(&self) -> u32 {
        self.found.imported_funcs + 1 + self.found.defined_funcs
    }
    fn exit(&self) -> u32 {
        self.start() + 1
    }
    fn moved(&self, func: u32) -> u32 {
        if self.in_code && Some(func) == self.found.proc_exit {
            self.exit()
        } else if func >= self.found.imported_funcs {
            func + 1
        } else {
            func
        }
    }
}

type Re<T> = std::result::Result<T, reencode::Error<Infallible>>;

impl Reencode for Start {
    type Error = Infallible;

    fn function_index(&mut self, func: u32) -> Re<u32> {
        Ok(self.moved(func))
    }

    fn parse_type_section(&mut self, types: &mut TypeSection, r: TypeSectionReader<'_>) -> Re<()> {
        reencode::utils::parse_type_section(self, types, r)?;
        types.ty().function([ValType::I32], []);
        types.ty().function([], []);
        Ok(())
    }

    fn parse_import_section(
        &mut self,
        imports: &mut ImportSection,
        r: ImportSectionReader<'_>,
    ) -> Re<()> {
        reencode::utils::parse_import_section(self, imports, r)?;
        imports.import(
            OUTCOME,
            "exit-code",
            EntityType::Function(self.exit_code_type),
        );
        Ok(())
    }

    fn parse_function_section(
        &mut self,
        funcs: &mut FunctionSection,
        r: FunctionSectionReader<'_>,
    ) -> Re<()> {
        reencode::utils::parse_function_section(self, funcs, r)?;
        funcs.function(self.start_type);
        funcs.function(self.exit_code_type);
        Ok(())
    }

    fn parse_export_section(
        &mut self,
        exports: &mut ExportSection,
        _: ExportSectionReader<'_>,
    ) -> Re<()> {
        let memory = self.found.memory.expect("checked by with_start");
        exports.export("memory", ExportKind::Memory, memory);
        exports.export("_start", ExportKind::Func, self.start());
        Ok(())
    }

    fn parse_code_section(&mut self, code: &mut CodeSection, r: CodeSectionReader<'_>) -> Re<()> {
        self.in_code = true;
        reencode::utils::parse_code_section(self, code, r)?;
        self.in_code = false;
        let found = &self.found;
        // _start: [_initialize;] status = run(); if status { exit(status) }
        let mut start = Function::new([(1, ValType::I32)]);
        if let Some(init) = found.initialize {
            start.instruction(&Instruction::Call(self.moved(init)));
        }
        start.instruction(&Instruction::Call(self.moved(found.run.expect("checked"))));
        start.instruction(&Instruction::LocalTee(0));
        start.instruction(&Instruction::If(wasm_encoder::BlockType::Empty));
        start.instruction(&Instruction::LocalGet(0));
        start.instruction(&Instruction::Call(self.exit()));
        start.instruction(&Instruction::End);
        start.instruction(&Instruction::End);
        code.function(&start);
        // exit(status): if status { exit-code(status) } proc_exit(status)
        let mut exit = Function::new([]);
        exit.instruction(&Instruction::LocalGet(0));
        exit.instruction(&Instruction::If(wasm_encoder::BlockType::Empty));
        exit.instruction(&Instruction::LocalGet(0));
        exit.instruction(&Instruction::Call(self.exit_code()));
        exit.instruction(&Instruction::End);
        exit.instruction(&Instruction::LocalGet(0));
        exit.instruction(&Instruction::Call(found.proc_exit.expect("checked")));
        exit.instruction(&Instruction::End);
        code.function(&exit);
        Ok(())
    }
}

/// `module` made a command: see [`Start`]. The result carries the
/// description of its one non-WASI import for the component encoder.
fn with_start(module: &[u8]) -> Result<Vec<u8>> {
    let found = scan(module)?;
    if found.proc_exit.is_none() || found.run.is_none() || found.memory.is_none() {
        bail!("the module lacks proc_exit, run or memory: not the data runner's CPython");
    }
    let mut start = Start {
        exit_code_type: found.types,
        start_type: found.types + 1,
        in_code: false,
        found,
    };
    let mut out = Module::new();
    start
        .parse_core_module(&mut out, Parser::new(0), module)
        .map_err(|e| anyhow::anyhow!("re-encoding the module: {e}"))?;
    let mut out = out.finish();

    let mut resolve = wit_parser::Resolve::default();
    let package = resolve.push_str("outcome.wit", OUTCOME_WIT)?;
    let world = resolve.select_world(&[package], Some("data-runner"))?;
    wit_component::embed_component_metadata(
        &mut out,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
        false,
    )?;
    Ok(out)
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
