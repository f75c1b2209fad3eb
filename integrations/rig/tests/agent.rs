//! A rig agent whose model (scripted: no network model) calls `run_python`
//! and `run_wasm` through rig's own tool-call path: benign code's result
//! comes back to the model, hostile code is contained and its refusals come
//! back too, and nothing outside the grant changes on the host.

use rig_agent::AgentBuilder;
use rig_agent::test_utils::{MockCompletionModel, MockTurn};
use sbx_wasm::Capabilities;
use sbx_wasm::wasm::PythonRunner;
use sbx_wasm_rig::{RunPython, RunWasm};
use sbx_wasm_tests::{mount_tree, python_runner, snapshot};
use serde_json::json;

mod common;
use common::{benign_world, host};

/// Everything the model saw in its last request, as text.
fn seen_by_model(model: &MockCompletionModel) -> String {
    let requests = model.requests();
    format!("{:?}", requests.last().unwrap().chat_history)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_runs_python_and_reads_results_and_refusals() {
    let tree = mount_tree(&[
        ("data/notes.txt", "three little words"),
        ("secret.txt", "CANARY"),
    ]);
    let before = snapshot(tree.path());
    let caps = Capabilities::builder()
        .read_mount(tree.path().join("data"), "/work")
        .build()
        .unwrap();
    let host = host();
    let python = PythonRunner::load(&host, &python_runner()).unwrap();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call(
            "call_1",
            "run_python",
            json!({"code": "print(len(open('/work/notes.txt').read().split()) * 14)"}),
        ),
        MockTurn::tool_call(
            "call_2",
            "run_python",
            json!({"code": "import sbx\nprint(open('/etc/passwd').read())"}),
        ),
        MockTurn::text("done"),
    ]);
    let recorded = model.clone();
    let agent = AgentBuilder::new(model)
        .tool(RunPython::new(host, python, caps))
        .default_max_turns(4)
        .build();
    let answer = agent
        .prompt("count the words, then try the passwords")
        .await;
    assert!(format!("{answer:?}").contains("done"), "{answer:?}");

    let seen = seen_by_model(&recorded);
    // The benign script's answer reached the model...
    assert!(seen.contains("42"), "{seen}");
    // ...and so did the hostile one's refusal, named as the report names it.
    assert!(
        seen.contains("fs_read /etc/passwd: fs_read_denied"),
        "{seen}"
    );
    assert!(!seen.contains("root:"), "{seen}");
    assert_eq!(snapshot(tree.path()), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_runs_offered_components_only() {
    let (tree, caps, folder) = benign_world();
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call_1", "run_wasm", json!({"component": "benign.wasm"})),
        MockTurn::tool_call(
            "call_2",
            "run_wasm",
            json!({"component": "../../../../etc/passwd"}),
        ),
        MockTurn::text("done"),
    ]);
    let recorded = model.clone();
    let agent = AgentBuilder::new(model)
        .tool(RunWasm::new(host(), caps, folder))
        .default_max_turns(4)
        .build();
    let answer = agent.prompt("summarize the sales").await;
    assert!(format!("{answer:?}").contains("done"), "{answer:?}");

    let seen = seen_by_model(&recorded);
    assert!(seen.contains("rows=2 total=42"), "{seen}");
    // No path the model names leaves the tool's folder.
    assert!(
        seen.contains("is not a component this tool offers"),
        "{seen}"
    );
    assert!(tree.path().join("out/summary.txt").exists());
}
