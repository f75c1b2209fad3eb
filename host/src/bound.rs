//! Size bounds on what a guest hands the host, and on what the host keeps of
//! it.
//!
//! `max_memory_bytes` bounds the guest's own memory; these bound the host's.
//! Every string or buffer a guest passes to a host call (a path, a URL, a
//! header, a body, a tool name or input) is measured against its bound
//! *before* the host copies or records it; past the bound the op is
//! `invalid_request` (still charged to `max_ops` and audited). And whatever
//! the op, an audit or denial record keeps at most [`MAX_RECORD_TARGET_BYTES`]
//! of its target, so the audit of a run is at most `max_ops` records of
//! bounded size, however long the strings the guest passes.

use sha2::{Digest, Sha256};

/// Longest URL accepted by `net_fetch`, in bytes.
pub const MAX_URL_BYTES: usize = 64 * 1024;
/// Longest tool name accepted by `tool_call`, in bytes.
pub const MAX_TOOL_NAME_BYTES: usize = 256;
/// Largest tool input accepted by `tool_call`, in bytes.
pub const MAX_TOOL_INPUT_BYTES: usize = 10 * 1024 * 1024;
/// Most bytes of an op's target (path, URL, tool name) kept in an audit or
/// denial record; a longer target is cut there and marked with its full
/// length and a SHA-256 prefix, so two records of the same long target still
/// compare equal.
pub const MAX_RECORD_TARGET_BYTES: usize = 1024;
/// Most bytes of a guest-supplied string quoted inside a message.
pub const MAX_QUOTED_BYTES: usize = 256;

/// The longest prefix of `s` of at most `max` bytes that ends on a character
/// boundary.
fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `s` as an audit record keeps it: whole when it fits
/// [`MAX_RECORD_TARGET_BYTES`], else its first bytes, an ellipsis, its full
/// length and the first 12 hex digits of its SHA-256.
///
/// # Examples
///
/// ```
/// use sbx_wasm::bound::{record_target, MAX_RECORD_TARGET_BYTES};
///
/// assert_eq!(record_target("/work/a.txt"), "/work/a.txt");
/// let long = format!("/work/{}", "a".repeat(8 << 20));
/// let kept = record_target(&long);
/// assert!(kept.len() < MAX_RECORD_TARGET_BYTES + 64);
/// assert!(kept.contains("(8388614 bytes, sha256 "));
/// ```
pub fn record_target(s: &str) -> String {
    if s.len() <= MAX_RECORD_TARGET_BYTES {
        return s.to_string();
    }
    let digest = Sha256::digest(s.as_bytes());
    let hex = crate::digest::hex(&digest[..6]);
    format!(
        "{}… ({} bytes, sha256 {hex})",
        prefix(s, MAX_RECORD_TARGET_BYTES),
        s.len()
    )
}

/// [`record_target`] of a string the caller is done with: moved into the
/// record as it is when it fits (no copy), cut like any other when not.
pub(crate) fn record_target_owned(s: String) -> String {
    if s.len() <= MAX_RECORD_TARGET_BYTES {
        return s;
    }
    record_target(&s)
}

/// `s` quoted for a message, cut at [`MAX_QUOTED_BYTES`] (the message never
/// repeats a long target; the record's target field holds it, bounded).
pub fn quote(s: &str) -> String {
    Quoted(s).to_string()
}

/// [`quote`] as a value to format into a message: written straight into
/// it, with no string of its own (a denial on a hot path, such as a tool
/// refused on every call, formats one message, not two).
pub(crate) struct Quoted<'a>(pub(crate) &'a str);

impl std::fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0;
        if s.len() <= MAX_QUOTED_BYTES {
            write!(f, "{s:?}")
        } else {
            write!(f, "{:?}… ({} bytes)", prefix(s, MAX_QUOTED_BYTES), s.len())
        }
    }
}

/// `s` cut at [`MAX_QUOTED_BYTES`] with an ellipsis, unquoted (for paths in
/// messages).
pub fn clip(s: impl AsRef<str>) -> String {
    clip_to(s.as_ref(), MAX_QUOTED_BYTES)
}

/// `s` cut to at most `max` bytes on a character boundary, with an
/// ellipsis when cut.
pub(crate) fn clip_to(s: &str, max: usize) -> String {
    if s.len() <= max {
        s.to_string()
    } else {
        format!("{}…", prefix(s, max))
    }
}

/// `s` in at most `max` characters for a one-line summary: control
/// characters shown as `?`, and a longer `s` cut with an ellipsis.
///
/// ```
/// use sbx_wasm::bound::shorten;
///
/// assert_eq!(shorten("a\tb", 8), "a?b");
/// assert_eq!(shorten("abcdefgh", 4), "abc…");
/// ```
pub fn shorten(s: &str, max: usize) -> String {
    let s: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if s.chars().count() <= max {
        s
    } else {
        let head: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{head}…")
    }
}

/// `s` safe to print to a terminal or to write into a comment: every
/// control character (C0, DEL, C1: a CR that returns the cursor, an ESC
/// that starts a terminal sequence, a newline that ends a TOML comment) and
/// every bidirectional override is written `\u{..}` instead. What a guest
/// chose (a path, a URL, a message) goes through this before the command
/// line shows it.
///
/// ```
/// use sbx_wasm::bound::printable;
///
/// assert_eq!(printable("/work/a.txt"), "/work/a.txt");
/// assert_eq!(printable("a\rb\x1b[2Jc"), "a\\u{d}b\\u{1b}[2Jc");
/// ```
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            out += &format!("\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_targets_are_cut_on_a_char_boundary_and_fingerprinted() {
        let s = "é".repeat(MAX_RECORD_TARGET_BYTES); // 2 bytes each
        let kept = record_target(&s);
        assert!(kept.starts_with(&"é".repeat(MAX_RECORD_TARGET_BYTES / 2)));
        assert!(kept.contains(&format!("({} bytes, sha256 ", s.len())));
        assert_eq!(record_target(&s), kept, "same target, same record");
        let mut other = s.clone();
        other.push('x');
        assert_ne!(record_target(&other), kept);
        let exact = "a".repeat(MAX_RECORD_TARGET_BYTES);
        assert_eq!(record_target(&exact), exact);
    }

    #[test]
    fn quotes_are_bounded() {
        assert_eq!(quote("a\"b"), "\"a\\\"b\"");
        let q = quote(&"x".repeat(1 << 20));
        assert!(q.len() < MAX_QUOTED_BYTES + 40, "{}", q.len());
        assert!(q.ends_with("(1048576 bytes)"));
    }
}
