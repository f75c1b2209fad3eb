//! The grant's `[ask]` through the MCP door, with the official Rust SDK's
//! client as the user: a fetch the grant does not allow but lets the user
//! approve is asked about by elicitation (once per run), goes to the real
//! server when approved, is denied with the answer when refused, and is
//! refused unasked for a client without elicitation; without `[ask]` no
//! question is put at all. The host tree is unchanged throughout.

use super::Fixture;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use sbx_wasm_tests::sbx_bin;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// A user who answers every form with `approve` (or a client without
/// elicitation, when `None`), keeping each message shown.
#[derive(Clone, Default)]
struct User {
    approve: Option<bool>,
    shown: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for User {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.shown.lock().unwrap().push(message);
        }
        let mut answer = ElicitResult::new(ElicitationAction::Accept);
        answer.content = Some(json!({ "approve": self.approve == Some(true) }));
        Ok(answer)
    }

    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        if self.approve.is_some() {
            caps.elicitation = Some(Default::default());
        }
        ClientConfig::new(caps, Implementation::new("ask-test", "1.0.0"))
    }
}

type Session = RunningService<RoleClient, User>;

/// The fixture's world, its grant letting the user approve egress to the
/// fixture's other server (when `ask`).
fn world(ask: bool) -> Fixture {
    let f = Fixture::new();
    if ask {
        let caps = std::fs::read_to_string(f.path("caps.toml")).unwrap();
        let section = format!("[ask]\nnet = [\"{}\"]\n", f.other.origin());
        std::fs::write(f.path("caps.toml"), format!("{caps}{section}")).unwrap();
    }
    f
}

async fn serve(f: &Fixture, user: User) -> Session {
    let cmd = tokio::process::Command::new(sbx_bin()).configure(|c| {
        c.args(f.args(&[])).envs(f.env());
    });
    user.serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

/// One run that fetches the other server twice and prints what it got or
/// why not.
async fn fetch_twice(s: &Session, f: &Fixture) -> CallToolResult {
    let url = format!("{}/status", f.other.origin());
    let code = format!(
        "import sbx\nfor _ in range(2):\n    try:\n        print(sbx.fetch({url:?}).text())\n\
         \x20   except sbx.Denied as e:\n        print('denied:', e)\n"
    );
    let args = json!({ "code": code }).as_object().unwrap().clone();
    let params = CallToolRequestParams::new("run_python").with_arguments(args);
    s.call_tool(params).await.unwrap()
}

fn stdout(r: &CallToolResult) -> String {
    let out = r
        .structured_content
        .as_ref()
        .and_then(|v| v["stdout"].as_str());
    out.unwrap_or_else(|| panic!("no stdout: {r:?}"))
        .to_string()
}

/// The audit records of the other server's fetches.
fn fetches(f: &Fixture) -> Vec<Value> {
    (f.audit().into_iter())
        .filter(|v| v["op"] == "net_fetch")
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_origin_is_fetched_and_a_refused_one_never_reached() {
    let f = world(true);
    let before = f.host_state();
    let user = User {
        approve: Some(true),
        ..User::default()
    };
    let s = serve(&f, user.clone()).await;
    let r = fetch_twice(&s, &f).await;
    let out = stdout(&r);
    assert!(!out.contains("denied"), "{r:?}");
    assert_eq!(out.matches("ok").count(), 2, "{r:?}");
    // Asked once, in the door's words, naming the origin and the entry.
    let shown = user.shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 1, "{shown:?}");
    let origin = f.other.origin();
    assert!(
        shown[0].starts_with("Sandboxed code asks to fetch from http://127.0.0.1:"),
        "{shown:?}"
    );
    assert!(shown[0].contains(&format!("[ask] {origin}")), "{shown:?}");
    assert_eq!(f.other.connections(), 2);
    let audit = fetches(&f);
    assert_eq!(audit.len(), 2, "{audit:?}");
    for v in &audit {
        assert_eq!(v["decision"], "allowed", "{v}");
        assert_eq!(
            v["rule"],
            format!("{origin} (approved at run time, [ask] {origin})"),
            "{v}"
        );
    }
    s.cancel().await.unwrap();

    // The refused neighbour: the same run, the user says no.
    let user = User {
        approve: Some(false),
        ..User::default()
    };
    let s = serve(&f, user.clone()).await;
    let out = stdout(&fetch_twice(&s, &f).await);
    assert_eq!(
        out.matches("refused: the user did not approve").count(),
        2,
        "{out}"
    );
    assert_eq!(
        user.shown.lock().unwrap().len(),
        1,
        "asked about the target once"
    );
    assert_eq!(f.other.connections(), 2, "the refused run reached nothing");
    s.cancel().await.unwrap();
    assert_eq!(f.host_state(), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_question_without_elicitation_or_without_ask() {
    // A client that cannot be asked: refused, saying so, at once.
    let f = world(true);
    let s = serve(&f, User::default()).await;
    let out = stdout(&fetch_twice(&s, &f).await);
    assert!(
        out.contains("the client does not offer elicitation"),
        "{out}"
    );
    s.cancel().await.unwrap();
    // A grant without [ask]: the grant's denial, no question put.
    let f = world(false);
    let user = User {
        approve: Some(true),
        ..User::default()
    };
    let s = serve(&f, user.clone()).await;
    let out = stdout(&fetch_twice(&s, &f).await);
    assert_eq!(
        out.matches("is not covered by any egress rule").count(),
        2,
        "{out}"
    );
    assert!(!out.contains("asked"), "{out}");
    assert!(user.shown.lock().unwrap().is_empty());
    assert_eq!(f.other.connections(), 0);
    s.cancel().await.unwrap();
}
