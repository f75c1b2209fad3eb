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

/// `path` at `to`: a hard link where the file system allows it.
fn place(path: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    if std::fs::hard_link(path, to).is_err() {
        std::fs::copy(path, to).unwrap();
    }
}

#[test]
fn an_installed_binary_finds_the_runners_a_checkout_built_from_any_folder() {
    let t = tempfile::tempdir().unwrap();
    let bin = t.path().join("bin/sbx-wasm");
    place(&sbx_bin(), &bin);
    let runners = t.path().join("cache/sbx-wasm/runners");
    place(&js_runner(), &runners.join("sbx-js.wasm"));
    place(&python_runner(), &runners.join("sbx-python.wasm"));
    let work = t.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("caps.toml"), "").unwrap();
    std::fs::write(
        work.join("hello.ts"),
        "const n: number = 6 * 7;\nconsole.log(n);",
    )
    .unwrap();
    std::fs::write(work.join("hello.py"), "print(6 * 7)").unwrap();
    let run = |args: &[&str]| {
        Command::new(&bin)
            .current_dir(&work)
            .args(args)
            .env_remove("SBX_WASM_PYTHON_RUNNER")
            .env_remove("SBX_WASM_JS_RUNNER")
            .env("XDG_CACHE_HOME", t.path().join("cache"))
            .env("SBX_WASM_CACHE_DIR", crate::scripts::warm_cache())
            .output()
            .unwrap()
    };
    for script in ["hello.ts", "hello.py"] {
        let o = run(&["run", "--caps", "caps.toml", "--no-stdin", script]);
        assert_eq!(o.status.code(), Some(0), "{script}: {}", utf8(&o.stderr));
        assert_eq!(utf8(&o.stdout), "42\n", "{script}");
    }
    let o = run(&["doctor"]);
    let text = utf8(&o.stdout);
    assert!(
        text.contains(&format!(
            "ok       JavaScript runner: {}",
            runners.join("sbx-js.wasm").display()
        )),
        "{text}"
    );
    // The runners' folder is the binary's own: no grant may mount it.
    std::fs::write(
        work.join("bad.toml"),
        format!(
            "[fs]\nwrite = [{{ host = \"{}\", guest = \"/r\" }}]\n",
            runners.display()
        ),
    )
    .unwrap();
    let o = run(&["run", "--caps", "bad.toml", "--no-stdin", "hello.ts"]);
    assert_eq!(o.status.code(), Some(125), "{}", utf8(&o.stderr));
    assert!(utf8(&o.stderr).contains("runner"), "{}", utf8(&o.stderr));
    // Nor the runners' sources and build tools beside it (they run natively
    // at a first-use build), though the artifact cache is elsewhere here.
    for (below, caps) in [("runner-src", "bad.toml"), ("build", "bad2.toml")] {
        let dir = t.path().join("cache/sbx-wasm").join(below);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            work.join(caps),
            format!(
                "[fs]\nwrite = [{{ host = \"{}\", guest = \"/r\" }}]\n",
                dir.display()
            ),
        )
        .unwrap();
        let o = run(&["run", "--caps", caps, "--no-stdin", "hello.ts"]);
        assert_eq!(o.status.code(), Some(125), "{below}: {}", utf8(&o.stderr));
        assert!(
            utf8(&o.stderr).contains("sbx-wasm folder"),
            "{}",
            utf8(&o.stderr)
        );
    }
    // The neighbour: a folder of the work tree is mounted as usual.
    std::fs::create_dir_all(work.join("w")).unwrap();
    std::fs::write(
        work.join("ok.toml"),
        "[fs]\nwrite = [{ host = \"w\", guest = \"/r\" }]\n",
    )
    .unwrap();
    let o = run(&["run", "--caps", "ok.toml", "--no-stdin", "hello.ts"]);
    assert_eq!(o.status.code(), Some(0), "{}", utf8(&o.stderr));
}

/// The user's content-addressed runner caches (`build.sh` keeps every
/// runner it built there by the hash of its inputs).
fn runner_content_caches() -> [(&'static str, std::path::PathBuf); 2] {
    let home = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache")
        });
    [
        (
            "SBX_WASM_RUNNER_CACHE",
            home.join("sbx-wasm/python-runners"),
        ),
        ("SBX_WASM_RUNNER_CACHE_JS", home.join("sbx-wasm/js-runners")),
    ]
}

#[test]
fn an_installed_binary_with_no_runner_builds_one_from_the_sources_it_carries() {
    // An empty user cache, a binary beside nothing: the runner build runs
    // from the sources compiled into the binary. Its inputs are the
    // checkout's, so their hash finds the runner the checkout's build left
    // in the content cache (the test's shortcut past pip and npm; that the
    // hash matches is what shows the embedded sources are the checkout's).
    let t = tempfile::tempdir().unwrap();
    let bin = t.path().join("bin/sbx-wasm");
    place(&sbx_bin(), &bin);
    let cache = t.path().join("cache");
    let work = t.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("caps.toml"), "").unwrap();
    std::fs::write(work.join("hello.py"), "print(6 * 7)").unwrap();
    std::fs::write(work.join("hello.ts"), "console.log(6 * 7 as number);").unwrap();
    let run = |args: &[&str]| {
        let mut c = Command::new(&bin);
        c.current_dir(&work)
            .args(args)
            .env_remove("SBX_WASM_PYTHON_RUNNER")
            .env_remove("SBX_WASM_JS_RUNNER")
            .env("XDG_CACHE_HOME", &cache)
            .env("SBX_WASM_CACHE_DIR", crate::scripts::warm_cache());
        for (k, v) in runner_content_caches() {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    for (script, runner) in [("hello.py", "sbx-python.wasm"), ("hello.ts", "sbx-js.wasm")] {
        let o = run(&["run", "--caps", "caps.toml", "--no-stdin", script]);
        let err = utf8(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{script}: {err}");
        assert_eq!(
            utf8(&o.stdout),
            "42\n",
            "{script}: build output leaked to stdout"
        );
        assert!(
            err.contains("building it from the sources in this binary"),
            "{err}"
        );
        assert!(err.contains("runner built in"), "{err}");
        assert!(cache.join("sbx-wasm/runners").join(runner).is_file());
        // Built once: the next run finds it and says nothing of a build.
        let o = run(&["run", "--caps", "caps.toml", "--no-stdin", script]);
        assert_eq!(o.status.code(), Some(0), "{}", utf8(&o.stderr));
        assert!(!utf8(&o.stderr).contains("building"), "{}", utf8(&o.stderr));
    }
    // The sources went to the cache, and nothing into the work folder.
    assert!(cache.join("sbx-wasm/runner-src").is_dir());
    let left: Vec<_> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
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
