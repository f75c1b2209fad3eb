//! Secrets against real servers on 127.0.0.1 that record what they
//! receive: the bound server gets the value in the bound header only; the
//! placeholder anywhere else, or to another host, or across a redirect,
//! arrives as it was; an echoing server's reflection comes back as the
//! placeholder (plain, base64, URL-encoded); and the value is in no guest
//! output, report, audit line, event or file, for a plan, a wasm guest and
//! a Python script.

use base64::Engine as _;
use sbx_wasm::events::{Event, EventSink};
use sbx_wasm::replay::Replay;
use sbx_wasm::wasm::{RunOptions, WasmHost};
use sbx_wasm::{Capabilities, Sandbox};
use sbx_wasm_tests::{LoopbackServer, guest, mount_caps, mount_tree, python_runner, sbx_bin};
use std::process::Command;

const VALUE: &str = "tok_S3cr3t/v4lue+x";
const ENV_VAR: &str = "SBX_TEST_SECRET_VALUE";

/// Every form of the value that must never show up: as sent, and as the
/// reflecting server encodes the header that carried it.
fn forms() -> Vec<String> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let pct = |s: &str| -> String {
        s.bytes()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    (c as char).to_string()
                } else {
                    format!("%{c:02X}")
                }
            })
            .collect()
    };
    let header = format!("Bearer {VALUE}");
    vec![
        VALUE.to_string(),
        b64(VALUE),
        b64(&header),
        pct(VALUE),
        pct(&header),
    ]
}

fn assert_clean(what: &str, text: &str) {
    for f in forms() {
        assert!(!text.contains(&f), "{what} holds the secret ({f}):\n{text}");
    }
}

fn received(server: &LoopbackServer) -> String {
    let mut all = server.requests();
    all.extend(server.headers());
    all.join("\n")
}

fn caps(bound: &LoopbackServer, other: &LoopbackServer) -> Capabilities {
    Capabilities::builder()
        .allow_egress(bound.origin())
        .allow_egress(other.origin())
        .max_redirects(1)
        .secret("API_TOKEN", VALUE, [bound.origin()], ["Authorization"])
        .build()
        .unwrap()
}

#[test]
fn a_plan_sends_the_value_only_where_it_is_bound() {
    let (bound, other) = (LoopbackServer::start(), LoopbackServer::start());
    let mut sandbox = Sandbox::new(caps(&bound, &other)).unwrap();
    let (b, o) = (bound.origin(), other.origin());
    let alias = "{{secret:API_TOKEN}}";
    let plan = serde_json::json!([
        {"op": "net_fetch", "url": format!("{b}/reflect"), "method": "POST",
         "headers": [["Authorization", format!("Bearer {alias}")]]},
        {"op": "net_fetch", "url": format!("{b}/reflect?t={alias}"), "method": "POST",
         "headers": [["X-Leak", alias]], "body": alias},
        {"op": "net_fetch", "url": format!("{o}/reflect"), "method": "POST",
         "headers": [["Authorization", format!("Bearer {alias}")]]},
        {"op": "net_fetch", "url": format!("{b}/redirect-to/127.0.0.1:{}/reflect", other.port),
         "headers": [["Authorization", format!("Bearer {alias}")]]},
    ]);
    let ops = sbx_wasm::plan::parse_plan(&plan.to_string()).unwrap();
    let results: Vec<_> = ops.into_iter().map(|op| sandbox.run(op)).collect();
    assert!(results.iter().all(|r| r.ok), "{results:?}");

    // The bound server got the value in the bound header, and nowhere else.
    let seen = received(&bound);
    assert!(
        seen.contains(&format!("authorization: Bearer {VALUE}")),
        "{seen}"
    );
    assert_eq!(
        seen.matches(VALUE).count(),
        2,
        "op 1 and the redirect's first hop: {seen}"
    );
    assert!(seen.contains(&format!("x-leak: {alias}")), "{seen}");
    assert!(seen.contains(&format!("body: {alias}")), "{seen}");
    assert!(seen.contains("?t={{secret:API_TOKEN}}"), "{seen}");
    // The other server: the placeholder as sent, and across the redirect
    // no Authorization at all.
    let theirs = received(&other);
    assert_clean("the unbound server's requests", &theirs);
    assert!(
        theirs.contains(&format!("authorization: Bearer {alias}")),
        "{theirs}"
    );
    assert_eq!(theirs.matches("authorization").count(), 1, "{theirs}");

    // The echo came back as the run's placeholder, in every encoding.
    let placeholder = sandbox.secret_placeholders()[0].1.clone();
    let echoed = serde_json::to_string(&results[0]).unwrap();
    assert!(echoed.contains(&placeholder), "{echoed}");
    let all = serde_json::to_string(&(&results, sandbox.report(), sandbox.audit())).unwrap();
    assert_clean("results, report and audit", &all);

    // The report names the secret each fetch used; the audit says why a
    // placeholder was left.
    let report = sandbox.report();
    let uses: Vec<u64> = report.secret_uses.iter().map(|u| u.seq).collect();
    assert_eq!(uses, [1, 4]);
    assert_eq!(report.secret_uses[0].secrets, ["API_TOKEN"]);
    let detail = sandbox.audit()[1].detail.clone().unwrap_or_default();
    assert!(detail.contains("placeholder not substituted"), "{detail}");
    let detail = sandbox.audit()[0].detail.clone().unwrap_or_default();
    assert!(detail.contains("echo of secret API_TOKEN"), "{detail}");
}

