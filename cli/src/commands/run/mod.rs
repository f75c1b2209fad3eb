//! `sbx-wasm run`: load the caps and the component, run it, write the report
//! and audit log (also after a halt or a trap), print a one-line summary.

mod summary;
pub(crate) mod worker;

use crate::common::{cached, engine_for, load_caps, registry};
use crate::output::{OutputFiles, write_records};
use crate::scripts::Lang;
use crate::tool_helper;
use anyhow::{Context, Result};
use sbx_wasm::confine::Policy;
use sbx_wasm::wasm::{CacheOutcome, PreparedAgent, RunOptions, WasmHost};
use sbx_wasm::{Capabilities, Services};
use sbx_wasm::{KernelWall, Landlock};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

#[derive(clap::Args, Debug)]
pub(crate) struct RunArgs {
    /// The caps file (TOML) that grants what the guest may touch.
    #[arg(long, value_name = "FILE")]
    pub(crate) caps: PathBuf,
    /// The component; or a script to run in its language's runner: Python
    /// (`*.py`, or any file with `--python`), JavaScript or TypeScript
    /// (`*.js`, `*.mjs`, `*.cjs`, `*.ts`, `*.mts`, `*.cts`, or any file with
    /// `--js`); `-` with `--python` or `--js` reads the script from stdin.
    #[arg(value_name = "AGENT.wasm|SCRIPT.py|SCRIPT.ts")]
    pub(crate) component: PathBuf,
    /// Run the file as a Python script whatever its name.
    #[arg(long, conflicts_with = "js")]
    pub(crate) python: bool,
    /// Run the file as JavaScript whatever its name (TypeScript's types are
    /// stripped from a name ending in `.ts`, `.mts`, `.cts`, and from stdin).
    #[arg(long)]
    pub(crate) js: bool,
    /// The Python runner component (default: `$SBX_WASM_PYTHON_RUNNER`,
    /// then `sbx-python.wasm` beside this binary, then `../py/`).
    #[arg(long, value_name = "FILE")]
    pub(crate) python_runner: Option<PathBuf>,
    /// Run the Python script in the data runner: CPython with numpy,
    /// pandas, matplotlib, scipy and scikit-learn (no `sbx` module, no
    /// threads; `$SBX_WASM_DATA_RUNNER` names it, else it is found as the
    /// others are, built at first use)
    #[arg(long, conflicts_with_all = ["js", "python_runner"])]
    pub(crate) data: bool,
    /// The JavaScript runner component (default: `$SBX_WASM_JS_RUNNER`,
    /// then `sbx-js.wasm` beside this binary, then `../js/`).
    #[arg(long, value_name = "FILE")]
    pub(crate) js_runner: Option<PathBuf>,
    /// Arguments for the guest (after `--`).
    #[arg(last = true, value_name = "ARGS")]
    pub(crate) args: Vec<String>,
    #[command(flatten)]
    pub(crate) files: OutputFiles,
    #[command(flatten)]
    pub(crate) compile: crate::compile::CompileBounds,
    /// Virtual clocks and seeded randomness: identical output, report
    /// and audit log for identical component, caps and input.
    #[arg(long)]
    pub(crate) deterministic: bool,
    /// Seed for --deterministic (or --record) randomness.
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Give the guest an empty stdin instead of this process's stdin.
    #[arg(long)]
    pub(crate) no_stdin: bool,
    /// Record what the host hands the guest (files met, listings, fetch and
    /// tool answers, stdin, args, seed, the grant) to FILE, for `sbx-wasm
    /// replay`. Implies --deterministic (a random seed unless --seed);
    /// stdin is read whole before the run.
    #[arg(long, value_name = "FILE")]
    pub(crate) record: Option<PathBuf>,
    /// The most bytes of file contents, listings and stdin a recording
    /// keeps (past it a file is kept by size only; more stdin is an error).
    #[arg(long, value_name = "BYTES", default_value_t = sbx_wasm::replay::DEFAULT_RECORD_LIMIT, requires = "record")]
    pub(crate) record_max_bytes: u64,
    /// Print the one-line summary even when stderr is not a terminal.
    #[arg(long)]
    pub(crate) summary: bool,
    /// Compile the component in memory; neither read nor write the
    /// artifact cache.
    #[arg(long)]
    pub(crate) no_cache: bool,
    /// Refuse to run unless the kernel confines this process to the grant
    /// (Landlock, no_new_privs, seccomp) in full.
    #[arg(long, conflicts_with = "no_kernel_confinement")]
    pub(crate) require_kernel_confinement: bool,
    /// Do not ask the kernel to confine this process (the wasm sandbox
    /// alone; the report says the second wall was down).
    #[arg(long)]
    pub(crate) no_kernel_confinement: bool,
    /// Run a Python script in this process even when a `sbx-wasm python
    /// serve` keeps warm workers for its runner.
    #[arg(long)]
    pub(crate) no_server: bool,
    /// Say on stderr why a Python script was not run by a warm worker of
    /// a `sbx-wasm python serve` (when one was asked and gave it back).
    #[arg(long)]
    pub(crate) verbose: bool,
}

