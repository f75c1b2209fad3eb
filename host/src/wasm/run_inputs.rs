//! What a run starts with besides the component and the options as given:
//! a recorded run's header (and its seed), a Python run's private `/tmp`.

use super::{LoadError, RunOptions, setup};

/// For a recorded run: make it deterministic (a fresh seed unless one was
/// set) and keep what it starts with.
pub(super) fn record_header(
    opts: &mut RunOptions,
) -> Result<Option<Box<crate::replay::Header>>, LoadError> {
    if !matches!(opts.tape, Some(crate::replay::TapeSpec::Record { .. })) {
        return Ok(None);
    }
    if opts.inherit_stdin {
        return Err(setup(
            "a recorded run needs its stdin as bytes (RunOptions::stdin), not inherited".into(),
        ));
    }
    let seed = match opts.deterministic {
        Some(seed) => seed,
        None => getrandom::u64()
            .map_err(|e| setup(format!("no randomness for a recording's seed: {e}")))?,
    };
    opts.deterministic = Some(seed);
    // Boxed: carried to the run's end in every run's state, recorded or
    // not.
    Ok(Some(Box::new(crate::replay::Header::new(
        &opts.caps,
        &opts.program_name,
        &opts.args,
        &opts.stdin,
        seed,
    ))))
}

/// A run's private `/tmp`, removed when this drops: after the run has
/// returned, by the thread of [`super::tmp_dirs`], or here for a run
/// behind a kernel wall (a thread the wall confines must not be the one
/// that starts that thread).
pub(super) struct PrivateTmp {
    dir: Option<tempfile::TempDir>,
    later: bool,
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        match self.dir.take() {
            Some(dir) if self.later => super::tmp_dirs::remove_later(dir),
            dir => drop(dir),
        }
    }
}

/// For a run with a private `/tmp`: make the folder, mount it, let a
/// kernel wall allow it. The folder goes when the returned guard drops.
pub(super) fn private_tmp(opts: &mut RunOptions) -> Result<PrivateTmp, LoadError> {
    let later = opts.confine.is_none();
    if !opts.private_tmp {
        return Ok(PrivateTmp { dir: None, later });
    }
    // Made ahead by the tmp_dirs thread, unless a kernel wall confines
    // this run (its folders are made and removed here).
    let fresh: fn() -> std::io::Result<tempfile::TempDir> = if later {
        super::tmp_dirs::fresh
    } else {
        super::python::new_tmp
    };
    let (caps, dir) =
        super::python::private_tmp_from(&opts.caps, fresh).map_err(|e| setup(e.to_string()))?;
    opts.caps = caps;
    if dir.is_some()
        && let Some(confine) = &mut opts.confine
    {
        let host = opts
            .caps
            .mounts()
            .iter()
            .find(|m| m.guest.as_str() == "/tmp");
        confine.0.write.extend(host.map(|m| m.host.clone()));
    }
    Ok(PrivateTmp { dir, later })
}
