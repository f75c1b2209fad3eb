//! The typed way to add a tool: a Rust function of serde arguments and a
//! serde result, sync or async, given the call's limits, with its input's
//! JSON schema derived from the argument type (what a model is told, what
//! `sbx.tool_definitions()` lists to a script). Every other way to add a
//! tool is the untyped layer this one is built on ([`ToolRegistry::register`]
//! takes any [`Tool`]) or a thin wrapper of it
//! ([`ToolRegistry::register_typed`]).
//!
//! The input is JSON text that must deserialize into the argument type;
//! input that does not is a failed call saying why, and the function never
//! sees it. The result is sent as text: a string result as it is, anything
//! else as JSON (scripts decode it: Python's `sbx.tools.NAME(...)`, JS's
//! `tools.NAME(...)`).

use super::{Tool, ToolError, ToolLimits, ToolRegistry};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

impl ToolRegistry {
    /// Add a tool with typed arguments and result: `f(args, limits)` runs
    /// on the guest's thread for each call, `limits` saying the time left
    /// and the run's cancel switch (a long tool polls
    /// [`ToolLimits::cancel`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::tools::{ToolLimits, ToolRegistry};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add {
    ///     /// First term.
    ///     a: i64,
    ///     /// Second term.
    ///     b: i64,
    /// }
    ///
    /// #[derive(serde::Serialize)]
    /// struct Sum {
    ///     sum: i64,
    /// }
    ///
    /// let mut tools = ToolRegistry::new();
    /// tools.add_tool("add", "Add two integers.", |x: Add, _limits: &ToolLimits| {
    ///     Ok(Sum { sum: x.a + x.b })
    /// });
    /// let limits = ToolLimits::new(std::time::Duration::from_secs(1), 100);
    /// let add = tools.get("add").unwrap();
    /// assert_eq!(add.call(r#"{"a": 2, "b": 40}"#, limits.clone()).unwrap(), r#"{"sum":42}"#);
    /// assert!(add.call(r#"{"a": "two"}"#, limits).is_err());
    /// ```
    pub fn add_tool<A, O, F>(
        &mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> &mut Self
    where
        A: DeserializeOwned + JsonSchema,
        O: Serialize,
        F: Fn(A, &ToolLimits) -> Result<O, ToolError> + Send + Sync + 'static,
    {
        let typed = move |input: &str, limits: ToolLimits| {
            let args = parse::<A>(input)?;
            f(args, &limits).and_then(|out| encode(&out))
        };
        self.register_described(name, description, input_schema::<A>(), Typed(typed))
    }

    /// [`ToolRegistry::add_tool`] for an async function: each call runs
    /// `f(args, limits)` as a task on `runtime` (the agent framework's
    /// tokio runtime) and waits for it on the guest's thread, within the
    /// time left and until a cancel, either of which aborts the task.
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::tools::{ToolLimits, ToolRegistry};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Lookup {
    ///     /// The word to look up.
    ///     word: String,
    /// }
    ///
    /// let rt = tokio::runtime::Runtime::new()?;
    /// let mut tools = ToolRegistry::new();
    /// tools.add_async_tool("define", "Look a word up.", rt.handle().clone(),
    ///     |q: Lookup, _limits: ToolLimits| async move {
    ///         tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    ///         Ok(vec![format!("{}: a word", q.word)])
    ///     });
    /// let limits = ToolLimits::new(std::time::Duration::from_secs(5), 100);
    /// let out = tools.get("define").unwrap().call(r#"{"word": "wasm"}"#, limits)?;
    /// assert_eq!(out, r#"["wasm: a word"]"#);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "wasm")]
    pub fn add_async_tool<A, O, F, Fut>(
        &mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        runtime: tokio::runtime::Handle,
        f: F,
    ) -> &mut Self
    where
        A: DeserializeOwned + JsonSchema,
        O: Serialize + Send + 'static,
        F: Fn(A, ToolLimits) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let typed = move |input: &str, limits: ToolLimits| {
            let args = parse::<A>(input)?;
            let task = f(args, limits.clone());
            super::async_tool::wait_for(&runtime, task, &limits).and_then(|out| encode(&out))
        };
        self.register_described(name, description, input_schema::<A>(), Typed(typed))
    }

    /// [`ToolRegistry::add_tool`] for a function that needs no limits and
    /// returns text.
    ///
    /// # Examples
    ///
    /// ```
    /// use sbx_wasm::tools::ToolRegistry;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add {
    ///     a: i64,
    ///     b: i64,
    /// }
    ///
    /// let mut tools = ToolRegistry::new();
    /// tools.register_typed("add", "Add two integers.", |x: Add| Ok((x.a + x.b).to_string()));
    /// let limits = sbx_wasm::tools::ToolLimits::new(std::time::Duration::from_secs(1), 100);
    /// assert_eq!(tools.get("add").unwrap().call(r#"{"a": 2, "b": 40}"#, limits).unwrap(), "42");
    /// ```
    pub fn register_typed<A, F>(
        &mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> &mut Self
    where
        A: DeserializeOwned + JsonSchema,
        F: Fn(A) -> Result<String, ToolError> + Send + Sync + 'static,
    {
        self.add_tool(name, description, move |args: A, _: &ToolLimits| f(args))
    }
}

/// The JSON schema of `A` as model APIs take it inline.
fn input_schema<A: JsonSchema>() -> Value {
    let mut schema = crate::capability::kind::portable_schema::<A>();
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
    }
    schema
}

/// The call's input as `A`, or the failed call that says why.
fn parse<A: DeserializeOwned>(input: &str) -> Result<A, ToolError> {
    serde_json::from_str(input)
        .map_err(|e| ToolError::Failed(format!("the input does not match the tool's schema: {e}")))
}

/// A result as the text a call returns: a string as it is, anything else
/// as JSON.
fn encode<O: Serialize>(out: &O) -> Result<String, ToolError> {
    match serde_json::to_value(out) {
        Ok(Value::String(text)) => Ok(text),
        Ok(value) => Ok(value.to_string()),
        Err(e) => Err(ToolError::Failed(format!(
            "the tool's result does not serialize: {e}"
        ))),
    }
}

/// A closure of the input and the limits, as a [`Tool`].
struct Typed<F>(F);

impl<F> Tool for Typed<F>
where
    F: Fn(&str, ToolLimits) -> Result<String, ToolError> + Send + Sync,
{
    fn call(&self, input: &str, limits: ToolLimits) -> Result<String, ToolError> {
        (self.0)(input, limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        /// How many.
        n: u32,
    }

    #[test]
    fn a_typed_result_is_json_a_string_result_its_text_and_the_limits_reach_the_tool() {
        let mut tools = ToolRegistry::new();
        tools.add_tool("list", "Count up.", |a: Args, _: &ToolLimits| {
            Ok((0..a.n).collect::<Vec<_>>())
        });
        tools.add_tool("say", "Text.", |a: Args, l: &ToolLimits| {
            Ok(format!("{} with {} ms left", a.n, l.timeout.as_millis()))
        });
        tools.add_tool("stop", "Honours a cancel.", |_: Args, l: &ToolLimits| {
            if l.cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            Ok(serde_json::json!({"ran": true}))
        });
        let limits = ToolLimits::new(Duration::from_millis(700), 1000);
        let call = |name: &str, input: &str, limits: ToolLimits| {
            tools.get(name).unwrap().call(input, limits)
        };
        assert_eq!(
            call("list", r#"{"n": 3}"#, limits.clone()).unwrap(),
            "[0,1,2]"
        );
        assert_eq!(
            call("say", r#"{"n": 2}"#, limits.clone()).unwrap(),
            "2 with 700 ms left"
        );
        assert_eq!(
            call("stop", r#"{"n": 0}"#, limits.clone()).unwrap(),
            r#"{"ran":true}"#
        );
        limits.cancel.cancel();
        assert_eq!(
            call("stop", r#"{"n": 0}"#, limits.clone()),
            Err(ToolError::Cancelled)
        );
        // Input that does not fit the type never reaches the function.
        let e = call("list", r#"{"n": -1}"#, limits).unwrap_err();
        assert!(
            e.to_string().contains("does not match the tool's schema"),
            "{e}"
        );
        // The schema is derived, with the field's doc.
        let caps = crate::Capabilities::builder()
            .allow_tool("list")
            .build()
            .unwrap();
        let defs = tools.definitions(caps.tools());
        assert_eq!(
            defs[0].input_schema["properties"]["n"]["description"],
            "How many."
        );
    }

    #[cfg(feature = "wasm")]
    #[test]
    fn an_async_tool_runs_on_the_runtime_and_is_stopped_by_its_time_left() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mut tools = ToolRegistry::new();
        tools.add_async_tool(
            "wait",
            "Sleeps n ms.",
            rt.handle().clone(),
            |a: Args, _| async move {
                tokio::time::sleep(Duration::from_millis(u64::from(a.n))).await;
                Ok(a.n)
            },
        );
        let wait = tools.get("wait").unwrap();
        let limits = ToolLimits::new(Duration::from_millis(500), 100);
        assert_eq!(wait.call(r#"{"n": 5}"#, limits.clone()).unwrap(), "5");
        let short = ToolLimits::new(Duration::from_millis(50), 100);
        assert_eq!(wait.call(r#"{"n": 5000}"#, short), Err(ToolError::Timeout));
    }
}
