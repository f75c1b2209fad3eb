//! The command line's conventions: `--version` names the build, `doctor`
//! says what the machine has of what the commands need (and what is
//! missing, with its fix), `completions` and `man` come from the same
//! definitions as `--help`.

use sbx_wasm_tests::{js_runner, python_runner, sbx_bin, utf8};
use std::process::Command;

fn sbx(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = Command::new(sbx_bin());
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn version_names_the_commit_and_the_wasmtime_release() {
    let o = sbx(&["--version"], &[]);
    assert_eq!(o.status.code(), Some(0));
    let text = utf8(&o.stdout);
    let lock = std::fs::read_to_string(sbx_wasm_tests::repo_root().join("Cargo.lock")).unwrap();
    let at = lock.find("\nname = \"wasmtime\"\n").unwrap();
    let wasmtime = lock[at..].lines().nth(2).unwrap();
    let wasmtime = wasmtime
        .trim_start_matches("version = \"")
        .trim_end_matches('"');
    assert!(
        text.starts_with(&format!("sbx-wasm {} (git ", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(text.contains(&format!(", wasmtime {wasmtime})")), "{text}");
}

#[test]
fn doctor_finds_the_runners_and_names_the_fix_for_one_missing() {
    let python = python_runner().display().to_string();
    let js = js_runner().display().to_string();
    let o = sbx(
        &["doctor"],
        &[
            ("SBX_WASM_PYTHON_RUNNER", &python),
            ("SBX_WASM_JS_RUNNER", &js),
        ],
    );
    let text = utf8(&o.stdout);
    assert!(
        text.contains(&format!("ok       Python runner: {python}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("ok       JavaScript runner: {js}")),
        "{text}"
    );
    assert!(text.contains("kernel wall: landlock "), "{text}");
    // The workspace's binary has the page-reset fix; whether the kernel
    // can use it depends on the machine.
    assert!(
        text.contains("ok       pooled runs: pages a run wrote stay mapped for the next")
            || text.contains("warn     pooled runs: the kernel cannot report written pages"),
        "{text}"
    );
    assert!(!text.contains("crates.io's wasmtime"), "{text}");
    // Every line is a finding or its fix.
    for line in text.lines().skip(1) {
        assert!(
            ["ok ", "missing ", "warn ", "           fix: "]
                .iter()
                .any(|p| line.starts_with(p)),
            "{line}"
        );
    }
    // Its missing neighbour: the same machine, the JavaScript runner named
    // where there is none.
    let o = sbx(
        &["doctor"],
        &[
            ("SBX_WASM_PYTHON_RUNNER", &python),
            ("SBX_WASM_JS_RUNNER", "/nonexistent/sbx-js.wasm"),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let text = utf8(&o.stdout);
    assert!(
        text.contains("missing  JavaScript runner: the JavaScript runner named by SBX_WASM_JS_RUNNER does not exist: /nonexistent/sbx-js.wasm"),
        "{text}"
    );
    assert!(
        text.contains("fix: `sbx-wasm run` builds it at first use from the sources in this binary, or `bash host/runners/js/build.sh` in a checkout (needs Node.js 20 or later with npm, and the npm registry)"),
        "{text}"
    );
}

#[test]
fn completions_and_the_man_page_list_the_commands() {
    for shell in ["bash", "zsh", "fish"] {
        let o = sbx(&["completions", shell], &[]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let text = utf8(&o.stdout);
        for cmd in ["run", "exec", "mcp", "doctor"] {
            assert!(text.contains(cmd), "{shell}: {cmd}");
        }
    }
    let o = sbx(&["completions", "tcsh"], &[]);
    assert_eq!(o.status.code(), Some(2));
    let o = sbx(&["man"], &[]);
    assert_eq!(o.status.code(), Some(0));
    let page = utf8(&o.stdout);
    assert!(page.starts_with(".ie"), "{page}");
    assert!(page.contains(".TH sbx-wasm 1"), "{page}");
    assert!(page.contains("doctor"), "{page}");
}

#[test]
fn no_color_turns_off_the_colours_clap_would_force() {
    let forced = sbx(&["--help"], &[("CLICOLOR_FORCE", "1")]);
    assert!(
        utf8(&forced.stdout).contains('\u{1b}'),
        "CLICOLOR_FORCE colours help"
    );
    let plain = sbx(&["--help"], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(
        !utf8(&plain.stdout).contains('\u{1b}'),
        "{}",
        utf8(&plain.stdout)
    );
    let err = sbx(
        &["no-such-command"],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
    );
    assert_eq!(err.status.code(), Some(2));
    assert!(
        !utf8(&err.stderr).contains('\u{1b}'),
        "{}",
        utf8(&err.stderr)
    );
}
