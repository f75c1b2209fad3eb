use super::*;
use crate::{Capabilities, CapsError};

const VALUE: &str = "ghp_s3cret/Value+1";

fn caps() -> Capabilities {
    Capabilities::builder()
        .allow_egress("https://api.github.com")
        .allow_egress("https://other.example")
        .secret(
            "GITHUB_TOKEN",
            VALUE,
            ["https://api.github.com"],
            ["Authorization"],
        )
        .build()
        .unwrap()
}

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

#[test]
fn substituted_only_in_a_bound_header_to_a_bound_host() {
    let caps = caps();
    let run = RunSecrets::bind(caps.secrets(), None);
    let ph = run.placeholders()[0].1.clone();
    assert!(!ph.contains(VALUE));
    let headers = vec![
        ("Authorization".to_string(), format!("Bearer {ph}")),
        ("X-Other".to_string(), ph.clone()),
    ];
    let (out, done) = run.substitute(&url("https://api.github.com/user"), &headers, b"");
    assert_eq!(out[0].1, format!("Bearer {VALUE}"));
    assert_eq!(out[1].1, ph, "another header keeps the placeholder");
    assert_eq!(done.used, ["GITHUB_TOKEN"]);
    assert!(done.refused[0].contains("header x-other") || done.refused[0].contains("X-Other"));

    // Another granted host: nothing substituted.
    let (out, done) = run.substitute(&url("https://other.example/"), &headers, b"");
    assert_eq!(out[0].1, format!("Bearer {ph}"));
    assert!(done.used.is_empty());
    assert!(done.refused.iter().any(|r| r.contains("not a host")));

    // In the URL or the body: noted, never substituted (nothing to do).
    let u = url(&format!("https://api.github.com/?t={ph}"));
    let (_, done) = run.substitute(&u, &[], ph.as_bytes());
    assert!(done.refused.iter().any(|r| r.contains("URL")));
    assert!(done.refused.iter().any(|r| r.contains("body")));
}

#[test]
fn plan_alias_works_like_the_placeholder() {
    let caps = caps();
    let run = RunSecrets::bind(caps.secrets(), None);
    let headers = vec![(
        "authorization".to_string(),
        "token {{secret:GITHUB_TOKEN}}".to_string(),
    )];
    let (out, _) = run.substitute(&url("https://api.github.com/"), &headers, b"");
    assert_eq!(out[0].1, format!("token {VALUE}"));
}

#[test]
fn echoes_are_redacted_in_every_encoding() {
    let caps = caps();
    let run = RunSecrets::bind(caps.secrets(), None);
    let ph = run.placeholders()[0].1.clone();
    let b64 = base64::engine::general_purpose::STANDARD.encode(VALUE);
    let enc: String = url::form_urlencoded::byte_serialize(VALUE.as_bytes()).collect();
    let mut body = format!("plain {VALUE} b64 {b64} url {enc}").into_bytes();
    let found = run.redact(&mut body);
    let body = String::from_utf8(body).unwrap();
    assert_eq!(found, ["GITHUB_TOKEN"]);
    assert!(!body.contains(VALUE) && !body.contains(&b64) && !body.contains(&enc));
    assert!(body.contains(&ph));
    let mut clean = b"nothing here".to_vec();
    assert!(run.redact(&mut clean).is_empty());
}

#[test]
fn placeholders_are_per_run_unless_seeded() {
    let caps = caps();
    let a = RunSecrets::bind(caps.secrets(), None).placeholders();
    let b = RunSecrets::bind(caps.secrets(), None).placeholders();
    assert_ne!(a, b);
    let c = RunSecrets::bind(caps.secrets(), Some(7)).placeholders();
    let d = RunSecrets::bind(caps.secrets(), Some(7)).placeholders();
    assert_eq!(c, d);
    assert!(c[0].1.starts_with("SBX_SECRET_GITHUB_TOKEN_"));
}

#[test]
fn the_value_is_never_shown() {
    let caps = caps();
    assert!(!format!("{caps:?}").contains(VALUE));
    assert!(!caps.to_toml().contains(VALUE));
    let run = RunSecrets::bind(caps.secrets(), None);
    assert!(!format!("{run:?}").contains(VALUE));
}

