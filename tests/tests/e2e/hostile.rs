//! Hostile cases beyond the seed: symlinks planted inside mounts, absolute
//! and odd paths, NUL bytes, very long paths, sibling-prefix folders, floods
//! of denied ops, misbehaving tools and servers. Each denial sits beside the
//! allowed neighbour that proves the denial is not just "everything fails".

use sbx_wasm::Services;
use sbx_wasm::tools::{CommandTool, ToolError, ToolRegistry};
use sbx_wasm::{ErrorKind, Output};
use sbx_wasm::{MonotonicClock, Op, Sandbox, SandboxedAgent, Status, Violation};
use sbx_wasm_tests::{DATA, LoopbackServer, World, assert_denied};
use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn plain(w: &World) -> Sandbox {
    Sandbox::new(w.caps_builder().build().unwrap()).unwrap()
}

#[test]
fn symlinks_planted_inside_a_mount_cannot_lead_out() {
    let w = World::new();
    symlink("../etc/passwd", w.path("work/rel_link")).unwrap();
    symlink(w.path("etc/passwd"), w.path("work/abs_link")).unwrap();
    symlink("../workshop", w.path("work/ws")).unwrap();
    symlink("data.txt", w.path("work/alias")).unwrap();
    let mut sb = plain(&w);
    let before = w.snapshot();
    assert_denied(&sb.run(Op::read("/work/rel_link")), Violation::FsReadDenied);
    assert_denied(&sb.run(Op::read("/work/abs_link")), Violation::FsReadDenied);
    assert_denied(
        &sb.run(Op::read("/work/ws/secret.txt")),
        Violation::FsReadDenied,
    );
    assert_denied(&sb.run(Op::list("/work/ws")), Violation::FsReadDenied);
    assert_denied(&sb.run(Op::stat("/work/abs_link")), Violation::FsReadDenied);
    // Neighbour: a symlink that stays inside the mount works.
    let r = sb.run(Op::read("/work/alias"));
    assert!(
        matches!(&r.output, Some(Output::Data { content }) if content.0 == DATA.as_bytes()),
        "{r:?}"
    );
    assert_eq!(w.snapshot(), before);
}

#[test]
fn symlinks_in_a_write_mount_cannot_carry_writes_out() {
    let w = World::new();
    symlink("../../workshop", w.path("work/out/escape_dir")).unwrap();
    symlink("../../workshop/secret.txt", w.path("work/out/link_file")).unwrap();
    let mut sb = plain(&w);
    let secret = std::fs::read(w.path("workshop/secret.txt")).unwrap();
    assert_denied(
        &sb.run(Op::write("/work/out/escape_dir/pwned.txt", "x")),
        Violation::FsWriteDenied,
    );
    assert_denied(
        &sb.run(Op::mkdir("/work/out/escape_dir/sub")),
        Violation::FsWriteDenied,
    );
    assert!(!w.path("workshop/pwned.txt").exists());
    assert!(!w.path("workshop/sub").exists());
    // Writing to a symlink replaces the link, never its target.
    let r = sb.run(Op::write("/work/out/link_file", "replaced"));
    assert!(r.ok, "{r:?}");
    assert_eq!(
        std::fs::read(w.path("workshop/secret.txt")).unwrap(),
        secret
    );
    let md = std::fs::symlink_metadata(w.path("work/out/link_file")).unwrap();
    assert!(md.is_file());
    // Removing a symlinked folder removes the link only.
    assert!(sb.run(Op::remove("/work/out/escape_dir")).ok);
    assert!(w.path("workshop/secret.txt").exists());
}

#[test]
fn absolute_and_odd_paths_outside_mounts_are_denied() {
    let w = World::new();
    let mut sb = plain(&w);
    for p in [
        "//etc/passwd",
        "/./etc/passwd",
        "/WORK/data.txt",
        "/work.bak/data.txt",
        "/",
        "/wor",
    ] {
        assert_denied(&sb.run(Op::read(p)), Violation::FsReadDenied);
    }
    for p in [
        "/work/./../etc/passwd",
        "/work/out/..",
        "/..",
        "/work\\..\\etc",
    ] {
        assert_denied(&sb.run(Op::read(p)), Violation::PathTraversal);
    }
    assert!(sb.run(Op::read("//work//data.txt")).ok);
}

#[test]
fn nul_bytes_and_overlong_paths_are_invalid_requests() {
    let w = World::new();
    let mut sb = plain(&w);
    assert_denied(
        &sb.run(Op::read("/work/data.txt\0.png")),
        Violation::InvalidRequest,
    );
    assert_denied(
        &sb.run(Op::write("/work/out/a\0b", "x")),
        Violation::InvalidRequest,
    );
    let overlong = format!("/work/{}", "a".repeat(5000));
    assert_denied(&sb.run(Op::read(overlong)), Violation::InvalidRequest);
    // Long but legal: the gate allows it and the OS reports the failure.
    let long_name = format!("/work/out/{}", "b".repeat(300));
    let r = sb.run(Op::write(long_name, "x"));
    assert!(!r.ok && r.denial.is_none() && r.error.is_some(), "{r:?}");
    assert!(sb.run(Op::read("/work/data.txt")).ok);
}

