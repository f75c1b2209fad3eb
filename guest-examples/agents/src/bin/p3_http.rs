//! A WASI 0.3 HTTP guest, built with the `wasip3` bindings: both a command
//! and a service, so one component tries both of the host's 0.3 HTTP doors.
//!
//! As a command (`wasi:cli/run@0.3.0`), it fetches each URL among its
//! arguments through `wasi:http/client@0.3.0` and prints a line for each:
//! `URL: STATUS BODY` or `URL: Err(CODE)`. A URL written `MS@URL` is asked
//! for with connect and first-byte timeouts of MS milliseconds. An
//! argument `pile:N@URL` sends N POSTs to URL at once with their bodies
//! held open, then ends them: `pile:N@URL: R refused at once (FIRST); then
//! A answered`.
//!
//! As a service (`wasi:http/handler@0.3.0`):
//! - `/fetch?URL`: fetches URL through the client and answers with its
//!   status and body, or 502 with the error code;
//! - `/big?N`: answers N bytes of `x`, written after the answer is handed
//!   back (a body the host reads as it streams);
//! - anything else: 200 `hello from 0.3: PATH`.

#![no_main]

use wasip3::http::types::{ErrorCode, Fields, Method, Request, RequestOptions, Response, Scheme};
use wasip3::{wit_future, wit_stream};

struct P3Http;

wasip3::cli::command::export!(P3Http);
wasip3::http::service::export!(P3Http);

impl wasip3::exports::cli::run::Guest for P3Http {
    async fn run() -> Result<(), ()> {
        let args = wasip3::cli::environment::get_arguments();
        for arg in args.iter().skip(1) {
            if let Some((n, url)) = arg.strip_prefix("pile:").and_then(|a| a.split_once('@')) {
                println!("{arg}: {}", pile(n.parse().unwrap_or(1), url).await);
                continue;
            }
            let (timeout, url) = match arg.split_once('@') {
                Some((ms, url)) if ms.bytes().all(|b| b.is_ascii_digit()) => (ms.parse().ok(), url),
                _ => (None, arg.as_str()),
            };
            match fetch_within(url, timeout).await {
                Ok((status, body)) => {
                    println!("{url}: {status} {}", String::from_utf8_lossy(&body))
                }
                Err(code) => println!("{url}: Err({code:?})"),
            }
        }
        Ok(())
    }
}

impl wasip3::exports::http::handler::Guest for P3Http {
    async fn handle(request: Request) -> Result<Response, ErrorCode> {
        let path = request.get_path_with_query().unwrap_or_default();
        let (status, body) = if let Some(url) = path.strip_prefix("/fetch?") {
            match fetch(url).await {
                Ok(got) => got,
                Err(code) => (502, format!("Err({code:?})").into_bytes()),
            }
        } else if path == "/hang" {
            // Waits an hour before answering: only the request's wall
            // budget ends it.
            wasip3::clocks::monotonic_clock::wait_for(3_600_000_000_000).await;
            (200, b"an hour later".to_vec())
        } else if let Some(n) = path.strip_prefix("/big?") {
            (200, vec![b'x'; n.parse().unwrap_or(0)])
        } else {
            (200, format!("hello from 0.3: {path}").into_bytes())
        };
        let (mut contents, rx) = wit_stream::new();
        let (trailers_tx, trailers) = wit_future::new(|| Ok(None));
        drop(trailers_tx);
        let (response, _sent) = Response::new(Fields::new(), Some(rx), trailers);
        response
            .set_status_code(status)
            .map_err(|()| ErrorCode::InternalError(Some(format!("status {status} refused"))))?;
        // The body is written after the answer is handed back.
        wasip3::spawn_local(async move {
            let _ = contents.write_all(body).await;
        });
        Ok(response)
    }
}

/// A GET of `url` (`http://AUTHORITY/PATH`): its status and whole body.
async fn fetch(url: &str) -> Result<(u16, Vec<u8>), ErrorCode> {
    fetch_within(url, None).await
}

/// [`fetch`], with connect and first-byte timeouts of `ms` milliseconds.
async fn fetch_within(url: &str, ms: Option<u64>) -> Result<(u16, Vec<u8>), ErrorCode> {
    let options = ms.map(|ms| {
        let o = RequestOptions::new();
        let ns = Some(ms.saturating_mul(1_000_000));
        let _ = o.set_connect_timeout(ns);
        let _ = o.set_first_byte_timeout(ns);
        o
    });
    let request = request(url, Method::Get, None, options)?;
    let response = wasip3::http::client::send(request).await?;
    let status = response.get_status_code();
    let (_, done) = wit_future::new(|| Ok(()));
    let (body, _trailers) = Response::consume_body(response, done);
    Ok((status, body.collect().await))
}

/// A request for `url` (`SCHEME://AUTHORITY/PATH`) with `body`, if any.
fn request(
    url: &str,
    method: Method,
    body: Option<wasip3::wit_bindgen::rt::async_support::StreamReader<u8>>,
    options: Option<RequestOptions>,
) -> Result<Request, ErrorCode> {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let (trailers_tx, trailers) = wit_future::new(|| Ok(None));
    drop(trailers_tx);
    let (request, _sent) = Request::new(Fields::new(), body, trailers, options);
    let scheme = match scheme {
        "https" => Scheme::Https,
        _ => Scheme::Http,
    };
    let bad = |what: &str| ErrorCode::InternalError(Some(format!("{what} refused")));
    request.set_method(&method).map_err(|()| bad("method"))?;
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| bad("scheme"))?;
    request
        .set_authority(Some(authority))
        .map_err(|()| bad("authority"))?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| bad("path"))?;
    Ok(request)
}

/// `pile:N@URL`: N POSTs to URL sent at once, each body held open (a
/// guest piling requests up on the host); after a moment, how many were
/// refused at once and the first refusal; then the bodies ended (empty),
/// and how many were answered.
async fn pile(n: usize, url: &str) -> String {
    use std::cell::RefCell;
    use std::rc::Rc;
    let results: Rc<RefCell<Vec<Result<u16, ErrorCode>>>> = Rc::default();
    let mut bodies = Vec::new();
    for _ in 0..n {
        let (tx, rx) = wit_stream::new();
        let request = match request(url, Method::Post, Some(rx), None) {
            Ok(r) => r,
            Err(code) => return format!("Err({code:?})"),
        };
        bodies.push(tx);
        let results = results.clone();
        wasip3::spawn_local(async move {
            let got = wasip3::http::client::send(request).await;
            results
                .borrow_mut()
                .push(got.map(|response| response.get_status_code()));
        });
    }
    let wait = |ms: u64| wasip3::clocks::monotonic_clock::wait_for(ms * 1_000_000);
    wait(300).await;
    let (refused, first) = {
        let r = results.borrow();
        let refused: Vec<&ErrorCode> = r.iter().filter_map(|r| r.as_ref().err()).collect();
        (refused.len(), refused.first().map(|c| format!("{c:?}")))
    };
    drop(bodies);
    for _ in 0..500 {
        if results.borrow().len() == n {
            break;
        }
        wait(10).await;
    }
    let answered = results.borrow().iter().filter(|r| r.is_ok()).count();
    format!(
        "{refused} refused at once ({}); then {answered} answered",
        first.unwrap_or_default()
    )
}
