//! Guest side of the `sbx:agent` world: `fetch` and `call_tool`, plus a
//! one-line description of a result for agents that print what happened.

wit_bindgen::generate!({
    path: "../../wit",
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

/// `denied: <violation>` or `failed: <message>`.
pub fn describe(e: &Error) -> String {
    match e {
        Error::Denied(d) => format!("denied: {} ({})", d.violation, d.message),
        Error::Failed(m) => format!("failed: {m}"),
    }
}
