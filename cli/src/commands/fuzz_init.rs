//! `sbx-wasm fuzz-init`: write a libFuzzer project that fuzzes a user's
//! agent with host answers (pages, tool outputs, file contents, stdin),
//! its corpus seeded with a recording's answers, its properties from flags.

use anyhow::{Context, Result, bail};
use sbx_wasm::Violation;
use sbx_wasm::fuzz_agent::HostAnswers;
use sbx_wasm::replay::Recording;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub(crate) struct FuzzInitArgs {
    /// The agent to fuzz.
    #[arg(long, value_name = "AGENT.wasm")]
    pub(crate) component: PathBuf,
    /// A recording of one of its runs (`run --record`): its grant, args
    /// and files, and the first corpus entry.
    #[arg(long, value_name = "FILE")]
    pub(crate) recording: PathBuf,
    /// The folder to write (must not exist, or be empty).
    #[arg(long, value_name = "DIR", default_value = "fuzz-agent")]
    pub(crate) out: PathBuf,
    /// A violation the agent must never be steered into (repeatable;
    /// default: egress_denied, tool_denied, fs_read_denied, fs_write_denied).
    #[arg(long, value_name = "VIOLATION")]
    pub(crate) never: Vec<String>,
    /// A word the agent reacts to, for the fuzzer's dictionary (repeatable;
    /// its own keywords: they are what a steering input must contain).
    #[arg(long, value_name = "WORD")]
    pub(crate) word: Vec<String>,
    /// The sbx-wasm crate the project builds against (default: the source
    /// this binary was built from).
    #[arg(long, value_name = "DIR")]
    pub(crate) sbx_wasm: Option<PathBuf>,
}

impl FuzzInitArgs {
    pub(crate) fn execute(&self) -> Result<i32> {
        let rec = Recording::read(&self.recording)?;
        let component = absolute(&self.component)?;
        let crate_dir = match &self.sbx_wasm {
            Some(p) => absolute(p)?,
            None => absolute(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../host")).context(
                "sbx-wasm's source is not where this binary was built: name it with --sbx-wasm",
            )?,
        };
        let never = if self.never.is_empty() {
            [
                "egress_denied",
                "tool_denied",
                "fs_read_denied",
                "fs_write_denied",
            ]
            .map(String::from)
            .to_vec()
        } else {
            self.never.clone()
        };
        let properties = never
            .iter()
            .map(|name| {
                serde_json::from_value::<Violation>(serde_json::Value::String(name.clone()))
                    .map(|v| format!("        Property::NeverDenied(Violation::{v:?}),\n"))
                    .map_err(|_| anyhow::anyhow!("--never {name}: not a violation name"))
            })
            .collect::<Result<String>>()?;
        if self.out.exists()
            && std::fs::read_dir(&self.out)
                .map(|mut d| d.next().is_some())
                .unwrap_or(true)
        {
            bail!("{} exists and is not empty", self.out.display());
        }
        let d = &self.out;
        let write = |rel: &str, bytes: &[u8]| -> Result<()> {
            let p = d.join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&p, bytes).with_context(|| format!("cannot write {}", p.display()))
        };
        write("Cargo.toml", cargo_toml(&crate_dir).as_bytes())?;
        write("src/main.rs", target(&component, &properties)?.as_bytes())?;
        std::fs::copy(&self.recording, d.join("recording.sbxrec"))
            .with_context(|| format!("cannot copy {}", self.recording.display()))?;
        write(
            "corpus/recorded",
            &HostAnswers::from_recording(&rec).to_text(),
        )?;
        let mut dict = DICT.to_string();
        for w in &self.word {
            dict += &format!("\"{}\"\n", dict_escape(w));
        }
        write("agent.dict", dict.as_bytes())?;
        write(".gitignore", b"target/\ncorpus/\ncrash-*\n")?;
        println!("wrote a libFuzzer project to {}; run it with:", d.display());
        println!(
            "  cd {} && cargo run --release -- corpus -dict=agent.dict",
            d.display()
        );
        Ok(0)
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(p).with_context(|| format!("cannot find {}", p.display()))
}

fn cargo_toml(crate_dir: &Path) -> String {
    format!(
        r#"# Written by `sbx-wasm fuzz-init`: fuzz an agent with the host answers
# a fuzzer chooses. From this folder (the stable toolchain will do):
# `cargo run --release -- corpus -dict=agent.dict`
[package]
name = "agent-fuzz"
version = "0.0.0"
publish = false
edition = "2024"

[dependencies]
libfuzzer-sys = "0.4"
sbx-wasm = {{ path = {:?}, features = ["fuzzing"] }}

[workspace]

[profile.release]
debug = "line-tables-only"
"#,
        crate_dir.display().to_string()
    )
}

/// The target: the example project's own (so the example is what this
/// writes), with `component` in place of its default and `properties`
/// in place of its `--never` block.
fn target(component: &Path, properties: &str) -> Result<String> {
    const TEMPLATE: &str = include_str!("../../templates/fuzz-agent.rs");
    const DEFAULT: &str = "const COMPONENT: &str = \"agent.wasm\";";
    let (head, rest) = TEMPLATE
        .split_once("        // --never:\n")
        .context("the template has no --never block")?;
    let (_, tail) = rest
        .split_once("        // always:\n")
        .context("the template has no always block")?;
    if !head.contains(DEFAULT) {
        bail!("the template has no default component");
    }
    let component = format!("{:?}", component.display().to_string());
    Ok(format!(
        "{}        // --never:\n{properties}        // always:\n{tail}",
        head.replace(DEFAULT, &format!("const COMPONENT: &str = {component};"))
    ))
}

/// Words that steer agents, for libFuzzer's `-dict`.
const DICT: &str = r#"# Words that steer agents: links, injections, a section head.
"http://"
"https://"
"evil.example"
"\x0a"
": "
"/"
"ignore previous instructions"
"== page 200\x0a"
"#;

/// `word` as a libFuzzer dictionary entry's inside: printable ASCII as is
/// (but `\` and `"`), every other byte as `\xHH`.
fn dict_escape(word: &str) -> String {
    word.bytes()
        .map(|b| match b {
            b'\\' | b'"' => format!("\\{}", b as char),
            0x20..=0x7e => (b as char).to_string(),
            _ => format!("\\x{b:02x}"),
        })
        .collect()
}
