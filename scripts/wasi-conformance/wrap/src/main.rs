//! `sbx-wrap-p1 MODULE.wasm OUT.wasm`: a WASI preview 1 command module
//! made a WASI 0.2 command component with wasmtime's own preview 1
//! adapter, as `wasm-tools component new --adapt` does, so `sbx-wasm run`
//! (which runs components only) can run the suite's p1 tests.

use anyhow::{Context, Result};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output] = args.as_slice() else {
        anyhow::bail!("usage: sbx-wrap-p1 MODULE.wasm OUT.wasm");
    };
    let module = std::fs::read(input).with_context(|| format!("cannot read {input}"))?;
    let component = wit_component::ComponentEncoder::default()
        .module(&module)?
        .adapter(
            "wasi_snapshot_preview1",
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER,
        )?
        .validate(true)
        .encode()
        .with_context(|| format!("cannot wrap {input}"))?;
    std::fs::write(output, component).with_context(|| format!("cannot write {output}"))?;
    Ok(())
}
