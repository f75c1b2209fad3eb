//! The data runner's parts the host holds: where its own folders sit
//! beside the runner file, and the prelude that runs a script in it
//! (`prelude.py`). The runner itself is built by `host/runners/data`.

/// The folder lent at `/usr`: `local/lib/python315.zip` (the standard
/// library and the packages' Python code), and the folders CPython probes
/// on start, empty.
pub(super) const USR: &str = "sbx-data-files/usr";
/// matplotlib's data (fonts, styles), lent where matplotlib looks for it:
/// beside its code, which is inside the zip.
pub(super) const MPL_DATA: &str = "sbx-data-files/mpl-data";
/// Run by CPython's `-c` before the script: see `prelude.py`.
pub(super) const PRELUDE: &str = include_str!("prelude.py");
