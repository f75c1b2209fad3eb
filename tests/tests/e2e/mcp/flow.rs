//! The flow rules at the MCP door, with the official Rust SDK's client: a
//! session carries the labels its calls read into its next calls (what one
//! call wrote to `/scratch` cannot leave by the next), a call's `labels`
//! argument starts it holding them, and every answer says what it carries
//! (structured `labels`, and a FIDES-style label in `_meta`).

use super::Fixture;
use super::rust_client::{Client, call, field, stdio};
use serde_json::{Value, json};

/// The fixture's world plus `private/` read at `/private` with label
/// `customer`, which may reach stdout and the granted server only; the
/// other server is granted too (for unlabelled data).
fn world() -> Fixture {
    let f = Fixture::new();
    std::fs::create_dir(f.path("private")).unwrap();
    std::fs::write(f.path("private/c.csv"), "alice,42").unwrap();
    let caps = std::fs::read_to_string(f.path("caps.toml"))
        .unwrap()
        .replace(
            "read = [{ host = \"data\", guest = \"/work\" }]",
            "read = [{ host = \"data\", guest = \"/work\" }, \
             { host = \"private\", guest = \"/private\", label = \"customer\" }]",
        )
        .replace(
            &format!("allow = [\"{}\"]", f.granted.origin()),
            &format!(
                "allow = [\"{}\", \"{}\"]\n[flow.allow]\ncustomer = [\"stdout\", \"{}\"]",
                f.granted.origin(),
                f.other.origin(),
                f.granted.origin()
            ),
        );
    assert!(caps.contains("label = \"customer\""), "{caps}");
    std::fs::write(f.path("caps.toml"), caps).unwrap();
    f
}

fn post(url: &str, from: &str) -> String {
    format!(
        "import urllib.request\nbody = open('{from}', 'rb').read()\n\
         try:\n    urllib.request.urlopen(urllib.request.Request('{url}', data=body, method='POST')).read()\n    print('sent')\n\
         except Exception as e:\n    print('refused', e)\n"
    )
}

fn ifc(r: &rmcp::model::CallToolResult) -> Value {
    let meta = r.meta.as_ref().expect("a _meta on the answer");
    meta.0["com.github.ifc/labels"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sessions_labels_follow_its_data_into_its_next_calls() {
    let f = world();
    let (granted, other) = (f.granted.origin(), f.other.origin());
    let s = stdio(&f, &[], Client::default()).await;

    // Unlabelled data goes to either server, and the answer says public.
    let r = call(
        &s,
        "run_python",
        json!({"code": post(&format!("{other}/status"), "/work/a.txt")}),
    )
    .await;
    assert_eq!(field(&r, "stdout"), "sent\n", "{r:?}");
    assert_eq!(ifc(&r)["confidentiality"], json!(["public"]));
    assert_eq!(f.other.connections(), 1);

    // A call reads the labelled file and keeps it in /scratch: allowed.
    let code = "data = open('/private/c.csv').read()\nopen('/scratch/c.txt', 'w').write(data)\nprint('kept')";
    let r = call(&s, "run_python", json!({ "code": code })).await;
    assert_eq!(field(&r, "stdout"), "kept\n", "{r:?}");
    assert_eq!(field(&r, "labels")[0]["label"], "customer");
    let readers = ifc(&r)["confidentiality"].clone();
    assert_eq!(readers, json!(["stdout", "/scratch", granted]), "{r:?}");
    assert_eq!(ifc(&r)["integrity"], "untrusted");

    // The next call reads it back and tries the other server: refused, and
    // the server receives nothing; the granted one may have it.
    let r = call(
        &s,
        "run_python",
        json!({"code": post(&format!("{other}/status"), "/scratch/c.txt")}),
    )
    .await;
    let out = field(&r, "stdout").as_str().unwrap().to_string();
    assert!(
        out.contains("refused <urlopen error flow_denied"),
        "{out} {r:?}"
    );
    assert!(
        out.contains("label customer, from fs_read /private/c.csv at op 1 of call c2"),
        "{out}"
    );
    assert_eq!(f.other.connections(), 1, "the other server got nothing");
    let denials = field(&r, "denials").clone();
    assert_eq!(denials[0]["violation"], "flow_denied", "{denials}");
    let r = call(
        &s,
        "run_python",
        json!({"code": post(&format!("{granted}/status"), "/scratch/c.txt")}),
    )
    .await;
    assert_eq!(field(&r, "stdout"), "sent\n", "{r:?}");

    // A single op of the same session is held the same way.
    let r = call(&s, "fetch", json!({"url": format!("{other}/status")})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(field(&r, "violation"), "flow_denied");
    assert_eq!(f.other.connections(), 1);
    s.cancel().await.unwrap();

    // A new session starts clean: the other server is open to it again.
    let s = stdio(&f, &[], Client::default()).await;
    let r = call(&s, "fetch", json!({"url": format!("{other}/status")})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert_eq!(f.other.connections(), 2);

    // Unless the call says its input carries the label.
    let code = format!(
        "import urllib.request\ntry:\n    urllib.request.urlopen('{other}/status')\n    print('sent')\n\
         except Exception as e:\n    print('refused', e)\n"
    );
    let r = call(
        &s,
        "run_python",
        json!({"code": code, "labels": ["customer"]}),
    )
    .await;
    let out = field(&r, "stdout").as_str().unwrap().to_string();
    assert!(out.contains("the call's arguments"), "{out}");
    assert_eq!(f.other.connections(), 2);
    let r = call(
        &s,
        "run_python",
        json!({"code": "print(1)", "labels": ["custmer"]}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        format!("{r:?}").contains("not a label of this server's grant"),
        "{r:?}"
    );
    s.cancel().await.unwrap();

    // Two servers appended to one audit stream: one chain, sealed after
    // every call, whole.
    let out = sbx_wasm_tests::sbx_in(
        f.dir.path(),
        &["audit", "verify", f.path("audit.jsonl").to_str().unwrap()],
    );
    let said = sbx_wasm_tests::utf8(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains(": whole: "), "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_written_as_ocsf_is_valid_and_whole() {
    let f = world();
    let s = stdio(&f, &["--audit-format", "ocsf"], Client::default()).await;
    let r = call(&s, "read_file", json!({"path": "/work/a.txt"})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let r = call(&s, "read_file", json!({"path": "/etc/passwd"})).await;
    assert_eq!(r.is_error, Some(true));
    let r = call(
        &s,
        "run_python",
        json!({"code": "print(open('/private/c.csv').read())"}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    s.cancel().await.unwrap();
    let (ok, said) = crate::audit::ocsf_valid(&f.path("audit.jsonl"));
    assert!(ok, "{said}");
    assert!(
        said.contains(r#""6002": 6"#),
        "a start and an end per call: {said}"
    );
    let out = sbx_wasm_tests::sbx_in(
        f.dir.path(),
        &["audit", "verify", f.path("audit.jsonl").to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        sbx_wasm_tests::utf8(&out.stdout)
    );
}
