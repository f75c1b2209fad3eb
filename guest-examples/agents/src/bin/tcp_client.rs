//! A TCP client written against `std::net` alone (on wasm32-wasip2 the
//! standard library speaks `wasi:sockets`): what a database or mail client
//! compiled for any host does. Each argument is one step, `MODE ARGS`:
//! - `echo HOST:PORT TEXT`: connect (a name is looked up first), send
//!   `TEXT` and a newline, read one line back;
//! - `drain HOST:PORT`: connect, send `big`, read until the server closes;
//! - `lookup NAME`: look `NAME` up; prints how many addresses came back;
//! - `listen ADDR`: bind a listener at `ADDR`;
//! - `self ADDR`: listen at `ADDR`, connect to that listener, send `ping`,
//!   accept and read what arrived;
//! - `udp ADDR`: bind a UDP socket at `ADDR`;
//! - `udp-send HOST:PORT TEXT`: send `TEXT` in one datagram from a socket
//!   bound at `0.0.0.0:0`, and print the first datagram that comes back;
//! - `hold HOST:PORT N`: connect `N` times, keeping every connection open;
//!   prints how many connected and the first error, then whether one more
//!   connects once one is closed.
//!
//! Prints one line per step: `N: RESULT` or `N: error KIND`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs, UdpSocket};

fn step(words: &[&str]) -> Result<String, std::io::Error> {
    match words {
        ["echo", target, text] => {
            let mut s = TcpStream::connect(*target)?;
            s.write_all(format!("{text}\n").as_bytes())?;
            let mut line = String::new();
            BufReader::new(s).read_line(&mut line)?;
            Ok(format!("got {}", line.trim_end()))
        }
        ["drain", target] => {
            let mut s = TcpStream::connect(*target)?;
            s.write_all(b"big\n")?;
            let mut all = Vec::new();
            s.read_to_end(&mut all)?;
            Ok(format!("read {} bytes", all.len()))
        }
        ["lookup", name] => {
            let n = (*name, 1u16).to_socket_addrs()?.count();
            Ok(format!("{n} addresses"))
        }
        ["listen", addr] => TcpListener::bind(*addr).map(|_| "listening".to_string()),
        ["self", addr] => {
            let listener = TcpListener::bind(*addr)?;
            let mut client = TcpStream::connect(listener.local_addr()?)?;
            client.write_all(b"ping")?;
            drop(client);
            let (mut accepted, _) = listener.accept()?;
            let mut got = String::new();
            accepted.read_to_string(&mut got)?;
            Ok(format!("got {got}"))
        }
        ["udp", addr] => UdpSocket::bind(*addr).map(|_| "bound".to_string()),
        ["udp-send", target, text] => {
            let socket = UdpSocket::bind("0.0.0.0:0")?;
            socket.send_to(text.as_bytes(), *target)?;
            let mut buf = vec![0u8; 8192];
            let (n, _) = socket.recv_from(&mut buf)?;
            let got = String::from_utf8_lossy(&buf[..n]);
            Ok(format!("got {} ({n} bytes)", &got[..got.len().min(40)]))
        }
        ["hold", target, n] => {
            let n: usize = n.parse().unwrap_or(1);
            let mut held = Vec::new();
            let mut first_error = None;
            while held.len() < n {
                match TcpStream::connect(*target) {
                    Ok(s) => held.push(s),
                    Err(e) => {
                        first_error = Some(e.kind());
                        break;
                    }
                }
            }
            let count = held.len();
            held.pop();
            let again = TcpStream::connect(*target)
                .map(|_| ())
                .map_err(|e| e.kind());
            Ok(format!(
                "held {count}, then {first_error:?}; after closing one: {again:?}"
            ))
        }
        _ => Ok(format!("unknown step {words:?}")),
    }
}

fn main() {
    for (i, arg) in std::env::args().skip(1).enumerate() {
        let words: Vec<&str> = arg.splitn(3, ' ').collect();
        match step(&words) {
            Ok(r) => println!("{i}: {r}"),
            Err(e) => println!("{i}: error {:?}", e.kind()),
        }
    }
}
