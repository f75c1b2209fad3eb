//! One spelling for every digest the library writes: compiled-artifact
//! names and sums, the digest that marks a cut audit target, secret
//! placeholders, a recording's file and blob names.

use sha2::{Digest, Sha256};

/// `bytes` as lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}
