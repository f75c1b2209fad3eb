//! An agent that keeps notes in the run's key-value store: each argument
//! `KEY=VALUE` is a put, each `KEY` a get; then it lists every key. It
//! prints one line per call, so a test sees what each got back.

use sbx_guest::{describe, kv};

fn main() {
    for arg in std::env::args().skip(1) {
        match arg.split_once('=') {
            Some((key, value)) => match kv::put(key, value.as_bytes()) {
                Ok(()) => println!("put {key}: ok"),
                Err(e) => println!("put {key}: {}", describe(&e)),
            },
            None => match kv::get(&arg) {
                Ok(v) => println!("get {arg}: {}", String::from_utf8_lossy(&v)),
                Err(e) => println!("get {arg}: {}", describe(&e)),
            },
        }
    }
    match kv::list("") {
        Ok(keys) => println!("keys: {}", keys.join(",")),
        Err(e) => println!("keys: {}", describe(&e)),
    }
}