/// What a warm worker made before it knew its run: the host, the runner
/// prepared and instantiated ahead, and the run's grant, loaded when the
/// worker checked it could take the run.
pub(crate) struct Ready {
    pub(crate) host: WasmHost,
    pub(crate) agent: PreparedAgent,
    pub(crate) runner: PathBuf,
    pub(crate) caps: Capabilities,
    /// The tool helper, started while the worker waited.
    pub(crate) helper: Option<tool_helper::Started>,
    /// The run's helper once the run is over, closed and removing the
    /// run's private folders: the worker waits for it after answering.
    pub(crate) closing: Option<tool_helper::Helper>,
}

impl RunArgs {
    /// Every error of `run` before the guest ran is a setup error (125).
    /// A Python script goes to a warm worker if a server keeps them for
    /// its runner (and the worker takes it); else it runs here.
    pub(crate) fn execute(&self) -> i32 {
        if !self.no_server
            && self.is_python()
            && !self.script_on_stdin()
            && let Some(lang) = self.lang()
            && let Ok(runner) = lang.find_runner(self.python_runner.as_deref())
            && let Some(code) = crate::serve::client::hand_over(&runner, self.verbose)
        {
            return code;
        }
        let result = run_inner(self, None);
        self.report_refusal(&result);
        crate::exit::finish_run(result)
    }

    /// A run that never started still leaves the report asked for, saying
    /// why (status `refused`), unless the report's own folder is the
    /// problem. (After the guest runs, `run_inner` returns no error.)
    fn report_refusal(&self, result: &Result<i32>) {
        let (Err(e), Some(path)) = (result, &self.files.report) else {
            return;
        };
        let budget = Capabilities::from_file(&self.caps)
            .map(|c| *c.budget())
            .unwrap_or_default();
        let report = sbx_wasm::RunReport::refused(&budget, crate::exit::describe(e));
        if let (Ok(text), Ok(record)) = (
            serde_json::to_string_pretty(&report),
            crate::output::Record::open(path),
        ) {
            let _ = record.write(&(text + "\n"));
        }
    }

    /// The run, on what a warm worker made ahead of it (the host and agent
    /// are left to the worker, which need not tear them down).
    pub(crate) fn execute_ready(&self, ready: &mut Ready) -> i32 {
        crate::exit::finish_run(run_inner(self, Some(ready)))
    }

    /// The script's language, or None for a component.
    pub(crate) fn lang(&self) -> Option<Lang> {
        if self.data {
            Some(Lang::Data)
        } else if self.python {
            Some(Lang::Python)
        } else if self.js {
            Some(Lang::JavaScript)
        } else {
            Lang::of(&self.component)
        }
    }

    /// Whether this is a Python run, in the stock runner or the data
    /// runner (both are served by `python serve`).
    pub(crate) fn is_python(&self) -> bool {
        matches!(self.lang(), Some(Lang::Python | Lang::Data))
    }

    /// Whether the script comes from stdin (`-`).
    fn script_on_stdin(&self) -> bool {
        self.component.as_os_str() == "-"
    }
}

/// What the run instantiates: a component loaded (and how) and prepared
/// now, or an agent a warm worker prepared.
enum Target {
    Loaded(PreparedAgent, Option<CacheOutcome>),
    Ready(PreparedAgent),
}

