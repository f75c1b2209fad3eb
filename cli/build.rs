//! What `sbx-wasm --version` names besides the crate's version: the git
//! commit it was built from ("unknown" outside a checkout, as from a
//! published crate) and the wasmtime release it runs guests with (read
//! from the workspace's Cargo.lock, the version actually built).

use std::path::Path;
use std::process::Command;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let root = Path::new(&manifest).parent().unwrap();
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SBX_WASM_GIT_COMMIT={commit}");
    // A new commit moves the branch HEAD names (or HEAD itself, detached).
    // Only files that exist are watched: cargo runs a build script whose
    // watched file is missing on every build.
    let git = root.join(".git");
    let mut watched = vec![git.join("HEAD"), git.join("packed-refs")];
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
        && let Some(branch) = head.trim().strip_prefix("ref: ")
    {
        watched.push(git.join(branch));
    }
    for path in watched.iter().filter(|p| p.is_file()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }

    let lock = root.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let wasmtime = std::fs::read_to_string(&lock)
        .ok()
        .and_then(|text| {
            let at = text.find("\nname = \"wasmtime\"\n")?;
            let rest = &text[at..];
            let v = rest.lines().find_map(|l| l.strip_prefix("version = \""))?;
            Some(v.trim_end_matches('"').to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SBX_WASM_WASMTIME={wasmtime}");
}
