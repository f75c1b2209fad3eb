//! What the network targets (`wasi_http`, `sockets`) share: text built
//! from a target's tricky pieces or taken raw, and a gate over fixed
//! egress rules, made once per process.

use arbitrary::Arbitrary;
use sbx_wasm::{Capabilities, Sandbox};

/// Text as the fuzzer chose it: a run of a target's pieces, or raw.
#[derive(Arbitrary, Debug)]
pub enum Text {
    Pieces(Vec<u8>),
    Raw(String),
}

impl Text {
    /// The text, pieces picked from `pieces`.
    pub fn build(&self, pieces: &[&str]) -> String {
        match self {
            Text::Pieces(idx) => idx
                .iter()
                .map(|i| pieces[*i as usize % pieces.len()])
                .collect(),
            Text::Raw(s) => s.clone(),
        }
    }
}

/// A gate whose grant allows exactly `rules`, kept in `cell`.
pub fn gate<'a>(cell: &'a std::sync::OnceLock<Sandbox>, rules: &[&str]) -> &'a Sandbox {
    cell.get_or_init(|| {
        let caps = rules
            .iter()
            .fold(Capabilities::builder(), |b, r| b.allow_egress(*r))
            .build()
            .unwrap();
        Sandbox::new(caps).unwrap()
    })
}
