//! What the client, the server and a worker say to each other, and where
//! the server listens.
//!
//! One connection carries one run: the client's [`Request`] with its
//! stdin, stdout and stderr (`SCM_RIGHTS`), which the server hands to a
//! ready worker as it came; then [`Reply`] messages back. Each message is a
//! 4-byte little-endian length and that many bytes of JSON. After its
//! request the client only ever sends [`CANCEL`] (a Ctrl-C), or closes.

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// Bumped whenever a message changes: a client and a server of different
/// protocols never meet (it is part of the socket's name).
const PROTOCOL: u32 = 2;

/// The largest message accepted (a request carries the environment).
const MAX_MESSAGE: usize = 1 << 20;

/// The byte a client sends to cancel its run (the first Ctrl-C).
pub(crate) const CANCEL: u8 = b'c';

/// The stdio descriptors a request carries: stdin, stdout, stderr.
pub(crate) const STDIO: usize = 3;

/// A run, as the client's `sbx-wasm run` was asked for it.
#[derive(Serialize, Deserialize, Debug)]
pub(crate) struct Request {
    /// The arguments after `sbx-wasm run`.
    pub(crate) args: Vec<String>,
    /// The client's working folder (relative paths in `args` resolve there).
    pub(crate) cwd: PathBuf,
    /// The client's environment (its UTF-8 variables): a worker takes the
    /// run only where the variables a run reads are the same as its own.
    pub(crate) env: Vec<(String, String)>,
    /// The runner the client found for the script.
    pub(crate) runner: PathBuf,
    /// The client's process context: a worker takes the run only when it
    /// is its own.
    pub(crate) context: super::context::Context,
}

/// What comes back to the client, in order: `Taken` once a worker has the
/// request, then `Fallback`, `Exit` or `Failed`.
#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Reply {
    /// A worker has the request. From here on the client cannot run it
    /// itself if the connection breaks: the run may have begun.
    Taken,
    /// The worker did not start the run, for this reason: run it here.
    Fallback(String),
    /// (Worker to server only.) The worker is starting the run: from here
    /// on it may not give the run back.
    Running,
    /// The run ended; `sbx-wasm run` exits with this code.
    Exit(i32),
    /// The worker ended without finishing the run (this says how): an
    /// internal error for the client.
    Failed(String),
}

/// A worker's first words to the server: it is ready for a run.
#[derive(Serialize, Deserialize, Debug)]
pub(crate) struct WorkerReady {
    pub(crate) pid: u32,
}

/// Where a server keeping workers of `runner` for this binary listens:
/// `serve/py-KEY.sock` in the cache folder. KEY covers this binary and
/// the runner (path and file identity: a rebuilt binary or runner is
/// another server's) and the protocol.
pub(crate) fn socket_path(cache_dir: &Path, runner: &Path) -> io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let mut key = format!("{PROTOCOL}\n");
    for file in [exe.as_path(), runner] {
        let path = std::fs::canonicalize(file)?;
        let md = std::fs::metadata(&path)?;
        key.push_str(&format!(
            "{}\n{} {} {} {}.{}\n",
            path.display(),
            md.dev(),
            md.ino(),
            md.size(),
            md.mtime(),
            md.mtime_nsec()
        ));
    }
    let hash = sbx_wasm::replay::sha256_hex(key.as_bytes());
    let path = cache_dir
        .join("serve")
        .join(format!("py-{}.sock", &hash[..16]));
    // sockaddr_un holds 108 bytes with the closing NUL.
    if path.as_os_str().len() > 107 {
        return Err(io::Error::other(format!(
            "the socket path {} is too long for a UNIX socket (over 107 bytes): \
             set SBX_WASM_CACHE_DIR to a shorter folder",
            path.display()
        )));
    }
    Ok(path)
}

/// Send `msg` on `sock`, with `fds` attached to its first byte.
pub(crate) fn send_with_fds<T: Serialize>(
    sock: &UnixStream,
    msg: &T,
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
    let frame = frame(msg)?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(STDIO))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::other("too many descriptors for one message"));
    }
    let sent = sendmsg(
        sock,
        &[IoSlice::new(&frame)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    (&*sock).write_all(&frame[sent..])
}

/// Receive a message sent by [`send_with_fds`], and its descriptors (made
/// close-on-exec).
pub(crate) fn recv_with_fds<T: DeserializeOwned>(
    sock: &UnixStream,
) -> io::Result<(T, Vec<OwnedFd>)> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(STDIO))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut head = [0u8; 4];
    let got = recvmsg(
        sock,
        &mut [IoSliceMut::new(&mut head)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    if got.bytes == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    if got.flags.contains(rustix::net::ReturnFlags::CTRUNC) {
        return Err(io::Error::other("more descriptors than a request carries"));
    }
    let mut fds = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    (&*sock).read_exact(&mut head[got.bytes..])?;
    Ok((body(sock, head)?, fds))
}

/// Send `msg` on `sock`.
pub(crate) fn send<T: Serialize>(mut sock: &UnixStream, msg: &T) -> io::Result<()> {
    sock.write_all(&frame(msg)?)
}

/// Receive one message from `sock`.
pub(crate) fn recv<T: DeserializeOwned>(mut sock: &UnixStream) -> io::Result<T> {
    let mut head = [0u8; 4];
    sock.read_exact(&mut head)?;
    body(sock, head)
}

fn frame<T: Serialize>(msg: &T) -> io::Result<Vec<u8>> {
    let json = serde_json::to_vec(msg).map_err(io::Error::other)?;
    if json.len() > MAX_MESSAGE {
        return Err(io::Error::other("message too large"));
    }
    let mut frame = (json.len() as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&json);
    Ok(frame)
}

fn body<T: DeserializeOwned>(mut sock: &UnixStream, head: [u8; 4]) -> io::Result<T> {
    let len = u32::from_le_bytes(head) as usize;
    if len > MAX_MESSAGE {
        return Err(io::Error::other("message too large"));
    }
    let mut buf = vec![0u8; len];
    sock.read_exact(&mut buf)?;
    serde_json::from_slice(&buf).map_err(io::Error::other)
}

/// The three stdio descriptors of this process.
pub(crate) fn stdio() -> [BorrowedFd<'static>; STDIO] {
    [
        rustix::stdio::stdin(),
        rustix::stdio::stdout(),
        rustix::stdio::stderr(),
    ]
}
