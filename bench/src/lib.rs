//! The bare-wasmtime baseline, shared by the side-by-side harness
//! (`src/main.rs`) and by the tests that compare the sandbox's WASI with
//! plain wasmtime's on the same guest and folders.

pub mod bare;
