//! What an allowed op produced: one [`Output`] variant per kind of result
//! the capabilities give back, and [`Content`], bytes that survive JSON.

use crate::fs::{Entry, Stat};
use crate::net::FetchResponse;
use base64::Engine as _;
use serde::{Deserialize, Serialize, Serializer};

/// Bytes shown as `{"text": ...}` when they are UTF-8 and `{"base64": ...}`
/// otherwise, so nothing is lost in JSON.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "ContentRepr")]
pub struct Content(pub Vec<u8>);

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ContentRepr {
    Text(String),
    Base64(String),
}

impl TryFrom<ContentRepr> for Content {
    type Error = String;
    fn try_from(r: ContentRepr) -> Result<Self, String> {
        match r {
            ContentRepr::Text(s) => Ok(Content(s.into_bytes())),
            ContentRepr::Base64(s) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map(Content)
                .map_err(|e| format!("invalid base64: {e}")),
        }
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(t) => ContentRepr::Text(t.to_string()).serialize(s),
            Err(_) => {
                ContentRepr::Base64(base64::engine::general_purpose::STANDARD.encode(&self.0))
                    .serialize(s)
            }
        }
    }
}

/// What an allowed operation produced.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Output {
    /// File content.
    Data {
        /// The bytes read.
        content: Content,
    },
    /// A write landed.
    Written {
        /// Bytes written.
        bytes: u64,
    },
    /// A folder's entries, sorted by name.
    Entries {
        /// The entries.
        entries: Vec<Entry>,
    },
    /// Metadata.
    Stat {
        /// The metadata.
        stat: Stat,
    },
    /// The file or folder is gone.
    Removed,
    /// The folder exists.
    Created,
    /// An HTTP response.
    Response {
        /// Status code.
        status: u16,
        /// Headers.
        headers: Vec<(String, String)>,
        /// Body.
        body: Content,
    },
    /// A tool's output.
    ToolOutput {
        /// The output.
        output: String,
    },
    /// Keys of a key-value store, sorted.
    Keys {
        /// The keys.
        keys: Vec<String>,
    },
    /// Allowed; the effect is performed elsewhere (WASI in the wasm host).
    Admitted,
    /// The addresses a name lookup found.
    Addresses {
        /// The addresses, in the resolver's order.
        addresses: Vec<std::net::IpAddr>,
    },
}

impl Output {
    pub(crate) fn response(r: FetchResponse) -> Output {
        Output::Response {
            status: r.status,
            headers: r.headers,
            body: Content(r.body),
        }
    }

    /// Bytes this output returns to the caller (charged to
    /// `max_output_bytes`).
    pub fn charged_bytes(&self) -> u64 {
        match self {
            Output::Data { content } => content.0.len() as u64,
            Output::Entries { entries } => entries.iter().map(|e| e.name.len() as u64 + 1).sum(),
            Output::Response { headers, body, .. } => {
                crate::net::header_bytes(headers) + body.0.len() as u64
            }
            Output::ToolOutput { output } => output.len() as u64,
            Output::Keys { keys } => keys.iter().map(|k| k.len() as u64 + 1).sum(),
            Output::Written { .. }
            | Output::Stat { .. }
            | Output::Removed
            | Output::Created
            | Output::Admitted
            | Output::Addresses { .. } => 0,
        }
    }

    /// What the output is, in one short line for a person (`12 bytes
    /// "hello…"`, `HTTP 200, 5 bytes "…"`, `removed`): the CLI's summary
    /// of each result. Previews are escaped and cut at 32 characters, so
    /// no control byte reaches a terminal.
    pub fn summary(&self) -> String {
        match self {
            Output::Data { content } => {
                format!("{} bytes {}", content.0.len(), preview(&content.0))
            }
            Output::Written { bytes } => format!("wrote {bytes} bytes"),
            Output::Entries { entries } => format!("{} entries", entries.len()),
            Output::Stat { stat } => format!("{}, {} bytes", stat.kind, stat.size),
            Output::Removed => "removed".into(),
            Output::Created => "created".into(),
            Output::Response { status, body, .. } => {
                format!("HTTP {status}, {} bytes {}", body.0.len(), preview(&body.0))
            }
            Output::ToolOutput { output } => format!("output {}", preview(output.as_bytes())),
            Output::Keys { keys } => format!("{} keys", keys.len()),
            Output::Admitted => "admitted".into(),
            Output::Addresses { addresses } => format!("{} addresses", addresses.len()),
        }
    }
}

/// `bytes` as a quoted, escaped preview of at most 32 characters.
fn preview(bytes: &[u8]) -> String {
    let escaped: String = String::from_utf8_lossy(bytes).escape_debug().collect();
    format!("\"{}\"", crate::bound::shorten(&escaped, 32))
}
