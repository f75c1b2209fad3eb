//! `deploy/kubernetes/`: the NetworkPolicy is what `sbx-wasm policy
//! networkpolicy` makes from the ConfigMap's grant (so the two cannot drift
//! apart), and every manifest, and a policy made from a grant with every
//! kind of rule, passes the Kubernetes 1.37 schemas in strict mode
//! (`kubernetes-validate` from PyPI, pinned in `tests/deploy/`).

use sbx_wasm_tests::{cached_venv, repo_root, sbx_bin};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `kubernetes-validate` on `files`, from a venv in the user's cache
/// folder (its script is run by the venv's python: see `cached_venv`).
fn validate(files: &[PathBuf]) -> std::process::Output {
    let requirements = repo_root().join("tests/deploy/requirements.txt");
    let python = cached_venv("k8s-validate", &requirements, &[]);
    let script = python.parent().unwrap().join("kubernetes-validate");
    Command::new(&python)
        .arg(script)
        .arg("--strict")
        .args(files)
        .output()
        .unwrap()
}

/// The grant `configmap.yaml` holds, with its data folder at `data`.
fn configmap_caps(data: &Path) -> String {
    let map =
        std::fs::read_to_string(repo_root().join("deploy/kubernetes/configmap.yaml")).unwrap();
    let block = map
        .split("caps.toml: |\n")
        .nth(1)
        .expect("a caps.toml in the ConfigMap");
    let caps: Vec<&str> = block
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect();
    caps.join("\n").replace(
        "host = \"/data\"",
        &format!("host = {:?}", data.display().to_string()),
    )
}

fn networkpolicy(caps: &Path, extra: &[&str]) -> String {
    let out = Command::new(sbx_bin())
        .args(["policy", "networkpolicy"])
        .arg(caps)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_shipped_networkpolicy_is_the_one_the_grant_makes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let caps = dir.path().join("caps.toml");
    std::fs::write(&caps, configmap_caps(&dir.path().join("data"))).unwrap();
    let made = networkpolicy(&caps, &["--cidr", "api.github.com=140.82.112.0/20"]);
    let shipped =
        std::fs::read_to_string(repo_root().join("deploy/kubernetes/networkpolicy.yaml")).unwrap();
    let at = shipped.find("# Made by").expect("the generated part");
    assert_eq!(
        &shipped[at..],
        made,
        "regenerate deploy/kubernetes/networkpolicy.yaml"
    );
}

#[test]
fn every_manifest_and_a_generated_policy_pass_the_kubernetes_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let caps = dir.path().join("caps.toml");
    std::fs::write(
        &caps,
        "[net]\nallow = [\"https://api.example.com\", \"https://*.example.org:8443\", \
         \"http://10.1.2.3:8080\", \"http://192.168.0.0/16:*\", \"http://[fd00::1]:9000\", \
         \"udp://10.0.0.53:53\"]\n",
    )
    .unwrap();
    let made = dir.path().join("networkpolicy.yaml");
    let policy = networkpolicy(&caps, &["--name", "agents", "--port", "9000"]);
    // A udp rule opens its port for UDP only; a `*` port, one protocol's.
    assert!(
        policy.contains(
            "cidr: 10.0.0.53/32\n      ports:\n        - port: 53\n          protocol: UDP"
        ),
        "{policy}"
    );
    assert!(
        policy.contains("cidr: 192.168.0.0/16\n      ports:\n        - protocol: TCP\n"),
        "{policy}"
    );
    std::fs::write(&made, policy).unwrap();
    let none = dir.path().join("none.yaml");
    std::fs::write(&caps, "").unwrap();
    let text = networkpolicy(&caps, &[]);
    assert!(text.contains("egress: []"), "{text}");
    std::fs::write(&none, text).unwrap();
    let k8s = repo_root().join("deploy/kubernetes");
    let mut files: Vec<PathBuf> = ["configmap", "deployment", "service", "networkpolicy", "hpa"]
        .iter()
        .map(|f| k8s.join(format!("{f}.yaml")))
        .collect();
    files.extend([made, none]);
    let out = validate(&files);
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        said.matches(" passed for resource ").count(),
        files.len(),
        "{said}"
    );
    // The neighbour that must fail: a misspelt field is caught.
    let bad = dir.path().join("bad.yaml");
    let deployment = std::fs::read_to_string(&files[1]).unwrap();
    std::fs::write(
        &bad,
        deployment.replace("readOnlyRootFilesystem", "readOnlyRootFileSystem"),
    )
    .unwrap();
    assert!(!validate(&[bad]).status.success());
}

#[test]
fn a_cidr_for_a_name_the_grant_does_not_allow_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let caps = dir.path().join("caps.toml");
    std::fs::write(&caps, "[net]\nallow = [\"https://api.example.com\"]\n").unwrap();
    for bad in [
        "evil.example=1.2.3.0/24",
        "api.example.com=not-a-cidr",
        "no-equals",
    ] {
        let out = Command::new(sbx_bin())
            .args(["policy", "networkpolicy"])
            .arg(&caps)
            .args(["--cidr", bad])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--cidr"),
            "{bad}"
        );
    }
}

/// The agent-sandbox CRDs, kept as data beside the project (not in it):
/// `$SBX_WASM_SHARED/k8s/agent-sandbox-crds`, else `../shared/...` from the
/// checkout, else `/work/shared/...` (a clone made elsewhere on the
/// project's machine).
fn agent_sandbox_crds() -> PathBuf {
    let rel = "k8s/agent-sandbox-crds";
    let candidates = [
        std::env::var_os("SBX_WASM_SHARED").map(|d| PathBuf::from(d).join(rel)),
        Some(repo_root().join("../shared").join(rel)),
        Some(PathBuf::from("/work/shared").join(rel)),
    ];
    (candidates.into_iter().flatten())
        .find(|d| d.join("extensions.agents.x-k8s.io_sandboxtemplates.yaml").exists())
        .expect("the agent-sandbox CRDs: set SBX_WASM_SHARED to the folder holding k8s/agent-sandbox-crds")
}

/// The agent-sandbox example against the project's CRDs (strictly), and
/// its template against the Deployment's pod and the NetworkPolicy's rules;
/// beside it, a claim with a misspelt field that must fail.
#[test]
fn the_agent_sandbox_example_passes_its_crds_and_matches_the_deployment() {
    let crds = agent_sandbox_crds();
    let requirements = repo_root().join("tests/deploy/requirements.txt");
    let python = cached_venv("k8s-validate", &requirements, &[]);
    let check = |files: &[PathBuf]| {
        Command::new(&python)
            .arg(repo_root().join("tests/deploy/crd_validate.py"))
            .arg(&crds)
            .arg(repo_root().join("deploy"))
            .args(files)
            .output()
            .unwrap()
    };
    let dir = repo_root().join("deploy/agent-sandbox");
    let files: Vec<PathBuf> = ["sandboxtemplate", "sandboxwarmpool", "sandboxclaim"]
        .iter()
        .map(|f| dir.join(format!("{f}.yaml")))
        .collect();
    let out = check(&files);
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(said.matches("passed ").count(), 3, "{said}");
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("claim.yaml");
    let claim = std::fs::read_to_string(&files[2]).unwrap();
    std::fs::write(
        &bad,
        claim.replace("ttlSecondsAfterFinished", "ttlSecondAfterFinished"),
    )
    .unwrap();
    let out = check(&[bad]);
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
