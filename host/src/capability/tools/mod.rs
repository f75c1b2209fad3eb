//! The tool capability: the allow-list (its config), the registry lookup (its
//! check) and the [`Tool`] trait with a subprocess implementation (its host
//! impl).
//!
//! A tool runs with the host's authority, not the guest's: it is code the
//! operator chose to trust. The grant decides *which* tools an agent may
//! call, never what a tool may do.

#[cfg(feature = "wasm")]
pub(crate) mod async_tool;
mod check;
pub(crate) mod config;
mod described;
mod effect;
mod plan;
mod request;
mod typed;

pub use described::{ToolDefinition, ToolFormat};
pub(crate) use plan::{aimed_at, from_plan, plan_schema};
pub use request::ToolCall;

use crate::CancelHandle;
use crate::bound::clip;
use crate::capability::{Held, Lent, Output, Permit, Request, Trace};
use crate::failure::Failure;
use crate::violation::Denial;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bounds the gate puts on one tool call, from what is left of the budgets.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct ToolLimits {
    /// Time left in the wall budget. Tools should return before it; the
    /// subprocess tool is killed at it.
    pub timeout: Duration,
    /// Output bytes the caller may still receive; longer output halts the
    /// run with `max_output_bytes`.
    pub max_output_bytes: u64,
    /// The run's cancel switch: a long tool should poll it and return
    /// [`ToolError::Cancelled`] (the subprocess tool is killed on it).
    pub cancel: CancelHandle,
}

impl ToolLimits {
    /// `timeout` and `max_output_bytes`, never cancelled.
    pub fn new(timeout: Duration, max_output_bytes: u64) -> Self {
        ToolLimits {
            timeout,
            max_output_bytes,
            cancel: CancelHandle::new(),
        }
    }
}

/// Why a tool did not produce output. Not a violation: the tool was allowed
/// and ran, and failed.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The tool ran past its time limit and was stopped.
    #[error("timed out")]
    Timeout,
    /// The tool reported a failure.
    #[error("{0}")]
    Failed(String),
    /// The run was cancelled while the tool ran; it stopped early.
    #[error("cancelled")]
    Cancelled,
}

/// A named capability the agent may call with a string input (JSON by
/// convention) and that returns a string output.
pub trait Tool: Send + Sync {
    /// Run once.
    fn call(&self, input: &str, limits: ToolLimits) -> Result<String, ToolError>;

    /// Why `input` is not one this tool takes, if it is not: checked by the
    /// gate before the call, so a refused input never reaches the tool
    /// (an `invalid_request` denial). By default every input is taken.
    fn check_input(&self, input: &str) -> Result<(), String> {
        let _ = input;
        Ok(())
    }
}

impl<F> Tool for F
where
    F: Fn(&str) -> Result<String, ToolError> + Send + Sync,
{
    fn call(&self, input: &str, _limits: ToolLimits) -> Result<String, ToolError> {
        self(input)
    }
}

/// How the CLI runs a tool named in the caps file: a program that reads the
/// input on stdin and writes the output on stdout.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CommandTool {
    /// Program and arguments. The program is looked up in `PATH`.
    pub argv: Vec<String>,
    /// Working folder (the caps file's folder when loaded from a file).
    pub cwd: PathBuf,
    /// Own time limit, if shorter than what is left of the wall budget.
    pub timeout: Option<Duration>,
    /// What the tool does, for a model (the MCP door lists it).
    pub description: Option<String>,
    /// The JSON schema of its input, as JSON text (an object schema;
    /// checked when the grant is built).
    pub input_schema: Option<String>,
}

