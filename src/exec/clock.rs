//! Time for the executor: the wall clock, or a clock that tests drive.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A source of time. Waits read `now` and call `sleep` between polls.
pub trait Clock: Send + Sync {
    /// Time elapsed since the clock's origin.
    fn now(&self) -> Duration;
    /// Lets `d` pass.
    fn sleep(&self, d: Duration);
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

/// A deterministic clock: `sleep` advances it at once. Clones share the
/// same time, so a simulated cluster and an executor can share one.
#[derive(Clone, Default)]
pub struct DrivenClock {
    nanos: Arc<AtomicU64>,
}

impl DrivenClock {
    /// A clock at zero.
    pub fn new() -> DrivenClock {
        DrivenClock::default()
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(n, Ordering::SeqCst);
    }
}

impl Clock for DrivenClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::SeqCst))
    }
    fn sleep(&self, d: Duration) {
        self.advance(d)
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
}
