//! The measured rates of every client under a quota, and the throttle time each request
//! earns (Kafka's `ClientQuotaManager`): a request's bytes are recorded against the rate
//! its governing quota names, and if the rate is then over the bound the client waits the
//! time that brings it back. Rates idle for longer than all windows are dropped.

use std::collections::HashMap;

use super::rate::{Rate, WindowConfig};
use super::resolve::Governing;
use super::token_bucket::{Mutation, TokenBucket};

/// What a rate counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThrottleKind {
    /// Produce request bytes, against `producer_byte_rate`.
    Produce,
    /// Fetch response bytes, against `consumer_byte_rate`.
    Fetch,
    /// New connections from one address, against `connection_creation_rate`.
    ConnectionCreation,
    /// Time spent handling requests, as a percentage of one thread, against
    /// `request_percentage` (see [`request_percentage`]).
    Request,
}

impl ThrottleKind {
    /// Kafka's quota type name, for metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            ThrottleKind::Produce => "Produce",
            ThrottleKind::Fetch => "Fetch",
            ThrottleKind::ConnectionCreation => "ConnectionCreation",
            ThrottleKind::Request => "Request",
        }
    }
}

type Key = (ThrottleKind, String, String);

/// Handling time as the value a request quota records (Kafka's `nanosToPercentage`): one
/// second of handling per second is 100, so a rate of these is the percentage of one
/// thread's time a client takes, which `request_percentage` bounds.
pub fn request_percentage(handling_nanos: u64) -> f64 {
    handling_nanos as f64 * 100.0 / 1e9
}

/// Every client rate, keyed by kind and the governing quota's tags.
#[derive(Debug)]
pub struct Throttler {
    cfg: WindowConfig,
    rates: HashMap<Key, Rate>,
    last_sweep_ms: i64,
    /// The controller mutation quota's windows (`controller.quota.window.*`).
    mutation_cfg: WindowConfig,
    /// Controller mutation buckets, by the governing quota's tags.
    buckets: HashMap<(String, String), TokenBucket>,
}

impl Throttler {
    pub fn new(cfg: WindowConfig) -> Throttler {
        Throttler { cfg, rates: HashMap::new(), last_sweep_ms: 0, mutation_cfg: WindowConfig::default(), buckets: HashMap::new() }
    }

    /// Takes new controller mutation window settings; buckets start over, full.
    pub fn configure_mutations(&mut self, cfg: WindowConfig) {
        if cfg != self.mutation_cfg {
            self.mutation_cfg = cfg;
            self.buckets.clear();
        }
    }

    /// Counts `permits` partition mutations against the client's `controller_mutation_rate`
    /// (see [`TokenBucket::take`]): Ok with the throttle time earned, or Err with the
    /// throttle time when a strict request is refused.
    pub fn mutate(&mut self, gov: &Governing, permits: f64, mode: Mutation, now_ms: i64) -> Result<i64, i64> {
        self.sweep(now_ms);
        let cfg = self.mutation_cfg;
        let bucket = self.buckets.entry(gov.tags.clone()).or_insert_with(|| TokenBucket::new(cfg, gov.bound, now_ms));
        let clamp = |ms: i64| ms.clamp(0, i32::MAX as i64);
        bucket.take(cfg, gov.bound, permits, mode, now_ms).map(clamp).map_err(clamp)
    }

    /// Takes new window settings; rates measured so far start over.
    pub fn configure(&mut self, cfg: WindowConfig) {
        if cfg != self.cfg {
            self.cfg = cfg;
            self.rates.clear();
        }
    }

    /// Records `value` against the client's rate at `now_ms`; the throttle time it earns.
    pub fn record(&mut self, kind: ThrottleKind, gov: &Governing, value: f64, now_ms: i64) -> i64 {
        self.sweep(now_ms);
        let cfg = self.cfg;
        let rate = self.rates.entry((kind, gov.tags.0.clone(), gov.tags.1.clone())).or_insert_with(|| Rate::new(cfg, now_ms));
        rate.record(value, now_ms);
        rate.throttle_ms(gov.bound, now_ms).clamp(0, i32::MAX as i64)
    }

    /// Records request handling time (see [`request_percentage`]) against the client's
    /// `request_percentage` at `now_ms`; the throttle time, at most one window (Kafka's
    /// `ClientRequestQuotaManager` bounds it so: one slow request is not punished for the
    /// whole span of the windows).
    pub fn record_request(&mut self, gov: &Governing, handling_nanos: u64, now_ms: i64) -> i64 {
        let ms = self.record(ThrottleKind::Request, gov, request_percentage(handling_nanos), now_ms);
        ms.min(self.cfg.window_ms)
    }

    /// Adds a value to the client's rate without a throttle decision (Kafka's
    /// `recordNoThrottle`): the time spent sending a response, counted once it is out, shows
    /// in the client's next throttle.
    pub fn record_no_throttle(&mut self, kind: ThrottleKind, gov: &Governing, value: f64, now_ms: i64) {
        let cfg = self.cfg;
        let rate = self.rates.entry((kind, gov.tags.0.clone(), gov.tags.1.clone())).or_insert_with(|| Rate::new(cfg, now_ms));
        rate.record(value, now_ms);
    }

    /// Takes back a recorded value (a throttled fetch is answered without its records).
    pub fn unrecord(&mut self, kind: ThrottleKind, gov: &Governing, value: f64, now_ms: i64) {
        if let Some(r) = self.rates.get_mut(&(kind, gov.tags.0.clone(), gov.tags.1.clone())) {
            r.unrecord(value, now_ms);
        }
    }

