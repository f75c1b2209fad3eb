//! The chain and the seal: a whole log verifies, and each kind of damage
//! is found where it is.

use super::*;

/// A sealed log of `n` records (`{"seq": i}`), signed with `key`, and its
/// lines.
fn log(n: u64, key: &AuditKey) -> Vec<String> {
    let mut s = Sealer::new(anchor_of_grant("[fs]\n")).with_key(key.clone());
    let mut lines: Vec<String> = (1..=n).map(|i| s.line(json!({ "seq": i }))).collect();
    lines.push(s.seal());
    lines
}

fn text(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn a_whole_log_verifies_with_and_without_the_key() {
    let key = AuditKey::generate();
    let lines = log(4, &key);
    let v = verify(&text(&lines), Some(&key.public()));
    assert!(v.is_whole(), "{:?}", v.problems);
    assert_eq!((v.records, v.seals, v.signed), (4, 1, 1));
    assert!(verify(&text(&lines), None).is_whole());
}

#[test]
fn an_edited_a_deleted_and_a_cut_record_are_each_found() {
    let key = AuditKey::generate();
    let lines = log(4, &key);
    let pk = key.public();

    let mut edited = lines.clone();
    edited[1] = edited[1].replace("\"seq\":2", "\"seq\":20");
    let v = verify(&text(&edited), Some(&pk));
    assert_eq!(v.problems[0].line, 2, "{:?}", v.problems);
    assert!(v.problems[0].what.contains("line 2 was changed"));

    let mut deleted = lines.clone();
    deleted.remove(2);
    let v = verify(&text(&deleted), Some(&pk));
    assert_eq!(v.problems[0].line, 2, "{:?}", v.problems);
    assert!(
        v.problems
            .iter()
            .any(|p| p.what.contains("4 records sealed, 3 found"))
    );

    let mut first = lines.clone();
    first.remove(0);
    let v = verify(&text(&first), Some(&pk));
    assert!(
        v.problems
            .iter()
            .any(|p| p.what.contains("removed from its start")),
        "{:?}",
        v.problems
    );

    let cut = &lines[..3];
    let v = verify(&text(cut), Some(&pk));
    assert_eq!(v.problems.len(), 1, "{:?}", v.problems);
    assert!(v.problems[0].what.contains("no seal after line 3"));

    // A recomputed chain still fails the signature.
    let mut forged = Sealer::new(anchor_of_grant("[fs]\n")).with_key(AuditKey::generate());
    let mut f: Vec<String> = (1..=4)
        .map(|i| forged.line(json!({ "seq": i * 10 })))
        .collect();
    f.push(forged.seal());
    let v = verify(&text(&f), Some(&pk));
    assert!(
        v.problems
            .iter()
            .any(|p| p.what.contains("signature does not hold"))
    );
    assert!(
        verify(&text(&f), None).is_whole(),
        "unchecked without a key"
    );
}

#[test]
fn an_appended_log_chains_its_segments() {
    let key = AuditKey::generate();
    let mut lines = log(2, &key);
    let mut next = Sealer::after(lines.last().unwrap()).with_key(key.clone());
    lines.push(next.line(json!({ "seq": 1 })));
    lines.push(next.seal());
    let v = verify(&text(&lines), Some(&key.public()));
    assert!(v.is_whole(), "{:?}", v.problems);
    assert_eq!((v.records, v.seals, v.signed), (3, 2, 2));
}

#[test]
fn keys_read_back_and_bad_ones_are_refused() {
    let key = AuditKey::generate();
    let again = AuditKey::parse(&key.secret_hex()).unwrap();
    assert_eq!(again.public(), key.public());
    assert_eq!(
        PublicKey::parse(&key.public().to_string()).unwrap(),
        key.public()
    );
    assert!(AuditKey::parse("abc").is_err());
    assert!(AuditKey::parse(&"0".repeat(64)).is_err());
    assert!(!format!("{key:?}").contains(&key.secret_hex()));
}

#[test]
fn a_serialized_record_keeps_its_field_order_and_gets_prev_last() {
    let mut s = Sealer::new("sha256:00");
    let a = s.line_text(r#"{"seq":1,"op":"fs_read"}"#);
    assert_eq!(a, r#"{"seq":1,"op":"fs_read","prev":"sha256:00"}"#);
    let b = s.line_text("{}");
    assert_eq!(b, format!(r#"{{"prev":"{}"}}"#, digest(&a)));
    let c = s.line(json!({"x": 1, "prev": "forged"}));
    assert!(c.starts_with(r#"{"x":1,"prev":"sha256:"#), "{c}");
    // A last field that is an object keeps its braces.
    let d = s.line_text(r#"{"end":{"status":"completed"}}"#);
    let v: Value = serde_json::from_str(&d).unwrap();
    assert_eq!(v["end"]["status"], "completed");
    let mut log = [a, b, c, d].join("\n");
    log.push('\n');
    log += &s.seal();
    assert!(verify(&log, None).is_whole());
}
