//! The MCP server of one session: lists the tools, takes each call through
//! the session's totals and a run slot to the code that performs it.

use super::catalog;
use super::door::{Door, Session};
use super::reply::Ids;
use super::{ops, runs};
use anyhow::{Context, Result};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult,
    Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::Value;
use std::sync::Arc;

/// One session's server.
#[derive(Clone)]
pub(crate) struct Handler {
    door: Arc<Door>,
    session: Arc<Session>,
}

impl Handler {
    pub(crate) fn new(door: Arc<Door>) -> Result<Handler> {
        let session = Arc::new(door.session()?);
        Ok(Handler { door, session })
    }
}

/// Serve one session over this process's stdin and stdout until the client
/// closes them (or a signal), then finish or cancel the running calls.
pub(crate) async fn serve_stdio(door: Arc<Door>) -> Result<()> {
    let handler = Handler::new(door.clone())?;
    let service = handler
        .serve(rmcp::transport::io::stdio_pipes())
        .await
        .context("the MCP client did not initialize")?;
    tokio::select! {
        r = service.waiting() => { r.context("the MCP session failed")?; }
        () = super::shutdown_signal() => {}
    }
    door.shut_down().await;
    Ok(())
}

/// The methods this server answers (with the params the protocol gives
/// them).
const SERVED: &[&str] = &["initialize", "ping", "tools/list", "tools/call"];

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("sbx-wasm", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Every tool runs under the server's capability grant: a refused operation \
                 is a result with isError and the violation's name, never a crash. Use \
                 run_python to do many steps (files, fetches, tools) in one script.",
            )
    }

    /// rmcp hands a request here when it knows no such method, or when a
    /// method it knows came with params that do not parse (`tools/call`
    /// without a name): the latter is the client's bad params (-32602),
    /// not a missing method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if SERVED.contains(&request.method.as_str()) {
            return Err(ErrorData::invalid_params(
                format!(
                    "the params of {} do not have the form the protocol gives it",
                    sbx_wasm::bound::quote(&request.method)
                ),
                None,
            ));
        }
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("no method {}", sbx_wasm::bound::quote(&request.method)),
            None,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(catalog::tools(
            &self.door.offer(),
        )))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let session = &self.session.id;
        let call = match self.session.begin_call(&self.door.limits) {
            Ok(call) => call,
            Err(reason) => {
                let ids = Ids { session, call: "-" };
                return Ok(self.door.turn_away(&ids, &tool, "refused", &reason).into());
            }
        };
        let ids = Ids {
            session,
            call: &call,
        };
        let _running = self.door.enter();
        let Some(_slot) = self.door.slot().await else {
            let reason = format!(
                "busy: all {} run slots stayed taken; try again later",
                self.door.max_concurrent
            );
            return Ok(self.door.turn_away(&ids, &tool, "busy", &reason).into());
        };
        Ok(self.dispatch(&tool, &args, &ids, context).await.into())
    }
}

impl Handler {
    async fn dispatch(
        &self,
        tool: &str,
        args: &JsonObject,
        ids: &Ids<'_>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let (door, session) = (&self.door, &*self.session);
        let cancel = context.ct.clone();
        let program = match tool {
            "run_python" => python(door, args),
            "run_wasm" => component(door, args),
            // Everything else is one op: a built-in, a granted tool, or
            // a tool the grant refuses (`tool_denied`, on record).
            _ => return ops::run(door, session, ids, tool, args, cancel).await,
        };
        let program = match program {
            Ok(p) => p,
            Err(reason) => return self.door.turn_away(ids, tool, "refused", &reason),
        };
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| runs::Progress {
                peer: context.peer.clone(),
                token,
            });
        runs::run(door, session, ids, tool, program, progress, cancel).await
    }
}

fn string(args: &JsonObject, key: &str) -> Result<Option<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn run_args(args: &JsonObject) -> Result<(Vec<String>, Vec<u8>), String> {
    let list = match args.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(String::from))
            .collect::<Option<Vec<_>>>()
            .ok_or("`args` must be a list of strings")?,
        Some(_) => return Err("`args` must be a list of strings".into()),
    };
    let stdin = string(args, "stdin")?.unwrap_or_default().into_bytes();
    Ok((list, stdin))
}

fn python(door: &Door, args: &JsonObject) -> Result<runs::Program, String> {
    let Some(runner) = &door.python else {
        return Err("run_python is not offered: this server has no Python runner".into());
    };
    let code = string(args, "code")?.ok_or("`code` is required")?;
    let (args, stdin) = run_args(args)?;
    Ok(runs::Program {
        agent: runner.agent().clone(),
        name: "python".into(),
        args,
        stdin,
        source: Some(code),
    })
}

fn component(door: &Door, args: &JsonObject) -> Result<runs::Program, String> {
    let name = string(args, "component")?.ok_or("`component` is required")?;
    // A first use compiles: off the async workers.
    let agent = tokio::task::block_in_place(|| door.component(&name))?;
    let (args, stdin) = run_args(args)?;
    Ok(runs::Program {
        agent,
        name,
        args,
        stdin,
        source: None,
    })
}
