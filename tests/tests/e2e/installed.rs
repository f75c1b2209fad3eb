//! An installed `sbx-wasm`: the binary alone in a folder of its own, no
//! checkout beside it, the user's cache folder its only neighbour. It finds
//! the runners a checkout built, builds them from the sources it carries
//! when there are none, and no grant may mount what it keeps there.

use sbx_wasm_tests::{js_runner, python_runner, sbx_bin, utf8};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `path` at `to`: a hard link where the file system allows it.
fn place(path: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    if std::fs::hard_link(path, to).is_err() {
        std::fs::copy(path, to).unwrap();
    }
}

/// `bin/sbx-wasm` in a temp folder, the user's cache at `cache/`, and in
/// `work/` an empty caps file with a Python and a TypeScript script that
/// print 42.
struct Installed {
    _t: tempfile::TempDir,
    bin: PathBuf,
    cache: PathBuf,
    work: PathBuf,
}

impl Installed {
    fn new() -> Installed {
        let t = tempfile::tempdir().unwrap();
        let bin = t.path().join("bin/sbx-wasm");
        place(&sbx_bin(), &bin);
        let (cache, work) = (t.path().join("cache"), t.path().join("work"));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("caps.toml"), "").unwrap();
        std::fs::write(work.join("hello.py"), "print(6 * 7)").unwrap();
        std::fs::write(
            work.join("hello.ts"),
            "const n: number = 6 * 7;\nconsole.log(n);",
        )
        .unwrap();
        Installed {
            _t: t,
            bin,
            cache,
            work,
        }
    }

    /// The binary with `args`, in `work/`, the runners found only as an
    /// installed binary finds them; `content_caches`: the runner builds
    /// may copy from the user's real content caches.
    fn run(&self, args: &[&str], content_caches: bool) -> Output {
        let mut c = Command::new(&self.bin);
        c.current_dir(&self.work)
            .args(args)
            .env_remove("SBX_WASM_PYTHON_RUNNER")
            .env_remove("SBX_WASM_JS_RUNNER")
            .env("XDG_CACHE_HOME", &self.cache)
            .env("SBX_WASM_CACHE_DIR", crate::scripts::warm_cache());
        if content_caches {
            for (k, v) in runner_content_caches() {
                c.env(k, v);
            }
        }
        c.output().unwrap()
    }
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
fn an_installed_binary_finds_the_runners_a_checkout_built_from_any_folder() {
    let i = Installed::new();
    let runners = i.cache.join("sbx-wasm/runners");
    place(&js_runner(), &runners.join("sbx-js.wasm"));
    place(&python_runner(), &runners.join("sbx-python.wasm"));
    let work = &i.work;
    let run = |args: &[&str]| i.run(args, false);
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
        let dir = i.cache.join("sbx-wasm").join(below);
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

#[test]
fn an_installed_binary_with_no_runner_builds_one_from_the_sources_it_carries() {
    // An empty user cache, a binary beside nothing: the runner build runs
    // from the sources compiled into the binary. Its inputs are the
    // checkout's, so their hash finds the runner the checkout's build left
    // in the content cache (the test's shortcut past pip and npm; that the
    // hash matches is what shows the embedded sources are the checkout's).
    let i = Installed::new();
    let (cache, work) = (&i.cache, &i.work);
    let run = |args: &[&str]| i.run(args, true);
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
    let left: Vec<_> = std::fs::read_dir(work)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
}
