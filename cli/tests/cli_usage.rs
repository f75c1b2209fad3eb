//! The CLI's own contract: help documents the exit codes, usage errors exit 2.
//! (End-to-end CLI runs with real folders and a server live in `tests/`.)

use std::process::Command;

fn sbx() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sbx-wasm"))
}

#[test]
fn help_documents_every_exit_code() {
    for args in [&["--help"][..], &["exec", "--help"], &["check", "--help"]] {
        let out = sbx().args(args).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        for code in ["0 ", "1 ", "2 ", "3 ", "70 "] {
            assert!(
                text.contains(&format!("  {code}")),
                "{args:?} help lacks exit code {code}: {text}"
            );
        }
    }
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let out = sbx().args(["exec"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = sbx()
        .args(["check", "--caps", "/nonexistent/caps.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("/nonexistent/caps.toml"), "{err}");
}
