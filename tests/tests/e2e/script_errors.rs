//! A script's failure as a value: the exception a Python or JavaScript
//! script ended on reaches the run's report (`RunReport::error`: its type,
//! message and the script's line) through `sbx:agent/outcome`, beside the
//! traceback on stderr; a script that caught its error, or exited with its
//! own code, carries none; a hostile script's oversized report is bounded.

use crate::python_api::python;
use sbx_wasm::wasm::{ArtifactCache, JsRunner, RunOptions, WasmHost, WasmRun};
use sbx_wasm::{Capabilities, ScriptError, Status};
use sbx_wasm_tests::{js_runner, utf8};
use std::sync::OnceLock;

fn py(source: &str) -> WasmRun {
    let (host, py) = python();
    let caps = Capabilities::builder().build().unwrap();
    py.run_source(host, source, RunOptions::new(caps)).unwrap()
}

fn js(source: &str) -> WasmRun {
    static JS: OnceLock<(WasmHost, JsRunner)> = OnceLock::new();
    let (host, js) = JS.get_or_init(|| {
        let cache = ArtifactCache::open(crate::scripts::warm_cache()).unwrap();
        let host = WasmHost::new().unwrap().with_cache(cache);
        let js = JsRunner::load(&host, &js_runner()).unwrap();
        (host, js)
    });
    let caps = Capabilities::builder().build().unwrap();
    js.run_source(host, source, RunOptions::new(caps)).unwrap()
}

/// The run exited 1 with `error`'s kind and line, its message holding
/// `message`, and the traceback still on stderr.
fn failed_with(run: &WasmRun, kind: &str, message: &str, line: Option<u32>) -> ScriptError {
    assert_eq!(run.report.status, Status::Exited, "{}", utf8(&run.stderr));
    assert_eq!(run.report.exit_code, Some(1));
    let e = run
        .report
        .error
        .clone()
        .expect("the report names the error");
    assert_eq!(e.kind, kind, "{e:?}");
    assert!(e.message.contains(message), "{e:?}");
    assert_eq!(e.line, line, "{e:?}");
    assert!(utf8(&run.stderr).contains(kind.rsplit('.').next().unwrap()));
    e
}

#[test]
fn a_python_scripts_uncaught_exception_is_in_the_report_with_its_type_message_and_line() {
    let run = py("x = 1\n\ndef f():\n    raise ValueError('bad value ' + str(x))\n\nf()\n");
    failed_with(&run, "ValueError", "bad value 1", Some(4));
    // Raised inside a library: the line is the script's call, the type
    // carries its module.
    let run = py("import json\nprint('before')\njson.loads('{not json')\n");
    assert_eq!(utf8(&run.stdout), "before\n");
    failed_with(
        &run,
        "json.decoder.JSONDecodeError",
        "Expecting property name",
        Some(3),
    );
    // A syntax error is reported at its own line, before anything runs.
    let run = py("print('never')\nx = = 2\n");
    assert_eq!(utf8(&run.stdout), "");
    failed_with(&run, "SyntaxError", "invalid syntax", Some(2));
    // A class of the script's own.
    let run = py("class Oops(Exception):\n    pass\nraise Oops('mine')\n");
    failed_with(&run, "Oops", "mine", Some(3));
}

#[test]
fn a_python_script_that_caught_its_error_or_exited_with_a_code_has_no_error() {
    // Caught: the run completed, nothing reported.
    let run =
        py("try:\n    int('x')\nexcept ValueError as e:\n    print('caught', type(e).__name__)\n");
    assert_eq!(run.report.status, Status::Completed);
    assert_eq!(run.report.error, None);
    assert_eq!(utf8(&run.stdout), "caught ValueError\n");
    // sys.exit(3): the script's own code, no exception reported.
    let run = py("import sys\nsys.exit(3)\n");
    assert_eq!(run.report.status, Status::Exited);
    assert_eq!(run.report.exit_code, Some(3));
    assert_eq!(run.report.error, None);
    // A script that reports to the host itself and then exits 0: the
    // report is dropped (only a failed run carries one).
    let run = py("from wit_world.imports import outcome\n\
         outcome.script_failed(outcome.ScriptError('Fake', 'made up', 1))\n\
         print('fine')\n");
    assert_eq!(
        run.report.status,
        Status::Completed,
        "{}",
        utf8(&run.stderr)
    );
    assert_eq!(run.report.error, None);
}

#[test]
fn a_hostile_scripts_report_is_bounded_and_the_last_one_stands() {
    // A 1 MiB message and a 100 KiB type name, reported 1,000 times, then
    // a failing exit: the host keeps one bounded copy.
    let run = py("from wit_world.imports import outcome\n\
         import sys\n\
         big = 'm' * (1 << 20)\n\
         kind = 'K' * 100_000\n\
         for i in range(1_000):\n\
         \x20   outcome.script_failed(outcome.ScriptError(kind, big, i))\n\
         outcome.script_failed(outcome.ScriptError(kind + '\\x1b[31m', big, 4294967295))\n\
         sys.exit(2)\n");
    assert_eq!(
        run.report.exit_code,
        Some(2),
        "{:?} {:?} {}",
        run.report.status,
        run.report.violation,
        utf8(&run.stderr)
    );
    let e = run.report.error.clone().expect("the last report stands");
    assert!(e.kind.len() <= 256 + '…'.len_utf8(), "{}", e.kind.len());
    assert!(
        e.message.len() <= 4096 + '…'.len_utf8(),
        "{}",
        e.message.len()
    );
    assert!(e.message.ends_with('…'));
    assert_eq!(e.line, Some(4294967295));
    // The report's JSON stays small.
    let json = serde_json::to_string(&run.report).unwrap();
    assert!(json.len() < 16 * 1024, "{}", json.len());
}

#[test]
fn a_javascript_scripts_uncaught_error_is_in_the_report_with_its_name_message_and_line() {
    let run = js("const x = 1;\nfunction f() {\n  throw new TypeError(`bad ${x}`);\n}\nf();\n");
    failed_with(&run, "TypeError", "bad 1", Some(3));
    // Rejected at the top level after an await.
    let run = js("await Promise.resolve();\nconsole.log('before');\nJSON.parse('{nope');\n");
    assert_eq!(utf8(&run.stdout), "before\n");
    failed_with(&run, "SyntaxError", "JSON", Some(3));
    // Caught: none; process.exit(3): the code, none.
    let run = js("try { null.x } catch (e) { console.log('caught', e.name) }\n");
    assert_eq!(
        run.report.status,
        Status::Completed,
        "{}",
        utf8(&run.stderr)
    );
    assert_eq!(run.report.error, None);
    let run = js("process.exit(3);\n");
    assert_eq!(run.report.exit_code, Some(3));
    assert_eq!(run.report.error, None);
}