fn load(text: &str) -> Result<Capabilities, CapsError> {
    Capabilities::from_toml(text, std::path::Path::new("/"), None)
}

fn err(text: &str) -> String {
    load(text).unwrap_err().to_string()
}

#[test]
fn caps_file_errors_name_the_key() {
    let net = "[net]\nallow = [\"https://api.github.com\"]\n";
    let e = err(&format!(
        "{net}[secrets.T]\nfrom_env = \"SBX_TEST_UNSET_VAR_XYZ\"\nhosts = [\"https://api.github.com\"]\nheaders = [\"Authorization\"]\n"
    ));
    assert!(
        e.contains("secrets.T.from_env") && e.contains("not set"),
        "{e}"
    );
    let e = err(&format!(
        "{net}[secrets.T]\nfrom_file = \"/nonexistent/secret\"\nhosts = [\"https://api.github.com\"]\nheaders = [\"Authorization\"]\n"
    ));
    assert!(e.contains("secrets.T.from_file"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s");
    std::fs::write(&f, "\n").unwrap();
    let e = err(&format!(
        "{net}[secrets.T]\nfrom_file = \"{}\"\nhosts = [\"https://api.github.com\"]\nheaders = [\"Authorization\"]\n",
        f.display()
    ));
    assert!(e.contains("empty"), "{e}");
    std::fs::write(&f, "tok\n").unwrap();
    let ok = format!(
        "{net}[secrets.T]\nfrom_file = \"{}\"\nhosts = [\"https://api.github.com\"]\nheaders = [\"Authorization\"]\n",
        f.display()
    );
    let caps = load(&ok).unwrap();
    assert_eq!(caps.secrets()[0].value, "tok");
    assert!(caps.to_toml().contains("from_file"));
    for (bad, needle) in [
        (
            "hosts = [\"https://evil.example\"]\nheaders = [\"Authorization\"]",
            "not granted",
        ),
        (
            "hosts = [\"https://api.github.com\"]\nheaders = [\"Host\"]",
            "not a header",
        ),
        (
            "hosts = [\"https://api.github.com\"]\nheaders = [\"X-Forwarded-For\"]",
            "not a header",
        ),
        (
            "hosts = [\"https://api.github.com\"]\nheaders = []",
            "empty",
        ),
        ("hosts = []\nheaders = [\"Authorization\"]", "empty"),
    ] {
        let e = err(&format!(
            "{net}[secrets.T]\nfrom_file = \"{}\"\n{bad}\n",
            f.display()
        ));
        assert!(e.contains(needle), "{bad}: {e}");
    }
    let e = err(&format!(
        "{net}[secrets.\"9bad\"]\nfrom_file = \"{}\"\nhosts = [\"https://api.github.com\"]\nheaders = [\"Authorization\"]\n",
        f.display()
    ));
    assert!(e.contains("not a secret name"), "{e}");
    let e = err(&format!(
        "{net}[env]\nT = \"x\"\n[secrets.T]\nfrom_file = \"{}\"\nhosts = [\"https://api.github.com\"]\nheaders = [\"Authorization\"]\n",
        f.display()
    ));
    assert!(e.contains("[env]"), "{e}");
}

#[test]
fn to_builder_keeps_secrets() {
    let caps = caps();
    let again = caps.to_builder().unwrap().build().unwrap();
    assert_eq!(again.secrets(), caps.secrets());
}

#[test]
fn a_large_body_built_to_slow_the_search_is_redacted() {
    let caps = caps();
    let run = RunSecrets::bind(caps.secrets(), None);
    // The value's prefix over and over, then the value: the worst case of
    // a naive search (linear with memmem).
    let prefix = &VALUE.as_bytes()[..VALUE.len() - 1];
    let mut body = prefix.repeat((4 << 20) / prefix.len());
    body.extend_from_slice(VALUE.as_bytes());
    assert_eq!(run.redact(&mut body), ["GITHUB_TOKEN"]);
    assert!(!contains(&body, VALUE.as_bytes()));
}