fn run_inner(a: &RunArgs, mut ready: Option<&mut Ready>) -> Result<i32> {
    if a.seed.is_some() && !a.deterministic && a.record.is_none() {
        anyhow::bail!("--seed needs --deterministic or --record");
    }
    // From the start: a Ctrl-C during a long first compile still ends the
    // run as cancelled, with its report.
    let cancel = crate::common::cancel_on_signals()?;
    let caps = match &ready {
        Some(r) => {
            crate::common::warn_caps(&r.caps);
            r.caps.clone()
        }
        None => load_caps(&a.caps)?,
    };
    if a.require_kernel_confinement {
        // Refuse before loading or creating anything when the grant itself
        // rules out a full wall.
        let obstacles = Policy::for_caps(&caps).obstacles();
        if !obstacles.is_empty() {
            anyhow::bail!(
                "kernel confinement was required and is not fully enforced: {}",
                obstacles.join("; ")
            );
        }
    }
    let started = ready.as_mut().and_then(|r| r.helper.take());
    let (host, warm) = match &ready {
        Some(r) => (r.host.clone(), Some((r.agent.clone(), r.runner.clone()))),
        None => (host_for(a, &caps)?, None),
    };
    let lang = a.lang();
    if a.script_on_stdin() && lang.is_none() {
        anyhow::bail!("`-` reads a script from stdin: say its language with --python or --js");
    }
    if a.python_runner.is_some() && lang != Some(Lang::Python) {
        anyhow::bail!("--python-runner applies to Python scripts only");
    }
    if a.js_runner.is_some() && lang != Some(Lang::JavaScript) {
        anyhow::bail!("--js-runner applies to JavaScript and TypeScript scripts only");
    }
    // The record files the run writes (their folders are opened below).
    let records = a.files.paths(a.record.as_ref());
    // A helper this run will need starts now: its start (an exec of this
    // binary) overlaps the component's load instead of following it.
    let started = match started {
        None if !a.no_kernel_confinement
            && tool_helper::needed(
                caps.tool_commands(),
                &records,
                lang.is_some_and(Lang::private_tmp),
            ) =>
        {
            Some(tool_helper::Started::start().context("cannot start the tool helper")?)
        }
        started => started,
    };
    let (program, args) = match lang {
        Some(lang) => {
            let runner = match &warm {
                Some((_, runner)) => runner.clone(),
                None => {
                    let flag = match lang {
                        Lang::Python => a.python_runner.as_deref(),
                        Lang::JavaScript => a.js_runner.as_deref(),
                        Lang::Data => None,
                    };
                    lang.find_or_build_runner(flag)?
                }
            };
            (runner, lang.runner_args(&a.component, &a.args)?)
        }
        None => (a.component.clone(), a.args.clone()),
    };
    let script = lang.is_some();
    // Also for a grant a warm worker loaded, and with the runner this run
    // uses: a guest must not reach what runs natively after it. (A plain
    // component's grant was checked as it was loaded.)
    if script || warm.is_some() {
        crate::common::refuse_protected(&caps, script.then_some(program.as_path()))?;
    }
    let target = match warm {
        Some((agent, _)) => Target::Ready(agent),
        None => {
            let bounds = match lang {
                Some(lang) => a.compile.for_runner(lang),
                None => a.compile.clone(),
            };
            let (agent, outcome) = crate::compile::load_bounded(&host, &program, &bounds, true)?;
            Target::Loaded(agent, outcome)
        }
    };
    // A Python run's private /tmp, made before the wall goes up (which
    // keeps the run from removing it: the helper does, at the end).
    let (caps, tmp) = match lang {
        Some(lang) if lang.private_tmp() => sbx_wasm::wasm::python::private_tmp(&caps)?,
        _ => (caps, None),
    };
    // The runner's own folders (the data runner's library), lent after
    // the grant was checked against the runner: they sit beside it.
    let caps = match lang {
        Some(lang) => lang.with_runner_mounts(&caps, &program)?,
        None => caps,
    };
    let remove: Vec<PathBuf> = tmp.iter().map(|t| t.path().to_path_buf()).collect();
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "agent".into());
    let shown = name.clone();
    let mut opts = RunOptions::new(caps.clone())
        .program_name(name)
        .args(args)
        // Streamed, never read ahead: `sleep 100 | sbx-wasm run ...` must
        // not wait for the pipe to close before the guest starts.
        // (A recorded run reads it whole first, below.)
        // A script read from stdin used it up.
        .inherit_stdin(
            a.record.is_none()
                && !a.no_stdin
                && !a.script_on_stdin()
                && !std::io::stdin().is_terminal(),
        )
        // The guest's output is the command's output, as it is written.
        .stdout(Arc::new(Mutex::new(std::io::stdout())))
        .stderr(Arc::new(Mutex::new(std::io::stderr())));
    if a.deterministic || a.seed.is_some() {
        opts = opts.deterministic(a.seed.unwrap_or(0));
    }
    if a.record.is_some() {
        let stdin = if a.no_stdin || a.script_on_stdin() || std::io::stdin().is_terminal() {
            Vec::new()
        } else {
            read_stdin(a.record_max_bytes)?
        };
        opts = opts.stdin(stdin).record(a.record_max_bytes);
    }
    opts = opts.cancel(cancel);
    // The records' folders are opened now, before the guest can rearrange
    // anything (output.rs says why), here or in the helper.
    let mut opened = Vec::new();
    let mut helper = None;
    if a.no_kernel_confinement {
        opened = a.files.open(a.record.as_ref())?;
        opts = opts.services(Services::new().tools(registry(&caps)));
    } else {
        // A confined process can neither start programs nor create files
        // outside its mounts: command tools run in a helper started now,
        // before confinement, which also writes the records at the end.
        let (tools, h) = match started {
            Some(helper) => helper.configure(caps.tool_commands(), &records, &remove),
            None => tool_helper::spawn(caps.tool_commands(), &records, &remove),
        }
        .context("cannot start the tool helper")?;
        helper = h;
        opts = opts
            .services(Services::new().tools(tools))
            .confine(Policy::for_caps(&caps), a.require_kernel_confinement);
    }
    // Read before the run: a confined process may not read them after.
    let seal = a.files.seal(|| caps.to_toml(), &caps, &shown)?;
    let run_start = std::time::SystemTime::now();
    let hashes = match a.record {
        Some(_) => Some((Some(hashed(&program)?), Some(hashed(&a.caps)?))),
        None => None,
    };
    let (Target::Loaded(agent, _) | Target::Ready(agent)) = &target;
    let mut run = host.run_prepared(agent, opts)?;
    // From here on the guest has run: no error leaves this function (a
    // record that cannot be written is said on stderr).
    if a.no_kernel_confinement {
        // Every report of `run` says whether the second wall was up.
        run.report.kernel_wall = Some(KernelWall {
            landlock: Landlock::Off,
            network: "not restricted".into(),
            notes: vec!["turned off by --no-kernel-confinement".into()],
            ..KernelWall::default()
        });
    }
    match a.files.texts(&run.report, &run.audit, &seal) {
        Ok(mut texts) => {
            if let (Some(path), Some(mut rec)) = (&a.record, run.recording.take()) {
                (rec.component, rec.caps_file) = hashes.unwrap_or_default();
                match serde_json::to_string(&rec) {
                    Ok(text) => texts.push((path.clone(), text)),
                    Err(e) => eprintln!("sbx-wasm: error: cannot write {}: {e}", path.display()),
                }
            }
            // A record that cannot be written is said on stderr; the exit
            // code still says how the guest ended.
            write_records(texts, |i, text| match (&helper, opened.get(i)) {
                (Some(helper), _) => helper.write(i, text),
                (None, Some(record)) => record.write(text),
                (None, None) => Err(std::io::Error::other("no folder was opened for it")),
            });
        }
        Err(e) => eprintln!("sbx-wasm: error: cannot make the records: {e:#}"),
    }
    let info = sbx_wasm::telemetry::RunInfo {
        kind: "run",
        program: &shown,
        start: run_start,
        report: &run.report,
        audit: &run.audit,
        call: None,
    };
    match &helper {
        Some(helper) => helper.telemetry(&info),
        None => sbx_wasm::telemetry::Telemetry::from_env().run(&info),
    }
    let cache = match target {
        Target::Ready(_) => "warm worker",
        Target::Loaded(_, Some(CacheOutcome::Hit)) => "cached",
        Target::Loaded(_, Some(CacheOutcome::Miss)) => "compiled, now cached",
        Target::Loaded(_, Some(CacheOutcome::Rebuilt)) => "recompiled (bad cache entry replaced)",
        Target::Loaded(_, None) => "compiled, not cached",
    };
    // The helper removes the run's private folders and exits while this
    // process lets go of the component (unmapping its artifact); then it
    // is waited for (a warm worker answers its client first): no run
    // leaves a process behind.
    if let Some(helper) = helper.as_mut() {
        helper.close();
    }
    drop((target, host));
    match ready {
        Some(r) => r.closing = helper,
        None => drop(helper),
    }
    if let Some(msg) = &run.trap {
        eprintln!(
            "sbx-wasm: guest trapped: {}",
            sbx_wasm::bound::printable(msg)
        );
    }
    if a.summary || std::io::stderr().is_terminal() {
        eprintln!("{}; {cache}", summary::summary(&run));
    }
    Ok(crate::exit::run_exit_code(&run.report))
}

/// The engine for `caps`, with the artifact cache unless `--no-cache`.
fn host_for(a: &RunArgs, caps: &Capabilities) -> Result<WasmHost> {
    let host = engine_for(caps)?;
    if a.no_cache {
        return Ok(host.without_cache());
    }
    let (host, no_cache) = cached(host);
    if let Some(e) = no_cache {
        eprintln!("sbx-wasm: warning: no artifact cache ({e:#}); compiling in memory");
    }
    Ok(host)
}

/// A file named by its path and the SHA-256 of its bytes.
fn hashed(path: &std::path::Path) -> Result<sbx_wasm::replay::Hashed> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(sbx_wasm::replay::Hashed {
        path: path.display().to_string(),
        sha256: sbx_wasm::replay::sha256_hex(&bytes),
    })
}

/// This process's stdin, whole, for a recording: at most `limit` bytes.
fn read_stdin(limit: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::io::stdin()
        .take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .context("cannot read stdin for the recording")?;
    if buf.len() as u64 > limit {
        anyhow::bail!("stdin is over --record-max-bytes ({limit} bytes)");
    }
    Ok(buf)
}
