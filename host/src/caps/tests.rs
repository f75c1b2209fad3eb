use super::*;
use crate::budget;
use crate::fs::Access;
use std::time::Duration;

struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for d in ["data", "out", "data/nested"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        Tree { dir }
    }
    fn load(&self, text: &str) -> Result<Capabilities, CapsError> {
        let path = self.dir.path().join("caps.toml");
        std::fs::write(&path, text).unwrap();
        Capabilities::from_file(&path)
    }
    fn err(&self, text: &str) -> String {
        self.load(text).unwrap_err().to_string()
    }
}

const SEED: &str = r#"
[fs]
read = [{ host = "data", guest = "/work" }]
write = [{ host = "out", guest = "/work/out/" }]

[net]
allow = ["https://api.internal", "http://127.0.0.1:8080"]

[tools]
allow = ["summarize"]
[tools.command.summarize]
argv = ["wc", "-w"]
timeout_ms = 500

[env]
LANG = "C"

[budget]
max_ops = 7
max_output_bytes = 100000
max_wall_ms = 100
"#;

#[test]
fn seed_caps_load_with_relative_paths_and_defaults() {
    let t = Tree::new();
    let caps = t.load(SEED).unwrap();
    let root = t.dir.path().canonicalize().unwrap();
    assert_eq!(caps.mounts()[0].host, root.join("data"));
    assert_eq!(caps.mounts()[1].guest.as_str(), "/work/out");
    assert_eq!(caps.mounts()[1].access, Access::ReadWrite);
    assert_eq!(caps.egress().rules().len(), 2);
    assert!(caps.tools().contains("summarize"));
    assert_eq!(
        caps.tool_commands()["summarize"].timeout,
        Some(Duration::from_millis(500))
    );
    assert_eq!(
        caps.tool_commands()["summarize"].cwd,
        std::path::absolute(t.dir.path()).unwrap()
    );
    assert_eq!(caps.env()["LANG"], "C");
    let b = caps.budget();
    assert_eq!(
        (b.max_ops, b.max_output_bytes, b.max_wall),
        (7, 100_000, Duration::from_millis(100))
    );
    assert_eq!(b.max_fuel, budget::DEFAULT_MAX_FUEL);
    assert_eq!(b.max_memory_bytes, budget::DEFAULT_MAX_MEMORY_BYTES);
    assert!(caps.warnings().is_empty());
}

#[test]
fn empty_file_grants_nothing() {
    let t = Tree::new();
    let caps = t.load("").unwrap();
    assert!(
        caps.mounts().is_empty() && caps.egress().rules().is_empty() && caps.tools().is_empty()
    );
    assert!(caps.env().is_empty() && !caps.egress().allows_all());
    assert_eq!(*caps.budget(), Budget::default());
}

#[test]
fn effective_grant_round_trips() {
    let t = Tree::new();
    let caps = t.load(SEED).unwrap();
    let again = Capabilities::from_toml(&caps.to_toml(), Path::new("/nonexistent"), None).unwrap();
    assert_eq!(caps, again);
}

#[test]
fn socket_rules_and_listen_addresses_load_and_round_trip() {
    let t = Tree::new();
    let caps = t
        .load(
            "[net]\nallow = [\"udp://127.0.0.1:*\"]\nlisten = [\"127.0.0.1:*\", \"[::1]:8080\"]\n",
        )
        .unwrap();
    let e = caps.egress();
    assert!(e.grants_udp() && e.grants_sockets());
    assert!(e.listen_rule("127.0.0.1:0".parse().unwrap()).is_some());
    assert!(e.listen_rule("[::1]:8081".parse().unwrap()).is_none());
    let again = Capabilities::from_toml(&caps.to_toml(), Path::new("/nonexistent"), None).unwrap();
    assert_eq!(caps, again);
    // No socket rule, no listen address: no socket at all.
    let none = t.load("[net]\nallow = [\"https://x.test\"]\n").unwrap();
    assert!(!none.egress().grants_sockets() && !none.egress().grants_udp());
}

