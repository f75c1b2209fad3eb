//! `sbx-wasm completions SHELL` and `sbx-wasm man`: shell completions and a
//! man page made from the same clap definitions as `--help`, so they never
//! drift from the commands.

use anyhow::Result;
use clap::CommandFactory;

#[derive(clap::Args, Debug)]
pub(crate) struct CompletionsArgs {
    /// The shell to write completions for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

impl CompletionsArgs {
    /// Write the completion script to stdout (e.g. `sbx-wasm completions
    /// bash > ~/.local/share/bash-completion/completions/sbx-wasm`).
    pub(crate) fn execute(&self) -> Result<i32> {
        let mut cmd = super::Cli::command();
        clap_complete::generate(self.shell, &mut cmd, "sbx-wasm", &mut std::io::stdout());
        Ok(0)
    }
}

#[derive(clap::Args, Debug)]
pub(crate) struct ManArgs {}

impl ManArgs {
    /// Write the man page (roff) to stdout (e.g. `sbx-wasm man >
    /// ~/.local/share/man/man1/sbx-wasm.1`).
    pub(crate) fn execute(&self) -> Result<i32> {
        let page = clap_mangen::Man::new(super::Cli::command());
        match page.render(&mut std::io::stdout()) {
            // `sbx-wasm man | head`: the reader has what it wanted.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
            r => r.map(|()| 0).map_err(Into::into),
        }
    }
}
