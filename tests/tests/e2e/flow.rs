//! Where data may flow (`[flow]`), end to end: a wasm guest, a Python script
//! and a TypeScript module each read a public file and a labelled one and
//! try to send what they read to two real servers on 127.0.0.1 (one the
//! label may reach, one it may not), to two write mounts, and to stdout.
//! Every refusal has its allowed neighbour; the refused server receives no
//! connection, the refused folder stays byte-for-byte the same.

use super::scripts::warm_cache;
use sbx_wasm_tests::{LoopbackServer, guest, js_runner, python_runner, sbx_bin, snapshot, utf8};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// The Python steps: `read:PATH`, `post:URL` (base64 of what was read),
/// `write:PATH`, `print`; one line on stderr per step.
const PY: &str = r#"
import base64, sys, urllib.request
held = b""
for step in sys.argv[1:]:
    verb, _, arg = step.partition(":")
    try:
        if verb == "read":
            held += open(arg, "rb").read()
        elif verb == "post":
            req = urllib.request.Request(arg, data=base64.b64encode(held), method="POST")
            urllib.request.urlopen(req).read()
        elif verb == "write":
            with open(arg, "w") as f:
                f.write(base64.b64encode(held).decode())
        elif verb == "print":
            print(held.decode(), flush=True)
        said = "ok"
    except Exception as e:
        said = f"{type(e).__name__}: {e}"
    try:
        sys.stderr.write(f"{verb} -> {said}\n")
    except OSError:
        pass
"#;

/// The same steps in TypeScript.
const TS: &str = r#"
import fs from "fs";
let held: string = "";
for (const step of process.argv.slice(2)) {
  const at = step.indexOf(":");
  const verb = step.slice(0, at < 0 ? step.length : at), arg = step.slice(at + 1);
  let said = "ok";
  try {
    if (verb === "read") held += fs.readFileSync(arg, "utf8");
    else if (verb === "post") await (await fetch(arg, { method: "POST", body: btoa(held) })).text();
    else if (verb === "write") fs.writeFileSync(arg, btoa(held));
    else if (verb === "print") console.log(held);
  } catch (e: any) {
    said = `${e.name}: ${e.message}`;
  }
  try { console.error(`${verb} -> ${said}`); } catch {}
}
"#;

/// A tree with `public/` (unlabelled), `private/` (label `customer`:
/// stdout, `/out` and the CRM server), `payroll/` (label `payroll`: the
/// CRM server only), write mounts `out/` and `other/`, two servers.
struct Flow {
    dir: tempfile::TempDir,
    crm: LoopbackServer,
    hook: LoopbackServer,
}

/// What a run left: its exit, stderr and report.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    report: Value,
    /// The audit log's records.
    audit: Vec<Value>,
}

