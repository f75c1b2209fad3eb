//! Core modules under the component engine's limits, for the guest fuzzer:
//! whatever the module, a run ends in an outcome within its wall budget.

use super::limits::MemoryLimiter;
use super::outcome::{End, classify_error};
use super::{HardLimit, WasmHost};
use crate::violation::Violation;
use std::time::Instant;
use wasmtime::{Store, UpdateDeadline};

/// How a core module run ended (see [`WasmHost::run_core_module`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreOutcome {
    /// The module did not validate or compile.
    Invalid(String),
    /// Every export that could be called returned.
    Completed,
    /// A budget halted it.
    Limit(Violation),
    /// It trapped for another reason.
    Trapped(String),
}

impl WasmHost {
    /// Instantiate a core module that imports nothing and call each exported
    /// function (arguments zero), under the same engine settings and limits
    /// as components: fuel, the memory limiter, a real-time wall deadline,
    /// the stack limit. For the guest fuzzer: whatever the module, this
    /// returns an outcome, within the wall budget.
    pub fn run_core_module(&self, bytes: &[u8], budget: &crate::Budget) -> CoreOutcome {
        use wasmtime::{Module, Val};
        let module = match Module::new(&self.shared.engine, bytes) {
            Ok(m) => m,
            Err(e) => return CoreOutcome::Invalid(format!("{e:#}")),
        };
        let mut store = Store::new(
            &self.shared.engine,
            MemoryLimiter::new(budget.max_memory_bytes),
        );
        store.limiter(|l| l);
        if let Err(e) = store.set_fuel(budget.max_fuel) {
            return CoreOutcome::Invalid(format!("{e:#}"));
        }
        let deadline = Instant::now() + budget.max_wall;
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline {
                Err(wasmtime::Error::new(HardLimit(Violation::MaxWall)))
            } else {
                Ok(UpdateDeadline::Continue(1))
            }
        });
        let end = |e: wasmtime::Error, store: &Store<MemoryLimiter>| match classify_error(
            &e,
            None,
            store.data().hit,
        ) {
            End::Limit(v) => CoreOutcome::Limit(v),
            End::Trap(m) => CoreOutcome::Trapped(m),
            End::Exit(c) => CoreOutcome::Trapped(format!("exit {c}")),
        };
        let instance =
            match wasmtime::Linker::new(&self.shared.engine).instantiate(&mut store, &module) {
                Ok(i) => i,
                Err(e) => return end(e, &store),
            };
        let funcs: Vec<_> = module
            .exports()
            .filter_map(|e| e.ty().func().map(|_| e.name().to_string()))
            .collect();
        for name in funcs {
            let Some(func) = instance.get_func(&mut store, &name) else {
                continue;
            };
            let ty = func.ty(&store);
            let params: Option<Vec<Val>> = ty.params().map(|t| Val::default_for_ty(&t)).collect();
            let Some(params) = params else {
                continue;
            };
            let mut results: Vec<Val> = ty
                .results()
                .map(|t| Val::default_for_ty(&t).unwrap_or(Val::I32(0)))
                .collect();
            if let Err(e) = func.call(&mut store, &params, &mut results) {
                return end(e, &store);
            }
        }
        CoreOutcome::Completed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// `(module (func (export "f") BODY))` with a one-type, one-func layout.
    fn module(body: &[u8]) -> Vec<u8> {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        m.extend_from_slice(&[0x01, 0x04, 0x01, 0x60, 0x00, 0x00]); // type () -> ()
        m.extend_from_slice(&[0x03, 0x02, 0x01, 0x00]); // func 0 : type 0
        m.extend_from_slice(&[0x07, 0x05, 0x01, 0x01, b'f', 0x00, 0x00]); // export "f"
        let mut code = vec![0x00]; // no locals
        code.extend_from_slice(body);
        let mut section = vec![0x01, code.len() as u8];
        section.extend_from_slice(&code);
        m.push(0x0a);
        m.push(section.len() as u8);
        m.extend_from_slice(&section);
        m
    }

    #[test]
    fn core_modules_end_in_an_outcome_within_budget() {
        let host = WasmHost::new().unwrap();
        let budget = crate::Budget {
            max_fuel: 100_000,
            ..crate::Budget::default()
        };
        assert_eq!(
            host.run_core_module(&module(&[0x0b]), &budget),
            CoreOutcome::Completed
        );
        // loop { br 0 }
        let spin = module(&[0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b]);
        assert_eq!(
            host.run_core_module(&spin, &budget),
            CoreOutcome::Limit(Violation::MaxFuel)
        );
        let timed = crate::Budget {
            max_fuel: u64::MAX / 2,
            max_wall: Duration::from_millis(100),
            ..crate::Budget::default()
        };
        assert_eq!(
            host.run_core_module(&spin, &timed),
            CoreOutcome::Limit(Violation::MaxWall)
        );
        // unreachable
        assert!(matches!(
            host.run_core_module(&module(&[0x00, 0x0b]), &budget),
            CoreOutcome::Trapped(_)
        ));
        assert!(matches!(
            host.run_core_module(b"\0asm\x01\0\0\0\xff", &budget),
            CoreOutcome::Invalid(_)
        ));
    }
}
