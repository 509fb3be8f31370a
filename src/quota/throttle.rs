//! The measured rates of every client under a quota, and the throttle time each request
//! earns (Kafka's `ClientQuotaManager`): a request's bytes are recorded against the rate
//! its governing quota names, and if the rate is then over the bound the client waits the
//! time that brings it back. Rates idle for longer than all windows are dropped.

use std::collections::HashMap;

use super::rate::{Rate, WindowConfig};
use super::resolve::Governing;

/// What a rate counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThrottleKind {
    /// Produce request bytes, against `producer_byte_rate`.
    Produce,
    /// Fetch response bytes, against `consumer_byte_rate`.
    Fetch,
    /// New connections from one address, against `connection_creation_rate`.
    ConnectionCreation,
}

impl ThrottleKind {
    /// Kafka's quota type name, for metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            ThrottleKind::Produce => "Produce",
            ThrottleKind::Fetch => "Fetch",
            ThrottleKind::ConnectionCreation => "ConnectionCreation",
        }
    }
}

type Key = (ThrottleKind, String, String);

/// Every client rate, keyed by kind and the governing quota's tags.
#[derive(Debug)]
pub struct Throttler {
    cfg: WindowConfig,
    rates: HashMap<Key, Rate>,
    last_sweep_ms: i64,
}

impl Throttler {
    pub fn new(cfg: WindowConfig) -> Throttler {
        Throttler { cfg, rates: HashMap::new(), last_sweep_ms: 0 }
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
    fn idle_rates_are_dropped() {
        let mut t = Throttler::new(WindowConfig { samples: 2, window_ms: 1000 });
        t.record(ThrottleKind::Produce, &gov(1.0, "", "a"), 1.0, 0);
        t.record(ThrottleKind::Produce, &gov(1.0, "", "b"), 1.0, 1500);
        assert_eq!(t.len(), 2);
        t.record(ThrottleKind::Produce, &gov(1.0, "", "b"), 1.0, 2500);
        assert_eq!(t.len(), 1, "a has been idle for longer than both windows");
    }
}
