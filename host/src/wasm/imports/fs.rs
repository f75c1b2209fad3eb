//! The file capability's WIT adapter (the wasm door's side of it): each
//! `sbx:agent/fs` call is one [`Op::Fs`] through the run's gate, the op a
//! plan would name, so a guest (the JavaScript runner's `fs` among them)
//! gets the plan door's checks, records and violation names.

use super::super::HostState;
use super::answer;
use super::sbx::agent::fs::{Entry, Host, Kind, Metadata, Space};
use super::sbx::agent::types::Error;
use crate::capability::{Op, Output};
use crate::fs::EntryKind;

fn kind(k: EntryKind) -> Kind {
    match k {
        EntryKind::File => Kind::File,
        EntryKind::Dir => Kind::Dir,
        EntryKind::Symlink => Kind::Symlink,
        _ => Kind::Other,
    }
}

impl Host for HostState {
    fn read(&mut self, path: String) -> wasmtime::Result<Result<Vec<u8>, Error>> {
        let r = self.gate_mut().decide(Op::read(path));
        answer(r, |out| match out {
            Output::Data { content } => Some(content.0),
            _ => None,
        })
    }

    fn write(&mut self, path: String, content: Vec<u8>) -> wasmtime::Result<Result<u64, Error>> {
        let r = self.gate_mut().decide(Op::write(path, content));
        answer(r, |out| match out {
            Output::Written { bytes } => Some(bytes),
            _ => None,
        })
    }

    fn list(&mut self, path: String) -> wasmtime::Result<Result<Vec<Entry>, Error>> {
        let r = self.gate_mut().decide(Op::list(path));
        answer(r, |out| match out {
            Output::Entries { entries } => Some(
                entries
                    .into_iter()
                    .map(|e| Entry {
                        name: e.name,
                        kind: kind(e.kind),
                    })
                    .collect(),
            ),
            _ => None,
        })
    }

    fn stat(&mut self, path: String) -> wasmtime::Result<Result<Metadata, Error>> {
        let r = self.gate_mut().decide(Op::stat(path));
        answer(r, |out| match out {
            Output::Stat { stat } => Some(Metadata {
                kind: kind(stat.kind),
                size: stat.size,
                writable: stat.writable,
            }),
            _ => None,
        })
    }

    fn remove(&mut self, path: String) -> wasmtime::Result<Result<(), Error>> {
        let r = self.gate_mut().decide(Op::remove(path));
        answer(r, |out| matches!(out, Output::Removed).then_some(()))
    }

    fn mkdir(&mut self, path: String) -> wasmtime::Result<Result<(), Error>> {
        let r = self.gate_mut().decide(Op::mkdir(path));
        answer(r, |out| matches!(out, Output::Created).then_some(()))
    }

    fn disk_space(&mut self) -> wasmtime::Result<Space> {
        let meter = self.gate_mut().write_meter();
        let (total, used) = (meter.max_bytes(), meter.bytes());
        Ok(Space {
            total,
            used,
            free: total.saturating_sub(used),
        })
    }
}
