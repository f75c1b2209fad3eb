//! An HTTP app as an agent would write one: a component exporting
//! `wasi:http/incoming-handler` 0.2 and no `wasi:cli/run` (a library, as
//! componentize-py's, componentize-js's and Spin's HTTP apps are), for
//! `sbx-wasm serve`. Routes:
//! - `/hello`: 200 and a greeting with the method and the request body's
//!   length;
//! - `/read?PATH`: 200 and the file at PATH (a guest path), or 403 and why;
//! - `/fetch?URL`: a GET of URL through wasi:http; 200 and its status, or
//!   502 and the error code;
//! - `/big?N`: 200 and N bytes;
//! - `/spin`: never answers;
//! - anything else: 404.
//!
//! Each request logs one line to stderr.

use std::io::Write as _;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingRequest, OutgoingResponse,
    ResponseOutparam, Scheme,
};

wasip2::http::proxy::export!(Service);

struct Service;

fn answer(out: ResponseOutparam, status: u16, body: &[u8]) {
    let headers = Fields::new();
    let _ = headers.append("content-type", b"text/plain");
    let resp = OutgoingResponse::new(headers);
    let _ = resp.set_status_code(status);
    let outgoing = resp.body().expect("a body");
    ResponseOutparam::set(out, Ok(resp));
    let mut stream = outgoing.write().expect("a stream");
    for chunk in body.chunks(4096) {
        if stream.write_all(chunk).is_err() {
            return;
        }
    }
    let _ = stream.flush();
    drop(stream);
    let _ = OutgoingBody::finish(outgoing, None);
}

fn body_len(req: &IncomingRequest) -> usize {
    let Ok(body) = req.consume() else { return 0 };
    let Ok(stream) = body.stream() else { return 0 };
    let mut n = 0;
    while let Ok(chunk) = stream.blocking_read(64 * 1024) {
        n += chunk.len();
    }
    n
}

fn fetch(url: &str) -> Result<u16, String> {
    let (scheme, rest) = url.split_once("://").ok_or("no scheme")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let req = OutgoingRequest::new(Fields::new());
    let _ = req.set_method(&Method::Get);
    let _ = req.set_scheme(Some(&if scheme == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    }));
    req.set_authority(Some(authority))
        .map_err(|()| "bad authority")?;
    req.set_path_with_query(Some(path))
        .map_err(|()| "bad path")?;
    let fut = outgoing_handler::handle(req, None).map_err(|e| format!("{e:?}"))?;
    loop {
        match fut.get() {
            Some(Ok(Ok(resp))) => return Ok(resp.status()),
            Some(Ok(Err(e))) => return Err(format!("{e:?}")),
            Some(Err(())) => return Err("taken".into()),
            None => fut.subscribe().block(),
        }
    }
}

impl wasip2::exports::http::incoming_handler::Guest for Service {
    fn handle(request: IncomingRequest, out: ResponseOutparam) {
        let target = request.path_with_query().unwrap_or_default();
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        eprintln!("service: {path}");
        match path {
            "/hello" => {
                let method = format!("{:?}", request.method());
                let n = body_len(&request);
                answer(
                    out,
                    200,
                    format!("hello from the sandbox: {method} with {n} bytes").as_bytes(),
                )
            }
            "/read" => match std::fs::read(query) {
                Ok(bytes) => answer(out, 200, &bytes),
                Err(e) => answer(out, 403, format!("refused: {e}").as_bytes()),
            },
            "/fetch" => match fetch(query) {
                Ok(status) => answer(out, 200, format!("upstream said {status}").as_bytes()),
                Err(e) => answer(out, 502, format!("upstream: {e}").as_bytes()),
            },
            "/big" => {
                let n: usize = query.parse().unwrap_or(0);
                answer(out, 200, &vec![b'x'; n])
            }
            "/spin" =>
            {
                #[allow(clippy::empty_loop)]
                loop {}
            }
            _ => answer(out, 404, b"no such route"),
        }
    }
}
