//! The agent's own rig tools reached from sandboxed Python through the
//! gate (the granted one runs, the ungranted one is refused and never
//! called), the grant described to the model, the report and audit handed
//! back to the application (callback and rig's tool context), and a
//! component prepared once per tool.

use rig_core::tool::{Tool, ToolContext};
use sbx_wasm::wasm::{PythonRunner, WasmRun};
use sbx_wasm::{Capabilities, OpKind};
use sbx_wasm_rig::{PythonArgs, RunPython, RunWasm, SandboxRecord, WasmArgs};
use sbx_wasm_tests::{mount_tree, python_runner, snapshot};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

mod common;
use common::{benign_world, host};

/// A tool a rig user already has: typed arguments, structured output.
struct Weather {
    calls: Arc<AtomicUsize>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct City {
    city: String,
}

#[derive(Serialize)]
struct Report {
    city: String,
    temp: i32,
}

#[derive(Debug, thiserror::Error)]
#[error("no weather for {0}")]
struct NoWeather(String);

impl Tool for Weather {
    const NAME: &'static str = "weather";
    type Args = City;
    type Output = Report;
    type Error = NoWeather;

    fn description(&self) -> String {
        "The temperature in a city.".into()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(City)).unwrap()
    }

    async fn call(&self, _: &mut ToolContext, args: City) -> Result<Report, NoWeather> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        if args.city == "Atlantis" {
            return Err(NoWeather(args.city));
        }
        Ok(Report {
            city: args.city,
            temp: 21,
        })
    }
}

/// Another of the user's tools, which the grant does not name.
struct DeleteAll {
    calls: Arc<AtomicUsize>,
}

impl Tool for DeleteAll {
    const NAME: &'static str = "delete_all";
    type Args = serde_json::Value;
    type Output = String;
    type Error = NoWeather;

    fn description(&self) -> String {
        "Deletes everything.".into()
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({"type": "object"})
    }

    async fn call(&self, _: &mut ToolContext, _: serde_json::Value) -> Result<String, NoWeather> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok("deleted".into())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rig_tool_is_reached_through_the_gate_and_the_application_gets_the_record() {
    let tree = mount_tree(&[("data/cities.txt", "Oslo\n")]);
    let before = snapshot(tree.path());
    let caps = Capabilities::builder()
        .read_mount(tree.path().join("data"), "/work")
        .allow_egress("https://api.example.com")
        .allow_tool("weather")
        .max_ops(40)
        .build()
        .unwrap();
    let host = host();
    let python = PythonRunner::load(&host, &python_runner()).unwrap();
    let (weather, deleted) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let seen: Arc<Mutex<Vec<WasmRun>>> = Arc::default();
    let log = seen.clone();
    let tool = RunPython::new(host, python, caps)
        .with_rig_tool(Weather {
            calls: weather.clone(),
        })
        .with_rig_tool(DeleteAll {
            calls: deleted.clone(),
        })
        .on_run(move |run| log.lock().unwrap().push(run.clone()));

    // The model is told its room: folders, origins, reachable tools, limits.
    let about = tool.description();
    for part in [
        "Folders: /work (read-only).",
        "Network: only https://api.example.com",
        "Tools: weather.",
        "40 operations",
    ] {
        assert!(about.contains(part), "{about}");
    }
    assert!(!about.contains("delete_all"), "{about}");

    let code = r#"
import sbx
city = open("/work/cities.txt").read().strip()
print(sbx.tools.weather(city=city)["temp"])
try:
    sbx.tools.delete_all()
except sbx.Denied as e:
    print("delete_all:", e.violation)
try:
    sbx.tools.weather(city="Atlantis")
except sbx.ToolError as e:
    print("failed:", e)
"#;
    let mut context = ToolContext::new();
    let args = PythonArgs {
        code: code.into(),
        args: Vec::new(),
    };
    let outcome = tool.call(&mut context, args).await.unwrap();
    assert_eq!(outcome.status, "completed", "{outcome:?}");
    assert_eq!(
        outcome.stdout,
        "21\ndelete_all: tool_denied\nfailed: tool \"weather\" failed: no weather for Atlantis\n"
    );
    assert_eq!(weather.load(Ordering::SeqCst), 2);
    assert_eq!(
        deleted.load(Ordering::SeqCst),
        0,
        "an ungranted tool never runs"
    );
    assert!(
        outcome
            .denials
            .iter()
            .any(|d| d.contains("delete_all: tool_denied"))
    );

    // The application's copy: the callback and the call's context agree.
    let record: SandboxRecord = context.result().unwrap().expect("published");
    let calls: Vec<_> = record
        .audit
        .iter()
        .filter(|e| e.op == OpKind::ToolCall)
        .map(|e| (e.target.as_str(), e.decision.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("weather", "allowed"),
            ("delete_all", "denied"),
            ("weather", "allowed")
        ]
    );
    let runs = seen.lock().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].audit, record.audit);
    assert_eq!(runs[0].report, record.report);
    assert_eq!(snapshot(tree.path()), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_is_prepared_once_per_tool() {
    let (_tree, caps, folder) = benign_world();
    let tool = RunWasm::new(host(), caps, folder);
    assert!(tool.description().contains("/work/out (read-write)"));
    for _ in 0..3 {
        let mut context = ToolContext::new();
        let args = WasmArgs {
            component: "benign.wasm".into(),
            args: Vec::new(),
        };
        let outcome = tool.call(&mut context, args).await.unwrap();
        assert!(outcome.stdout.contains("rows=2 total=42"), "{outcome:?}");
        assert!(context.result::<SandboxRecord>().unwrap().is_some());
    }
    assert_eq!(tool.prepared(), 1);
}
