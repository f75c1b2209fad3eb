//! Catching a panic in host code the grant runs on the guest's behalf (a
//! tool, a `Net`), keeping its message for the result and printing nothing
//! on the host's stderr: a panicking tool is a failed call, not a crash
//! report in the embedder's logs.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Run `f`; a panic becomes `Err` with its message. Panics elsewhere in
/// the process still reach the hook that was there before (installed once,
/// it passes every panic outside `f` on).
pub(crate) fn catch_quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = QUIET.with(|q| q.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    result.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_is_kept_and_the_value_passes() {
        assert_eq!(catch_quietly(|| 7), Ok(7));
        let e = catch_quietly(|| -> u8 { panic!("tool broke: {}", 42) }).unwrap_err();
        assert_eq!(e, "tool broke: 42");
        assert_eq!(
            catch_quietly(|| std::panic::panic_any(5u8)).unwrap_err(),
            "a panic without a message"
        );
    }
}
