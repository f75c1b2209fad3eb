//! The package's exceptions: one base, one class per kind of setup failure.
//! Denials are never exceptions: they are values in the result.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use sbx_wasm::CapsError as RustCapsError;
use sbx_wasm::wasm::LoadError as RustLoadError;

create_exception!(
    sbx_wasm,
    SbxError,
    PyException,
    "Every error the package raises. A denied operation is not one: it is a value in the result."
);
create_exception!(
    sbx_wasm,
    CapsError,
    SbxError,
    "A caps file, text or dict that is not a valid grant; the message names the key and the accepted form."
);
create_exception!(
    sbx_wasm,
    LoadError,
    SbxError,
    "A component or runner that could not be read, compiled or linked, or a run that could not start."
);
create_exception!(
    sbx_wasm,
    CapacityError,
    LoadError,
    "No room for another run now (admission or the pooling allocator full): never the guest's fault."
);
create_exception!(
    sbx_wasm,
    PlanError,
    SbxError,
    "A plan that is not a JSON list of ops the gate knows."
);

pub(crate) fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SbxError", py.get_type::<SbxError>())?;
    m.add("CapsError", py.get_type::<CapsError>())?;
    m.add("LoadError", py.get_type::<LoadError>())?;
    m.add("CapacityError", py.get_type::<CapacityError>())?;
    m.add("PlanError", py.get_type::<PlanError>())?;
    Ok(())
}

pub(crate) fn caps(e: RustCapsError) -> PyErr {
    CapsError::new_err(e.to_string())
}

pub(crate) fn load(e: RustLoadError) -> PyErr {
    match e {
        RustLoadError::Capacity { .. } => CapacityError::new_err(e.to_string()),
        e => LoadError::new_err(e.to_string()),
    }
}

pub(crate) fn setup(e: sbx_wasm::Error) -> PyErr {
    SbxError::new_err(e.to_string())
}
