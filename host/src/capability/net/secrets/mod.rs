//! Secrets that never enter the sandbox. A secret is bound to egress rules
//! (`hosts`) and header names (`headers`); the guest sees only a per-run
//! placeholder (an env var of the secret's name). On each fetch hop the
//! gate puts the value in place of the placeholder in a bound header of a
//! request to a bound host, and nowhere else; before a response reaches
//! the guest, every copy of the value (plain, base64, URL-encoded) is put
//! back to the placeholder.
//!
//! Plans may write `{{secret:NAME}}` instead of the placeholder (a plan is
//! written before the run, so it cannot know the run's placeholder); both
//! forms are substituted under the same rules.

pub(crate) mod config;

use super::EgressRule;
use crate::digest::hex;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::Arc;
use url::Url;

/// Where a secret's value came from (rendered back into a caps file
/// instead of the value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretSource {
    /// An environment variable of the host process.
    Env(String),
    /// A file (absolute path).
    File(std::path::PathBuf),
    /// A value given in Rust ([`crate::CapabilitiesBuilder::secret`]).
    Value,
}

/// One secret of a grant. Its value is never printed (`Debug` shows the
/// name only) and never handed to the guest.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    pub(crate) name: String,
    pub(crate) value: String,
    pub(crate) source: SecretSource,
    pub(crate) hosts: Vec<EgressRule>,
    /// Lowercase header names.
    pub(crate) headers: Vec<String>,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .field("value", &"<redacted>")
            .field("hosts", &self.hosts)
            .field("headers", &self.headers)
            .finish()
    }
}

impl Secret {
    /// The name (also the guest's env var holding the placeholder).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The egress rules of the hosts it may be sent to.
    pub fn hosts(&self) -> &[EgressRule] {
        &self.hosts
    }
    /// The header names it may be sent in (lowercase).
    pub fn headers(&self) -> &[String] {
        &self.headers
    }
    /// Where the value came from.
    pub fn source(&self) -> &SecretSource {
        &self.source
    }
}

/// A secret with this run's placeholder, and the encodings of its value
/// that echo protection looks for.
struct Bound {
    secret: Secret,
    placeholder: String,
    /// `{{secret:NAME}}`.
    alias: String,
    /// (encoded value, what replaces it), longest first.
    echoes: Vec<(Vec<u8>, Vec<u8>)>,
}

/// A run's secrets with their placeholders. Cheap to clone.
#[derive(Clone, Default)]
pub struct RunSecrets(Arc<Vec<Bound>>);

impl fmt::Debug for RunSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|b| &b.secret.name))
            .finish()
    }
}

/// What substitution did to one request (names only).
#[derive(Debug, Default)]
pub(crate) struct Substituted {
    /// Secrets put into the request.
    pub(crate) used: Vec<String>,
    /// "NAME: why not" for each placeholder left as it was.
    pub(crate) refused: Vec<String>,
}

impl RunSecrets {
    /// Bind `secrets` for one run: fresh random placeholders, or, for a
    /// deterministic run, placeholders derived from `seed` (so its output
    /// is reproducible; still not the value).
    pub(crate) fn bind(secrets: &[Secret], seed: Option<u64>) -> RunSecrets {
        if secrets.is_empty() {
            // Most grants hold none: one empty list for every such run,
            // not an allocation each run keeps to its end.
            static NONE: std::sync::OnceLock<Arc<Vec<Bound>>> = std::sync::OnceLock::new();
            return RunSecrets(NONE.get_or_init(Arc::default).clone());
        }
        let bound = secrets
            .iter()
            .map(|s| {
                let tag = match seed {
                    Some(seed) => {
                        let mut h = Sha256::new();
                        h.update(seed.to_le_bytes());
                        h.update(s.name.as_bytes());
                        hex(&h.finalize()[..16])
                    }
                    None => {
                        let mut b = [0u8; 16];
                        // No randomness from the OS is no secrets at all:
                        // a fixed placeholder would be guessable, but the
                        // value still never leaves; fall back to the time.
                        if getrandom::fill(&mut b).is_err() {
                            let t = std::time::SystemTime::now()
                                .duration_since(std::time::UNIX_EPOCH)
                                .unwrap_or_default();
                            b = Sha256::digest(format!("{t:?}{}", s.name)).as_slice()[..16]
                                .try_into()
                                .unwrap_or_default();
                        }
                        hex(&b)
                    }
                };
                let placeholder = format!("SBX_SECRET_{}_{tag}", s.name);
                Bound {
                    echoes: echoes(&s.value, &placeholder),
                    alias: format!("{{{{secret:{}}}}}", s.name),
                    placeholder,
                    secret: s.clone(),
                }
            })
            .collect();
        RunSecrets(Arc::new(bound))
    }

