//! Evidence, not decision: fingerprints of labelled bytes the gate saw
//! (file contents read through it, responses, tool results), in the forms
//! an agent would send them (as they are, hex, percent-encoded, base64 at
//! each of its three alignments, standard and URL-safe), and the search
//! for them in what a run sends. A match is noted in the send's audit
//! record; it never decides anything: encoding the data otherwise (or
//! compressing, or splitting it) defeats it, and the mark is what
//! enforces.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use std::collections::HashMap;

/// Bytes of a fingerprint: a shorter match is too likely by chance.
const WINDOW: usize = 16;
/// The most fingerprints a run keeps (8 bytes each, plus the map's).
const MAX_PRINTS: usize = 1 << 18;
/// The most bytes of one source fingerprinted.
const MAX_SOURCE: usize = 1 << 20;
/// The most texts shorter than a window kept whole.
const MAX_SHORT: usize = 4096;

/// The fingerprints of one run.
#[derive(Default)]
pub(crate) struct Prints {
    /// Window hash to (label index, form).
    map: HashMap<u64, (u16, &'static str)>,
    /// Texts shorter than a window, whole, with their label index and form.
    short: Vec<(Vec<u8>, u16, &'static str)>,
    labels: Vec<String>,
    /// Some source was not fingerprinted whole.
    pub(crate) partial: bool,
}

/// FNV-1a: small, and good enough to find a 16-byte window again.
fn hash(w: &[u8]) -> u64 {
    w.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn hex(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .flat_map(|b| format!("{b:02x}").into_bytes())
        .collect()
}

/// Every byte but the unreserved ones as `%XX` (what `encodeURIComponent`
/// and `urllib.parse.quote(s, safe="")` make; `+` for a space is not
/// covered).
fn percent(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() * 3);
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~".contains(b) {
            out.push(*b);
        } else {
            out.extend(format!("%{b:02X}").into_bytes());
        }
    }
    out
}

/// The forms labelled bytes may leave in, each named.
fn forms(bytes: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut out = vec![
        ("as read", bytes.to_vec()),
        ("hex", hex(bytes)),
        ("percent-encoded", percent(bytes)),
    ];
    for skip in 0..3.min(bytes.len()) {
        // The padding changes with the length sent: left out.
        let plain = STANDARD.encode(&bytes[skip..]);
        let url = URL_SAFE.encode(&bytes[skip..]);
        if url != plain {
            out.push(("base64url", url.trim_end_matches('=').as_bytes().to_vec()));
        }
        out.push(("base64", plain.trim_end_matches('=').as_bytes().to_vec()));
    }
    out
}

impl Prints {
    /// Fingerprint `bytes`, read with `label`.
    pub(crate) fn add(&mut self, label: &str, bytes: &[u8]) {
        if bytes.len() < WINDOW / 2 {
            return;
        }
        let bytes = if bytes.len() > MAX_SOURCE {
            self.partial = true;
            &bytes[..MAX_SOURCE]
        } else {
            bytes
        };
        let index = match self.labels.iter().position(|l| l == label) {
            Some(i) => i,
            None => {
                self.labels.push(label.to_string());
                self.labels.len() - 1
            }
        };
        let index = u16::try_from(index).unwrap_or(u16::MAX);
        for (form, text) in forms(bytes) {
            if text.len() < WINDOW {
                // A text shorter than a window is one fingerprint, whole.
                if self.short.len() < MAX_SHORT {
                    self.short.push((text, index, form));
                } else {
                    self.partial = true;
                }
                continue;
            }
            for w in text.windows(WINDOW) {
                if self.map.len() >= MAX_PRINTS {
                    self.partial = true;
                    return;
                }
                self.map.entry(hash(w)).or_insert((index, form));
            }
        }
    }

    /// The label and form of the first fingerprint found in `out`.
    pub(crate) fn find(&self, out: &[u8]) -> Option<(String, &'static str)> {
        let named =
            |i: u16, form: &'static str| Some((self.labels.get(usize::from(i))?.clone(), form));
        let windowed = (!self.map.is_empty() && out.len() >= WINDOW)
            .then(|| {
                out.windows(WINDOW).find_map(|w| {
                    let (i, form) = self.map.get(&hash(w))?;
                    named(*i, form)
                })
            })
            .flatten();
        windowed.or_else(|| {
            self.short.iter().find_map(|(text, i, form)| {
                memchr::memmem::find(out, text).and_then(|_| named(*i, form))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_labelled_bytes_in_each_form_and_not_in_unrelated_ones() {
        let mut p = Prints::default();
        let secret = b"alice,42,alice@example.com,+1-555-0100\nbob,17,bob@example.com";
        p.add("customer", secret);
        let inner = &secret[5..40];
        let sent: Vec<(Vec<u8>, &str)> = vec![
            (
                format!("q={}", String::from_utf8_lossy(inner)).into_bytes(),
                "as read",
            ),
            (hex(inner), "hex"),
            (percent(inner), "percent-encoded"),
            (STANDARD.encode(&secret[3..]).into_bytes(), "base64"),
            (URL_SAFE.encode(&secret[1..]).into_bytes(), "base64"),
        ];
        for (out, form) in sent {
            let (label, found) = p.find(&out).unwrap_or_default();
            assert_eq!(label, "customer", "{}", String::from_utf8_lossy(&out));
            assert!(found.starts_with(form), "{found} for {form}");
        }
        // A short file is kept whole, in each form, padding left out.
        p.add("pin", b"4711-0815");
        let sent = format!("GET /?pin={}=", STANDARD.encode("4711-0815"));
        assert_eq!(p.find(sent.as_bytes()), Some(("pin".into(), "base64")));
        assert_eq!(p.find(b"the weather in paris is mild today"), None);
        assert_eq!(p.find(b""), None);
    }

    #[test]
    fn keeps_a_bounded_number_of_prints() {
        let mut p = Prints::default();
        let big: Vec<u8> = (0..(MAX_SOURCE + 10))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        p.add("big", &big);
        assert!(p.map.len() <= MAX_PRINTS);
        assert!(p.partial);
    }
}
