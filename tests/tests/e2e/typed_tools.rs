//! One typed tool path, end to end: Rust tools added with typed serde
//! arguments and results (sync and async, given the call's limits), called
//! from Python (`sbx.tools.NAME(...)`) and JavaScript (`tools.NAME(...)`)
//! with their results decoded, and listed to the script with their derived
//! schemas (`sbx.tool_definitions()`, `sbx.toolDefinitions()`): exactly the
//! tools a call can reach. Beside each allowed call, its refused neighbour:
//! a tool the grant does not allow is never called.

use crate::python_api::python;
use sbx_wasm::tools::{ToolError, ToolLimits, ToolRegistry};
use sbx_wasm::wasm::{ArtifactCache, JsRunner, RunOptions, WasmHost, WasmRun};
use sbx_wasm::{Capabilities, Services, Status};
use sbx_wasm_tests::{js_runner, utf8};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Search {
    /// What to look for.
    query: String,
    /// At most this many hits.
    limit: Option<u32>,
}

#[derive(serde::Serialize)]
struct Hit {
    title: String,
    score: f64,
}

/// The registry a framework would build, and how often the refused tool
/// (`wipe`) was called: it must stay 0.
fn registry(rt: &tokio::runtime::Runtime) -> (ToolRegistry, Arc<AtomicUsize>) {
    let mut tools = ToolRegistry::new();
    tools.add_tool(
        "search",
        "Search the notes.",
        |s: Search, l: &ToolLimits| {
            assert!(l.timeout > Duration::ZERO);
            let n = s.limit.unwrap_or(2);
            Ok((0..n)
                .map(|i| Hit {
                    title: format!("{} #{i}", s.query),
                    score: 1.0 / f64::from(i + 1),
                })
                .collect::<Vec<_>>())
        },
    );
    tools.add_async_tool(
        "later",
        "Answers after a while.",
        rt.handle().clone(),
        |s: Search, _: ToolLimits| async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(serde_json::json!({ "echo": s.query }))
        },
    );
    let wiped = Arc::new(AtomicUsize::new(0));
    let count = wiped.clone();
    tools.add_tool("wipe", "Not granted.", move |_: Search, _: &ToolLimits| {
        count.fetch_add(1, Ordering::SeqCst);
        Ok::<_, ToolError>("wiped")
    });
    (tools, wiped)
}

fn caps() -> Capabilities {
    // `ghost` is allowed with nothing behind it: not reachable, not listed.
    Capabilities::builder()
        .allow_tool("search")
        .allow_tool("later")
        .allow_tool("ghost")
        .build()
        .unwrap()
}

fn completed(run: &WasmRun) -> String {
    assert_eq!(
        run.report.status,
        Status::Completed,
        "{}",
        utf8(&run.stderr)
    );
    utf8(&run.stdout)
}

#[test]
fn python_calls_typed_tools_with_decoded_results_and_sees_their_schemas() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (tools, wiped) = registry(&rt);
    let (host, py) = python();
    let source = r#"
import sbx
hits = sbx.tools.search(query="wasm", limit=3)
print(type(hits).__name__, hits[0]["title"], hits[2]["score"] < hits[0]["score"])
print(sbx.tools["later"]({"query": "soon"}))
print(sbx.call_tool("search", {"query": "raw", "limit": 1}))
print(sbx.granted_tools())
defs = {d["name"]: d for d in sbx.tool_definitions()}
print(sorted(defs), defs["search"]["input_schema"]["required"], defs["search"]["description"])
print(defs["search"]["input_schema"]["properties"]["query"]["description"])
try:
    sbx.tools.wipe(query="all")
except sbx.Denied as e:
    print("wipe:", e.violation)
try:
    sbx.tools.search(limit=1)
except sbx.ToolError as e:
    print("bad input:", "does not match" in str(e))
"#;
    let opts = RunOptions::new(caps()).services(Services::new().tools(tools));
    let run = py.run_source(host, source, opts).unwrap();
    assert_eq!(
        completed(&run),
        "list wasm #0 True\n\
         {'echo': 'soon'}\n\
         [{\"title\":\"raw #0\",\"score\":1.0}]\n\
         ['later', 'search']\n\
         ['later', 'search'] ['query'] Search the notes.\n\
         What to look for.\n\
         wipe: tool_denied\n\
         bad input: True\n"
    );
    assert_eq!(wiped.load(Ordering::SeqCst), 0, "a refused tool never runs");
}

#[test]
fn javascript_calls_the_same_tools_and_lists_the_same_schemas() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (tools, wiped) = registry(&rt);
    let cache = ArtifactCache::open(crate::scripts::warm_cache()).unwrap();
    let host = WasmHost::new().unwrap().with_cache(cache);
    let js = JsRunner::load(&host, &js_runner()).unwrap();
    let source = r#"
import { granted, toolDefinitions } from 'sbx';
const hits = await tools.search({ query: 'wasm', limit: 2 });
console.log(Array.isArray(hits), hits[1].title);
console.log((await tools.later({ query: 'soon' })).echo);
console.log(granted().join(','));
const defs = toolDefinitions();
console.log(defs.map((d) => d.name).join(','), defs[1].inputSchema.properties.limit.description);
try { await tools.wipe({ query: 'all' }); } catch (e) { console.log('wipe:', e.violation); }
"#;
    let opts = RunOptions::new(caps()).services(Services::new().tools(tools));
    let run = js.run_source(&host, source, opts).unwrap();
    assert_eq!(
        completed(&run),
        "true wasm #1\nsoon\nlater,search\nlater,search At most this many hits.\nwipe: tool_denied\n"
    );
    assert_eq!(wiped.load(Ordering::SeqCst), 0, "a refused tool never runs");
}
