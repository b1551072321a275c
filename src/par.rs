//! Order-preserving parallel map over slices, on scoped std threads.
//!
//! Some steps of a render are embarrassingly parallel and gain from threads
//! (parsing template files, writing the `--output-dir` tree, reading the
//! files of a large mapped chart directory; decoding rendered documents was
//! measured not to gain on two cores and stays sequential). They use
//! [`map_ordered`], which cuts the input into contiguous runs of about
//! equal weight, one per core, or [`map_claimed`], where threads claim the
//! items one at a time when their cost is not known. Either way the results
//! come back in input order, so callers keep reporting the first error
//! exactly where a sequential loop would. Small inputs stay on the calling
//! thread: starting a thread costs more than a small chart's whole step.

/// The most threads one step uses.
const MAX_THREADS: usize = 4;

/// How many threads a step may use: the cores this process may run on
/// (cgroup and affinity limits included), at most [`MAX_THREADS`].
/// Asked once per process: the answer reads cgroup files (a dozen system
/// calls), and is only asked for once a step is big enough to share.
pub(crate) fn threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(MAX_THREADS)
    })
}

/// `items.iter().map(f).collect()`, computed on several threads when the
/// total `weight` of the items reaches `min_weight` (weights are any
/// measure of work, such as bytes of text).
pub(crate) fn map_ordered<T, R, W, F>(items: &[T], weight: W, min_weight: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    W: Fn(&T) -> usize,
    F: Fn(&T) -> R + Sync,
{
    let total: usize = items.iter().map(&weight).sum();
    if items.len() < 2 || total < min_weight {
        return items.iter().map(f).collect();
    }
    let threads = threads().min(items.len());
    if threads < 2 {
        return items.iter().map(f).collect();
    }
    // Cut after the item that carries a run past its share of the weight.
    let mut runs = Vec::with_capacity(threads);
    let (mut start, mut acc) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        acc += weight(item);
        if runs.len() + 1 < threads && acc * threads >= total * (runs.len() + 1) {
            runs.push(&items[start..=i]);
            start = i + 1;
        }
    }
    runs.push(&items[start..]);
    let f = &f;
    std::thread::scope(|scope| {
        let (first, rest) = match runs.split_first() {
            Some((first, rest)) => (*first, rest),
            None => (&items[..0], &[][..]),
        };
        let workers: Vec<_> = rest
            .iter()
            .map(|run| scope.spawn(move || run.iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut out: Vec<R> = Vec::with_capacity(items.len());
        out.extend(first.iter().map(f));
        for w in workers {
            match w.join() {
                Ok(part) => out.extend(part),
                // A panic in `f` is a bug; let it surface as it would have
                // on this thread.
                Err(payload) => std::panic::resume_unwind(payload),
            }
        }
        out
    })
}

/// `items.iter().map(f).collect()`, with the items claimed one at a time,
/// in order, by this thread and up to [`threads`]` - 1` helpers, when there
/// are at least `min_items`: for work whose cost per item is unknown
/// beforehand (a directory may hold one file or hundreds), where cutting
/// the input into equal runs could leave one thread with all of it.
pub(crate) fn map_claimed<T, R, F>(items: &[T], min_items: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    map_claimed_on(items, min_items, threads(), f)
}

/// [`map_claimed`] on up to `threads` threads (this one included), for
/// work that waits more than it computes (requests to a remote server),
/// where more threads than cores hide the waits.
pub(crate) fn map_claimed_on<T, R, F>(items: &[T], min_items: usize, threads: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    use std::sync::atomic::{AtomicUsize, Ordering};
    if items.len() < min_items.max(2) {
        return items.iter().map(f).collect();
    }
    let threads = threads.min(items.len());
    if threads < 2 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let mut all: Vec<(usize, R)> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for h in helpers {
            match h.join() {
                Ok(part) => all.extend(part),
                // A panic in `f` is a bug; let it surface as it would have
                // on this thread.
                Err(payload) => std::panic::resume_unwind(payload),
            }
        }
        all
    });
    all.sort_unstable_by_key(|&(i, _)| i);
    all.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::{map_claimed, map_ordered};
    use proptest::prelude::*;

    #[test]
    fn small_input_stays_sequential_and_ordered() {
        let v: Vec<u32> = (0..10).collect();
        assert_eq!(
            map_ordered(&v, |_| 1, usize::MAX, |x| x * 2),
            (0..10).map(|x| x * 2).collect::<Vec<_>>()
        );
    }

    #[test]
    fn empty_input() {
        let v: Vec<u32> = Vec::new();
        assert!(map_ordered(&v, |_| 1, 0, |x| *x).is_empty());
    }

    proptest! {
        #[test]
        fn claimed_same_as_sequential(v in proptest::collection::vec(0usize..1000, 0..200), min in 0usize..50) {
            let par = map_claimed(&v, min, |x| x.wrapping_mul(31) ^ 7);
            let seq: Vec<usize> = v.iter().map(|x| x.wrapping_mul(31) ^ 7).collect();
            prop_assert_eq!(par, seq);
        }

        #[test]
        fn same_as_sequential(v in proptest::collection::vec(0usize..1000, 0..200)) {
            let par = map_ordered(&v, |x| *x, 0, |x| x.wrapping_mul(31) ^ 7);
            let seq: Vec<usize> = v.iter().map(|x| x.wrapping_mul(31) ^ 7).collect();
            prop_assert_eq!(par, seq);
        }
    }
}
