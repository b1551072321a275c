//! Process-level fault injection for crash tests: `RUDDER_CRASH_AT=N`
//! aborts the process right after its N-th durable write of any kind (to
//! the cluster, the release store or the journal). Only in processes that
//! turned fault injection on ([`crate::enable_env_faults`]: the binaries,
//! and tests); a program that embeds the library is never aborted.
//!
//! In-process tests use [`crash_thread_at`] instead: the N-th durable write
//! of the current thread then panics with [`Crash`], which the test
//! catches as if the process had died there. The executor's worker threads
//! share the setting of the thread that started the apply ([`inherit`],
//! [`adopt`]): writes are counted across them, and once one of them has
//! "crashed", every other one dies at its next durable write, as the
//! threads of a dead process would.
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

static WRITES: AtomicU64 = AtomicU64::new(0);

/// A simulated crash shared by the threads of one apply.
#[derive(Debug)]
pub struct Shared {
    count: AtomicU64,
    at: u64,
    fired: AtomicBool,
}

thread_local! {
    static THREAD: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
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

/// Makes the `n`-th durable write of this thread, and of the worker
/// threads it starts, (counted from now) panic with [`Crash`]; `0` turns
/// it off. For tests (re-exported, hidden, as
/// `rudder::exec::crash_thread_at`): it needs no switch, since only a
/// program that calls it is affected.
pub fn crash_thread_at(n: u64) {
    let state = (n > 0).then(|| {
        Arc::new(Shared {
            count: AtomicU64::new(0),
            at: n,
            fired: AtomicBool::new(false),
        })
    });
    THREAD.with(|t| *t.borrow_mut() = state);
}

/// This thread's crash setting, for the threads it starts.
pub(crate) fn inherit() -> Option<Arc<Shared>> {
    THREAD.with(|t| t.borrow().clone())
}

/// Takes over a setting from [`inherit`] (in a worker thread).
pub(crate) fn adopt(state: Option<Arc<Shared>>) {
    THREAD.with(|t| *t.borrow_mut() = state);
}

/// Counts one durable write; aborts the process when it is the one
/// `RUDDER_CRASH_AT` names. Returns the write's number.
pub fn durable_write(what: &str) -> u64 {
    let n = WRITES.fetch_add(1, Ordering::SeqCst) + 1;
    if crash_at() == Some(n) {
        eprintln!("RUDDER_CRASH_AT={n}: aborting after write {n} ({what})");
        std::process::abort();
    }
    let state = THREAD.with(|t| t.borrow().clone());
    if let Some(s) = state {
        // Another thread of this apply crashed: this one is dead too.
        if s.fired.load(Ordering::SeqCst) {
            THREAD.with(|t| *t.borrow_mut() = None);
            std::panic::panic_any(Crash(s.at));
        }
        let count = s.count.fetch_add(1, Ordering::SeqCst) + 1;
        if count == s.at {
            s.fired.store(true, Ordering::SeqCst);
            THREAD.with(|t| *t.borrow_mut() = None);
            std::panic::panic_any(Crash(count));
        }
    }
    n
}
