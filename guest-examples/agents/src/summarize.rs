//! A summarising agent's work, shared by its naive and its fixed version:
//! fetch the page named by the first argument, print its first line as the
//! summary, and follow the page's `more: URL` lines for detail.

/// Run the agent; `same_origin_only` is the fix: follow a `more:` link only
/// when it stays on the first page's origin.
pub fn run(same_origin_only: bool) {
    let url = std::env::args().nth(1).unwrap_or_default();
    let page = match sbx_guest::get(&url) {
        Ok(r) => String::from_utf8_lossy(&r.body).into_owned(),
        Err(e) => {
            println!("cannot fetch {url}: {}", sbx_guest::describe(&e));
            return;
        }
    };
    println!("summary: {}", page.lines().next().unwrap_or("(empty page)"));
    let first = origin(&url);
    for line in page.lines() {
        let Some(link) = line.strip_prefix("more: ") else {
            continue;
        };
        let link = link.trim();
        if same_origin_only && origin(link) != first {
            println!("not following {link}: another site");
            continue;
        }
        match sbx_guest::get(link) {
            Ok(r) => println!("more ({} bytes)", r.body.len()),
            Err(e) => println!("more: {}", sbx_guest::describe(&e)),
        }
    }
}

/// `scheme://host[:port]` of a URL, as text (enough for the example).
fn origin(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return String::new();
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    format!("{scheme}://{host}")
}
