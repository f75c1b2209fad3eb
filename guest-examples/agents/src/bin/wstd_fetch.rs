//! An HTTP client written with `wstd` (the Bytecode Alliance's async
//! standard library for components), unmodified: what an agent's tool
//! component built for any wasi:http host does. Each argument is one URL,
//! fetched with GET; a redirect is followed (wstd's client does not follow
//! them itself, so the program does, as such programs do), at most 3 hops.
//!
//! Prints one line per URL: `N: STATUS BYTES` or `N: error ERROR`.

use wstd::http::{Body, Client, Request};

async fn fetch(client: &Client, url: &str) -> Result<String, wstd::http::Error> {
    let mut url = url.to_string();
    for _ in 0..3 {
        let request = Request::get(url.as_str()).body(Body::empty())?;
        let mut response = client.send(request).await?;
        let status = response.status();
        if status.is_redirection()
            && let Some(next) = response.headers().get("location")
        {
            url = next.to_str().unwrap_or_default().to_string();
            continue;
        }
        let body = response.body_mut().contents().await?;
        return Ok(format!("{} {}", status.as_u16(), body.len()));
    }
    Ok("too many redirects".to_string())
}

#[wstd::main]
async fn main() {
    let client = Client::new();
    for (i, url) in std::env::args().skip(1).enumerate() {
        match fetch(&client, &url).await {
            Ok(line) => println!("{i}: {line}"),
            Err(e) => println!("{i}: error {e:?}"),
        }
    }
}
