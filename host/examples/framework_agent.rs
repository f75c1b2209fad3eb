//! The worked example for framework authors: an agent loop, whole.
//!
//! A model proposes Python; each proposal runs under one grant, with a
//! typed tool written in Rust, its events printed as they happen; Ctrl-C
//! cancels the run in flight (its report still comes back, status
//! `cancelled`); each report goes back to the model. Then 100 snippets at
//! once on the same host, which admits as many as it has cores and queues
//! the rest. The "model" here is a script of proposals, so it runs with no
//! network and no key:
//!
//! ```sh
//! cargo run -p sbx-wasm --example framework_agent
//! ```
//!
//! The first run on a machine with no Python runner builds one (tens of
//! seconds, once); `tests/tests/e2e/framework_agent.rs` runs this file.

use sbx_wasm::events::{Event, EventSink};
use sbx_wasm::tools::{ToolLimits, ToolRegistry};
use sbx_wasm::wasm::{Python, PythonRunner, RunOptions, WasmHost, runner_source};
use sbx_wasm::{CancelHandle, Capabilities, Services, Status};
use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let runner = match PythonRunner::locate(None) {
        Ok(path) => path,
        Err(_) => runner_source::build::<Python>()?,
    };
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let summary = run(&runner, interrupt, &mut std::io::stdout()).await?;
    println!("{summary:?}");
    Ok(())
}

/// What the loop saw, for a caller (and the test) to check.
#[derive(Debug, Default)]
pub struct Summary {
    /// Each proposal's status, in order.
    pub statuses: Vec<Status>,
    /// Gate decisions streamed while the proposals ran.
    pub decisions: usize,
    /// How many of the 100 concurrent snippets completed with exit 0.
    pub concurrent_ok: usize,
    /// The longest any of them waited for a slot.
    pub longest_queue: Duration,
}

/// The stand-in model: the next proposal, given the reports so far.
fn propose(turn: usize, last: Option<&str>) -> Option<String> {
    Some(match turn {
        // Uses the tool, reads nothing it was not given.
        0 => r#"import sbx
counted = sbx.tools.word_count(text="the quick brown fox")
print("words:", counted["words"])"#
            .to_string(),
        // Injected: tries to leave the grant; each attempt is refused.
        1 => format!(
            r#"# the last run said: {:?}
import sbx
for path in ["/etc/passwd", "/root/.ssh/id_rsa"]:
    try:
        open(path).read()
    except OSError as e:
        print("refused:", path, e.strerror)
try:
    sbx.call_tool("shell", "rm -rf /")
except sbx.Denied as e:
    print("refused: shell", e.violation)"#,
            last.unwrap_or("")
        ),
        // Never ends: the loop's cancel (or the wall budget) stops it.
        2 => "while True: pass".to_string(),
        _ => return None,
    })
}

/// One streamed event, printed as it happened.
fn show(
    event: Event,
    out: &mut (dyn std::io::Write + Send),
    summary: &mut Summary,
) -> std::io::Result<()> {
    match event {
        Event::Started { op, target, .. } => writeln!(out, "  [..] {op} {target}"),
        Event::Decision(d) => {
            summary.decisions += 1;
            writeln!(out, "  [gate] {} {} {}", d.op, d.target, d.decision)
        }
        Event::Stdout(b) => write!(out, "  [out] {}", String::from_utf8_lossy(&b)),
        _ => Ok(()),
    }
}

/// The loop. `interrupt` cancels whichever proposal is running when it
/// completes (Ctrl-C in `main`); `out` gets the events and results.
pub async fn run(
    runner: &Path,
    interrupt: impl Future<Output = ()> + Send,
    out: &mut (dyn std::io::Write + Send),
) -> Result<Summary, Error> {
    // One host for the process: engine, pooled instances, the artifact
    // cache in the user's cache folder, at most one run per core at once.
    let host = WasmHost::new()?;
    let python = PythonRunner::load(&host, runner)?.keep_warm(2)?;
    let caps = Capabilities::builder()
        .allow_tool("word_count")
        .max_ops(50)
        .max_wall(Duration::from_secs(5))
        .build()?;
    // A typed tool: its JSON schema comes from the argument type, bad
    // input never reaches it, its result reaches the script decoded
    // (`{"words": 4}` as a dict), and it is told the time left.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Text {
        /// The text to count.
        text: String,
    }
    #[derive(serde::Serialize)]
    struct Count {
        words: usize,
    }
    let mut tools = ToolRegistry::new();
    tools.add_tool(
        "word_count",
        "Count the words of a text.",
        |t: Text, _limits: &ToolLimits| {
            Ok(Count {
                words: t.text.split_whitespace().count(),
            })
        },
    );
    let services = Services::new().tools(tools);

    let mut summary = Summary::default();
    let mut last: Option<String> = None;
    tokio::pin!(interrupt);
    let mut interrupted = false;
    for turn in 0.. {
        let Some(code) = propose(turn, last.as_deref()) else {
            break;
        };
        let (sink, mut events) = EventSink::channel(256);
        let cancel = CancelHandle::new();
        let opts = RunOptions::new(caps.clone())
            .services(services.clone())
            .events(sink.lines())
            .cancel(cancel.clone());
        let py = python.clone();
        let h = host.clone();
        let mut task = tokio::spawn(async move { py.run_source_async(&h, &code, opts).await });
        let run = loop {
            tokio::select! {
                Some(event) = events.recv() => show(event, out, &mut summary)?,
                done = &mut task => break done??,
                () = &mut interrupt, if !interrupted => {
                    interrupted = true;
                    cancel.cancel();
                }
            }
        };
        // The run can end while its last events still wait in the channel
        // (`select!` picks among ready branches at random): show them
        // before the report, or a line the guest printed goes missing.
        while let Ok(event) = events.try_recv() {
            show(event, out, &mut summary)?;
        }
        let report = &run.report;
        writeln!(
            out,
            "proposal {turn}: {} ({} denials, {} ops)",
            report.status,
            report.denials.len(),
            report.usage.ops
        )?;
        summary.statuses.push(report.status);
        last = Some(format!(
            "{} with {} denials",
            report.status,
            report.denials.len()
        ));
    }

    // 100 snippets at once: the host admits `concurrency()` and queues the
    // rest (each waits up to its own wall budget), none fails for capacity.
    let started = Instant::now();
    let mut all = tokio::task::JoinSet::new();
    for i in 0..100 {
        let (py, h, c) = (python.clone(), host.clone(), caps.clone());
        all.spawn(async move {
            py.run_source_async(&h, &format!("print({i} * 2)"), RunOptions::new(c))
                .await
        });
    }
    while let Some(done) = all.join_next().await {
        let run = done??;
        if run.report.exit_code == Some(0) && run.stdout.ends_with(b"\n") {
            summary.concurrent_ok += 1;
        }
        summary.longest_queue = summary.longest_queue.max(run.queued);
    }
    writeln!(
        out,
        "100 snippets, {} at a time: {} ok in {} ms, longest wait for a slot {} ms",
        host.concurrency()
            .map_or("all".to_string(), |n| n.to_string()),
        summary.concurrent_ok,
        started.elapsed().as_millis(),
        summary.longest_queue.as_millis()
    )?;
    Ok(summary)
}
