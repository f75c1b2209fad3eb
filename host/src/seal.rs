//! Tamper evidence for audit logs: a hash chain, a seal, and its check.
//!
//! Each line of a sealed log is a JSON object with a `prev` field (an OCSF
//! event keeps it in `unmapped.prev`, where the schema allows it): the
//! SHA-256 of the line before it, exactly as written (the first line's
//! `prev` is the log's *anchor*: for a run, the digest of the grant it ran
//! under). A seal line ends the log (or a segment of an appended one):
//!
//! ```json
//! {"seal":{"version":1,"anchor":"sha256:…","records":7,"key":"ed25519:…","signature":"…"},"prev":"sha256:…"}
//! ```
//!
//! `records` counts the lines since the anchor; with a key the operator
//! provides, `signature` is an Ed25519 signature over the anchor, the
//! count and the digest of the last record. [`verify`] says whether a log
//! is whole: which line was changed (or where one was removed), where it
//! was cut, whether its seals' signatures hold under a given public key.
//!
//! What it proves: without a signature, that nothing was changed by
//! accident or by someone who did not recompute the chain; with one, that
//! whoever holds the key wrote what is sealed. Lines after the last seal
//! (a log being written, or one cut short) are reported as unsealed.
//!
//! # Examples
//!
//! ```
//! use sbx_wasm::seal::{AuditKey, Sealer, verify};
//! use serde_json::json;
//!
//! let key = AuditKey::generate();
//! let mut sealer = Sealer::new("sha256:00").with_key(key.clone());
//! let mut log = String::new();
//! for seq in 1..=3 {
//!     log += &sealer.line(json!({ "seq": seq, "op": "fs_read" }));
//!     log.push('\n');
//! }
//! log += &sealer.seal();
//! log.push('\n');
//! let ok = verify(&log, Some(&key.public()));
//! assert!(ok.is_whole(), "{:?}", ok.problems);
//! assert_eq!(ok.records, 3);
//!
//! let edited = log.replace("\"seq\":2", "\"seq\":9");
//! let bad = verify(&edited, Some(&key.public()));
//! assert_eq!(bad.problems[0].line, 2);
//! ```

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::Path;

/// The seal format's version.
const VERSION: u64 = 1;

/// `sha256:HEX` of `line` (its bytes as written, without the newline).
pub fn digest(line: &str) -> String {
    let d = Sha256::digest(line.as_bytes());
    let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The anchor of a run's audit log: the digest of the grant it ran under
/// (its effective caps file, as `sbx-wasm check` prints it).
pub fn anchor_of_grant(grant_toml: &str) -> String {
    digest(grant_toml)
}

/// What a seal signs.
fn message(anchor: &str, records: u64, last: &str) -> String {
    format!("sbx-wasm audit seal v{VERSION}\n{anchor}\n{records}\n{last}")
}

/// An operator's Ed25519 signing key for audit seals. Its `Debug` shows
/// the public key only.
#[derive(Clone)]
pub struct AuditKey(SigningKey);

impl fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AuditKey({})", self.public())
    }
}

/// Why a key could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not a key.
    #[error("{0}")]
    Form(String),
}

/// 32 bytes from hex (64 digits) or base64 text, after an optional
/// `ed25519:` prefix.
fn key_bytes(text: &str) -> Result<[u8; 32], KeyError> {
    let t = text.trim();
    let t = t.strip_prefix("ed25519:").unwrap_or(t);
    let bytes = if t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        (0..32)
            .map(|i| u8::from_str_radix(&t[2 * i..2 * i + 2], 16).unwrap_or(0))
            .collect()
    } else {
        STANDARD
            .decode(t)
            .map_err(|_| KeyError::Form("not a key: 64 hex digits or base64 of 32 bytes".into()))?
    };
    bytes
        .try_into()
        .map_err(|_| KeyError::Form("not a key: it must hold 32 bytes".into()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl AuditKey {
    /// A new key from the operating system's randomness.
    pub fn generate() -> AuditKey {
        let mut seed = [0u8; 32];
        // getrandom fails only without an entropy source; a zero key is
        // then refused below rather than used.
        if getrandom::fill(&mut seed).is_err() {
            seed = [0; 32];
        }
        AuditKey(SigningKey::from_bytes(&seed))
    }

    /// The key in `text`: its 32-byte secret as hex or base64.
    pub fn parse(text: &str) -> Result<AuditKey, KeyError> {
        let bytes = key_bytes(text)?;
        if bytes == [0; 32] {
            return Err(KeyError::Form("not a key: all zeros".into()));
        }
        Ok(AuditKey(SigningKey::from_bytes(&bytes)))
    }

    /// The key in the file at `path`.
    pub fn from_file(path: &Path) -> Result<AuditKey, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Read {
            path: path.display().to_string(),
            source,
        })?;
        AuditKey::parse(&text)
    }

    /// The secret, as hex (what [`AuditKey::parse`] reads).
    pub fn secret_hex(&self) -> String {
        hex(self.0.as_bytes())
    }

    /// Its public key.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }
}