#[test]
fn sibling_prefix_host_folders_stay_out_of_reach() {
    let w = World::new();
    // Mount `work`; its host sibling `workshop` shares the prefix.
    let mut sb = plain(&w);
    let before = w.snapshot();
    assert_denied(
        &sb.run(Op::read("/workshop/secret.txt")),
        Violation::FsReadDenied,
    );
    assert_denied(
        &sb.run(Op::read("/work/../workshop/secret.txt")),
        Violation::PathTraversal,
    );
    assert_denied(
        &sb.run(Op::write("/workshop/x", "x")),
        Violation::FsWriteDenied,
    );
    assert_eq!(w.snapshot(), before);
    assert!(sb.run(Op::list("/work")).ok);
}

#[test]
fn ten_thousand_denied_ops_are_counted_then_halted() {
    let w = World::new();
    let mut agent = SandboxedAgent::new(plain(&w));
    let before = w.snapshot();
    let ops = (0..10_001).map(|i| match i % 4 {
        0 => Op::read(format!("/etc/guess{i}")),
        1 => Op::read(format!("/work/../x{i}")),
        2 => Op::write(format!("/work/w{i}"), "x"),
        _ => Op::fetch(format!("http://evil{i}.example/")),
    });
    let run = agent.run_all(ops);
    assert_eq!(run.stopped_reason, Status::HardLimit);
    assert_eq!(run.results.len(), 10_001);
    assert!(run.results[..10_000].iter().all(|r| !r.ok && !r.hard()));
    assert_eq!(run.results[10_000].violation(), Some(Violation::MaxOps));
    assert_eq!(agent.sandbox().audit().len(), 10_001);
    assert_eq!(run.report.denials.len(), 10_001);
    assert_eq!(w.snapshot(), before);
}

#[test]
fn writes_are_atomic_and_leave_no_temp_files() {
    let w = World::new();
    let mut sb = plain(&w);
    assert!(sb.run(Op::write("/work/out/r.txt", "first")).ok);
    assert!(sb.run(Op::write("/work/out/r.txt", "second")).ok);
    assert_eq!(
        std::fs::read_to_string(w.path("work/out/r.txt")).unwrap(),
        "second"
    );
    // A failed write (missing parent) leaves nothing behind.
    let r = sb.run(Op::write("/work/out/missing/r.txt", "x"));
    assert_eq!(
        r.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::NotFound),
        "{r:?}"
    );
    // A write over a folder fails and leaves the folder as it was.
    std::fs::create_dir(w.path("work/out/adir")).unwrap();
    let r = sb.run(Op::write("/work/out/adir", "x"));
    assert!(r.error.is_some(), "{r:?}");
    assert!(w.path("work/out/adir").is_dir());
    let names: Vec<_> = std::fs::read_dir(w.path("work/out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".sbx-")),
        "temp left: {names:?}"
    );
    // mkdir then write below it works.
    assert!(sb.run(Op::mkdir("/work/out/reports/q3")).ok);
    assert!(sb.run(Op::write("/work/out/reports/q3/s.txt", "x")).ok);
}

#[test]
fn mount_points_cannot_be_removed_or_overwritten() {
    let w = World::new();
    let mut sb = plain(&w);
    let r = sb.run(Op::remove("/work/out"));
    assert_eq!(
        r.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::MountPoint),
        "{r:?}"
    );
    let r = sb.run(Op::write("/work/out", "x"));
    assert_eq!(
        r.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::MountPoint),
        "{r:?}"
    );
    assert!(w.path("work/out").is_dir());
    // The read-only parent mount cannot be removed either: it is not writable.
    assert_denied(&sb.run(Op::remove("/work")), Violation::FsWriteDenied);
}

#[test]
fn nested_write_mount_is_readable_and_listable() {
    let w = World::new();
    let mut sb = plain(&w);
    assert!(sb.run(Op::write("/work/out/r.txt", "abc")).ok);
    let r = sb.run(Op::read("/work/out/r.txt"));
    assert!(matches!(&r.output, Some(Output::Data { content }) if content.0 == b"abc"));
    let r = sb.run(Op::list("/work/out"));
    assert!(
        matches!(&r.output, Some(Output::Entries { entries }) if entries.len() == 1 && entries[0].name == "r.txt"),
        "{r:?}"
    );
    assert!(sb.run(Op::remove("/work/out/r.txt")).ok);
    assert!(!w.path("work/out/r.txt").exists());
}

#[test]
fn misbehaving_tools_give_structured_errors() {
    let w = World::new();
    let caps = w
        .caps_builder()
        .allow_tool("boom")
        .allow_tool("fails")
        .build()
        .unwrap();
    let mut tools = ToolRegistry::new();
    tools.register("boom", |_: &str| -> Result<String, ToolError> {
        panic!("tool bug")
    });
    tools.register("fails", |_: &str| {
        Err::<String, _>(ToolError::Failed("bad input".into()))
    });
    tools.register("summarize", |s: &str| {
        Ok::<_, ToolError>(s.len().to_string())
    });
    let mut sb = Sandbox::builder(caps)
        .services(Services::new().tools(tools))
        .build()
        .unwrap();
    for name in ["boom", "fails"] {
        let r = sb.run(Op::tool(name, "x"));
        assert!(!r.ok && r.denial.is_none(), "{r:?}");
        assert_eq!(r.error.as_ref().unwrap().kind, ErrorKind::ToolFailed);
    }
    assert!(sb.halted().is_none());
    assert!(sb.run(Op::tool("summarize", "abc")).ok);
}