#[test]
fn errors_name_the_file_the_key_and_the_form() {
    let t = Tree::new();
    let cases: &[(&str, &[&str])] = &[
        (
            "[fs]\nreed = []\n",
            &["caps.toml", "unknown field `reed`", "read"],
        ),
        ("[budget]\nmax_opps = 1\n", &["unknown field `max_opps`"]),
        ("[netw]\n", &["unknown field `netw`"]),
        (
            "[budget]\nmax_ops = \"ten\"\n",
            &["max_ops", "invalid type"],
        ),
        (
            "[budget]\nmax_wall_ms = -5\n",
            &["caps.toml", "`budget.max_wall_ms`", "non-negative"],
        ),
        (
            "[budget]\nmax_memory_bytes = 5000000000\n",
            &["`budget.max_memory_bytes`", "4 GiB"],
        ),
        (
            "[budget]\nmax_wall_ms = 100000000000\n",
            &["`budget.max_wall_ms`", "one day"],
        ),
        (
            "[fs]\nread = [{ host = \"missing\", guest = \"/w\" }]\n",
            &["`fs.read[0].host`", "missing", "existing host folder"],
        ),
        (
            "[fs]\nread = [{ host = \"caps.toml\", guest = \"/w\" }]\n",
            &["`fs.read[0].host`", "not a folder"],
        ),
        (
            "[fs]\nread = [{ host = \"data\", guest = \"work\" }]\n",
            &["`fs.read[0].guest`", "absolute"],
        ),
        (
            "[fs]\nread = [{ host = \"data\", guest = \"/a/../b\" }]\n",
            &["`fs.read[0].guest`", ".."],
        ),
        (
            "[fs]\nread = [{ host = \"data\", guest = \"/\" }]\nwrite = [{ host = \"out\", guest = \"//\" }]\n",
            &["`fs.write[0].guest`", "already mounted"],
        ),
        (
            "[fs]\nread = [{ host = \"data\", guest = \"/w\" }]\nwrite = [{ host = \"out\", guest = \"/w/\" }]\n",
            &["`fs.write[0].guest`", "already mounted"],
        ),
        (
            "[fs]\nread = [{ host = \"data/nested\", guest = \"/r\" }]\nwrite = [{ host = \"data\", guest = \"/w\" }]\n",
            &["`fs.read`", "inside write mount"],
        ),
        (
            "[net]\nallow = [\"ftp://x.com\"]\n",
            &[
                "`net.allow[0]`",
                "http, https, tcp or udp",
                "scheme://host[:port]",
            ],
        ),
        (
            "[net]\nlisten = [\"0.0.0.0:8080\"]\n",
            &["`net.listen[0]`", "not a loopback address", "127.0.0.1:*"],
        ),
        (
            "[net]\nallow = [\"https://x.com/path\"]\n",
            &["`net.allow[0]`"],
        ),
        (
            "[tools]\nallow = [\"Bad Name\"]\n",
            &["`tools.allow[0]`", "a-z"],
        ),
        (
            "[tools.command.x]\nargv = []\n",
            &["`tools.command.x.argv`", "empty"],
        ),
        ("[env]\n\"A=B\" = \"x\"\n", &["`env.A=B`"]),
        ("not toml at all", &["caps.toml"]),
    ];
    for (text, needles) in cases {
        let msg = t.err(text);
        for n in *needles {
            assert!(msg.contains(n), "for {text:?}: {msg:?} lacks {n:?}");
        }
    }
}

#[test]
fn allow_all_egress_needs_the_dangerous_door_and_warns() {
    let t = Tree::new();
    let caps = t.load("[net]\ndangerous_allow_all = true\n").unwrap();
    assert!(caps.egress().allows_all());
    assert!(caps.warnings()[0].contains("dangerous_allow_all"));
    let built = Capabilities::builder()
        .dangerous()
        .allow_all_egress()
        .build()
        .unwrap();
    assert!(built.egress().allows_all() && !built.warnings().is_empty());
    assert!(
        !Capabilities::builder()
            .build()
            .unwrap()
            .egress()
            .allows_all()
    );
}

#[test]
fn command_for_an_unlisted_tool_warns() {
    let t = Tree::new();
    let caps = t.load("[tools.command.x]\nargv = [\"true\"]\n").unwrap();
    assert!(
        caps.warnings()[0].contains("not in tools.allow"),
        "{:?}",
        caps.warnings()
    );
}

#[test]
fn builder_resolves_relative_hosts_against_base_dir() {
    let t = Tree::new();
    let caps = Capabilities::builder()
        .base_dir(t.dir.path())
        .read_mount("data", "/work")
        .build()
        .unwrap();
    assert_eq!(
        caps.mounts()[0].host,
        t.dir.path().canonicalize().unwrap().join("data")
    );
    let err = Capabilities::builder()
        .base_dir(t.dir.path())
        .read_mount("nope", "/w")
        .build();
    assert!(err.unwrap_err().to_string().contains("fs.read[0].host"));
}

#[test]
fn a_folder_may_be_granted_at_the_root_with_mounts_below_it() {
    let t = Tree::new();
    let caps = t
        .load("[fs]\nread = [{ host = \"data\", guest = \"/\" }]\nwrite = [{ host = \"out\", guest = \"/out\" }]\n")
        .unwrap();
    let guests: Vec<&str> = caps.mounts().iter().map(|m| m.guest.as_str()).collect();
    assert_eq!(guests, ["/", "/out"]);
}

#[test]
fn fuel_can_be_off_for_a_wall_only_grant_and_renders_back() {
    let t = Tree::new();
    let caps = t
        .load("[budget]\nmax_fuel = \"off\"\nmax_wall_ms = 500\n")
        .unwrap();
    assert!(!caps.budget().meter_fuel);
    assert_eq!(crate::report::Limits::from(caps.budget()).fuel, None);
    assert!(caps.to_toml().contains("max_fuel = \"off\""));
    let again = Capabilities::from_toml(&caps.to_toml(), t.dir.path(), None).unwrap();
    assert_eq!(again, caps);
    // The neighbours: a count meters fuel; any other word is refused.
    let metered = t.load("[budget]\nmax_fuel = 7\n").unwrap();
    assert!(metered.budget().meter_fuel && metered.budget().max_fuel == 7);
    assert!(t.err("[budget]\nmax_fuel = \"lots\"\n").contains("\"off\""));
}
