//! The process-wide switch for fault injection from the environment.
//!
//! The crash and failure tests drive the `rudder` and `rudder-upgrader`
//! binaries with environment variables: `RUDDER_CRASH_AT` (the executor
//! and the journal abort the process after a given durable write),
//! `RUDDER_SIM_FAIL_AT`, `RUDDER_SIM_LATENCY_MS` and
//! `RUDDER_SIM_READY_DELAY_MS` (the simulated cluster fails, slows down or
//! converges late). A program that merely embeds the library must never
//! abort or fail because one of these happens to be set, so they are read
//! only after [`enable_env_faults`] has been called: the binaries call it
//! first thing, and tests that want the knobs in-process call it too.
//! Until then every knob reads as unset.
use std::sync::atomic::{AtomicBool, Ordering};

static ON: AtomicBool = AtomicBool::new(false);

/// Turns on fault injection from the environment (`RUDDER_CRASH_AT`,
/// `RUDDER_SIM_FAIL_AT`, `RUDDER_SIM_LATENCY_MS`,
/// `RUDDER_SIM_READY_DELAY_MS`) for the rest of the process. For the
/// `rudder` binaries and tests only: a program that embeds the library
/// leaves it off, and these variables then change nothing.
#[doc(hidden)]
pub fn enable_env_faults() {
    ON.store(true, Ordering::SeqCst);
}

/// Whether [`enable_env_faults`] has been called in this process.
pub(crate) fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The knob `name` as a number: `None` when fault injection is off, or the
/// variable is unset, empty or not a number.
pub(crate) fn knob(name: &str) -> Option<u64> {
    read(enabled(), || std::env::var(name).ok())
}

/// A knob's number from `var` (not even asked when `on` is false).
fn read(on: bool, var: impl FnOnce() -> Option<String>) -> Option<u64> {
    if !on {
        return None;
    }
    var()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::read;

    #[test]
    fn knobs_read_as_unset_while_the_switch_is_off() {
        assert_eq!(read(false, || unreachable!("the variable is read")), None);
        assert_eq!(read(true, || Some(" 7 ".into())), Some(7));
        assert_eq!(read(true, || Some("".into())), None);
        assert_eq!(read(true, || Some("x".into())), None);
        assert_eq!(read(true, || None), None);
    }
}