/// The public half of an [`AuditKey`], shown as `ed25519:HEX`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// The key in `text` (`ed25519:HEX`, hex or base64 of 32 bytes).
    pub fn parse(text: &str) -> Result<PublicKey, KeyError> {
        let bytes = key_bytes(text)?;
        VerifyingKey::from_bytes(&bytes)
            .map(PublicKey)
            .map_err(|_| KeyError::Form("not an Ed25519 public key".into()))
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ed25519:{}", hex(self.0.as_bytes()))
    }
}

/// Chains records into lines, and seals them.
#[derive(Debug)]
pub struct Sealer {
    anchor: String,
    prev: String,
    records: u64,
    key: Option<AuditKey>,
}

impl Sealer {
    /// A log anchored at `anchor` (for a run, [`anchor_of_grant`]).
    pub fn new(anchor: impl Into<String>) -> Sealer {
        let anchor = anchor.into();
        Sealer {
            prev: anchor.clone(),
            anchor,
            records: 0,
            key: None,
        }
    }

    /// Continue the log whose last line is `last` (a log appended to):
    /// its next segment is anchored at that line's digest.
    pub fn after(last: &str) -> Sealer {
        Sealer::new(digest(last))
    }

    /// Sign each seal with `key`.
    pub fn with_key(mut self, key: AuditKey) -> Sealer {
        self.key = Some(key);
        self
    }

    /// `record` (a JSON object) as one chained line, without the newline.
    /// A record that is not an object is wrapped as `{"record": ...}`.
    pub fn line(&mut self, record: Value) -> String {
        let record = match record {
            Value::Object(mut o) => {
                // Its own `prev`, if it had one, is not the chain's.
                o.remove("prev");
                Value::Object(o)
            }
            other => json!({ "record": other }),
        };
        self.line_text(&record.to_string())
    }

    /// `record` (a JSON object) as one chained line, its `prev` put inside
    /// its object field `field` (an OCSF event's `unmapped`, where a
    /// schema allows what it does not name), without the newline.
    pub fn line_inside(&mut self, mut record: Value, field: &str) -> String {
        if let Some(o) = record.as_object_mut() {
            let inner = o.entry(field.to_string()).or_insert_with(|| json!({}));
            if let Some(inner) = inner.as_object_mut() {
                inner.insert("prev".into(), json!(self.prev));
            }
        }
        let line = record.to_string();
        self.prev = digest(&line);
        self.records += 1;
        line
    }

    /// A record already serialized as a JSON object (`{...}`, its fields in
    /// the order the writer chose, no `prev` of its own) as one chained
    /// line: `prev` is added last.
    pub fn line_text(&mut self, object: &str) -> String {
        // Exactly the object's own closing brace: a last field holding an
        // object keeps its own.
        let whole = object.trim();
        let body = whole.strip_suffix('}').unwrap_or(whole).trim_end();
        let sep = if body.trim_start_matches('{').trim().is_empty() {
            ""
        } else {
            ","
        };
        let line = format!("{body}{sep}\"prev\":\"{}\"}}", self.prev);
        self.prev = digest(&line);
        self.records += 1;
        line
    }

    /// The seal of the records so far, as one line: it ends this segment,
    /// and the next line is anchored at it.
    pub fn seal(&mut self) -> String {
        let mut seal = json!({
            "version": VERSION,
            "anchor": self.anchor,
            "records": self.records,
        });
        if let Some(key) = &self.key {
            let sig = key
                .0
                .sign(message(&self.anchor, self.records, &self.prev).as_bytes());
            seal["key"] = json!(key.public().to_string());
            seal["signature"] = json!(STANDARD.encode(sig.to_bytes()));
        }
        let line = json!({ "seal": seal, "prev": self.prev }).to_string();
        self.prev = digest(&line);
        self.anchor = self.prev.clone();
        self.records = 0;
        line
    }
}

