//! Name resolution, as a seam: the decision resolves a name exactly once and
//! the connection goes to the address that was checked, never to a second
//! lookup's answer (DNS rebinding gets nowhere).

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::Duration;

/// Turns a host name into addresses.
pub trait Resolve: Send + Sync {
    /// Every address of `host`, within `timeout`.
    fn lookup(&self, host: &str, timeout: Duration) -> io::Result<Vec<IpAddr>>;
}

/// The operating system's resolver (`getaddrinfo`), run on a helper thread
/// so a slow lookup cannot outlive the wall budget.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn lookup(&self, host: &str, timeout: Duration) -> io::Result<Vec<IpAddr>> {
        let (tx, rx) = mpsc::channel();
        let name = format!("{host}:0");
        std::thread::spawn(move || {
            let answer = name
                .to_socket_addrs()
                .map(|it| it.map(|sa| sa.ip()).collect::<Vec<_>>());
            let _ = tx.send(answer);
        });
        match rx.recv_timeout(timeout) {
            Ok(answer) => answer,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "name lookup timed out",
            )),
        }
    }
}

/// Fixed answers, for tests and for pinning names to addresses. A name it
/// does not know is not found.
///
/// # Examples
///
/// ```
/// use sbx_wasm::net::{Resolve, StaticResolver};
/// use std::time::Duration;
///
/// let r = StaticResolver::new().with("api.test", ["127.0.0.1".parse().unwrap()]);
/// assert_eq!(r.lookup("api.test", Duration::from_secs(1)).unwrap().len(), 1);
/// assert!(r.lookup("other.test", Duration::from_secs(1)).is_err());
/// ```
#[derive(Debug, Default, Clone)]
pub struct StaticResolver {
    answers: BTreeMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    /// No answers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answer `host` (case-insensitive, trailing dot ignored) with `addrs`.
    pub fn with(mut self, host: &str, addrs: impl IntoIterator<Item = IpAddr>) -> Self {
        self.answers.insert(norm(host), addrs.into_iter().collect());
        self
    }
}

fn norm(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

impl Resolve for StaticResolver {
    fn lookup(&self, host: &str, _timeout: Duration) -> io::Result<Vec<IpAddr>> {
        match self.answers.get(&norm(host)) {
            Some(a) if !a.is_empty() => Ok(a.clone()),
            _ => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{host}: no such host"),
            )),
        }
    }
}
