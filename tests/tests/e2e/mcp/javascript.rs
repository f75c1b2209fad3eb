//! `run_javascript` over MCP with the official Rust SDK: a TypeScript
//! snippet that reads, fetches, calls a tool and writes, beside its denied
//! neighbours, under the session's grant; output streamed as progress; the
//! host and the other server untouched.

use super::Fixture;
use super::rust_client::{Client, call, field, stdio};
use rmcp::model::{ContentBlock, GetPromptRequestParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn run_javascript_runs_typescript_under_the_sessions_grant() {
    let f = Fixture::new();
    let before = f.host_state();
    let s = stdio(&f, &[], Client::default()).await;
    let tools = s.list_all_tools().await.unwrap();
    let listed = tools.iter().find(|t| t.name == "run_javascript").unwrap();
    // The model is told the room by guest paths, never the host's folders.
    let description = listed.description.as_deref().unwrap_or_default();
    assert!(description.contains("/work"), "{description}");
    assert!(!description.contains(&*f.path("").to_string_lossy()));

    let code = format!(
        r#"import {{ readFile, writeFile }} from 'fs/promises';
const text: string = await readFile('/work/a.txt', 'utf8');
const words = await tools.word_count(JSON.stringify({{ text }}));
const r = await fetch('{granted}/status');
let denied = '';
try {{ await fetch('{other}/x'); }} catch (e) {{ denied = e.violation; }}
try {{ await writeFile('/work/a.txt', 'x'); }} catch (e) {{ denied += ' ' + e.violation; }}
await writeFile('/work/out/js.txt', text.toUpperCase());
console.log(r.status, denied, typeof words);"#,
        granted = f.granted.origin(),
        other = f.other.origin()
    );
    let r = call(&s, "run_javascript", json!({ "code": code })).await;
    assert_eq!(r.is_error, Some(false), "{:?}", r.structured_content);
    assert_eq!(
        field(&r, "stdout"),
        "200 egress_denied fs_write_denied number\n"
    );
    let denials: Vec<&str> = field(&r, "denials")
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["violation"].as_str().unwrap())
        .collect();
    assert_eq!(denials, ["egress_denied", "fs_write_denied"]);
    assert_eq!(
        std::fs::read_to_string(f.path("out/js.txt")).unwrap(),
        "HELLO MCP"
    );
    assert_eq!(f.other.connections(), 0);

    // A script error is the run's answer, not a protocol error.
    let r = call(
        &s,
        "run_javascript",
        json!({ "code": "throw new Error('no')" }),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(field(&r, "exit_code"), 1);
    assert!(
        field(&r, "stderr")
            .as_str()
            .unwrap()
            .contains("Uncaught Error: no"),
        "{:?}",
        r.structured_content
    );
    // A wrong type is refused before anything runs.
    let r = call(&s, "run_javascript", json!({ "code": 7 })).await;
    assert_eq!(r.is_error, Some(true));

    // code_mode_ts: the grant as a TypeScript API, the granted tool typed
    // from its input schema; a module written to it runs as is.
    let prompts = s.list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"code_mode") && names.contains(&"code_mode_ts"),
        "{names:?}"
    );
    let args = json!({ "task": "count the words of /work/a.txt" });
    let got = s
        .get_prompt(
            GetPromptRequestParams::new("code_mode_ts")
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let text: String = (got.messages.iter())
        .filter_map(|m| match &m.content {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    assert!(text.contains("run_javascript tool once"), "{text}");
    assert!(text.contains("- Read files under: /work."), "{text}");
    assert!(text.contains("declare const tools: {"), "{text}");
    assert!(
        text.contains("  /** Count the words of a text. */\n  word_count(input: { text?: string }): Promise<any>;"),
        "{text}"
    );
    assert!(text.contains("SbxDenied"), "{text}");
    assert!(!text.contains(&*f.path("").to_string_lossy()), "{text}");
    let r = call(
        &s,
        "run_javascript",
        json!({ "code": "import { readFile } from 'fs/promises';\n\
            const text = await readFile('/work/a.txt', 'utf8');\n\
            const n: number = await tools.word_count({ text });\nconsole.log(n);" }),
    )
    .await;
    assert_eq!(field(&r, "stdout"), "2\n", "{:?}", r.structured_content);

    assert_eq!(f.host_state(), before, "the host changed");
    s.cancel().await.unwrap();
}
