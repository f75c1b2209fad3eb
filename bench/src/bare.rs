//! The baseline side of the comparisons: the same components run by a bare
//! wasmtime embedding, with no gate, no budgets, no mounts. `sbx:agent`
//! imports answer directly (a tool call returns an empty string).

use std::path::Path;
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

wasmtime::component::bindgen!({
    path: "../host/wit",
    world: "agent",
});

pub struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl sbx::agent::types::Host for State {}

impl sbx::agent::outcome::Host for State {
    fn script_failed(&mut self, _e: sbx::agent::outcome::ScriptError) {}
    fn exit_code(&mut self, _code: i32) {}
}

impl sbx::agent::net::Host for State {
    fn fetch(
        &mut self,
        _req: sbx::agent::net::Request,
    ) -> Result<sbx::agent::net::Response, sbx::agent::types::Error> {
        Err(sbx::agent::types::Error::Failed(
            "no network in the baseline".into(),
        ))
    }
}

impl sbx::agent::tools::Host for State {
    fn call(&mut self, _name: String, _input: String) -> Result<String, sbx::agent::types::Error> {
        Ok(String::new())
    }
    fn granted(&mut self) -> Vec<String> {
        Vec::new()
    }
    fn definitions(&mut self) -> Vec<sbx::agent::tools::Definition> {
        Vec::new()
    }
}

/// No store in the baseline: every call fails.
impl sbx::agent::kv::Host for State {
    fn get(&mut self, _key: String) -> Result<Vec<u8>, sbx::agent::types::Error> {
        Err(no_store())
    }
    fn put(&mut self, _key: String, _value: Vec<u8>) -> Result<(), sbx::agent::types::Error> {
        Err(no_store())
    }
    fn delete(&mut self, _key: String) -> Result<(), sbx::agent::types::Error> {
        Err(no_store())
    }
    fn list(&mut self, _prefix: String) -> Result<Vec<String>, sbx::agent::types::Error> {
        Err(no_store())
    }
}

/// No mounts in the baseline: every call fails.
impl sbx::agent::fs::Host for State {
    fn read(&mut self, _path: String) -> Result<Vec<u8>, sbx::agent::types::Error> {
        Err(no_files())
    }
    fn write(&mut self, _path: String, _content: Vec<u8>) -> Result<u64, sbx::agent::types::Error> {
        Err(no_files())
    }
    fn list(
        &mut self,
        _path: String,
    ) -> Result<Vec<sbx::agent::fs::Entry>, sbx::agent::types::Error> {
        Err(no_files())
    }
    fn stat(
        &mut self,
        _path: String,
    ) -> Result<sbx::agent::fs::Metadata, sbx::agent::types::Error> {
        Err(no_files())
    }
    fn remove(&mut self, _path: String) -> Result<(), sbx::agent::types::Error> {
        Err(no_files())
    }
    fn mkdir(&mut self, _path: String) -> Result<(), sbx::agent::types::Error> {
        Err(no_files())
    }
    fn disk_space(&mut self) -> sbx::agent::fs::Space {
        sbx::agent::fs::Space {
            total: 0,
            used: 0,
            free: 0,
        }
    }
}

fn no_files() -> sbx::agent::types::Error {
    sbx::agent::types::Error::Failed("no mounts in the baseline".into())
}

fn no_store() -> sbx::agent::types::Error {
    sbx::agent::types::Error::Failed("no key-value store in the baseline".into())
}

/// A bare engine (default settings: no fuel, no epochs) and linker.
pub struct Bare {
    pub engine: Engine,
    linker: Linker<State>,
    /// Whether the engine counts fuel (each store then gets all of it).
    fuel: bool,
    /// Whether compiled code checks the epoch (each store's deadline is
    /// then never reached: the checks are paid, nothing interrupts).
    epochs: bool,
}

/// wasmtime's config for WASI 0.2 components as an embedder without the
/// component model's async features has it: the workspace compiles
/// wasmtime with them (for WASI 0.3), and with concurrency support on,
/// every store and call would pay for machinery no 0.2 guest uses.
fn base() -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.concurrency_support(false);
    config
}

/// [`base`] with instance slots reserved as sbx-wasm reserves them for
/// `sizes`.
fn pooled_config(sizes: &sbx_wasm::wasm::PoolSizes) -> Config {
    let mut config = base();
    config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(
        sizes.pooling_config(),
    ));
    config
}

impl Bare {
    pub fn new() -> wasmtime::Result<Self> {
        let config = base();
        Self::with_config(&config, false, false)
    }

