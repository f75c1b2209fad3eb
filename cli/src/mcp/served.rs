//! The catalog's entries when a client asks for them: a resource
//! template's read runs its script under the grant, a catalog prompt is
//! filled in (its images and files read through the gate), and a prompt
//! argument is completed from its declared values. Each read or run is a
//! call of the session, counted and on record like any other.

use super::catalog::{Embed, MessageBody, PromptDef, ScriptTemplate};
use super::handler::Handler;
use super::resources::{contents, mime_type, turned_away};
use super::runs;
use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock, GetPromptResult,
    PromptMessage, ReadResourceResult, Reference,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value};

impl Handler {
    /// Read `uri`, which `template` matched with `vars`: its script, run
    /// with the variables on stdin as a JSON object; its stdout the text.
    pub(crate) async fn read_template(
        &self,
        uri: &str,
        template: &ScriptTemplate,
        vars: Value,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, ErrorData> {
        const TOOL: &str = "resources/read";
        let door = self.door();
        let Some(runner) = &door.python else {
            return Err(ErrorData::internal_error(
                "this server has no Python runner",
                None,
            ));
        };
        let admitted = (self.admit(&context, TOOL).await).map_err(|a| turned_away(&a))?;
        let program = runs::Program {
            agent: runner.agent().clone(),
            name: "python".into(),
            args: Vec::new(),
            stdin: vars.to_string().into_bytes(),
            source: Some((crate::scripts::Lang::Python, template.source.clone())),
            shape: None,
            labels: Default::default(),
        };
        let (session, ids) = (&admitted.session, admitted.ids());
        let client = self.client(&context, false);
        let run = runs::execute(
            door,
            session,
            &ids,
            TOOL,
            program,
            client,
            context.ct.clone(),
        )
        .await
        .map_err(|a| turned_away(&a))?;
        let r = &run.report;
        if !super::reply::clean_exit(r) {
            let stderr = String::from_utf8_lossy(&run.stderr);
            let why = format!(
                "the template's script failed ({:?}, exit {:?}, violation {:?}): {}",
                r.status,
                r.exit_code,
                r.violation,
                sbx_wasm::bound::clip(stderr.trim_end()),
            );
            return Err(ErrorData::internal_error(why, None));
        }
        let text = contents(uri, template.mime_type.clone(), run.stdout);
        Ok(ReadResourceResult::new(vec![text]))
    }

    /// The catalog prompt `def` with the `given` arguments: its text filled
    /// in, its images and files read through the gate as one call.
    pub(crate) async fn catalog_prompt(
        &self,
        def: &PromptDef,
        given: Option<&Map<String, Value>>,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResult, ErrorData> {
        let bad = |reason: String| ErrorData::invalid_params(reason, None);
        let args = def.arguments_of(given).map_err(bad)?;
        let paths: Vec<String> = (def.messages.iter())
            .filter_map(|m| match &m.body {
                MessageBody::Image(path)
                | MessageBody::Resource {
                    body: Embed::Path(path),
                    ..
                } => Some(path.clone()),
                _ => None,
            })
            .collect();
        let read = match paths.is_empty() {
            true => Vec::new(),
            false => self.read_files("prompts/get", paths, context).await?,
        };
        let mut files = read.into_iter();
        let mut next = || files.next().unwrap_or_default();
        let mut messages = Vec::new();
        for m in &def.messages {
            let content = match &m.body {
                MessageBody::Text(text) => ContentBlock::text(def.fill(text, &args).map_err(bad)?),
                MessageBody::Image(path) => ContentBlock::image(
                    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, next()),
                    mime_type(path),
                ),
                MessageBody::Resource {
                    uri,
                    mime_type: declared,
                    body,
                } => {
                    let uri = def.fill(uri, &args).map_err(bad)?;
                    let (mime, bytes) = match body {
                        Embed::Text(text) => (
                            "text/plain",
                            def.fill(text, &args).map_err(bad)?.into_bytes(),
                        ),
                        Embed::Path(path) => (mime_type(path), next()),
                    };
                    let mime = declared.clone().unwrap_or_else(|| mime.to_string());
                    ContentBlock::resource(contents(&uri, mime, bytes))
                }
            };
            messages.push(PromptMessage::new(m.role.clone(), content));
        }
        Ok(GetPromptResult::new(messages).with_description(def.description.clone()))
    }

    /// `completion/complete`: a catalog prompt's argument from the values
    /// the catalog declares for it (none for a free argument, and none for
    /// a resource template's variables: they are the client's to choose).
    pub(crate) fn complete_argument(
        &self,
        request: &CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let (values, total) = match &request.r#ref {
            Reference::Prompt(p) => match self.door().catalog.prompt(&p.name) {
                Some(def) => def.complete(&request.argument.name, &request.argument.value),
                None if super::prompts::built_in(&p.name) => (Vec::new(), 0),
                None => {
                    let reason = format!("no prompt {}", sbx_wasm::bound::quote(&p.name));
                    return Err(ErrorData::invalid_params(reason, None));
                }
            },
            // A template's variables (and any later kind of reference)
            // are the client's to choose.
            _ => (Vec::new(), 0),
        };
        let more = total > values.len();
        let info = CompletionInfo::with_pagination(values, Some(total as u32), more)
            .map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(info))
    }
}
