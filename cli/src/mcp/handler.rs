//! The MCP server of one session: lists the tools, takes each call through
//! the session's totals and a run slot to the code that performs it.
//!
//! Which `Session` a call is charged to: the MCP session's own, made at
//! `initialize` (or, on stdio, at the first call of a client that skipped
//! it: the connection is the session); over HTTP without a handshake (the
//! sessionless revision), the workspace the request names, else the
//! server's default workspace. rmcp makes a `Handler` per HTTP request in
//! that revision, so nothing is made before a call needs it.

use super::door::Door;
use super::listing;
#[allow(deprecated)] // logging: see logging.rs
use super::logging::{self, SetLevelRequestParams};
use super::reply::Ids;
use super::session::Session;
use super::subscriptions::Subscriptions;
use super::{ops, programs, prompts, runs, tasks, workspaces};
use anyhow::{Context, Result};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    CompleteRequestParams, CompleteResult, CreateTaskResult, CustomRequest, CustomResult,
    GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
    SubscribeRequestParams, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

/// One session's server.
#[derive(Clone)]
pub(crate) struct Handler {
    door: Arc<Door>,
    /// The MCP session's own state, once there is one.
    own: Arc<OnceLock<Arc<Session>>>,
    /// Whether the client shook hands (`initialize`): then it has a
    /// session of its own even if opening it failed (it is tried again
    /// at its calls), never a workspace.
    handshake: Arc<AtomicBool>,
    /// The least severe log message the client wants (`logging/setLevel`);
    /// none until it asks.
    log_level: logging::Level,
    /// The resources the client subscribed to.
    subscriptions: Subscriptions,
    transport: Transport,
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Transport {
    Stdio,
    Http,
}

impl Handler {
    pub(crate) fn new(door: Arc<Door>, transport: Transport) -> Handler {
        Handler {
            door,
            own: Arc::new(OnceLock::new()),
            handshake: Arc::new(AtomicBool::new(false)),
            log_level: logging::Level::default(),
            subscriptions: Subscriptions::default(),
            transport,
        }
    }

    /// The MCP session's own state, made on first use.
    fn own(&self) -> Result<Arc<Session>, String> {
        if let Some(s) = self.own.get() {
            return Ok(s.clone());
        }
        let made = Arc::new(self.door.session().map_err(|e| format!("{e:#}"))?);
        // Two first calls at once: the first set wins, the other's drops.
        Ok(self.own.get_or_init(|| made).clone())
    }

    /// The session `context`'s call is charged to (see the module's
    /// comment), or why there is none.
    fn session(&self, context: &RequestContext<RoleServer>) -> Result<Arc<Session>, String> {
        if let Some(s) = self.own.get() {
            return Ok(s.clone());
        }
        if self.transport == Transport::Stdio || self.handshake.load(Ordering::SeqCst) {
            return self.own();
        }
        let handle = (context.extensions.get::<hyper::http::request::Parts>())
            .and_then(|p| p.headers.get(workspaces::HEADER))
            .and_then(|v| v.to_str().ok());
        match handle {
            Some(h) => (self.door.workspaces.get(h))
                .ok_or_else(|| "no such workspace: it was closed or never issued".to_string()),
            None => self.door.shared_workspace().map_err(|e| format!("{e:#}")),
        }
    }
}

/// Serve one session over this process's stdin and stdout until the client
/// closes them (or a signal), then finish or cancel the running calls.
pub(crate) async fn serve_stdio(door: Arc<Door>) -> Result<()> {
    let handler = Handler::new(door.clone(), Transport::Stdio);
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

/// The protocol revisions served, oldest first.
const REVISIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// The methods this server answers (with the params the protocol gives
/// them).
const SERVED: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "logging/setLevel",
    "completion/complete",
];

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(logging::capabilities())
            .with_server_info(Implementation::new("sbx-wasm", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Every tool runs under the server's capability grant: a refused operation \
                 is a result with isError and the violation's name, never a crash. Use \
                 run_python to do many steps (files, fetches, tools) in one script.",
            )
    }

