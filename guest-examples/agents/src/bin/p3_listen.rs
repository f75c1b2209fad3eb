//! A WASI 0.3 guest that binds, listens and sends datagrams
//! (`wasi:sockets@0.3.0`, the `wasip3` bindings). Each argument is a step;
//! it prints `STEP: RESULT`, or `STEP: Err(CODE)` at the first call
//! refused:
//!
//! - `tcp-self`: listen on 127.0.0.1 (an ephemeral port), connect to
//!   itself, send `ping`, accept, and read what arrived;
//! - `tcp-accept=PORT`: listen on 127.0.0.1:PORT, accept one connection
//!   and read it to its end;
//! - `tcp-bind=IP:PORT`: bind a TCP socket there (IPv4) and print where
//!   it was bound;
//! - `tcp-listen-unbound`: listen without binding first, and print where
//!   it listens;
//! - `udp-self`: bind a UDP socket on 127.0.0.1 (ephemeral), send it
//!   `ping` from another, unbound one, and receive it;
//! - `udp-send=IP:PORT=TEXT`: send TEXT from an unbound UDP socket, then
//!   receive one answer;
//! - `hold=N`: make N sockets, TCP and UDP in turn, keeping each; print
//!   how many were made and the first refusal, then whether one more is
//!   made once one is dropped.

#![no_main]

use std::net::Ipv4Addr;
use wasip3::sockets::types::{
    IpAddressFamily, IpSocketAddress, Ipv4SocketAddress, TcpSocket, UdpSocket,
};

wasip3::cli::command::export!(P3Listen);

struct P3Listen;

impl wasip3::exports::cli::run::Guest for P3Listen {
    async fn run() -> Result<(), ()> {
        let args = wasip3::cli::environment::get_arguments();
        for arg in args.iter().skip(1) {
            let said = match step(arg).await {
                Ok(got) => got,
                Err(e) => format!("Err({e})"),
            };
            println!("{arg}: {said}");
        }
        Ok(())
    }
}

fn v4(ip: Ipv4Addr, port: u16) -> IpSocketAddress {
    let [a, b, c, d] = ip.octets();
    IpSocketAddress::Ipv4(Ipv4SocketAddress {
        port,
        address: (a, b, c, d),
    })
}

/// `IP:PORT` as an address.
fn parse(to: &str) -> Result<IpSocketAddress, String> {
    let (ip, port) = to.rsplit_once(':').ok_or("no port")?;
    let ip: Ipv4Addr = ip.parse().map_err(|_| "bad IPv4 address")?;
    Ok(v4(ip, port.parse().map_err(|_| "bad port")?))
}

fn code<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

async fn step(arg: &str) -> Result<String, String> {
    let (what, rest) = arg.split_once('=').unwrap_or((arg, ""));
    let lo = Ipv4Addr::LOCALHOST;
    match what {
        "tcp-self" => {
            let listener = TcpSocket::create(IpAddressFamily::Ipv4).map_err(code)?;
            listener.bind(v4(lo, 0)).map_err(code)?;
            let local = listener.get_local_address().map_err(code)?;
            let mut incoming = listener.listen().map_err(code)?;
            let client = TcpSocket::create(IpAddressFamily::Ipv4).map_err(code)?;
            client.connect(local).await.map_err(code)?;
            send(&client, b"ping".to_vec()).await?;
            drop(client);
            let accepted = incoming.next().await.ok_or("no connection")?;
            let got = read_all(&accepted).await?;
            Ok(format!("got {}", String::from_utf8_lossy(&got)))
        }
        "tcp-accept" => {
            let port: u16 = rest.parse().map_err(|_| "bad port")?;
            let listener = TcpSocket::create(IpAddressFamily::Ipv4).map_err(code)?;
            listener.bind(v4(lo, port)).map_err(code)?;
            let mut incoming = listener.listen().map_err(code)?;
            let accepted = incoming.next().await.ok_or("no connection")?;
            let got = read_all(&accepted).await?;
            Ok(format!("accepted {}", String::from_utf8_lossy(&got)))
        }
        "tcp-bind" => {
            let socket = TcpSocket::create(IpAddressFamily::Ipv4).map_err(code)?;
            socket.bind(parse(rest)?).map_err(code)?;
            Ok(format!("bound {}", local(&socket)?))
        }
        "tcp-listen-unbound" => {
            let socket = TcpSocket::create(IpAddressFamily::Ipv4).map_err(code)?;
            let _incoming = socket.listen().map_err(code)?;
            Ok(format!("listening {}", local(&socket)?))
        }
        "udp-self" => {
            let server = UdpSocket::create(IpAddressFamily::Ipv4).map_err(code)?;
            server.bind(v4(lo, 0)).map_err(code)?;
            let local = server.get_local_address().map_err(code)?;
            let client = UdpSocket::create(IpAddressFamily::Ipv4).map_err(code)?;
            client
                .send(b"ping".to_vec(), Some(local))
                .await
                .map_err(code)?;
            let (data, _) = server.receive().await.map_err(code)?;
            Ok(format!("got {}", String::from_utf8_lossy(&data)))
        }
        "udp-send" => {
            let (to, text) = rest.split_once('=').ok_or("no text")?;
            let socket = UdpSocket::create(IpAddressFamily::Ipv4).map_err(code)?;
            socket
                .send(text.as_bytes().to_vec(), Some(parse(to)?))
                .await
                .map_err(code)?;
            let (data, _) = socket.receive().await.map_err(code)?;
            let text = String::from_utf8_lossy(&data);
            Ok(format!(
                "got {} ({} bytes)",
                &text[..text.len().min(40)],
                data.len()
            ))
        }
        "hold" => {
            let n: usize = rest.parse().map_err(|_| "bad count")?;
            let (mut tcp, mut udp, mut refused) = (Vec::new(), Vec::new(), None);
            for i in 0..n {
                let made = if i % 2 == 0 {
                    TcpSocket::create(IpAddressFamily::Ipv4).map(|s| tcp.push(s))
                } else {
                    UdpSocket::create(IpAddressFamily::Ipv4).map(|s| udp.push(s))
                };
                if let Err(e) = made {
                    refused = Some(code(e));
                    break;
                }
            }
            let held = tcp.len() + udp.len();
            drop(udp.pop());
            let again = match UdpSocket::create(IpAddressFamily::Ipv4) {
                Ok(_) => "ok".to_string(),
                Err(e) => code(e),
            };
            Ok(format!(
                "made {held}, then {}; one more after a drop: {again}",
                refused.unwrap_or_else(|| "nothing refused".into())
            ))
        }
        _ => Err(format!("unknown step {what}")),
    }
}

/// Where `socket` is bound, as `IP:PORT`.
fn local(socket: &TcpSocket) -> Result<String, String> {
    match socket.get_local_address().map_err(code)? {
        IpSocketAddress::Ipv4(Ipv4SocketAddress { address, port }) => {
            let (a, b, c, d) = address;
            Ok(format!("{a}.{b}.{c}.{d}:{port}"))
        }
        IpSocketAddress::Ipv6(_) => Ok("an IPv6 address".into()),
    }
}

async fn send(socket: &TcpSocket, bytes: Vec<u8>) -> Result<(), String> {
    let (mut tx, rx) = wasip3::wit_stream::new();
    let sent = socket.send(rx);
    let _ = tx.write_all(bytes).await;
    drop(tx);
    sent.await.map_err(code)
}

async fn read_all(socket: &TcpSocket) -> Result<Vec<u8>, String> {
    let (rx, done) = socket.receive();
    let got = rx.collect().await;
    done.await.map_err(code)?;
    Ok(got)
}
