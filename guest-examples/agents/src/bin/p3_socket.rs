//! A WASI 0.3 command that creates a TCP socket (`wasi:sockets@0.3.0`):
//! the host does not link 0.3's sockets, so it is refused before it is
//! compiled, by the import's name (`p3_agent.rs` is its neighbour).

#![no_main]

wasip3::cli::command::export!(P3Socket);

struct P3Socket;

impl wasip3::exports::cli::run::Guest for P3Socket {
    async fn run() -> Result<(), ()> {
        use wasip3::sockets::types::{IpAddressFamily, TcpSocket};
        TcpSocket::create(IpAddressFamily::Ipv4)
            .map(drop)
            .map_err(drop)
    }
}
