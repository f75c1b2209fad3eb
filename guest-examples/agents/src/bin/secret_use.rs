//! Uses a secret the way an agent would, and tries to leak it the way an
//! injected one would. Arguments: the secret's name, the bound URL, a
//! second URL (granted, not bound). Prints what it saw; the host's records
//! say what was sent.

fn show(what: &str, r: Result<sbx_guest::Response, sbx_guest::Error>) {
    match r {
        Ok(resp) => {
            let echo = resp
                .headers
                .iter()
                .find(|(k, _)| k == "x-reflect")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            println!("{what}: HTTP {} x-reflect={echo}", resp.status);
            println!("{what} body: {}", String::from_utf8_lossy(&resp.body));
        }
        Err(e) => println!("{what}: {}", sbx_guest::describe(&e)),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (name, bound, other) = (&args[1], &args[2], &args[3]);
    let placeholder = sbx_guest::secret(name).unwrap_or_default();
    println!("env {name}={placeholder}");
    let request = |url: &str, header: &str| sbx_guest::Request {
        method: "POST".into(),
        url: url.into(),
        headers: vec![(header.into(), format!("Bearer {placeholder}"))],
        body: format!("body={placeholder}").into_bytes(),
    };
    show("bound", sbx_guest::fetch(&request(bound, "Authorization")));
    show("other header", sbx_guest::fetch(&request(bound, "X-Leak")));
    show(
        "other host",
        sbx_guest::fetch(&request(other, "Authorization")),
    );
    let in_url = format!("{other}?t={placeholder}");
    show("in url", sbx_guest::get(&in_url));
    // An injected agent writes the placeholder to a file: harmless.
    let _ = std::fs::write("/work/out/leak.txt", &placeholder);
}
