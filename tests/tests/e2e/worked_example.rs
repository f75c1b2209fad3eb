//! The worked example for framework authors (`host/examples/framework_agent.rs`),
//! compiled here as a module and run as a framework would run it: the
//! stand-in model's three proposals (the tool used; an injected escape,
//! every attempt refused; an endless loop, cancelled from outside), then
//! 100 snippets at once under admission control.

#[allow(dead_code)]
#[path = "../../../host/examples/framework_agent.rs"]
mod framework_agent;

use sbx_wasm::Status;
use std::io::Write;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The loop's output, kept; `armed` is told once the second proposal's
/// result is written (the third, the endless loop, is then running).
#[derive(Clone)]
struct Out {
    text: Arc<Mutex<Vec<u8>>>,
    armed: Arc<Notify>,
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut text = self.text.lock().unwrap();
        text.extend_from_slice(buf);
        if String::from_utf8_lossy(&text).contains("proposal 1: ") {
            self.armed.notify_one();
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_worked_example_runs_its_loop_cancels_and_admits_100_snippets() {
    let runner = sbx_wasm_tests::python_runner();
    let mut out = Out {
        text: Arc::default(),
        armed: Arc::new(Notify::new()),
    };
    let armed = out.armed.clone();
    // Ctrl-C, as the test gives it: once the endless loop is running.
    let interrupt = async move {
        armed.notified().await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let summary = rt
        .block_on(framework_agent::run(&runner, interrupt, &mut out))
        .unwrap();
    let text = String::from_utf8_lossy(&out.text.lock().unwrap()).into_owned();
    assert_eq!(
        summary.statuses,
        [Status::Completed, Status::Completed, Status::Cancelled],
        "{text}"
    );
    // The typed tool answered; the escape's file reads and the unlisted
    // tool were refused, each streamed as it happened.
    assert!(text.contains("  [out] words: 4\n"), "{text}");
    assert!(text.contains("  [gate] tool_call shell denied"), "{text}");
    assert!(
        text.contains("  [out] refused: shell tool_denied\n"),
        "{text}"
    );
    assert!(text.contains("refused: /etc/passwd"), "{text}");
    assert!(summary.decisions >= 3, "{text}");
    assert_eq!(summary.concurrent_ok, 100, "{text}");
    assert!(text.contains("100 snippets, "), "{text}");
}
