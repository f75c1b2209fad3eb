//! `sbx-wasm kernel-check`: apply the kernel confinement `run` would apply
//! for a caps file, then try raw file and network operations, with no wasm
//! and no gate in the way, and print what the kernel allowed. It shows what
//! an attacker who escaped the wasm sandbox would find.

use crate::common::load_caps;
use anyhow::Result;
use sbx_wasm::confine::Policy;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub(crate) struct KernelCheckArgs {
    /// The caps file whose confinement to apply.
    #[arg(long, value_name = "FILE")]
    caps: PathBuf,
    /// Read this file after confinement (repeatable).
    #[arg(long, value_name = "PATH")]
    read: Vec<PathBuf>,
    /// Create or append to this file after confinement (repeatable).
    #[arg(long, value_name = "PATH")]
    write: Vec<PathBuf>,
    /// Open a TCP connection to this address after confinement (repeatable).
    #[arg(long, value_name = "IP:PORT")]
    connect: Vec<SocketAddr>,
    /// Bind a TCP listener at this address after confinement (repeatable).
    #[arg(long, value_name = "IP:PORT")]
    bind: Vec<SocketAddr>,
    /// Start this program after confinement (repeatable).
    #[arg(long, value_name = "PROGRAM")]
    exec: Vec<PathBuf>,
}

fn verdict<T>(r: std::io::Result<T>) -> String {
    match r {
        Ok(_) => "allowed".into(),
        Err(e) => format!("refused ({e})"),
    }
}

fn read(path: &Path) -> std::io::Result<usize> {
    let mut s = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut s)
}

fn write(path: &Path) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(b"kernel-check\n")
}

impl KernelCheckArgs {
    pub(crate) fn execute(&self) -> Result<i32> {
        run(self)
    }
}

fn run(a: &KernelCheckArgs) -> Result<i32> {
    let caps = load_caps(&a.caps)?;
    // What `run` applies, less the report and audit files it adds.
    let wall = Policy::for_caps(&caps).apply();
    println!("{}", serde_json::to_string(&wall)?);
    for p in &a.read {
        println!("read {}: {}", p.display(), verdict(read(p)));
    }
    for p in &a.write {
        println!("write {}: {}", p.display(), verdict(write(p)));
    }
    for addr in &a.connect {
        let r = TcpStream::connect_timeout(addr, Duration::from_secs(2));
        println!("connect {addr}: {}", verdict(r));
    }
    for addr in &a.bind {
        println!("bind {addr}: {}", verdict(TcpListener::bind(addr)));
    }
    for p in &a.exec {
        let r = std::process::Command::new(p).status();
        println!("exec {}: {}", p.display(), verdict(r));
    }
    Ok(0)
}