    /// Whether the run has no secrets.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each secret's name and this run's placeholder (what the guest's env
    /// var of that name holds).
    pub fn placeholders(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|b| (b.secret.name.clone(), b.placeholder.clone()))
            .collect()
    }

    /// The headers to send to `url`: a placeholder (or `{{secret:NAME}}`)
    /// in a bound header of a request to a bound host becomes the value;
    /// anywhere else it stays, and why is noted. `body` is only looked at.
    pub(crate) fn substitute(
        &self,
        url: &Url,
        headers: &[(String, String)],
        body: &[u8],
    ) -> (Vec<(String, String)>, Substituted) {
        let mut done = Substituted::default();
        let mut out = headers.to_vec();
        for b in self.0.iter() {
            let mut used = false;
            let host_ok = b.secret.hosts.iter().any(|r| r.matches(url));
            for (k, v) in out.iter_mut() {
                if !v.contains(&b.placeholder) && !v.contains(&b.alias) {
                    continue;
                }
                let header_ok = b.secret.headers.iter().any(|h| h.eq_ignore_ascii_case(k));
                if header_ok && host_ok {
                    *v = v
                        .replace(&b.placeholder, &b.secret.value)
                        .replace(&b.alias, &b.secret.value);
                    used = true;
                } else if !header_ok {
                    done.refused.push(format!(
                        "{}: header {k} is not one it may be sent in",
                        b.secret.name
                    ));
                } else {
                    done.refused.push(format!(
                        "{}: {} is not a host it may be sent to",
                        b.secret.name,
                        url.origin().ascii_serialization()
                    ));
                }
            }
            let in_url = url.as_str().contains(&b.placeholder) || url.as_str().contains(&b.alias);
            if in_url {
                done.refused
                    .push(format!("{}: placeholder in the URL", b.secret.name));
            }
            if contains(body, b.placeholder.as_bytes()) || contains(body, b.alias.as_bytes()) {
                done.refused
                    .push(format!("{}: placeholder in the body", b.secret.name));
            }
            if used {
                done.used.push(b.secret.name.clone());
            }
        }
        (out, done)
    }

    /// Put every copy of a value (plain, base64, URL-encoded) in `bytes`
    /// back to its placeholder; the names of the secrets found.
    pub(crate) fn redact(&self, bytes: &mut Vec<u8>) -> Vec<String> {
        let mut found = Vec::new();
        for b in self.0.iter() {
            let mut hit = false;
            for (from, to) in &b.echoes {
                if let Some(replaced) = replace_all(bytes, from, to) {
                    *bytes = replaced;
                    hit = true;
                }
            }
            if hit {
                found.push(b.secret.name.clone());
            }
        }
        found
    }

    /// The names of the secrets whose value appears in `text` in any form
    /// [`RunSecrets::redact`] knows (plain, base64, percent-encoded), also
    /// once `text` is percent-decoded (`+` as a space or not): a URL may
    /// spell a value with any mix of escapes. For a redirect hop, which
    /// must never carry a value away in its URL.
    pub(crate) fn found_in(&self, text: &str) -> Vec<String> {
        let decoded = percent_decode(text.as_bytes());
        let spaced = percent_decode(text.replace('+', " ").as_bytes());
        let forms = [text.as_bytes(), &decoded, &spaced];
        self.0
            .iter()
            .filter(|b| {
                b.echoes
                    .iter()
                    .any(|(from, _)| forms.iter().any(|f| contains(f, from)))
            })
            .map(|b| b.secret.name.clone())
            .collect()
    }

    /// [`RunSecrets::redact`] for text.
    pub(crate) fn redact_text(&self, text: &mut String) -> Vec<String> {
        let mut bytes = std::mem::take(text).into_bytes();
        let found = self.redact(&mut bytes);
        *text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        found
    }
}

/// The forms of `value` echo protection replaces, each by the
/// placeholder, longest first: the value; its base64 (standard and
/// URL-safe), also where it sits at any offset inside a longer encoded
/// text (the part of the encoding only the value's bytes decide: all but
/// at most two bytes at each end); its percent-encodings (every
/// non-alphanumeric byte, or the unreserved or form characters kept;
/// upper- and lowercase hex; `+` for a space); and JSON's `\/`.
fn echoes(value: &str, placeholder: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let v = value.as_bytes();
    let mut forms: Vec<Vec<u8>> = vec![v.to_vec()];
    for engine in [STANDARD, URL_SAFE] {
        forms.push(engine.encode(v).into_bytes());
    }
    for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
        for shift in 0..3.min(v.len()) {
            let rest = &v[shift..];
            let whole = rest.len() / 3 * 3;
            // Short cores would match unrelated text.
            if whole >= 6 {
                forms.push(engine.encode(&rest[..whole]).into_bytes());
            }
        }
    }
    for keep in [&b""[..], b"-._~", b"*-._"] {
        for upper in [true, false] {
            let mut enc = String::new();
            for &c in v {
                if c.is_ascii_alphanumeric() || keep.contains(&c) {
                    enc.push(c as char);
                } else if c == b' ' && keep == b"*-._" {
                    enc.push('+');
                } else if upper {
                    enc += &format!("%{c:02X}");
                } else {
                    enc += &format!("%{c:02x}");
                }
            }
            forms.push(enc.into_bytes());
        }
    }
    if value.contains('/') {
        forms.push(value.replace('/', "\\/").into_bytes());
    }
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms.dedup();
    let to = placeholder.as_bytes().to_vec();
    forms.into_iter().map(|f| (f, to.clone())).collect()
}

/// `bytes` with every `%XX` escape decoded (a bad escape stays as it is).
fn percent_decode(bytes: &[u8]) -> Vec<u8> {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && memchr::memmem::find(hay, needle).is_some()
}

/// `hay` with every `from` replaced by `to`, or `None` when there is none.
/// Linear in `hay` (a response may be as large as the output budget).
fn replace_all(hay: &[u8], from: &[u8], to: &[u8]) -> Option<Vec<u8>> {
    if from.is_empty() {
        return None;
    }
    let mut hits = memchr::memmem::find_iter(hay, from).peekable();
    hits.peek()?;
    let mut out = Vec::with_capacity(hay.len());
    let mut at = 0;
    for i in hits {
        if i < at {
            continue;
        }
        out.extend_from_slice(&hay[at..i]);
        out.extend_from_slice(to);
        at = i + from.len();
    }
    out.extend_from_slice(&hay[at..]);
    Some(out)
}

#[cfg(test)]
mod tests;