impl Ran {
    /// Each refusal as `op target violation`.
    fn denials(&self) -> Vec<String> {
        self.report["denials"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|d| {
                        format!(
                            "{} {} {}",
                            d["op"].as_str().unwrap_or(""),
                            d["target"].as_str().unwrap_or(""),
                            d["violation"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Flow {
    fn new() -> Flow {
        let dir = tempfile::tempdir().unwrap();
        let (crm, hook) = (LoopbackServer::start(), LoopbackServer::start());
        for d in ["public", "private", "payroll", "out", "other"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        std::fs::write(dir.path().join("public/p.txt"), "hello").unwrap();
        std::fs::write(dir.path().join("private/c.csv"), "alice,42").unwrap();
        std::fs::write(dir.path().join("payroll/pay.csv"), "bob,9000").unwrap();
        let caps = format!(
            r#"[fs]
read = [
  {{ host = "public", guest = "/public" }},
  {{ host = "private", guest = "/private", label = "customer" }},
  {{ host = "payroll", guest = "/payroll", label = "payroll" }},
]
write = [{{ host = "out", guest = "/out" }}, {{ host = "other", guest = "/other" }}]
[net]
allow = ["{crm}", "{hook}"]
[flow]
evidence = true
[flow.allow]
customer = ["stdout", "/out", "{crm}"]
payroll = ["{crm}"]
"#,
            crm = crm.origin(),
            hook = hook.origin()
        );
        std::fs::write(dir.path().join("caps.toml"), caps).unwrap();
        std::fs::write(dir.path().join("steps.py"), PY).unwrap();
        std::fs::write(dir.path().join("steps.ts"), TS).unwrap();
        Flow { dir, crm, hook }
    }

    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join(rel)
    }

    /// Run `program` (`steps.py`, `steps.ts` or the wasm guest) with
    /// `steps` under the caps file.
    fn run(&self, program: &str, steps: &[String]) -> Ran {
        let report = self.path("report.json");
        let _ = std::fs::remove_file(&report);
        let _ = std::fs::remove_file(self.path("audit.jsonl"));
        let mut cmd = Command::new(sbx_bin());
        cmd.current_dir(self.dir.path())
            .env("SBX_WASM_CACHE_DIR", warm_cache())
            .stdin(Stdio::null())
            .args([
                "run",
                "--caps",
                "caps.toml",
                "--audit",
                "audit.jsonl",
                "--report",
            ])
            .arg(&report);
        match Path::new(program).extension().and_then(|e| e.to_str()) {
            Some("py") => cmd.arg("--python-runner").arg(python_runner()),
            Some("ts") => cmd.arg("--js-runner").arg(js_runner()),
            _ => &mut cmd,
        };
        let out = cmd.arg(program).arg("--").args(steps).output().unwrap();
        let report = std::fs::read_to_string(&report)
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or(Value::Null);
        let audit = std::fs::read_to_string(self.path("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        Ran {
            audit,
            code: out.status.code(),
            stdout: utf8(&out.stdout),
            stderr: utf8(&out.stderr),
            report,
        }
    }

    /// Every case, for `program`.
    fn check(&self, program: &str) {
        let (crm, hook) = (self.crm.origin(), self.hook.origin());
        let step = |s: &str| s.replace("CRM", &crm).replace("HOOK", &hook);
        let steps = |s: &[&str]| s.iter().map(|s| step(s)).collect::<Vec<_>>();

        // Public data goes anywhere the grant allows.
        let before = self.hook.connections();
        let ran = self.run(program, &steps(&["read:/public/p.txt", "post:HOOK/in"]));
        assert_eq!(ran.code, Some(0), "{program}: {}", ran.stderr);
        assert!(ran.denials().is_empty(), "{program}: {:?}", ran.denials());
        assert_eq!(self.hook.connections(), before + 1, "{program}");

        // Labelled data: refused where the label may not go, before a byte
        // leaves; allowed where it may.
        let other = snapshot(&self.path("other"));
        let (hook0, crm0) = (self.hook.connections(), self.crm.connections());
        let ran = self.run(
            program,
            &steps(&[
                "read:/private/c.csv",
                "post:HOOK/leak",
                "write:/other/leak.txt",
                "post:CRM/upsert",
                "write:/out/c.txt",
            ]),
        );
        let hook_url = format!("{hook}/leak");
        assert_eq!(
            ran.denials(),
            [
                format!("net_fetch {hook_url} flow_denied"),
                "fs_write /other/leak.txt flow_denied".to_string(),
            ],
            "{program}: {}",
            ran.stderr
        );
        assert_eq!(
            self.hook.connections(),
            hook0,
            "{program}: the hook got nothing"
        );
        assert_eq!(
            self.crm.connections(),
            crm0 + 1,
            "{program}: the CRM got it"
        );
        assert_eq!(snapshot(&self.path("other")), other, "{program}");
        assert!(self.path("out/c.txt").exists(), "{program}");
        assert_eq!(ran.report["status"], "completed", "{program}");
        assert_eq!(ran.report["labels"][0]["label"], "customer", "{program}");
        let from = ran.report["labels"][0]["from"].as_str().unwrap_or("");
        assert!(from.starts_with("fs_read /private/c.csv at op"), "{from}");
        // Evidence, not decision: the sends that carried the file's bytes
        // (encoded as each guest encodes them) say so, allowed or refused.
        let evidence: Vec<&str> = ran
            .audit
            .iter()
            .filter(|e| e["op"] == "net_fetch")
            .map(|e| e["evidence"].as_str().unwrap_or("none"))
            .collect();
        assert_eq!(evidence.len(), 2, "{program}: {:?}", ran.audit);
        for e in evidence {
            assert!(e.starts_with("customer ("), "{program}: {e}");
        }
        std::fs::remove_file(self.path("out/c.txt")).unwrap();

        // A label that may not reach stdout: what the run prints is
        // refused (once recorded), and none of it comes out.
        let ran = self.run(program, &steps(&["read:/payroll/pay.csv", "print"]));
        assert!(
            ran.denials()
                .contains(&"stdout stdout flow_denied".to_string()),
            "{program}: {:?} {}",
            ran.denials(),
            ran.stderr
        );
        assert!(
            !ran.stdout.contains("bob,9000"),
            "{program}: {}",
            ran.stdout
        );
        // Its allowed neighbour: the label that may reach stdout prints.
        let ran = self.run(program, &steps(&["read:/private/c.csv", "print"]));
        assert!(ran.stdout.contains("alice,42"), "{program}: {}", ran.stderr);
        assert!(ran.denials().is_empty(), "{program}: {:?}", ran.denials());
    }
}

#[test]
fn a_wasm_guest_sends_labelled_data_only_where_its_label_may_go() {
    let flow = Flow::new();
    flow.check(guest("exfil").to_str().unwrap());
}

/// The same cases for a WASI 0.3 guest (`p3_exfil.rs`): its reads arrive
/// as 0.3 read streams, its sends through 0.3's wasi:http client.
#[test]
fn a_wasi_0_3_guest_sends_labelled_data_only_where_its_label_may_go() {
    Flow::new().check(guest("p3_exfil").to_str().unwrap());
}

#[test]
fn a_python_script_sends_labelled_data_only_where_its_label_may_go() {
    Flow::new().check("steps.py");
}

#[test]
fn a_typescript_module_sends_labelled_data_only_where_its_label_may_go() {
    Flow::new().check("steps.ts");
}

#[test]
fn a_recorded_run_replays_its_flow_decisions_as_they_were() {
    let flow = Flow::new();
    let hook = format!("post:{}/status", flow.hook.origin());
    let crm = format!("post:{}/status", flow.crm.origin());
    let out = Command::new(sbx_bin())
        .current_dir(flow.dir.path())
        .env("SBX_WASM_CACHE_DIR", warm_cache())
        .args(["run", "--caps", "caps.toml", "--record", "run.sbxrec"])
        .args(["--report", "r1.json", "--audit", "a1.jsonl"])
        .arg(guest("exfil"))
        .args(["--", "read:/private/c.csv", &hook, &crm])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", utf8(&out.stderr));
    let (hook0, crm0) = (flow.hook.connections(), flow.crm.connections());
    let out = Command::new(sbx_bin())
        .current_dir(flow.dir.path())
        .env("SBX_WASM_CACHE_DIR", warm_cache())
        .args([
            "replay",
            "run.sbxrec",
            "--report",
            "r2.json",
            "--audit",
            "a2.jsonl",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", utf8(&out.stderr));
    let read = |f: &str| std::fs::read_to_string(flow.path(f)).unwrap();
    assert_eq!(
        read("a1.jsonl"),
        read("a2.jsonl"),
        "the audit, byte for byte"
    );
    assert!(read("a1.jsonl").contains("\"flow_denied\""));
    let r1: Value = serde_json::from_str(&read("r1.json")).unwrap();
    let r2: Value = serde_json::from_str(&read("r2.json")).unwrap();
    assert_eq!(r1["denials"], r2["denials"]);
    assert_eq!(r1["labels"], r2["labels"]);
    // A replay answers from the recording: neither server hears of it.
    assert_eq!(
        (flow.hook.connections(), flow.crm.connections()),
        (hook0, crm0)
    );
}
