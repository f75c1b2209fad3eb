//! `sbx-wasm mcp --catalog FILE` with the official Rust SDK's client: a
//! script tool runs under the grant (its arguments checked first), a
//! content tool's output is checked, client tools ask the client (and the
//! grant decides who may), prompts read their files through the gate,
//! resources and templates answer, a catalog resource's subscription is
//! noticed under its own URI; and a catalog with a mistake does not start.

// Sampling and resources/subscribe are deprecated from 2026-07-28 (SEP-2577);
// the door serves them in 2025-06-18 and 2025-11-25, which these tests use.
#![allow(deprecated)]

use super::Fixture;
use super::rust_client::field;
use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    CompleteRequestParams, ContentBlock, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, GetPromptRequestParams, Implementation,
    ReadResourceRequestParams, Reference, ResourceContents, ResourceUpdatedNotificationParam,
    SamplingMessage, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use sbx_wasm_tests::sbx_bin;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A client whose "model" answers every sampling request with the prompt
/// reversed, whose "user" accepts every form with `{"name": "ada"}`
/// (keeping the message shown), and that keeps the resource notices it
/// gets.
#[derive(Clone, Default)]
struct Client {
    /// A model that never answers.
    stall: bool,
    sampled: Arc<Mutex<u32>>,
    asked: Arc<Mutex<Vec<String>>>,
    updated: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Client {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        *self.sampled.lock().unwrap() += 1;
        if self.stall {
            std::future::pending::<()>().await;
        }
        let prompt: String = (params.messages.iter())
            .filter_map(|m| {
                m.content
                    .clone()
                    .into_vec()
                    .first()?
                    .as_text()
                    .map(|t| t.text.clone())
            })
            .collect();
        let answer: String = prompt.chars().rev().collect();
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(answer),
            "reverser".into(),
        ))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        let mut answer = ElicitResult::new(ElicitationAction::Accept);
        answer.content = Some(json!({ "name": "ada" }));
        Ok(answer)
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.updated.lock().unwrap().push(params.uri);
    }

    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.sampling = Some(Default::default());
        caps.elicitation = Some(Default::default());
        ClientConfig::new(caps, Implementation::new("catalog-test", "1.0.0"))
    }
}

type Session = RunningService<RoleClient, Client>;

const CATALOG: &str = r#"
[tools.total]
python = "scripts/total.py"
description = "The sum of a CSV column under /work."
input_schema = { type = "object", properties = { file = { type = "string" } }, required = ["file"], additionalProperties = false }

[tools.escape]
python = "scripts/escape.py"
description = "Tries to write outside the grant."

[tools.bad_content]
python = "scripts/bad_content.py"
description = "Prints a content list the door refuses."
output = "content"

[tools.ask_model]
python = "scripts/ask_model.py"
description = "Asks the client's model."

[tools.ask_name]
python = "scripts/ask_name.py"
description = "Asks the client's user."

[client_tools.llm]
ask = "sampling"
max_calls = 2
max_tokens = 50

[client_tools.ask_user]
ask = "elicitation"

[prompts.review]
description = "Review a file with a picture."
arguments = [{ name = "file", required = true, values = ["alpha.py", "alpine.py", "beta.py"] }]
messages = [
  { role = "user", text = "Review {file} {{now}}." },
  { role = "user", image = "/work/dot.png" },
  { role = "user", resource = { uri = "notes://{file}", path = "/work/a.txt" } },
]

[resources."notes://a"]
path = "/work/a.txt"

[resources."log://out"]
path = "/work/out/log.txt"

[templates."item://{id}"]
python = "scripts/item.py"
"#;

