//! The end-to-end tests, as one test binary: each binary links wasmtime,
//! and linking it once instead of once per file saves minutes of CI on two
//! cores. Each module is one area (`cargo test -p sbx-wasm-tests -- egress::`
//! runs one).

mod abuse;
mod audit;
mod cli;
mod deploy;
mod doctor;
mod egress;
mod flow;
mod fuzz_agent;
mod host_integrity;
mod hostile;
mod installed;
mod interrupted;
mod javascript;
mod javascript_errors;
mod kernel;
mod kv;
mod listen;
mod mcp;
mod policy;
mod pool_swap;
mod python;
mod python_api;
mod python_corpus;
mod python_data;
mod python_package;
mod python_packages;
mod python_serve;
mod python_stdlib;
mod python_warm;
mod replay;
mod script_errors;
mod scripts;
mod secrets;
mod seed_behaviours;
mod sent_budget;
mod serve;
mod sockets;
mod telemetry;
mod typed_tools;
mod wasi;
mod wasi03;
mod wasi03_http;
mod wasi_http;
mod wasi_http_py;
mod wasm;
mod worked_example;
