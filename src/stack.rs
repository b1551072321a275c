//! Stack growth for deep recursion: the template parser and executor, and
//! the YAML and JSON readers and writers on deeply nested documents.
//!
//! They recurse once per nesting level of the template text (and per
//! `include`/`template`/`tpl` call) or of the document (Helm's limit is
//! 10,000 levels), which hostile input can make deep, so deep recursion runs on stack segments that `stacker` allocates on demand.
//! Asking `stacker` how much stack is left costs a one-time probe of the
//! thread's stack bounds, which on a process's main thread means glibc
//! reading and parsing `/proc/self/maps` (about 0.1 ms, several percent of a
//! small chart's whole render). Nearly every template nests only a few
//! levels, so the first [`SHALLOW`] levels on a thread recurse directly and
//! only deeper ones go through `stacker`.
use std::cell::Cell;

/// Levels that recurse without a stack check. At a few KiB per level this
/// stays far inside the smallest stack a thread gets (2 MiB for Rust's
/// spawned threads), however small the remaining budget `stacker` keeps.
const SHALLOW: usize = 16;

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Restores the depth on the way out, also when unwinding.
struct Level(usize);

impl Drop for Level {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(self.0));
    }
}

/// Runs `f` one recursion level deeper: directly while the thread is
/// shallow, else on a fresh `segment`-byte stack segment when less than
/// `red_zone` bytes remain.
pub(crate) fn grow<R>(red_zone: usize, segment: usize, f: impl FnOnce() -> R) -> R {
    let depth = DEPTH.with(|d| {
        let n = d.get();
        d.set(n + 1);
        n
    });
    let _level = Level(depth);
    if depth < SHALLOW {
        f()
    } else {
        stacker::maybe_grow(red_zone, segment, f)
    }
}

/// [`grow`] with the red zone and segment the document walkers use: a
/// level of theirs takes well under a KiB, even in debug builds.
pub(crate) fn deeper<R>(f: impl FnOnce() -> R) -> R {
    grow(64 * 1024, 1024 * 1024, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nest(n: usize) -> usize {
        if n == 0 {
            return DEPTH.with(|d| d.get());
        }
        grow(32 * 1024, 256 * 1024, || nest(n - 1))
    }

    #[test]
    fn depth_counts_levels_and_unwinds() {
        assert_eq!(nest(100), 100);
        assert_eq!(DEPTH.with(|d| d.get()), 0);
        let r = std::panic::catch_unwind(|| grow(1024, 64 * 1024, || panic!("x")));
        assert!(r.is_err());
        assert_eq!(DEPTH.with(|d| d.get()), 0);
    }

    #[test]
    fn deep_recursion_grows_the_stack() {
        // Far deeper than a 2 MiB thread stack holds at 4 KiB a level.
        let h = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                fn deep(n: usize) -> usize {
                    let pad = std::hint::black_box([0u8; 4096]);
                    if n == 0 {
                        return pad[0] as usize;
                    }
                    grow(64 * 1024, 1 << 20, || deep(n - 1)) + pad[1] as usize
                }
                deep(5_000)
            })
            .unwrap();
        assert_eq!(h.join().unwrap(), 0);
    }
}