    /// 2025-06-18, 2025-11-25 and 2026-07-28. The two before are not
    /// offered: 2025-03-26 makes batches mandatory, which this server does
    /// not take; a client asking for either is offered 2025-11-25.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(REVISIONS)
    }

    /// Guest stderr and denials are sent as log messages from here on, at
    /// `level` and above.
    #[allow(deprecated)] // logging: see logging.rs
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level.set(&request);
        Ok(())
    }

    /// The handshake of the revisions that have one opens the session.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.handshake.store(true, Ordering::SeqCst);
        self.own()
            .map_err(|reason| ErrorData::internal_error(reason, None))?;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
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

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(prompts::list(
            &self.door.offer(),
        )))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if let Some(def) = self.door.catalog.prompt(&request.name) {
            let got = self.catalog_prompt(def, request.arguments.as_ref(), context);
            return got.await.map(Into::into);
        }
        let offer = self.door.offer();
        prompts::get(&offer, &request.name, request.arguments.as_ref())
            .map(Into::into)
            .map_err(|reason| ErrorData::invalid_params(reason, None))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.resources(context).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(self.resource_templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.read(&request.uri, context).await.map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let session = (self.session(&context)).map_err(|r| ErrorData::internal_error(r, None))?;
        (self
            .subscriptions
            .add(&request.uri, &session, &self.door.catalog))
        .map_err(|reason| ErrorData::invalid_params(reason, None))
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.remove(&request.uri, &self.door.catalog);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.complete_argument(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(listing::tools(
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
        let admitted = match self.admit(&context, &tool).await {
            Ok(a) => a,
            Err(refused) => return Ok(refused.into()),
        };
        let session = admitted.session.clone();
        let may_be_task = programs::is_program(&self.door, &tool)
            && (context.client_capabilities()).is_some_and(|c| c.supports_tasks())
            && session.tasks.has_room();
        if !may_be_task {
            let cancel = context.ct.clone();
            return Ok(self
                .clone()
                .answer(admitted, tool, args, context, cancel)
                .await
                .into());
        }
        let (cancel, request_cancel) = (CancellationToken::new(), context.ct.clone());
        let peer = context.peer.clone();
        let work = self
            .clone()
            .answer(admitted, tool, args, context, cancel.clone());
        let wall = session.caps.budget().max_wall;
        let on = (&session.tasks, self.door.tasks, wall);
        let tell = move |end| tasks::notify(peer, end);
        Ok(
            match tasks::run_as_task(work, (cancel, request_cancel), on, tell).await {
                tasks::Outcome::Ended(answer) => answer.into(),
                tasks::Outcome::Task(task) => CallToolResponse::Task(CreateTaskResult::new(task)),
            },
        )
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let session = self.task_session(&context)?;
        session.tasks.get(&request.task_id).map(GetTaskResult::new)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_session(&context)?.tasks.cancel(&request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_session(&context)?.tasks.update(&request.task_id)
    }
}

/// A call let in: its session, its id, and what it holds while it runs.
pub(crate) struct Admitted {
    pub(crate) session: Arc<Session>,
    call: String,
    _running: super::door::Inflight,
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl Admitted {
    pub(crate) fn ids(&self) -> Ids<'_> {
        Ids {
            session: &self.session.id,
            call: &self.call,
        }
    }
}

impl Handler {
    /// Let a call of `tool` in: its session, within the session's totals,
    /// with a run slot; or the answer that turns it away (on record).
    pub(crate) async fn admit(
        &self,
        context: &RequestContext<RoleServer>,
        tool: &str,
    ) -> Result<Admitted, CallToolResult> {
        let session = self.session(context).map_err(|reason| {
            let ids = Ids {
                session: "-",
                call: "-",
            };
            self.door.turn_away(&ids, tool, "refused", &reason)
        })?;
        let call = session.begin_call(&self.door.limits).map_err(|reason| {
            let ids = Ids {
                session: &session.id,
                call: "-",
            };
            self.door.turn_away(&ids, tool, "refused", &reason)
        })?;
        let running = self.door.enter();
        let Some(slot) = self.door.slot().await else {
            let reason = format!(
                "busy: all {} run slots stayed taken; try again later",
                self.door.max_concurrent
            );
            let ids = Ids {
                session: &session.id,
                call: &call,
            };
            return Err(self.door.turn_away(&ids, tool, "busy", &reason));
        };
        Ok(Admitted {
            session,
            call,
            _running: running,
            _slot: slot,
        })
    }

    /// Perform a call let in (under `cancel`), then tell the session's
    /// subscribers what it wrote.
    async fn answer(
        self,
        admitted: Admitted,
        tool: String,
        args: JsonObject,
        context: RequestContext<RoleServer>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        let (session, ids, peer) = (&admitted.session, admitted.ids(), context.peer.clone());
        // The client's trace context, when it sent one (`_meta.traceparent`).
        let parent = context
            .meta
            .get("traceparent")
            .and_then(|v| v.as_str())
            .map(String::from);
        let telemetry = &self.door.telemetry;
        telemetry.begin_call(&tool, ids.session, ids.call, parent);
        let answer = (self.dispatch(session, &tool, &args, &ids, context, cancel)).await;
        telemetry.end_call(ids.session, ids.call, answer.is_error == Some(true));
        self.subscriptions.notify(session, &peer).await;
        answer
    }

    /// The session whose tasks a `tasks/*` request may see.
    fn task_session(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<Session>, ErrorData> {
        self.session(context)
            .map_err(|reason| ErrorData::invalid_params(reason, None))
    }

    pub(crate) fn door(&self) -> &Arc<Door> {
        &self.door
    }

    /// The client of `context`'s call, with its progress token when it
    /// asked for progress and `progress` is wanted.
    pub(crate) fn client(
        &self,
        context: &RequestContext<RoleServer>,
        progress: bool,
    ) -> runs::Client {
        runs::Client {
            progress: progress
                .then(|| context.meta.get_progress_token())
                .flatten(),
            log: self.log_level.log(&context.peer, &context.meta),
            peer: context.peer.clone(),
        }
    }

    async fn dispatch(
        &self,
        session: &Session,
        tool: &str,
        args: &JsonObject,
        ids: &Ids<'_>,
        context: RequestContext<RoleServer>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        let door = &self.door;
        if !programs::is_program(door, tool) {
            // One op: a built-in, a granted tool, or a tool the grant
            // refuses (`tool_denied`, on record).
            return ops::run(door, session, ids, tool, args, (cancel, &context.peer)).await;
        }
        let program = match programs::program(door, tool, args) {
            Ok(p) => p,
            Err(reason) => return self.door.turn_away(ids, tool, "refused", &reason),
        };
        let client = self.client(&context, true);
        runs::run(door, session, ids, tool, program, client, cancel).await
    }
}
