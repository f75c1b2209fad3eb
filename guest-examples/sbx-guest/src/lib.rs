//! Guest side of the `sbx:agent` world: `fetch`, `call_tool` and the
//! key-value store, plus a one-line description of a result for agents
//! that print what happened.

wit_bindgen::generate!({
    path: "../../host/wit",
    world: "agent",
});

pub use sbx::agent::net::{Request, Response};
pub use sbx::agent::types::{Denial, Error};

/// `GET url` through the egress gate.
pub fn get(url: &str) -> Result<Response, Error> {
    sbx::agent::net::fetch(&Request {
        method: "GET".into(),
        url: url.into(),
        headers: Vec::new(),
        body: Vec::new(),
    })
}

/// Any request through the egress gate.
pub fn fetch(req: &Request) -> Result<Response, Error> {
    sbx::agent::net::fetch(req)
}

/// Call a granted tool.
pub fn call_tool(name: &str, input: &str) -> Result<String, Error> {
    sbx::agent::tools::call(name, input)
}

/// The placeholder of the grant's secret `name`: send it in a header the
/// secret is bound to, to a host it is bound to, and the host puts the
/// value in its place. The value itself never reaches the guest.
pub fn secret(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The tools the grant allows.
pub fn granted_tools() -> Vec<String> {
    sbx::agent::tools::granted()
}

/// The run's key-value store (granted by the caps file's `[kv]`).
pub mod kv {
    use super::Error;
    use super::sbx::agent::kv as host;

    /// The value at `key`.
    pub fn get(key: &str) -> Result<Vec<u8>, Error> {
        host::get(key)
    }

    /// Set `key` to `value`.
    pub fn put(key: &str, value: &[u8]) -> Result<(), Error> {
        host::put(key, value)
    }

    /// Remove `key`.
    pub fn delete(key: &str) -> Result<(), Error> {
        host::delete(key)
    }

    /// The keys starting with `prefix`, sorted.
    pub fn list(prefix: &str) -> Result<Vec<String>, Error> {
        host::list(prefix)
    }
}

/// `denied: <violation>` or `failed: <message>`.
pub fn describe(e: &Error) -> String {
    match e {
        Error::Denied(d) => format!("denied: {} ({})", d.violation, d.message),
        Error::Failed(m) => format!("failed: {m}"),
    }
}