    /// The same, with instance slots reserved as sbx-wasm reserves them
    /// for `sizes` (`WasmHost::with_pool`): the baseline of pooled rates.
    pub fn pooled(sizes: &sbx_wasm::wasm::PoolSizes) -> wasmtime::Result<Self> {
        Self::with_config(&pooled_config(sizes), false, false)
    }

    /// The same pooling with wasmtime's fuel and epoch interruption, as a
    /// default grant (fuel metered, a wall deadline) compiles its guests:
    /// the baseline of pooled rates with wasmtime's own metering.
    pub fn pooled_metered(sizes: &sbx_wasm::wasm::PoolSizes) -> wasmtime::Result<Self> {
        let mut config = pooled_config(sizes);
        config.consume_fuel(true);
        config.epoch_interruption(true);
        Self::with_config(&config, true, true)
    }

    /// The same, with wasmtime's own fuel metering (as `wasmtime run -W
    /// fuel=N`), each run given all the fuel there is.
    pub fn with_fuel() -> wasmtime::Result<Self> {
        let mut config = base();
        config.consume_fuel(true);
        Self::with_config(&config, true, false)
    }

    /// The same with wasmtime's epoch interruption (the check at every
    /// loop back-edge and function entry a wall deadline needs), and with
    /// fuel as well when `fuel`: what wasmtime itself charges for the
    /// metering a grant asks for.
    pub fn with_epochs(fuel: bool) -> wasmtime::Result<Self> {
        let mut config = base();
        config.consume_fuel(fuel);
        config.epoch_interruption(true);
        Self::with_config(&config, fuel, true)
    }

    fn with_config(config: &Config, fuel: bool, epochs: bool) -> wasmtime::Result<Self> {
        let engine = Engine::new(config)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        Agent::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s)?;
        Ok(Bare {
            engine,
            linker,
            fuel,
            epochs,
        })
    }

    pub fn prepare(&self, component: &Component) -> wasmtime::Result<CommandPre<State>> {
        CommandPre::new(self.linker.instantiate_pre(component)?)
    }

    /// Compile and link a component file.
    pub fn load_file(&self, path: &Path) -> wasmtime::Result<CommandPre<State>> {
        self.prepare(&Component::from_file(&self.engine, path)?)
    }

    /// Run once as `wasmtime run --dir HOST::GUEST` would: `dirs` preopened
    /// in order (read-only ones with read-only permissions), `args`, and
    /// the guest's stdout returned. `Err` when the guest failed or trapped.
    pub async fn run_with_dirs(
        &self,
        pre: &CommandPre<State>,
        dirs: &[(&Path, &str, bool)],
        args: &[&str],
    ) -> wasmtime::Result<String> {
        let mut argv = vec!["agent"];
        argv.extend_from_slice(args);
        let stdout = MemoryOutputPipe::new(1 << 20);
        let mut wasi = WasiCtxBuilder::new();
        wasi.args(&argv).stdout(stdout.clone());
        for (host, guest, writable) in dirs {
            let perms = if *writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            wasi.preopened_dir(host, guest, perms)?;
        }
        let mut store = Store::new(
            &self.engine,
            State {
                wasi: wasi.build(),
                table: ResourceTable::new(),
            },
        );
        self.meter(&mut store)?;
        let command = pre.instantiate_async(&mut store).await?;
        let ok = command.wasi_cli_run().call_run(&mut store).await?;
        drop(store);
        let out = String::from_utf8_lossy(&stdout.contents()).into_owned();
        ok.map(|()| out)
            .map_err(|()| wasmtime::format_err!("guest failed"))
    }

    /// All the fuel there is, and a deadline never reached.
    fn meter(&self, store: &mut Store<State>) -> wasmtime::Result<()> {
        if self.fuel {
            store.set_fuel(u64::MAX)?;
        }
        if self.epochs {
            store.set_epoch_deadline(1 << 40);
        }
        Ok(())
    }

    /// Instantiate and run once with `args`; stdout is captured and dropped.
    pub async fn run(&self, pre: &CommandPre<State>, args: &[&str]) -> wasmtime::Result<()> {
        let mut argv = vec!["agent"];
        argv.extend_from_slice(args);
        let wasi = WasiCtxBuilder::new()
            .args(&argv)
            .stdout(MemoryOutputPipe::new(1 << 20))
            .build();
        let mut store = Store::new(
            &self.engine,
            State {
                wasi,
                table: ResourceTable::new(),
            },
        );
        self.meter(&mut store)?;
        let command = pre.instantiate_async(&mut store).await?;
        command
            .wasi_cli_run()
            .call_run(&mut store)
            .await?
            .map_err(|()| wasmtime::format_err!("guest failed"))
    }
}
