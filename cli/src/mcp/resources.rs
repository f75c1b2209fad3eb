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
pub(crate) fn mime_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match ext.to_ascii_lowercase().as_str() {
        "json" => "application/json",
        "csv" => "text/csv",
        "md" => "text/markdown",
        "html" | "htm" => "text/html",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "wav" => "audio/wav",
        "pdf" => "application/pdf",
        "txt" | "log" | "py" | "toml" | "yaml" | "yml" | "xml" => "text/plain",
        _ => "application/octet-stream",
    }
}

/// The refusal of one op as the protocol's error.
pub(crate) fn op_error(result: &SandboxResult) -> ErrorData {
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
pub(crate) fn turned_away(answer: &rmcp::model::CallToolResult) -> ErrorData {
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
            (context.ct.clone(), None),
        )
        .await
        .map_err(|reason| ErrorData::internal_error(reason, None))?;
        self.door().count_ran();
        let mut listed: Vec<Resource> = (self.door().catalog.resources.iter())
            .map(|r| {
                let mime = r.mime_type.as_deref().unwrap_or(mime_type(&r.path));
                let listed = Resource::new(r.uri.clone(), r.name.clone()).with_mime_type(mime);
                match &r.description {
                    Some(d) => listed.with_description(d.clone()),
                    None => listed,
                }
            })
            .collect();
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
        let catalog = (self.door().catalog.templates.iter()).map(|t| {
            let listed = ResourceTemplate::new(t.template.as_str(), t.name.clone())
                .with_mime_type(t.mime_type.clone());
            match &t.description {
                Some(d) => listed.with_description(d.clone()),
                None => listed,
            }
        });
        let mut templates: Vec<ResourceTemplate> = catalog.collect();
        templates.extend((self.door().caps.mounts().iter()).map(|m| {
            let root = m.guest.as_str();
            ResourceTemplate::new(format!("{}/{{+path}}", uri(root)), root.to_string())
                .with_description(format!("A file under {root} ({})", m.access.as_str()))
        }));
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
        let catalog = &self.door().catalog;
        let (path, mime) = if let Some(r) = catalog.resource(resource) {
            let mime = r.mime_type.as_deref().unwrap_or(mime_type(&r.path));
            (r.path.clone(), mime.to_string())
        } else if let Some((template, vars)) = catalog.template(resource) {
            return self.read_template(resource, template, vars, context).await;
        } else {
            let path = guest_path(resource).map_err(|r| ErrorData::invalid_params(r, None))?;
            let mime = mime_type(&path).to_string();
            (path, mime)
        };
        let mut read = self.read_files(TOOL, vec![path], context).await?;
        Ok(ReadResourceResult::new(vec![contents(
            resource,
            mime,
            read.remove(0),
        )]))
    }

    /// Read `paths` (guest paths) through the gate as one call of `tool`
    /// of the session: every file's bytes, or the first refusal.
    pub(crate) async fn read_files(
        &self,
        tool: &str,
        paths: Vec<String>,
        context: RequestContext<RoleServer>,
    ) -> Result<Vec<Vec<u8>>, ErrorData> {
        let admitted = self
            .admit(&context, tool)
            .await
            .map_err(|a| turned_away(&a))?;
        let ops = (paths.iter())
            .map(|path| json!({ "op": "fs_read", "path": path }))
            .collect();
        let (results, _) = ops::perform(
            self.door(),
            &admitted.session,
            &admitted.ids(),
            tool,
            ops,
            (context.ct.clone(), None),
        )
        .await
        .map_err(|reason| ErrorData::internal_error(reason, None))?;
        self.door().count_ran();
        (results.into_iter())
            .map(|result| match result.output {
                Some(Output::Data { content }) => Ok(content.0),
                _ => Err(op_error(&result)),
            })
            .collect()
    }
}

/// A file's bytes as a resource's contents: text when it is UTF-8 and its
/// type is not a binary one, else base64.
pub(crate) fn contents(uri: &str, mime: String, bytes: Vec<u8>) -> ResourceContents {
    let binary = [
        "image/",
        "audio/",
        "video/",
        "application/octet-stream",
        "application/pdf",
    ]
    .iter()
    .any(|p| mime.starts_with(p));
    match String::from_utf8(bytes) {
        Ok(text) if !binary => ResourceContents::TextResourceContents {
            uri: uri.to_string(),
            mime_type: Some(mime),
            text,
            meta: None,
        },
        Ok(text) => blob(uri, mime, text.as_bytes()),
        Err(e) => blob(uri, mime, e.as_bytes()),
    }
}

fn blob(uri: &str, mime: String, bytes: &[u8]) -> ResourceContents {
    ResourceContents::BlobResourceContents {
        uri: uri.to_string(),
        mime_type: Some(mime),
        blob: base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes),
        meta: None,
    }
}
