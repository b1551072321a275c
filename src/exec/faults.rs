//! Process-level fault injection for crash tests: `RUDDER_CRASH_AT=N`
//! aborts the process right after its N-th durable write of any kind (to
//! the cluster, the release store or the journal). Only in processes that
//! turned fault injection on ([`crate::enable_env_faults`]: the binaries,
//! and tests); a program that embeds the library is never aborted.
//!
//! In-process tests use [`crash_thread_at`] instead: the N-th durable write
//! of the current thread then panics with [`Crash`], which the test
//! catches as if the process had died there.
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

static WRITES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static THREAD: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// The panic payload of a simulated crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crash(pub u64);

fn crash_at() -> Option<u64> {
    if !crate::env_faults::enabled() {
        return None;
    }
    static AT: OnceLock<Option<u64>> = OnceLock::new();
    *AT.get_or_init(|| crate::env_faults::knob("RUDDER_CRASH_AT").filter(|n| *n > 0))
}

/// Makes the `n`-th durable write of this thread (counted from now) panic
/// with [`Crash`]; `0` turns it off. For tests (re-exported, hidden, as
/// `rudder::exec::crash_thread_at`): it needs no switch, since only a
/// program that calls it is affected.
pub fn crash_thread_at(n: u64) {
    THREAD.with(|t| t.set((0, n)));
}

/// Counts one durable write; aborts the process when it is the one
/// `RUDDER_CRASH_AT` names. Returns the write's number.
pub fn durable_write(what: &str) -> u64 {
    let n = WRITES.fetch_add(1, Ordering::SeqCst) + 1;
    if crash_at() == Some(n) {
        eprintln!("RUDDER_CRASH_AT={n}: aborting after write {n} ({what})");
        std::process::abort();
    }
    THREAD.with(|t| {
        let (count, at) = t.get();
        if at > 0 {
            let count = count + 1;
            t.set((count, at));
            if count == at {
                t.set((0, 0));
                std::panic::panic_any(Crash(count));
            }
        }
    });
    n
}
