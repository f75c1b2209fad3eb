//! Embeds the script runners' sources (`runners/`, `wit/`) in the library
//! as a table of files, so a program that sits beside no checkout (an
//! installed `sbx-wasm`, a framework's binary) can build a runner at first
//! use (`wasm::runner_source`). Only the files a runner build reads are
//! taken: no caches, no installed packages.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let mut files = Vec::new();
    for top in ["runners", "wit"] {
        let dir = crate_dir.join(top);
        println!("cargo:rerun-if-changed={}", dir.display());
        walk(&crate_dir, &dir, &mut files);
    }
    files.sort();
    let mut table = String::from("&[\n");
    for rel in &files {
        let abs = crate_dir.join(rel);
        println!("cargo:rerun-if-changed={}", abs.display());
        writeln!(
            table,
            "    ({rel:?}, include_bytes!({:?})),",
            abs.display().to_string()
        )
        .unwrap();
    }
    table.push(']');
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("runner_sources.rs");
    std::fs::write(out, table).unwrap();
}

/// Every regular file under `dir`, as a `/`-separated path relative to
/// `base`; build leftovers (`__pycache__`, `node_modules`, dot files) are
/// skipped.
fn walk(base: &Path, dir: &Path, files: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "__pycache__" || name == "node_modules" {
            continue;
        }
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(base, &path, files);
        } else if kind.is_file() {
            let rel = path.strip_prefix(base).unwrap();
            let parts: Vec<_> = rel
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            files.push(parts.join("/"));
        }
    }
}