impl Tool for CommandTool {
    /// With an `input_schema`, the input must be JSON that the schema
    /// accepts.
    fn check_input(&self, input: &str) -> Result<(), String> {
        let Some(schema) = &self.input_schema else {
            return Ok(());
        };
        let schema: serde_json::Value = serde_json::from_str(schema)
            .map_err(|e| format!("the tool's input_schema is not JSON: {e}"))?;
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            format!(
                "the tool's input_schema does not load: {}",
                clip(e.to_string())
            )
        })?;
        let value: serde_json::Value = serde_json::from_str(input).map_err(|e| {
            format!("the input is not JSON, which the tool's input_schema asks for ({e})")
        })?;
        match validator.iter_errors(&value).next() {
            None => Ok(()),
            // Where and which rule, never the value (it may be large).
            Some(e) => Err(format!(
                "the input does not match the tool's input_schema: at {:?}, the rule {:?} fails",
                clip(e.instance_path().to_string()),
                clip(e.schema_path().to_string()),
            )),
        }
    }

    fn call(&self, input: &str, limits: ToolLimits) -> Result<String, ToolError> {
        let timeout = self
            .timeout
            .map_or(limits.timeout, |t| t.min(limits.timeout));
        let (program, args) = self
            .argv
            .split_first()
            .ok_or_else(|| ToolError::Failed("empty argv".into()))?;
        let mut child = Command::new(program)
            .args(args)
            .current_dir(&self.cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| ToolError::Failed(format!("cannot start {program:?}: {e}")))?;
        // Feed stdin and drain stdout/stderr on threads so a chatty tool
        // cannot deadlock against a full pipe while we watch the clock.
        let mut stdin = child.stdin.take().expect("piped");
        let input = input.as_bytes().to_vec();
        let feeder = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let cap = limits.max_output_bytes.saturating_add(1);
        let out = child.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = out.take(cap).read_to_end(&mut buf);
            buf
        });
        let err = child.stderr.take().expect("piped");
        let err_reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = err.take(4096).read_to_end(&mut buf);
            buf
        });
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if start.elapsed() >= timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(ToolError::Timeout);
                }
                Ok(None) if limits.cancel.is_cancelled() => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(ToolError::Cancelled);
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Err(ToolError::Failed(format!("wait failed: {e}"))),
            }
        };
        let _ = feeder.join();
        let stdout = reader.join().unwrap_or_default();
        let stderr = err_reader.join().unwrap_or_default();
        if !status.success() {
            return Err(ToolError::Failed(format!(
                "{program:?} exited with {status}: {}",
                String::from_utf8_lossy(&stderr).trim()
            )));
        }
        String::from_utf8(stdout).map_err(|_| ToolError::Failed("output is not UTF-8".into()))
    }
}

/// Tools the host can run, by name. Being registered is not being allowed:
/// the gate checks the caps' allow-list first.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    /// Shared by the registry's clones (one per run, in the run's
    /// [`Services`](crate::Services)) and copied only when a clone
    /// registers a tool: a clone costs a reference count, not a copy of
    /// every name.
    tools: Arc<BTreeMap<String, Arc<dyn Tool>>>,
    /// What a model is told about each tool that has a description.
    definitions: Arc<BTreeMap<String, ToolDefinition>>,
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register (or replace) a tool.
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::tools::{ToolError, ToolRegistry};
    ///
    /// let mut tools = ToolRegistry::new();
    /// tools.register("upper", |input: &str| Ok::<_, ToolError>(input.to_uppercase()));
    /// assert!(tools.get("upper").is_some());
    /// ```
    pub fn register(&mut self, name: impl Into<String>, tool: impl Tool + 'static) -> &mut Self {
        let name = name.into();
        if self.definitions.contains_key(&name) {
            Arc::make_mut(&mut self.definitions).remove(&name);
        }
        Arc::make_mut(&mut self.tools).insert(name, Arc::new(tool));
        self
    }

    /// A stand-in for each tool of `allowed` (a grant's allow-list),
    /// failing with `why` if ever called: for a gate that only decides
    /// (what-if) or answers from a recording (replay), since the check asks
    /// that an allowed tool be registered.
    pub(crate) fn stand_ins<'a>(
        allowed: impl IntoIterator<Item = &'a String>,
        why: &'static str,
    ) -> Self {
        let mut tools = Self::new();
        for name in allowed {
            tools.register(name.clone(), move |_: &str| {
                Err(ToolError::Failed(why.into()))
            });
        }
        tools
    }

    /// The tool registered under `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }
}

/// Whether `name` is an acceptable tool name: 1 to 64 of `a-z 0-9 _ - .`.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.".contains(&b))
}

impl Request for ToolCall {
    fn kind(&self) -> crate::capability::OpKind {
        crate::capability::OpKind::ToolCall
    }

    fn target(&self) -> &str {
        &self.name
    }

    fn check(&self, held: &Held<'_>) -> Result<Permit, Denial> {
        check::check_call(held.allowed_tools, held.tools, &self.name, &self.input)
    }

    fn perform(
        &self,
        permit: Permit,
        held: &Held<'_>,
        lent: &Lent<'_>,
    ) -> (Result<Output, Failure>, Trace) {
        let limits = ToolLimits {
            timeout: lent.wall_left,
            max_output_bytes: lent.output_left,
            cancel: match held.cancel {
                Some(cancel) => cancel.clone(),
                None => held.tool_cancel.get_or_init(Default::default).clone(),
            },
        };
        let outcome = effect::call(permit, &self.name, &self.input, limits, held.cancel);
        let trace = Trace {
            // A registered tool was called: whatever stops the wait, the
            // tool may have done its work (one abandoned at a cancel is
            // left to finish in the background).
            begun: matches!(&outcome, Err(Failure::Denied(d)) if d.hard)
                .then(|| "the tool was called and may have done its work".to_string()),
            ..Trace::default()
        };
        (outcome, trace)
    }

    fn slow(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests;
