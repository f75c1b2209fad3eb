//! The bench's baseline MCP server: the official Rust SDK (`rmcp`) over
//! stdio with one tool, `run_python`, that runs the snippet with the
//! library directly (`PythonRunner::run_source`, one instance kept ready,
//! as the door keeps it) and answers its stdout. No grant per session, no
//! totals, no audit, no progress: what a minimal MCP wrapper of the same
//! engine costs, so the MCP row can say what the door adds.
//!
//!     bare-mcp RUNNER CAPS

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use sbx_wasm::Capabilities;
use sbx_wasm::wasm::{ArtifactCache, PythonRunner, RunOptions, WasmHost};
use serde_json::json;
use std::sync::Arc;

#[derive(Clone)]
struct Bare {
    host: WasmHost,
    python: Arc<PythonRunner>,
    caps: Capabilities,
}

impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({ "type": "object", "properties": { "code": { "type": "string" } } });
        let schema = Arc::new(schema.as_object().cloned().unwrap_or_default());
        let tool = Tool::new("run_python", "Run a Python snippet.", schema);
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let code = (request.arguments.as_ref())
            .and_then(|a| a.get("code"))
            .and_then(|c| c.as_str())
            .unwrap_or("")
            .to_string();
        let me = self.clone();
        let run = tokio::task::spawn_blocking(move || {
            me.python
                .run_source(&me.host, &code, RunOptions::new(me.caps.clone()))
        })
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
        let mut answer = CallToolResult::success(vec![ContentBlock::text(stdout.clone())]);
        answer.structured_content = Some(json!({ "stdout": stdout }));
        Ok(answer.into())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [runner, caps] = args.as_slice() else {
        return Err("usage: bare-mcp RUNNER CAPS".into());
    };
    let cache = std::env::var_os("SBX_WASM_CACHE_DIR").ok_or("SBX_WASM_CACHE_DIR is not set")?;
    let host = WasmHost::new()?.with_cache(ArtifactCache::open(cache)?);
    let python = Arc::new(PythonRunner::load(&host, std::path::Path::new(runner))?.keep_warm(1)?);
    let caps = Capabilities::from_file(caps)?;
    let bare = Bare { host, python, caps };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let service = bare.serve(rmcp::transport::io::stdio()).await?;
        service.waiting().await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    })
}
