//! Time for the executor: the wall clock, or a clock that tests drive.
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A source of time. Waits read `now` and call `sleep` between polls.
///
/// The executor runs releases (and the objects of one install-order
/// group) on threads of their own. It tells the clock how many threads
/// take part ([`Clock::fork`], [`Clock::leave`]), so that a simulated
/// clock can let time pass only when every taking-part thread sleeps; the
/// wall clock ignores both.
pub trait Clock: Send + Sync {
    /// Time elapsed since the clock's origin.
    fn now(&self) -> Duration;
    /// Lets `d` pass.
    fn sleep(&self, d: Duration);
    /// `n` more threads take part in this clock's time from now on.
    fn fork(&self, _n: usize) {}
    /// One thread stops taking part: it ends, or is about to block on
    /// something other than [`Clock::sleep`] (waiting for other threads).
    fn leave(&self) {}
}

/// The machine's monotonic clock.
pub struct WallClock {
    origin: Instant,
}

impl Default for WallClock {
    fn default() -> Self {
        WallClock {
            origin: Instant::now(),
        }
    }
}

impl Clock for WallClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// A deterministic clock: with one thread, `sleep` advances it at once.
/// Clones share the same time, so a simulated cluster and an executor can
/// share one.
///
/// With several taking-part threads ([`Clock::fork`]) it is a
/// discrete-event clock: a `sleep` waits until every taking-part thread
/// sleeps, then time jumps to the earliest wake-up. So a thread busy
/// writing never sees time fly past its deadline because another one
/// polls, and concurrent waits overlap in simulated time as they would in
/// real time.
#[derive(Clone, Default)]
pub struct DrivenClock {
    inner: Arc<(Mutex<State>, Condvar)>,
}

#[derive(Default)]
struct State {
    now: Duration,
    /// Threads taking part beyond the first.
    extra: usize,
    /// Wake-up times of the sleeping threads.
    sleepers: Vec<Duration>,
}

impl State {
    fn active(&self) -> usize {
        self.extra + 1
    }

    /// Jumps to the earliest wake-up when every taking-part thread sleeps
    /// and none is due yet; returns whether time moved.
    fn settle(&mut self) -> bool {
        if self.sleepers.is_empty() || self.sleepers.len() < self.active() {
            return false;
        }
        match self.sleepers.iter().min().copied() {
            Some(first) if first > self.now => {
                self.now = first;
                true
            }
            // A sleeper is due: it wakes (it was notified) without time moving.
            _ => false,
        }
    }
}

impl DrivenClock {
    /// A clock at zero.
    pub fn new() -> DrivenClock {
        DrivenClock::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let mut s = self.state();
        s.now += d;
        self.inner.1.notify_all();
    }
}

impl Clock for DrivenClock {
    fn now(&self) -> Duration {
        self.state().now
    }

    fn sleep(&self, d: Duration) {
        let mut s = self.state();
        let wake = s.now + d;
        s.sleepers.push(wake);
        loop {
            if s.now >= wake {
                if let Some(i) = s.sleepers.iter().position(|w| *w == wake) {
                    s.sleepers.swap_remove(i);
                }
                self.inner.1.notify_all();
                return;
            }
            if s.settle() {
                self.inner.1.notify_all();
                continue;
            }
            s = self.inner.1.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn fork(&self, n: usize) {
        self.state().extra += n;
    }

    fn leave(&self) {
        let mut s = self.state();
        s.extra = s.extra.saturating_sub(1);
        if s.settle() {
            self.inner.1.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driven_clock_advances_on_sleep_and_is_shared() {
        let c = DrivenClock::new();
        let d = c.clone();
        c.sleep(Duration::from_millis(250));
        assert_eq!(d.now(), Duration::from_millis(250));
    }

    #[test]
    fn with_two_threads_time_passes_only_when_both_sleep() {
        let c = DrivenClock::new();
        c.fork(1);
        let woke = std::thread::scope(|s| {
            let a = s.spawn(|| {
                c.sleep(Duration::from_secs(2));
                let t = c.now();
                c.leave();
                t
            });
            c.sleep(Duration::from_secs(1));
            let mine = c.now();
            c.sleep(Duration::from_secs(1));
            let mine2 = c.now();
            (mine, mine2, a.join().unwrap())
        });
        // Each thread's sleeps overlap the other's: two seconds in all.
        assert_eq!(woke.0, Duration::from_secs(1));
        assert_eq!(woke.1, Duration::from_secs(2));
        assert_eq!(woke.2, Duration::from_secs(2));
        assert_eq!(c.now(), Duration::from_secs(2));
    }

    #[test]
    fn threads_sleeping_in_step_share_the_time() {
        let c = DrivenClock::new();
        c.fork(2);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..10 {
                        c.sleep(Duration::from_secs(1));
                    }
                    c.leave();
                });
            }
            for _ in 0..10 {
                c.sleep(Duration::from_secs(1));
            }
        });
        assert_eq!(c.now(), Duration::from_secs(10));
    }
}
