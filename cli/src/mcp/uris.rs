//! Resource URIs: a guest path as `sbx://` and percent-encoded segments
//! (`/work/a b.txt` is `sbx://work/a%20b.txt`), and back. No `super::`
//! here: the door's fuzz target includes this file as it is.

/// The scheme of every resource the door lists.
const SCHEME: &str = "sbx://";
/// Characters a URI segment keeps as they are: RFC 3986's unreserved.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The URI of the guest path `path`.
pub(crate) fn uri(path: &str) -> String {
    let segments: Vec<String> = (path.split('/').filter(|s| !s.is_empty()))
        .map(|s| percent_encoding::utf8_percent_encode(s, SEGMENT).to_string())
        .collect();
    format!("{SCHEME}{}", segments.join("/"))
}

/// The guest path `uri` names, or why it names none. What the path may
/// reach is the gate's to decide (`..` included).
pub(crate) fn guest_path(uri: &str) -> Result<String, String> {
    let rest = uri
        .strip_prefix(SCHEME)
        .ok_or_else(|| format!("not a resource of this server: its URIs begin {SCHEME}"))?;
    let mut path = String::new();
    for segment in rest.split('/').filter(|s| !s.is_empty()) {
        let decoded = percent_encoding::percent_decode_str(segment)
            .decode_utf8()
            .map_err(|_| "the URI's path is not UTF-8 once decoded".to_string())?;
        if decoded.contains(['/', '\0']) {
            return Err("a URI segment may not encode '/' or NUL".into());
        }
        path.push('/');
        path.push_str(&decoded);
    }
    Ok(if path.is_empty() { "/".into() } else { path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_path_and_its_uri_round_trip() {
        for path in ["/work/a.txt", "/work/a b/c%d.csv", "/work/é.txt", "/"] {
            assert_eq!(guest_path(&uri(path)).unwrap(), path, "{}", uri(path));
        }
        assert_eq!(uri("/work/a b.txt"), "sbx://work/a%20b.txt");
        // What the gate decides is left to it; what no path can be is not.
        assert_eq!(guest_path("sbx://work/../etc").unwrap(), "/work/../etc");
        assert!(guest_path("sbx://work/a%2Fb").is_err());
        assert!(guest_path("sbx://work/a%00").is_err());
        assert!(guest_path("sbx://work/%FF").is_err());
        assert!(guest_path("file:///etc/passwd").is_err());
    }
}