#[test]
fn a_wasm_guest_uses_a_secret_it_never_sees() {
    let (bound, other) = (LoopbackServer::start(), LoopbackServer::start());
    let out = tempfile::tempdir().unwrap();
    let caps = caps(&bound, &other)
        .to_builder()
        .unwrap()
        .write_mount(out.path(), "/work/out")
        .build()
        .unwrap();
    let host = WasmHost::new().unwrap();
    let agent = host
        .prepare(&host.load(&guest("secret_use")).unwrap())
        .unwrap();
    let (tx, rx) = std::sync::mpsc::sync_channel(4096);
    let opts = RunOptions::new(caps)
        .args([
            "API_TOKEN".to_string(),
            format!("{}/reflect", bound.origin()),
            format!("{}/reflect", other.origin()),
        ])
        .events(EventSink::new(tx));
    let run = host.run_prepared(&agent, opts).unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert_eq!(run.report.exit_code, Some(0), "{stdout} {:?}", run.trap);
    assert!(
        stdout.contains("env API_TOKEN=SBX_SECRET_API_TOKEN_"),
        "{stdout}"
    );
    assert!(
        stdout.contains("bound: HTTP 200 x-reflect=Bearer SBX_SECRET_API_TOKEN_"),
        "{stdout}"
    );
    assert_clean("the guest's stdout", &stdout);
    let events: Vec<String> = rx
        .try_iter()
        .map(|e| match e {
            Event::Stdout(b) | Event::Stderr(b) => String::from_utf8_lossy(&b).into_owned(),
            Event::Decision(d) => serde_json::to_string(&d).unwrap(),
            _ => String::new(),
        })
        .collect();
    assert_clean("the events", &events.join("\n"));
    assert_clean(
        "report and audit",
        &serde_json::to_string(&(&run.report, &run.audit)).unwrap(),
    );
    let leaked = std::fs::read_to_string(out.path().join("leak.txt")).unwrap();
    assert!(leaked.starts_with("SBX_SECRET_API_TOKEN_"));
    // What the servers received: the value once, in the bound header.
    let seen = received(&bound);
    assert_eq!(seen.matches(VALUE).count(), 1, "{seen}");
    assert!(seen.contains(&format!("authorization: Bearer {VALUE}")));
    assert_clean("the unbound server's requests", &received(&other));
    assert_eq!(run.report.secret_uses.len(), 1);
}

