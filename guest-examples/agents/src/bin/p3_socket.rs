//! A WASI 0.3 TCP client (`wasi:sockets@0.3.0`, the `wasip3` bindings):
//! each argument `HOST:PORT=TEXT` looks HOST up (unless it is an IPv4
//! address), connects, sends the line TEXT, reads the answer to its end
//! and prints `HOST:PORT=TEXT: got FIRST-LINE (N bytes)`, or
//! `HOST:PORT=TEXT: Err(CODE)` at the first step refused.

#![no_main]

use std::net::Ipv4Addr;
use wasip3::sockets::types::{
    IpAddress, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress, TcpSocket,
};

wasip3::cli::command::export!(P3Socket);

struct P3Socket;

impl wasip3::exports::cli::run::Guest for P3Socket {
    async fn run() -> Result<(), ()> {
        let args = wasip3::cli::environment::get_arguments();
        for arg in args.iter().skip(1) {
            let said = match exchange(arg).await {
                Ok(got) => got,
                Err(e) => format!("Err({e})"),
            };
            println!("{arg}: {said}");
        }
        Ok(())
    }
}

/// One exchange, as the module's documentation says.
async fn exchange(arg: &str) -> Result<String, String> {
    let (to, text) = arg.split_once('=').ok_or("no =")?;
    let (host, port) = to.rsplit_once(':').ok_or("no port")?;
    let port: u16 = port.parse().map_err(|_| "bad port")?;
    let ip = match host.parse::<Ipv4Addr>() {
        Ok(ip) => ip,
        Err(_) => {
            let found = wasip3::sockets::ip_name_lookup::resolve_addresses(host.to_string())
                .await
                .map_err(|e| format!("{e:?}"))?;
            found
                .into_iter()
                .find_map(|a| match a {
                    IpAddress::Ipv4((a, b, c, d)) => Some(Ipv4Addr::new(a, b, c, d)),
                    IpAddress::Ipv6(_) => None,
                })
                .ok_or("no IPv4 address")?
        }
    };
    let socket = TcpSocket::create(IpAddressFamily::Ipv4).map_err(|e| format!("{e:?}"))?;
    let [a, b, c, d] = ip.octets();
    let address = IpSocketAddress::Ipv4(Ipv4SocketAddress {
        port,
        address: (a, b, c, d),
    });
    socket
        .connect(address)
        .await
        .map_err(|e| format!("{e:?}"))?;
    let (mut tx, rx) = wasip3::wit_stream::new();
    let sent = socket.send(rx);
    let _ = tx.write_all(format!("{text}\n").into_bytes()).await;
    drop(tx);
    sent.await.map_err(|e| format!("{e:?}"))?;
    let (answer, done) = socket.receive();
    let got = answer.collect().await;
    done.await.map_err(|e| format!("{e:?}"))?;
    let text = String::from_utf8_lossy(&got);
    let first = text.lines().next().unwrap_or_default();
    let first = &first[..first.len().min(40)];
    Ok(format!("got {first} ({} bytes)", got.len()))
}
