//! The grant's folders as MCP resources, read through the gate.
//!
//! A file is named by its guest path: `/work/a b.txt` is
//! `sbx://work/a%20b.txt` (each segment percent-encoded), never by where
//! it is on the host. `resources/list` lists the files directly in each
//! mount's root (and the session's `/scratch`; the first 1,000), from one
//! `fs_list` of each;
//! a resource template per mount (`sbx://work/{+path}`) names the rest.
//! `resources/read` is one `fs_read`. Both are calls of the session: they
//! count against its totals, take a run slot, and are on record like any
//! other op (a denial as `fs_read_denied`); a refused read is the JSON-RPC
//! error -32602 with the denial's text, a file that is not there -32002.

use super::handler::Handler;
use super::ops;
use super::uris::{guest_path, uri};
use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};
use rmcp::service::{RequestContext, RoleServer};
use sbx_wasm::fs::EntryKind;
use sbx_wasm::{Output, SandboxResult};
use serde_json::json;

/// The most files one listing gives (a write mount may hold as many files
/// as its quota lets a guest make; the templates name the rest).
const MAX_LISTED: usize = 1_000;
/// The type a file's name suggests, for the few a model reads most.
fn mime_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match ext.to_ascii_lowercase().as_str() {
        "json" => "application/json",
        "csv" => "text/csv",
        "md" => "text/markdown",
        "html" | "htm" => "text/html",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "pdf" => "application/pdf",
        "txt" | "log" | "py" | "toml" | "yaml" | "yml" | "xml" => "text/plain",
        _ => "application/octet-stream",
    }
}

/// The refusal of one op as the protocol's error.
fn op_error(result: &SandboxResult) -> ErrorData {
    if let Some(d) = &result.denial {
        return ErrorData::invalid_params(
            format!(
                "denied: {} {} ({}): {}",
                result.op,
                result.target,
                d.violation.as_str(),
                d.message
            ),
            Some(json!({ "violation": d.violation.as_str() })),
        );
    }
    match &result.error {
        Some(e) if e.kind == sbx_wasm::ErrorKind::NotFound => {
            ErrorData::resource_not_found(e.message.clone(), None)
        }
        Some(e) => ErrorData::invalid_params(e.message.clone(), None),
        None => ErrorData::internal_error("the read gave no result", None),
    }
}

/// A call turned away before it ran (its record is written), as the
/// protocol's error.
fn turned_away(answer: &rmcp::model::CallToolResult) -> ErrorData {
    let text: String = (answer.content.iter())
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    ErrorData::internal_error(text, None)
}

impl Handler {
    pub(crate) async fn resources(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        const TOOL: &str = "resources/list";
        let admitted = self
            .admit(&context, TOOL)
            .await
            .map_err(|a| turned_away(&a))?;
        let roots: Vec<String> = (admitted.session.caps.mounts().iter())
            .map(|m| m.guest.as_str().to_string())
            .collect();
        let ops = (roots.iter())
            .map(|r| json!({ "op": "fs_list", "path": r }))
            .collect();
        let (results, _) = ops::perform(
            self.door(),
            &admitted.session,
            &admitted.ids(),
            TOOL,
            ops,
            context.ct.clone(),
        )
        .await
        .map_err(|reason| ErrorData::internal_error(reason, None))?;
        self.door().count_ran();
        let mut listed = Vec::new();
        for (root, result) in roots.iter().zip(&results) {
            let Some(Output::Entries { entries }) = &result.output else {
                continue;
            };
            let room = MAX_LISTED.saturating_sub(listed.len());
            for e in (entries.iter().filter(|e| e.kind == EntryKind::File)).take(room) {
                let path = format!("{}/{}", root.trim_end_matches('/'), e.name);
                listed.push(
                    Resource::new(uri(&path), e.name.clone())
                        .with_description(format!("{path} in the grant"))
                        .with_mime_type(mime_type(&e.name)),
                );
            }
        }
        Ok(ListResourcesResult::with_all_items(listed))
    }

    pub(crate) fn resource_templates(&self) -> ListResourceTemplatesResult {
        let mut templates: Vec<ResourceTemplate> = (self.door().caps.mounts().iter())
            .map(|m| {
                let root = m.guest.as_str();
                ResourceTemplate::new(format!("{}/{{+path}}", uri(root)), root.to_string())
                    .with_description(format!("A file under {root} ({})", m.access.as_str()))
            })
            .collect();
        if self.door().scratch_root.is_some() {
            templates.push(
                ResourceTemplate::new(format!("{}/{{+path}}", uri("/scratch")), "/scratch")
                    .with_description("A file in this session's /scratch (read-write)"),
            );
        }
        ListResourceTemplatesResult::with_all_items(templates)
    }

    pub(crate) async fn read(
        &self,
        resource: &str,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, ErrorData> {
        const TOOL: &str = "resources/read";
        let path = guest_path(resource).map_err(|r| ErrorData::invalid_params(r, None))?;
        let admitted = self
            .admit(&context, TOOL)
            .await
            .map_err(|a| turned_away(&a))?;
        let op = json!({ "op": "fs_read", "path": path });
        let (results, _) = ops::perform(
            self.door(),
            &admitted.session,
            &admitted.ids(),
            TOOL,
            vec![op],
            context.ct.clone(),
        )
        .await
        .map_err(|reason| ErrorData::internal_error(reason, None))?;
        self.door().count_ran();
        let result = &results[0];
        let Some(Output::Data { content }) = &result.output else {
            return Err(op_error(result));
        };
        let mime = mime_type(&path).to_string();
        let contents = match std::str::from_utf8(&content.0) {
            Ok(text) => ResourceContents::TextResourceContents {
                uri: resource.to_string(),
                mime_type: Some(mime),
                text: text.to_string(),
                meta: None,
            },
            Err(_) => ResourceContents::BlobResourceContents {
                uri: resource.to_string(),
                mime_type: Some(mime),
                blob: base64::Engine::encode(
                    &base64::engine::general_purpose::STANDARD,
                    &content.0,
                ),
                meta: None,
            },
        };
        Ok(ReadResourceResult::new(vec![contents]))
    }
}