/// The fixture's world with the catalog above, its scripts, an image in
/// `data/`, and the grant also allowing `llm` when `allow_llm`.
fn world(allow_llm: bool) -> Fixture {
    let f = Fixture::new();
    let scripts = f.path("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let files = [
        (
            "total.py",
            "import csv, json, sys\nargs = json.load(sys.stdin)\n\
             rows = csv.DictReader(open(args['file']))\n\
             print(sum(int(r['value']) for r in rows), end='')\n",
        ),
        (
            "escape.py",
            "import sbx\ntry:\n    open('/work/planted.txt', 'w').write('x')\n\
             except PermissionError as e:\n    print('refused:', e.errno)\n",
        ),
        (
            "bad_content.py",
            "import json\nprint(json.dumps([{'type': 'resource_link', 'uri': 'file:///etc/passwd', 'name': 'p'}]))\n",
        ),
        (
            "ask_model.py",
            "import sbx\ntry:\n    print(sbx.call_tool('llm', {'prompt': 'olleh'}), end='')\n\
             except Exception as e:\n    print('failed:', type(e).__name__, e, end='')\n",
        ),
        (
            "ask_name.py",
            "import json, sys, sbx\nmessage = json.load(sys.stdin)['message']\n\
             schema = {'type': 'object', 'properties': {'name': {'type': 'string'}}}\n\
             try:\n    print(sbx.call_tool('ask_user', {'message': message, 'schema': schema}), end='')\n\
             except Exception as e:\n    print('failed:', e, end='')\n",
        ),
        (
            "item.py",
            "import json, sys\nprint('item ' + json.load(sys.stdin)['id'], end='')\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(scripts.join(name), text).unwrap();
    }
    std::fs::write(f.path("catalog.toml"), CATALOG).unwrap();
    std::fs::write(f.path("data/dot.png"), b"\x89PNG\r\n\x1a\nnot-really").unwrap();
    if allow_llm {
        let caps = std::fs::read_to_string(f.path("caps.toml")).unwrap();
        let caps = caps.replace(
            "allow = [\"word_count\"]",
            "allow = [\"word_count\", \"llm\", \"ask_user\"]",
        );
        std::fs::write(f.path("caps.toml"), caps).unwrap();
    }
    f
}

async fn serve(f: &Fixture, client: Client) -> Session {
    let catalog = f.path("catalog.toml").display().to_string();
    let cmd = tokio::process::Command::new(sbx_bin()).configure(|c| {
        c.args(f.args(&["--catalog", &catalog])).envs(f.env());
    });
    client
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

async fn call(s: &Session, tool: &str, args: Value) -> CallToolResult {
    let args = args.as_object().unwrap().clone();
    s.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap()
}

/// The `code_mode` prompt's text.
async fn code_mode(s: &Session) -> String {
    let args = json!({ "task": "t" }).as_object().unwrap().clone();
    let got = s.get_prompt(GetPromptRequestParams::new("code_mode").with_arguments(args));
    let got = got.await.unwrap();
    (got.messages.iter())
        .filter_map(|m| match &m.content {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect()
}

fn text(r: &CallToolResult) -> String {
    (r.content.iter())
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

fn resource_text(contents: &ResourceContents) -> &str {
    match contents {
        ResourceContents::TextResourceContents { text, .. } => text,
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn catalog_tools_run_under_the_grant_with_their_arguments_checked_first() {
    let f = world(false);
    let before = f.host_state();
    let s = serve(&f, Client::default()).await;
    let listed: Vec<String> = (s.list_all_tools().await.unwrap().into_iter())
        .map(|t| t.name.to_string())
        .collect();
    assert!(listed.contains(&"total".to_string()), "{listed:?}");
    // The grant does not allow the client tools: code_mode does not offer
    // them.
    assert!(!code_mode(&s).await.contains("llm"));

    let good = call(&s, "total", json!({ "file": "/work/data.csv" })).await;
    assert_eq!(good.is_error, Some(false), "{good:?}");
    assert_eq!(text(&good), "5");
    // Arguments the schema refuses: turned away before anything runs.
    let ends_before = f.ends().len();
    let bad = call(&s, "total", json!({ "file": 3 })).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("input_schema"), "{}", text(&bad));
    let ends = f.ends();
    assert_eq!(ends.len(), ends_before + 1);
    assert_eq!(ends.last().unwrap()["end"]["status"], "refused");

    // The script is held to the grant like any run_python call.
    let escape = call(&s, "escape", json!({})).await;
    assert!(text(&escape).starts_with("refused:"), "{escape:?}");
    assert!(!f.path("data/planted.txt").exists());

    // Content the door would not pass on is the tool's error.
    let content = call(&s, "bad_content", json!({})).await;
    assert_eq!(content.is_error, Some(true));
    assert!(
        text(&content).contains("not MCP content"),
        "{}",
        text(&content)
    );

    // The grant does not allow `llm`: the guest is refused, the client
    // never asked.
    let asked = call(&s, "ask_model", json!({})).await;
    assert!(text(&asked).starts_with("failed:"), "{}", text(&asked));
    let denied = f
        .audit()
        .into_iter()
        .any(|v| v.to_string().contains("tool_denied"));
    assert!(denied, "{:?}", f.audit());
    s.cancel().await.unwrap();
    assert_eq!(f.host_state(), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn client_tools_the_grant_allows_ask_the_client_within_their_bounds() {
    let f = world(true);
    let client = Client::default();
    let s = serve(&f, client.clone()).await;
    // code_mode tells the model what the allowed client tools ask and take.
    let prompt = code_mode(&s).await;
    assert!(prompt.contains("  - llm: Ask the client's model; returns its text (at most 50 tokens, 2 times a session)."), "{prompt}");
    assert!(
        prompt.contains("  - ask_user: Ask the client's user with a form"),
        "{prompt}"
    );
    for _ in 0..2 {
        let r = call(&s, "ask_model", json!({})).await;
        assert_eq!(text(&r), "hello", "{r:?}");
    }
    let third = call(&s, "ask_model", json!({})).await;
    assert!(
        text(&third).contains("the most the catalog allows"),
        "{}",
        text(&third)
    );
    assert_eq!(*client.sampled.lock().unwrap(), 2);

    // The user is told the question comes from sandboxed code.
    let r = call(&s, "ask_name", json!({ "message": "Your name, please" })).await;
    let answer: Value = serde_json::from_str(&text(&r)).unwrap_or_else(|_| panic!("{}", text(&r)));
    assert_eq!(
        answer,
        json!({ "action": "accept", "content": { "name": "ada" } })
    );
    let shown = client.asked.lock().unwrap().clone();
    assert_eq!(
        shown,
        ["Sandboxed code asks (tool ask_user): Your name, please"]
    );
    // A message past 4 KiB is refused; the user is not asked.
    let long = "x".repeat(5000);
    let r = call(&s, "ask_name", json!({ "message": long })).await;
    assert!(text(&r).starts_with("failed:"), "{}", text(&r));
    assert_eq!(client.asked.lock().unwrap().len(), 1);
    s.cancel().await.unwrap();
}

/// A client whose model never answers costs the run its wall budget and
/// no more: the guest's call fails at the time left, the run ends, and the
/// door goes on serving.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_never_answers_costs_the_run_its_wall_budget_only() {
    let f = world(true);
    let caps = std::fs::read_to_string(f.path("caps.toml")).unwrap();
    let caps = caps.replace("max_wall_ms = 20000", "max_wall_ms = 2000");
    std::fs::write(f.path("caps.toml"), caps).unwrap();
    let client = Client {
        stall: true,
        ..Client::default()
    };
    let s = serve(&f, client.clone()).await;
    let started = std::time::Instant::now();
    let r = call(&s, "ask_model", json!({})).await;
    let took = started.elapsed();
    assert_eq!(*client.sampled.lock().unwrap(), 1);
    assert!(took < Duration::from_secs(15), "{took:?}");
    let said = text(&r);
    assert!(
        said.contains("failed") || said.contains("max_wall"),
        "{said}"
    );
    // The door is not stuck: the next call runs.
    let total = call(&s, "total", json!({ "file": "/work/data.csv" })).await;
    assert_eq!(text(&total), "5", "{total:?}");
    s.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn catalog_prompts_resources_templates_and_completions_answer() {
    let f = world(false);
    let client = Client::default();
    let s = serve(&f, client.clone()).await;

    let args = json!({ "file": "alpha.py" }).as_object().unwrap().clone();
    let got = s
        .get_prompt(GetPromptRequestParams::new("review").with_arguments(args))
        .await
        .unwrap();
    assert_eq!(got.messages.len(), 3);
    assert_eq!(
        got.messages[0].content.as_text().unwrap().text,
        "Review alpha.py {now}."
    );
    let ContentBlock::Image(image) = &got.messages[1].content else {
        panic!("{:?}", got.messages[1]);
    };
    let png = std::fs::read(f.path("data/dot.png")).unwrap();
    use base64::Engine;
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(&image.data)
            .unwrap(),
        png
    );
    let ContentBlock::Resource(embedded) = &got.messages[2].content else {
        panic!("{:?}", got.messages[2]);
    };
    assert_eq!(resource_text(&embedded.resource), "hello mcp");
    let missing = s.get_prompt(GetPromptRequestParams::new("review")).await;
    assert!(
        format!("{missing:?}").contains("`file` is required"),
        "{missing:?}"
    );

    let reference = Reference::for_prompt("review");
    let asked = CompleteRequestParams::new(reference, ArgumentInfo::new("file", "alp"));
    let completion = s.complete(asked).await.unwrap().completion;
    assert_eq!(completion.values, ["alpha.py", "alpine.py"]);

    let read = |uri: &str| s.read_resource(ReadResourceRequestParams::new(uri.to_string()));
    let notes = read("notes://a").await.unwrap();
    assert_eq!(resource_text(&notes.contents[0]), "hello mcp");
    let item = read("item://7").await.unwrap();
    assert_eq!(resource_text(&item.contents[0]), "item 7");
    // Two segments match no template, and no other URI of another scheme
    // is this server's.
    assert!(read("item://7/8").await.is_err());

    // A catalog resource's file, written by a run: noticed under its URI.
    s.subscribe(SubscribeRequestParams::new("log://out"))
        .await
        .unwrap();
    let code = "open('/work/out/log.txt', 'w').write('x')";
    let wrote = call(&s, "run_python", json!({ "code": code })).await;
    assert_eq!(field(&wrote, "status"), "completed", "{wrote:?}");
    for _ in 0..100 {
        if !client.updated.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(*client.updated.lock().unwrap(), ["log://out"]);
    s.cancel().await.unwrap();
}

#[test]
fn a_catalog_with_a_mistake_does_not_start_and_names_its_key() {
    let f = world(false);
    let cases = [
        (
            "[tools.run_python]\npython = \"scripts/item.py\"\ndescription = \"d\"\n",
            "tools.run_python",
        ),
        (
            "[tools.word_count]\npython = \"scripts/item.py\"\ndescription = \"d\"\n",
            "taken",
        ),
        (
            "[tools.\"a b\"]\npython = \"scripts/item.py\"\ndescription = \"d\"\n",
            "not a tool name",
        ),
        (
            "[tools.x]\npython = \"scripts/none.py\"\ndescription = \"d\"\n",
            "tools.x.python",
        ),
        (
            "[resources.\"notes://p\"]\npath = \"/etc/passwd\"\n",
            "under no folder",
        ),
        (
            "[resources.\"notes://p\"]\npath = \"/work/../etc/passwd\"\n",
            "without `..`",
        ),
        (
            "[resources.\"sbx://work/a.txt\"]\npath = \"/work/a.txt\"\n",
            "sbx://",
        ),
        (
            "[prompts.p]\ndescription = \"d\"\nmessages = [{ role = \"user\", text = \"{nope}\" }]\n",
            "{nope} is not an argument",
        ),
        ("[tools.x]\npython = \"scripts/item.py\"\n", "description"),
    ];
    for (catalog, expected) in cases {
        std::fs::write(f.path("bad.toml"), catalog).unwrap();
        let bad = f.path("bad.toml").display().to_string();
        let out = std::process::Command::new(sbx_bin())
            .args(f.args(&["--catalog", &bad]))
            .envs(f.env())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{catalog}");
        assert!(stderr.contains(expected), "{catalog}: {stderr}");
    }
}