/// One thing wrong with a log.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// The line (1-based) where it shows.
    pub line: usize,
    /// What is wrong, for people.
    pub what: String,
}

/// What [`verify`] found.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Verified {
    /// Records (lines other than seals) read.
    pub records: u64,
    /// Seals read.
    pub seals: u64,
    /// Seals whose signature holds under the key given.
    pub signed: u64,
    /// Everything wrong, in line order; empty when the log is whole.
    pub problems: Vec<Problem>,
}

impl Verified {
    /// Whether the log is whole: every line chained, every record sealed,
    /// every signature checked good (when a key was given).
    pub fn is_whole(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Check a sealed log: the chain line by line, each seal's anchor, count
/// and signature (under `key`, when given: then an unsigned seal is a
/// problem too), and that the log ends with a seal.
pub fn verify(text: &str, key: Option<&PublicKey>) -> Verified {
    let mut out = Verified::default();
    let problem = |line: usize, what: String| Problem { line, what };
    let mut prev: Option<String> = None;
    let mut anchor: Option<String> = None;
    let mut count = 0u64;
    let mut last_line = 0;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        last_line = n;
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                out.problems
                    .push(problem(n, format!("not JSON ({e}): the line was damaged")));
                prev = Some(digest(line));
                continue;
            }
        };
        // At the top, or inside an OCSF event's `unmapped`.
        let claimed = v
            .get("prev")
            .or_else(|| v.get("unmapped").and_then(|u| u.get("prev")))
            .and_then(Value::as_str)
            .map(str::to_string);
        match (&prev, &claimed) {
            (_, None) => out
                .problems
                .push(problem(n, "has no `prev`: not a sealed log's line".into())),
            (Some(p), Some(c)) if p != c => out.problems.push(problem(
                n - 1,
                format!(
                    "line {} was changed, or a line after it removed: line {n}'s `prev` is not its digest",
                    n - 1
                ),
            )),
            _ => {}
        }
        if anchor.is_none() {
            anchor = claimed.clone();
        }
        if let Some(seal) = v.get("seal") {
            out.seals += 1;
            check_seal(seal, n, (&anchor, count, claimed.as_deref()), key, &mut out);
            anchor = None;
            count = 0;
        } else {
            out.records += 1;
            count += 1;
        }
        prev = Some(digest(line));
    }
    if count > 0 || lines.is_empty() {
        out.problems.push(problem(
            last_line,
            if lines.is_empty() {
                "the log is empty: no seal".into()
            } else {
                format!("no seal after line {last_line}: the log was cut there (or is still being written)")
            },
        ));
    }
    out
}

/// Check one seal at line `n` against the segment it ends.
fn check_seal(
    seal: &Value,
    n: usize,
    (anchor, count, last): (&Option<String>, u64, Option<&str>),
    key: Option<&PublicKey>,
    out: &mut Verified,
) {
    let mut found = Vec::new();
    let mut bad = |what: String| found.push(Problem { line: n, what });
    let sealed_anchor = seal.get("anchor").and_then(Value::as_str);
    let records = seal.get("records").and_then(Value::as_u64);
    if anchor.as_deref() != sealed_anchor && count > 0 {
        bad(
            "the segment's first line is not the one sealed: a line was removed from its start"
                .into(),
        );
    }
    if records != Some(count) {
        bad(format!(
            "{} records sealed, {count} found: lines were removed or added",
            records.map_or("no count of".to_string(), |r| r.to_string())
        ));
    }
    let signature = seal.get("signature").and_then(Value::as_str);
    match (key, signature) {
        (None, _) => {}
        (Some(_), None) => bad("the seal is not signed".into()),
        (Some(key), Some(signature)) => {
            let sig = STANDARD
                .decode(signature)
                .ok()
                .and_then(|b| Signature::from_slice(&b).ok());
            let msg = message(
                sealed_anchor.unwrap_or(""),
                records.unwrap_or(0),
                last.unwrap_or(""),
            );
            match sig {
                Some(sig) if key.0.verify(msg.as_bytes(), &sig).is_ok() => out.signed += 1,
                _ => bad(format!("the signature does not hold under {key}")),
            }
        }
    }
    out.problems.extend(found);
}

#[cfg(test)]
mod tests;