    /// How many client rates are kept.
    pub fn len(&self) -> usize {
        self.rates.len()
    }

    fn sweep(&mut self, now_ms: i64) {
        let span = self.cfg.samples as i64 * self.cfg.window_ms;
        if now_ms - self.last_sweep_ms < span {
            return;
        }
        self.last_sweep_ms = now_ms;
        self.rates.retain(|_, r| now_ms - r.last_ms() < span);
        // A bucket not below zero when last seen is full again once idle for all windows;
        // one left overdrawn is kept for the hour Kafka keeps an idle client's sensors.
        let refill = (self.mutation_cfg.samples as i64) * self.mutation_cfg.window_ms;
        self.buckets.retain(|_, b| {
            let idle = now_ms - b.last_ms();
            idle < refill || (b.overdrawn() && idle < 3_600_000)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gov(bound: f64, user: &str, client: &str) -> Governing {
        Governing { bound, tags: (user.into(), client.into()) }
    }

    #[test]
    fn clients_sharing_an_entity_share_a_rate() {
        let mut t = Throttler::new(WindowConfig::default());
        let user_quota = gov(1000.0, "alice", "");
        assert_eq!(t.record(ThrottleKind::Produce, &user_quota, 6000.0, 0), 0);
        // A second client of alice adds to the same rate: 12 000 over 10 s against 1000/s.
        assert_eq!(t.record(ThrottleKind::Produce, &user_quota, 6000.0, 0), 2000);
        // Fetch bytes and other clients are measured apart.
        assert_eq!(t.record(ThrottleKind::Fetch, &user_quota, 6000.0, 0), 0);
        assert_eq!(t.record(ThrottleKind::Produce, &gov(1000.0, "bob", ""), 6000.0, 0), 0);
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn an_unrecorded_fetch_does_not_count() {
        let mut t = Throttler::new(WindowConfig::default());
        let g = gov(100.0, "", "c");
        assert!(t.record(ThrottleKind::Fetch, &g, 5000.0, 0) > 0);
        t.unrecord(ThrottleKind::Fetch, &g, 5000.0, 0);
        assert_eq!(t.record(ThrottleKind::Fetch, &g, 10.0, 1), 0);
    }

    #[test]
    fn request_time_is_a_percentage_of_one_thread_and_its_throttle_is_at_most_a_window() {
        assert_eq!(request_percentage(1_000_000_000), 100.0);
        assert_eq!(request_percentage(10_000_000), 1.0);
        let mut t = Throttler::new(WindowConfig { samples: 4, window_ms: 1000 });
        // 2 % of a thread: 20 ms of handling a second, 60 ms over the first 3 windows.
        let g = gov(2.0, "", "busy");
        assert_eq!(t.record_request(&g, 50_000_000, 0), 0, "50 ms of 60 allowed");
        // 40 ms more: 90 ms over 3.1 s is 2.9 % against 2 %: (2.9 - 2) / 2 * 3100 = 1400, bounded.
        assert_eq!(t.record_request(&g, 40_000_000, 100), 1000);
        // The time spent sending counts without a decision, and in the next one.
        t.record_no_throttle(ThrottleKind::Request, &g, request_percentage(30_000_000), 200);
        assert_eq!(t.record(ThrottleKind::Request, &g, 0.0, 200), 2800, "120 ms over 3.2 s: 3.75 % against 2 %");
        // Another client-id under the same default is measured apart; byte rates too.
        assert_eq!(t.record_request(&gov(2.0, "", "idle"), 1_000_000, 200), 0);
        assert_eq!(t.record(ThrottleKind::Fetch, &g, 1.0, 200), 0);
        // Once quiet for long enough, the client is within its bound again.
        assert_eq!(t.record_request(&g, 0, 6000), 0);
    }

    #[test]
    fn idle_rates_are_dropped() {
        let mut t = Throttler::new(WindowConfig { samples: 2, window_ms: 1000 });
        t.record(ThrottleKind::Produce, &gov(1.0, "", "a"), 1.0, 0);
        t.record(ThrottleKind::Produce, &gov(1.0, "", "b"), 1.0, 1500);
        assert_eq!(t.len(), 2);
        t.record(ThrottleKind::Produce, &gov(1.0, "", "b"), 1.0, 2500);
        assert_eq!(t.len(), 1, "a has been idle for longer than both windows");
    }

    #[test]
    fn mutation_buckets_are_per_client_and_strict_or_permissive() {
        use crate::quota::token_bucket::Mutation::{Permissive, Strict};
        let mut t = Throttler::new(WindowConfig::default());
        t.configure_mutations(WindowConfig { samples: 2, window_ms: 1000 });
        // A burst of 2 partitions, refilled at 2 a second.
        let a = gov(2.0, "", "a");
        assert_eq!(t.mutate(&a, 3.0, Strict, 0), Ok(0));
        assert_eq!(t.mutate(&a, 1.0, Strict, 0), Err(500));
        assert_eq!(t.mutate(&gov(2.0, "", "b"), 1.0, Strict, 0), Ok(0));
        assert_eq!(t.mutate(&a, 1.0, Permissive, 0), Ok(1000));
        assert_eq!(t.mutate(&a, 1.0, Strict, 1000), Ok(0));
    }
}