#[test]
fn a_python_script_uses_a_secret_from_the_caps_file() {
    let (bound, other) = (LoopbackServer::start(), LoopbackServer::start());
    let dir = mount_tree(&[]);
    let caps = mount_caps(&format!(
        "[net]\nallow = [\"{b}\", \"{o}\"]\n\
         [secrets.API_TOKEN]\nfrom_env = \"{ENV_VAR}\"\nhosts = [\"{b}\"]\nheaders = [\"Authorization\"]\n",
        b = bound.origin(),
        o = other.origin()
    ));
    std::fs::write(dir.path().join("caps.toml"), caps).unwrap();
    let script = format!(
        "import sbx\n\
         t = sbx.secret('API_TOKEN')\n\
         r = sbx.fetch('{b}/reflect', headers={{'Authorization': 'Bearer ' + t}})\n\
         print(r.status, r.header('x-reflect') == 'Bearer ' + t, t in r.text())\n\
         sbx.fetch('{o}/reflect', headers={{'Authorization': t}})\n\
         open('/work/out/t.txt', 'w').write(t)\n\
         try:\n    sbx.secret('NOPE')\nexcept KeyError as e:\n    print('no', e)\n",
        b = bound.origin(),
        o = other.origin()
    );
    std::fs::write(dir.path().join("s.py"), script).unwrap();
    let out = Command::new(sbx_bin())
        .current_dir(dir.path())
        .env(ENV_VAR, VALUE)
        .env("SBX_WASM_CACHE_DIR", crate::python::warm_cache())
        .args([
            "run",
            "--no-stdin",
            "--caps",
            "caps.toml",
            "--python-runner",
        ])
        .arg(python_runner())
        .args(["--report", "report.json", "--audit", "audit.jsonl", "s.py"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("200 True True"), "{stdout}");
    assert!(
        stdout.contains("no \"the grant has no secret 'NOPE'\""),
        "{stdout}"
    );
    assert_clean("stdout and stderr", &format!("{stdout}{stderr}"));
    for f in ["report.json", "audit.jsonl", "out/t.txt"] {
        assert_clean(f, &std::fs::read_to_string(dir.path().join(f)).unwrap());
    }
    assert!(received(&bound).contains(&format!("authorization: Bearer {VALUE}")));
    assert_clean("the unbound server's requests", &received(&other));

    // `check` shows where the value comes from, never the value.
    let check = Command::new(sbx_bin())
        .current_dir(dir.path())
        .env(ENV_VAR, VALUE)
        .args(["check", "--caps", "caps.toml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success() && text.contains(ENV_VAR), "{text}");
    assert_clean("check", &text);
    // Without the variable, the caps file does not load, and says why.
    let check = Command::new(sbx_bin())
        .current_dir(dir.path())
        .env_remove(ENV_VAR)
        .args(["check", "--caps", "caps.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(
        !check.status.success() && err.contains("secrets.API_TOKEN.from_env"),
        "{err}"
    );
}

#[test]
fn a_recording_keeps_no_secret_and_replays_without_it() {
    let (bound, other) = (LoopbackServer::start(), LoopbackServer::start());
    let out = tempfile::tempdir().unwrap();
    let caps = caps(&bound, &other)
        .to_builder()
        .unwrap()
        .write_mount(out.path(), "/work/out")
        .build()
        .unwrap();
    let host = WasmHost::new().unwrap();
    let agent = host.load(&guest("secret_use")).unwrap();
    let args = [
        "API_TOKEN".to_string(),
        format!("{}/reflect", bound.origin()),
        format!("{}/reflect", other.origin()),
    ];
    let opts = RunOptions::new(caps).args(args).record(1 << 20);
    let run = host.run(&agent, opts).unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{:?}", run.trap);
    let rec = run.recording.clone().expect("recorded");
    let text = serde_json::to_string(&rec).unwrap();
    assert_clean("the recording", &text);
    assert_eq!(rec.secrets[0].name, "API_TOKEN");
    let seen = (bound.connections(), other.connections());

    // Replayed with no value anywhere: the answers hold what the guest got.
    let replay = Replay::new(*rec).unwrap();
    let mut again = host.run(&agent, RunOptions::replaying(&replay)).unwrap();
    let verdict = replay.settle(&again.report, &mut again.audit);
    assert!(verdict.same_outcome, "{verdict:?}");
    assert_eq!(again.stdout, run.stdout);
    assert_eq!(again.audit, run.audit);
    assert_eq!(again.report.secret_uses, run.report.secret_uses);
    assert_eq!((bound.connections(), other.connections()), seen);
}

#[test]
fn a_redirect_that_would_carry_the_value_away_is_not_followed() {
    let (bound, other) = (LoopbackServer::start(), LoopbackServer::start());
    let mut sandbox = Sandbox::new(caps(&bound, &other)).unwrap();
    let b = bound.origin();
    let auth = [["Authorization", "Bearer {{secret:API_TOKEN}}"]];
    // The allowed neighbour first: a plain redirect to the other origin is
    // followed (one connection there, no Authorization crossing).
    let plan = serde_json::json!([
        {"op": "net_fetch", "url": format!("{b}/redirect-to/127.0.0.1:{}/reflect", other.port),
         "headers": auth},
        {"op": "net_fetch", "url": format!("{b}/echo-auth-to/127.0.0.1:{}/reflect", other.port),
         "headers": auth},
        {"op": "net_fetch", "url": format!("{b}/echo-auth-to/127.0.0.1:{}/status", bound.port),
         "headers": auth},
    ]);
    let ops = sbx_wasm::plan::parse_plan(&plan.to_string()).unwrap();
    let results: Vec<_> = ops.into_iter().map(|op| sandbox.run(op)).collect();
    assert!(results[0].ok, "{:?}", results[0]);
    assert_eq!(other.connections(), 1, "the plain redirect reached it once");
    // The echoing hop is refused before it is dialled, to the other origin
    // and to the bound one alike.
    for r in &results[1..] {
        assert!(!r.ok, "{r:?}");
        let d = r.denial.as_ref().unwrap();
        assert_eq!(d.violation.as_str(), "secret_in_redirect", "{d:?}");
        assert!(!d.hard);
        assert!(d.message.contains("API_TOKEN"), "{}", d.message);
    }
    assert_eq!(other.connections(), 1, "no connection for the echoing hop");
    assert_eq!(
        bound.requests().len(),
        3,
        "the bound server saw the three first hops and no second one: {:?}",
        bound.requests()
    );
    let all = serde_json::to_string(&(&results, sandbox.report(), sandbox.audit())).unwrap();
    assert_clean("results, report and audit", &all);
    assert!(!all.contains("tok_S3cr3t%2f"), "{all}");
    let audit = sandbox.audit();
    assert_eq!(
        audit[1].violation.map(|v| v.as_str()),
        Some("secret_in_redirect")
    );
}