#[test]
fn command_tool_runs_and_is_killed_at_the_wall_budget() {
    let w = World::new();
    let caps = w
        .caps_builder()
        .allow_tool("count")
        .allow_tool("hang")
        .max_wall(Duration::from_millis(300))
        .build()
        .unwrap();
    let tool = |argv: &[&str]| CommandTool {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: w.root().to_path_buf(),
        timeout: None,
        ..CommandTool::default()
    };
    let mut tools = ToolRegistry::new();
    tools.register("count", tool(&["wc", "-w"]));
    tools.register("hang", tool(&["sleep", "30"]));
    let mut sb = Sandbox::builder(caps)
        .services(
            Services::new()
                .tools(tools)
                .clock(Arc::new(MonotonicClock::new())),
        )
        .build()
        .unwrap();
    let r = sb.run(Op::tool("count", "one two three"));
    assert!(
        matches!(&r.output, Some(Output::ToolOutput { output }) if output.trim() == "3"),
        "{r:?}"
    );
    let t = Instant::now();
    let r = sb.run(Op::tool("hang", ""));
    assert_eq!(r.violation(), Some(Violation::MaxWall), "{r:?}");
    assert!(r.hard());
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "the tool was not stopped"
    );
}

#[test]
fn fetch_limits_hold_against_a_real_server() {
    let w = World::new();
    let server = LoopbackServer::start();
    let caps = w
        .caps_builder()
        .allow_egress(server.origin())
        .max_output_bytes(1000)
        .build()
        .unwrap();
    let mut sb = plain_with(caps);
    // Redirects are returned, not followed: the gate would have to decide
    // the new URL, and evil.example is not granted.
    let r = sb.run(Op::fetch(format!("{}/redirect", server.origin())));
    assert!(
        matches!(&r.output, Some(Output::Response { status: 302, .. })),
        "{r:?}"
    );
    assert_eq!(server.connections(), 1);
    let r = sb.run(Op::fetch(format!("{}/big", server.origin())));
    assert_eq!(r.violation(), Some(Violation::MaxOutputBytes), "{r:?}");
    assert!(r.hard());
}

fn plain_with(caps: sbx_wasm::Capabilities) -> Sandbox {
    Sandbox::new(caps).unwrap()
}

#[test]
fn a_stalling_server_ends_as_max_wall() {
    let w = World::new();
    let server = LoopbackServer::start();
    let caps = w
        .caps_builder()
        .allow_egress(server.origin())
        .max_wall(Duration::from_millis(300))
        .build()
        .unwrap();
    let mut sb = plain_with(caps);
    let t = Instant::now();
    let r = sb.run(Op::fetch(format!("{}/stall", server.origin())));
    assert_eq!(r.violation(), Some(Violation::MaxWall), "{r:?}");
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(server.connections(), 1);
}

#[test]
fn tool_output_and_listings_count_against_the_output_budget() {
    let w = World::new();
    for i in 0..20 {
        std::fs::write(w.path(&format!("work/file-{i:02}.txt")), "x").unwrap();
    }
    let caps = w
        .caps_builder()
        .allow_tool("flood")
        .max_output_bytes(100)
        .build()
        .unwrap();
    let mut tools = ToolRegistry::new();
    tools.register("flood", |_: &str| Ok::<_, ToolError>("y".repeat(80)));
    let mut sb = Sandbox::builder(caps.clone())
        .services(Services::new().tools(tools.clone()))
        .build()
        .unwrap();
    assert!(sb.run(Op::tool("flood", "")).ok, "80 of 100 bytes fit");
    let r = sb.run(Op::tool("flood", ""));
    assert_eq!(r.violation(), Some(Violation::MaxOutputBytes), "{r:?}");
    assert!(r.hard() && r.output.is_none());
    // 20 names of 11 bytes plus separators overflow 100 bytes.
    let mut sb = Sandbox::builder(caps)
        .services(Services::new().tools(tools))
        .build()
        .unwrap();
    let r = sb.run(Op::list("/work"));
    assert_eq!(r.violation(), Some(Violation::MaxOutputBytes), "{r:?}");
    assert_eq!(sb.usage().output_bytes, 0);
}

#[test]
fn tls_to_a_plain_http_server_is_a_structured_network_error() {
    let w = World::new();
    let server = LoopbackServer::start();
    let url = format!("https://127.0.0.1:{}", server.port);
    let mut sb = plain_with(w.caps_builder().allow_egress(&url).build().unwrap());
    let r = sb.run(Op::fetch(format!("{url}/status")));
    assert_eq!(
        r.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::Network),
        "{r:?}"
    );
    assert!(sb.halted().is_none());
}
