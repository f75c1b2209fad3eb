//! Exit codes (see [`EXIT_CODES`]) and how an error becomes one.

/// Success: the plan completed, the caps file is valid, the op is allowed.
pub(crate) const EXIT_OK: i32 = 0;
/// `check --explain`: the op would be denied; `policy`: a decision flips,
/// the grants differ, or lint found something.
pub(crate) const EXIT_DENIED: i32 = 1;
/// Bad usage, caps file or plan file.
pub(crate) const EXIT_USAGE: i32 = 2;
/// `exec`: a budget halted the run.
pub(crate) const EXIT_HARD_LIMIT: i32 = 3;
/// A bug or an unexpected host failure (EX_SOFTWARE).
pub(crate) const EXIT_INTERNAL: i32 = 70;
/// `replay`: the replay departed from its recording.
pub(crate) const EXIT_REPLAY_DIVERGED: i32 = 122;
/// `run`: the guest trapped (not a limit).
pub(crate) const EXIT_RUN_TRAP: i32 = 123;
/// `run`: a budget halted the guest.
pub(crate) const EXIT_RUN_HARD_LIMIT: i32 = 124;
/// `run`: sbx-wasm could not start the guest (caps file, component, setup).
pub(crate) const EXIT_RUN_SETUP: i32 = 125;
/// `run`, `exec`: interrupted (SIGINT, SIGTERM); the report was written.
pub(crate) const EXIT_CANCELLED: i32 = 130;

pub(crate) const EXIT_CODES: &str = "\
Exit codes:
  0   success: the plan completed (soft denials included), the caps file is valid,
      or the explained op would be allowed
  1   check --explain: the op would be denied; policy what-if: a decision flips;
      policy diff: the grants differ; policy lint: something was found
  2   usage error: bad arguments, caps file or plan file
  3   exec: a budget (max_ops, max_output_bytes, max_wall) halted the run
  70  internal error
run (and replay) pass the guest's own exit code through, except:
  122 replay: the replay departed from its recording (the first point is printed)
  123 run: the guest trapped (not a limit; the report has the message)
  124 run: a budget (ops, output, wall, fuel, memory, stack) halted the guest
  125 run: the guest could not be started (caps file, component, setup)
  130 run, exec: interrupted (Ctrl-C, SIGTERM); the report and audit were written";

/// The exit code of a command's result, printing the error if any: a
/// usage error (2) unless the error is marked [`Internal`] (70).
pub(crate) fn finish(result: anyhow::Result<i32>) -> i32 {
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sbx-wasm: error: {}", describe(&e));
            if e.downcast_ref::<Internal>().is_some() {
                EXIT_INTERNAL
            } else {
                EXIT_USAGE
            }
        }
    }
}

/// The exit code of `run` or `replay`: every error before the guest ran
/// is a setup error (125); after a run, [`run_exit_code`].
pub(crate) fn finish_run(result: anyhow::Result<i32>) -> i32 {
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sbx-wasm: error: {}", describe(&e));
            EXIT_RUN_SETUP
        }
    }
}

/// What `run` and `replay` exit with after a run: the guest's own code,
/// or the code of how it was stopped.
pub(crate) fn run_exit_code(r: &sbx_wasm::RunReport) -> i32 {
    use sbx_wasm::Status;
    match r.status {
        Status::HardLimit => EXIT_RUN_HARD_LIMIT,
        Status::Trapped => EXIT_RUN_TRAP,
        Status::Cancelled => EXIT_CANCELLED,
        // A process exit status keeps the low 8 bits: a failure whose code
        // would read as 0 there (`sys.exit(256)`) exits 1, never success.
        _ => match r.exit_code.unwrap_or(0) {
            c if c != 0 && c & 0xff == 0 => 1,
            c => c,
        },
    }
}

/// An error and its causes on one line, `a: b: c`, leaving out a cause whose
/// text the line already ends with (the library's errors say their cause
/// in their own message, and also expose it as their source).
pub(crate) fn describe(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Marks an error that is the host's fault, not the user's input.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Internal(pub(crate) String);
