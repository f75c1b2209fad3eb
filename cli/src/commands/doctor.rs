//! `sbx-wasm doctor`: what this machine has of what the commands need (the
//! artifact cache, the script runners or the tools that build them, the
//! wasm target for Rust guests, the kernel second wall), one line each with
//! the fix for what is missing. It contacts no network and changes nothing
//! (but for making the cache folder, as any run would); the wall is tried
//! in a child, this binary run again as `kernel-check`, never here.

use sbx_wasm::wasm::{ArtifactCache, JavaScript, Language, PageReset, Python, ScriptRunner};
use std::process::Command;

#[derive(clap::Args, Debug)]
pub(crate) struct DoctorArgs {}

/// One finding: `ok`, `missing` (a command cannot do its part without it)
/// or `warn` (it works, with less).
struct Finding {
    status: &'static str,
    what: String,
    fix: Option<String>,
}

fn ok(what: String) -> Finding {
    Finding {
        status: "ok",
        what,
        fix: None,
    }
}

fn missing(what: String, fix: &str) -> Finding {
    Finding {
        status: "missing",
        what,
        fix: Some(fix.into()),
    }
}

/// The first line a program prints of its version, if it runs.
fn version(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().map(|l| l.trim().to_string())
}

fn cache() -> Finding {
    let Some(dir) = ArtifactCache::default_dir() else {
        return missing(
            "artifact cache: no folder (neither $SBX_WASM_CACHE_DIR, $XDG_CACHE_HOME nor $HOME)"
                .into(),
            "set SBX_WASM_CACHE_DIR to a folder of yours (every run compiles its component again without one)",
        );
    };
    match ArtifactCache::open(&dir) {
        Ok(_) => ok(format!("artifact cache: {}", dir.display())),
        Err(e) => missing(
            format!("artifact cache: {} cannot be used: {e}", dir.display()),
            "make the folder writable, or set SBX_WASM_CACHE_DIR to another",
        ),
    }
}

/// The runner of `L`, as `run` finds it; `needs` is what building it takes.
fn runner<L: Language>() -> Finding {
    match ScriptRunner::<L>::locate(None) {
        Ok(p) => ok(format!("{} runner: {}", L::NAME, p.display())),
        Err(e) => missing(
            format!("{} runner: {e}", L::NAME),
            &format!(
                "`sbx-wasm run` builds it at first use from the sources in this binary, or \
                 `bash {}` in a checkout (needs {})",
                L::BUILD_SCRIPT,
                L::BUILD_NEEDS
            ),
        ),
    }
}

fn python() -> Vec<Finding> {
    let mut out = vec![runner::<Python>()];
    let venv = Command::new("python3")
        .args(["-c", "import venv, ensurepip"])
        .output()
        .is_ok_and(|o| o.status.success());
    out.push(match (version("python3", &["--version"]), venv) {
        (Some(v), true) => ok(format!("{v} with venv (builds Python runners)")),
        (Some(v), false) => missing(
            format!("{v} without venv/ensurepip (builds Python runners)"),
            "apt-get install python3-venv",
        ),
        (None, _) => missing(
            "python3: not found (builds Python runners)".into(),
            "apt-get install python3 python3-venv",
        ),
    });
    out
}

fn javascript() -> Vec<Finding> {
    let mut out = vec![runner::<JavaScript>()];
    let node = version("node", &["--version"]);
    let major = node.as_deref().and_then(|v| {
        v.trim_start_matches('v')
            .split('.')
            .next()?
            .parse::<u32>()
            .ok()
    });
    out.push(match (node, major, version("npm", &["--version"])) {
        (Some(v), Some(m), Some(npm)) if m >= 20 => ok(format!(
            "node {v} and npm {npm} (build the JavaScript runner)"
        )),
        (Some(v), _, _) => missing(
            format!("node {v} without npm, or older than 20 (builds the JavaScript runner)"),
            "install Node.js 20 or later with npm",
        ),
        (None, _, _) => missing(
            "node: not found (builds the JavaScript runner)".into(),
            "install Node.js 20 or later with npm",
        ),
    });
    out
}

fn wasm_target() -> Finding {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == "wasm32-wasip2")
        });
    match installed {
        Some(true) => ok("rustup target wasm32-wasip2 (builds Rust guests)".into()),
        Some(false) => missing(
            "rustup target wasm32-wasip2: not installed (builds Rust guests)".into(),
            "rustup target add wasm32-wasip2",
        ),
        None => missing(
            "rustup: not found (builds Rust guests)".into(),
            "install Rust with rustup (https://rustup.rs), then rustup target add wasm32-wasip2",
        ),
    }
}

/// How pooled runs (`mcp`, `python serve`) reset a slot's memory: whether
/// this binary was built with the page-reset fix, and the kernel reports
/// written pages.
fn page_reset() -> Finding {
    match PageReset::detect() {
        PageReset::Kept => ok("pooled runs: pages a run wrote stay mapped for the next".into()),
        _ => Finding {
            status: "warn",
            what: "pooled runs: the kernel cannot report written pages (before Linux 6.7); \
                   every reset unmaps them"
                .into(),
            fix: Some(
                "Linux 6.7 or later for faster pooled runs; runs are as safe either way".into(),
            ),
        },
    }
}

/// The kernel wall, as a confined child of this binary finds it for an
/// empty grant.
fn kernel_wall() -> Finding {
    let wall = (|| {
        let caps = tempfile::NamedTempFile::new().ok()?;
        let out = Command::new(std::env::current_exe().ok()?)
            .arg("kernel-check")
            .arg("--caps")
            .arg(caps.path())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str::<serde_json::Value>(text.lines().next()?).ok()
    })();
    let Some(w) = wall else {
        return missing(
            "kernel wall: the check did not run".into(),
            "run `sbx-wasm kernel-check --caps c.toml` to see why",
        );
    };
    let what = format!(
        "kernel wall: landlock {}, network {}, seccomp {}, no_new_privs {}",
        w["landlock"].as_str().unwrap_or("?"),
        w["network"].as_str().unwrap_or("?"),
        w["seccomp"],
        w["no_new_privs"],
    );
    match w["up"].as_bool() {
        Some(true) => ok(what),
        _ => Finding {
            status: "warn",
            what,
            fix: Some(
                "the wasm sandbox still holds; for the second wall, a Linux kernel with Landlock \
                 (6.12 or later for every right) and seccomp"
                    .into(),
            ),
        },
    }
}

impl DoctorArgs {
    /// Print every finding; exit code 1 when something is missing.
    pub(crate) fn execute(&self) -> i32 {
        println!("sbx-wasm {}", super::VERSION);
        let mut findings = vec![cache()];
        findings.extend(python());
        findings.extend(javascript());
        findings.push(wasm_target());
        findings.push(page_reset());
        findings.push(kernel_wall());
        for f in &findings {
            println!("{:<8} {}", f.status, f.what);
            if let Some(fix) = &f.fix {
                println!("{:<8}   fix: {fix}", "");
            }
        }
        i32::from(findings.iter().any(|f| f.status == "missing"))
    }
}
