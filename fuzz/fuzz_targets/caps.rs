//! Arbitrary text into the caps loader. Oracle: it never panics, and every
//! accepted file round-trips (`to_toml` then load) to the same grant.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sbx_wasm::Capabilities;
use std::path::Path;
use std::sync::OnceLock;

fn base() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        for sub in ["data", "out", "data/inner"] {
            std::fs::create_dir_all(d.path().join(sub)).unwrap();
        }
        d
    })
    .path()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(caps) = Capabilities::from_toml(text, base(), None) {
        let again = Capabilities::from_toml(&caps.to_toml(), Path::new("/nonexistent"), None)
            .unwrap_or_else(|e| panic!("effective grant does not load: {e}\n{}", caps.to_toml()));
        assert_eq!(caps, again, "round trip changed the grant");
    }
});
