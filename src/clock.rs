//! Time, as one injectable input: the system clock in the broker (shifted by an injected
//! clock-skew fault, if any), a manual clock in deterministic tests. The bottom layer: it
//! imports nothing from the crate.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// The shift injected into this node's clock (`sluice fault clock --skew-ms S`).
static SKEW_MS: AtomicI64 = AtomicI64::new(0);

/// Milliseconds since the Unix epoch: the system clock, shifted by any injected skew.
pub fn now_ms() -> i64 {
    system_now_ms().saturating_add(SKEW_MS.load(Ordering::Relaxed))
}

/// Milliseconds since the Unix epoch from the system clock, ignoring any injected skew.
pub fn system_now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Shifts this node's clock by `ms` from the system clock (0: back to it).
pub fn set_skew_ms(ms: i64) {
    SKEW_MS.store(ms, Ordering::Relaxed);
}

/// The injected shift of this node's clock.
pub fn skew_ms() -> i64 {
    SKEW_MS.load(Ordering::Relaxed)
}

/// A source of wall-clock milliseconds.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// A clock that moves only when told to: simulations and state-machine tests.
#[derive(Debug, Default, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: i64) -> Self {
        ManualClock(Arc::new(AtomicI64::new(start_ms)))
    }

    /// Moves the clock forward by `ms` (time never goes back).
    pub fn advance(&self, ms: i64) {
        debug_assert!(ms >= 0, "a manual clock never goes back");
        self.0.fetch_add(ms.max(0), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let c = ManualClock::new(1_000);
        assert_eq!(c.now_ms(), 1_000);
        c.clone().advance(250);
        assert_eq!(c.now_ms(), 1_250);
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
    }
}
