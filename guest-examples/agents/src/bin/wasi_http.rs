//! A standard wasi:http 0.2 client, written against the interface alone
//! (no sbx import): what a component built for any host does. Each
//! argument is one step, `MODE METHOD URL [BODY_BYTES]`:
//! - `first`: `handle` first, then the body written in 4 KiB blocking
//!   writes and finished (the streaming order);
//! - `body-first`: the body written and finished, then `handle`;
//! - `poll`: as `first`, but the answer waited for with `wasi:io/poll`;
//! - `unfinished`: `handle`, part of the body written, never finished,
//!   the answer waited for (a guest that cannot get one);
//! - `forbidden`: a request setting `x-forwarded-for` (`METHOD URL` as
//!   usual; the header is refused before anything is sent);
//! - `authority`: `METHOD AUTHORITY`: a request to `http://AUTHORITY/status`
//!   with the authority set as given;
//! - `secret`: `METHOD URL NAME`: a request whose `authorization` is
//!   `Bearer` and the value of the environment variable NAME (what the
//!   grant gives a guest for a secret: its placeholder); prints the
//!   `x-reflect` header the server answers with in place of the body;
//! - `dropped`: `METHOD URL N`: a request A with an N-byte body handed
//!   on and its future dropped before its body is written; a request B
//!   with a 7-byte body handed on next (its future may take A's place in
//!   the guest's table); both bodies finished, then B's answer waited
//!   for. A must never be sent, nor its answer land in B's future;
//! - `flood`: `METHOD URL N`: N requests one after another; prints how
//!   many were answered;
//! - `follow`: `METHOD URL`: a request, and if the answer is a redirect,
//!   one request to its `location` (as a client that follows redirects);
//! - `timeout`: `METHOD URL [MS]`: a request with connect, first-byte and
//!   between-bytes timeouts of MS milliseconds (default 600 s);
//! - `bodies`: `METHOD URL N`: N requests each asking for its body, none
//!   handed on (a guest piling up bodies on the host); prints how many
//!   were given, then sends one more once they are dropped.
//!
//! Prints one line per step: `N: HTTP STATUS, LEN bytes: BODY...` or
//! `N: error CODE`.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, FutureIncomingResponse, IncomingResponse, Method, OutgoingBody,
    OutgoingRequest, Scheme,
};
use wasip2::io::streams::StreamError;

fn method(m: &str) -> Method {
    match m {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "HEAD" => Method::Head,
        "DELETE" => Method::Delete,
        other => Method::Other(other.to_string()),
    }
}

/// `http://host:port/path?q` into its parts.
fn split(url: &str) -> (Scheme, String, String) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let scheme = if scheme == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    };
    match rest.find('/') {
        Some(i) => (scheme, rest[..i].to_string(), rest[i..].to_string()),
        None => (scheme, rest.to_string(), "/".to_string()),
    }
}

fn new_request(m: &str, url: &str, headers: Fields) -> Result<OutgoingRequest, String> {
    let (scheme, authority, path) = split(url);
    let req = OutgoingRequest::new(headers);
    req.set_method(&method(m)).map_err(|()| "bad method")?;
    req.set_scheme(Some(&scheme)).map_err(|()| "bad scheme")?;
    req.set_authority(Some(&authority))
        .map_err(|()| format!("authority {authority:?} refused by the guest's own types"))?;
    req.set_path_with_query(Some(&path))
        .map_err(|()| "bad path")?;
    Ok(req)
}

fn write_body(body: &OutgoingBody, bytes: usize) -> Result<(), String> {
    let out = body.write().map_err(|()| "no body stream")?;
    let block = [b'a'; 4096];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len());
        out.blocking_write_and_flush(&block[..n])
            .map_err(|e| format!("write failed: {e:?}"))?;
        left -= n;
    }
    Ok(())
}

fn answer(fut: &FutureIncomingResponse, with_poll: bool) -> Result<IncomingResponse, String> {
    loop {
        match fut.get() {
            Some(Ok(Ok(resp))) => return Ok(resp),
            Some(Ok(Err(code))) => return Err(describe(&code)),
            Some(Err(())) => return Err("answer taken twice".into()),
            None if with_poll => {
                let p = fut.subscribe();
                wasip2::io::poll::poll(&[&p]);
            }
            None => fut.subscribe().block(),
        }
    }
}

fn describe(code: &ErrorCode) -> String {
    match code {
        ErrorCode::InternalError(Some(m)) => format!("InternalError({m})"),
        other => format!("{other:?}"),
    }
}

fn read(resp: IncomingResponse) -> Result<(u16, Vec<u8>), String> {
    let status = resp.status();
    let body = resp.consume().map_err(|()| "no body")?;
    let stream = body.stream().map_err(|()| "no body stream")?;
    let mut got = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => got.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(e) => return Err(format!("read failed: {e:?}")),
        }
    }
    drop(stream);
    drop(body);
    Ok((status, got))
}

fn step(line: &str) -> Result<(u16, Vec<u8>), String> {
    let parts: Vec<&str> = line.split(' ').collect();
    let mode = parts[0];
    let m = parts.get(1).copied().unwrap_or("GET");
    let target = parts.get(2).copied().unwrap_or("");
    let bytes: usize = parts.get(3).and_then(|n| n.parse().ok()).unwrap_or(0);
    let headers = Fields::new();
    headers
        .append("user-agent", b"sbx-wasi-http-test")
        .map_err(|e| format!("header refused: {e:?}"))?;
    match mode {
        "forbidden" => {
            return match headers.append("x-forwarded-for", b"10.0.0.1") {
                Err(e) => Err(format!("header refused: {e:?}")),
                Ok(()) => {
                    let req = new_request(m, target, headers)?;
                    let fut = outgoing_handler::handle(req, None).map_err(|e| describe(&e))?;
                    read(answer(&fut, false)?)
                }
            };
        }
        "authority" => {
            let req = OutgoingRequest::new(headers);
            req.set_scheme(Some(&Scheme::Http))
                .map_err(|()| "bad scheme")?;
            req.set_authority(Some(target))
                .map_err(|()| format!("authority {target:?} refused by the guest's own types"))?;
            req.set_path_with_query(Some("/status"))
                .map_err(|()| "bad path")?;
            let fut = outgoing_handler::handle(req, None).map_err(|e| describe(&e))?;
            return read(answer(&fut, false)?);
        }
        "secret" => {
            let name = parts.get(3).copied().unwrap_or("");
            let value = std::env::var(name).unwrap_or_default();
            headers
                .append("authorization", format!("Bearer {value}").as_bytes())
                .map_err(|e| format!("header refused: {e:?}"))?;
            let req = new_request(m, target, headers)?;
            let fut = outgoing_handler::handle(req, None).map_err(|e| describe(&e))?;
            // What the server echoed of the header, in place of the body.
            let resp = answer(&fut, false)?;
            let echo: Vec<u8> = resp
                .headers()
                .get("x-reflect")
                .into_iter()
                .flatten()
                .collect();
            let (status, _) = read(resp)?;
            return Ok((status, [b"x-reflect=".as_slice(), &echo].concat()));
        }
        "dropped" => {
            // A: handed on, its future dropped, its body not yet written.
            let a = new_request(m, target, Fields::new())?;
            let a_body = a.body().map_err(|()| "no body")?;
            drop(outgoing_handler::handle(a, None).map_err(|e| describe(&e))?);
            // B: handed on next (its future may take A's freed place).
            let b = new_request(m, target, Fields::new())?;
            let b_body = b.body().map_err(|()| "no body")?;
            let fut = outgoing_handler::handle(b, None).map_err(|e| describe(&e))?;
            // Both bodies finished, then B's answer waited for: the door
            // sees both bodies whole while the guest waits.
            write_body(&a_body, bytes)?;
            OutgoingBody::finish(a_body, None).map_err(|e| describe(&e))?;
            write_body(&b_body, 7)?;
            OutgoingBody::finish(b_body, None).map_err(|e| describe(&e))?;
            return read(answer(&fut, false)?);
        }
        "flood" => {
            let mut answered = 0;
            for _ in 0..bytes {
                let req = new_request(m, target, Fields::new())?;
                match outgoing_handler::handle(req, None) {
                    Ok(fut) if answer(&fut, false).is_ok() => answered += 1,
                    _ => {}
                }
            }
            println!("flood: {answered} answered");
            return Ok((0, Vec::new()));
        }
        "follow" => {
            let req = new_request(m, target, Fields::new())?;
            let fut = outgoing_handler::handle(req, None).map_err(|e| describe(&e))?;
            let resp = answer(&fut, false)?;
            let location: Vec<u8> = resp
                .headers()
                .get("location")
                .into_iter()
                .flatten()
                .collect();
            let (status, body) = read(resp)?;
            if !(300..400).contains(&status) || location.is_empty() {
                return Ok((status, body));
            }
            let next = String::from_utf8_lossy(&location).into_owned();
            println!("redirected to {next}");
            let req = new_request(m, &next, Fields::new())?;
            let fut = outgoing_handler::handle(req, None).map_err(|e| describe(&e))?;
            return read(answer(&fut, false)?);
        }
        "timeout" => {
            use wasip2::http::types::RequestOptions;
            let options = RequestOptions::new();
            let ms = if bytes > 0 { bytes as u64 } else { 600_000 };
            let long = ms * 1_000_000;
            let _ = options.set_connect_timeout(Some(long));
            let _ = options.set_first_byte_timeout(Some(long));
            let _ = options.set_between_bytes_timeout(Some(long));
            let req = new_request(m, target, headers)?;
            let fut = outgoing_handler::handle(req, Some(options)).map_err(|e| describe(&e))?;
            return read(answer(&fut, false)?);
        }
        "bodies" => {
            let mut kept = Vec::new();
            let mut refused = 0;
            for _ in 0..bytes {
                let req = new_request(m, target, Fields::new())?;
                match req.body() {
                    Ok(body) => kept.push((req, body)),
                    Err(()) => refused += 1,
                }
            }
            println!("bodies: {} given, {refused} refused", kept.len());
            drop(kept);
            let req = new_request(m, target, headers)?;
            let fut = outgoing_handler::handle(req, None).map_err(|e| describe(&e))?;
            return read(answer(&fut, false)?);
        }
        _ => {}
    }
    let req = new_request(m, target, headers)?;
    let body = req.body().map_err(|()| "no body")?;
    match mode {
        "body-first" => {
            write_body(&body, bytes)?;
            OutgoingBody::finish(body, None).map_err(|e| describe(&e))?;
            let fut = outgoing_handler::handle(req, None).map_err(|e| describe(&e))?;
            read(answer(&fut, false)?)
        }
        "unfinished" => {
            let fut = outgoing_handler::handle(req, None).map_err(|e| describe(&e))?;
            write_body(&body, bytes)?;
            let r = answer(&fut, false);
            drop(body);
            read(r?)
        }
        _ => {
            let fut = outgoing_handler::handle(req, None).map_err(|e| describe(&e))?;
            // A body the broker refuses to take whole closes its stream;
            // the answer then says why.
            let written = write_body(&body, bytes);
            let finished =
                written.and_then(|()| OutgoingBody::finish(body, None).map_err(|e| describe(&e)));
            let r = answer(&fut, mode == "poll");
            match (finished, r) {
                (_, Ok(resp)) => read(resp),
                (Err(w), Err(a)) => Err(format!("{a} (body: {w})")),
                (Ok(()), Err(a)) => Err(a),
            }
        }
    }
}

fn main() {
    for (n, line) in std::env::args().skip(1).enumerate() {
        match step(&line) {
            Ok((status, body)) => {
                let text = String::from_utf8_lossy(&body[..body.len().min(60)]).into_owned();
                println!("{n}: HTTP {status}, {} bytes: {text}", body.len());
            }
            Err(e) => println!("{n}: error {e}"),
        }
    }
}
