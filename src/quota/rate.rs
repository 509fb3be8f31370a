//! A rate measured over sliding windows, as Kafka's `Rate` over a `SampledStat` measures
//! it (Kafka 3.8 and later): `quota.window.num` samples of `quota.window.size.seconds`
//! each. A sample starts at the first value recorded after the previous one ended (samples
//! are not aligned to the clock). A sample is forgotten once its last value is older than
//! all windows together, so one extra sample is kept: the one that overlaps the start of
//! the measured span. The rate is taken from the start of the oldest sample kept, and until
//! `num - 1` whole windows have passed, over `num - 1` windows, so a client's first burst
//! is not measured over a few milliseconds.

/// The window settings (`quota.window.num`, `quota.window.size.seconds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowConfig {
    pub samples: usize,
    pub window_ms: i64,
}

impl Default for WindowConfig {
    /// Kafka's defaults: 11 windows of one second.
    fn default() -> WindowConfig {
        WindowConfig { samples: 11, window_ms: 1000 }
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    start_ms: i64,
    /// When a value was last recorded in it: a sample goes once this is out of every window.
    last_ms: i64,
    value: f64,
}

impl Sample {
    fn fresh(now_ms: i64) -> Sample {
        Sample { start_ms: now_ms, last_ms: now_ms, value: 0.0 }
    }
}

/// One measured rate (per second).
#[derive(Debug, Clone)]
pub struct Rate {
    cfg: WindowConfig,
    samples: Vec<Sample>,
    current: usize,
}

impl Rate {
    /// An empty rate whose first window starts at `now_ms`.
    pub fn new(cfg: WindowConfig, now_ms: i64) -> Rate {
        let cfg = WindowConfig { samples: cfg.samples.max(2), window_ms: cfg.window_ms.max(1) };
        Rate { cfg, samples: vec![Sample::fresh(now_ms)], current: 0 }
    }

    /// Adds `value` at `now_ms`, opening a new window if the current one has ended.
    pub fn record(&mut self, value: f64, now_ms: i64) {
        if now_ms - self.samples[self.current].start_ms >= self.cfg.window_ms {
            // One more sample than windows: the oldest may still overlap the measured span.
            self.current = (self.current + 1) % (self.cfg.samples + 1);
            if self.current >= self.samples.len() {
                self.samples.push(Sample::fresh(now_ms));
            } else {
                self.samples[self.current] = Sample::fresh(now_ms);
            }
        }
        let s = &mut self.samples[self.current];
        s.value += value;
        s.last_ms = now_ms;
    }

    /// Takes back a value recorded at `now_ms` (Kafka unrecords a fetch it answers empty).
    pub fn unrecord(&mut self, value: f64, now_ms: i64) {
        self.record(-value, now_ms);
    }

    fn purge(&mut self, now_ms: i64) {
        let expiry = self.cfg.samples as i64 * self.cfg.window_ms;
        for s in &mut self.samples {
            if now_ms - s.last_ms >= expiry {
                *s = Sample::fresh(now_ms);
            }
        }
    }

    /// The time the rate is measured over at `now_ms`, in ms.
    pub fn window_size_ms(&mut self, now_ms: i64) -> i64 {
        self.purge(now_ms);
        let oldest = self.samples.iter().map(|s| s.start_ms).min().unwrap_or(now_ms);
        let mut elapsed = now_ms - oldest;
        let full = elapsed / self.cfg.window_ms;
        let min_full = self.cfg.samples as i64 - 1;
        if full < min_full {
            elapsed += (min_full - full) * self.cfg.window_ms;
        }
        elapsed
    }

    /// The rate per second at `now_ms`.
    pub fn measure(&mut self, now_ms: i64) -> f64 {
        let size = self.window_size_ms(now_ms);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        total / (size as f64 / 1000.0)
    }

    /// How long to throttle at `now_ms` so the rate comes back down to `bound` (Kafka's
    /// `QuotaUtils.throttleTime`): the excess over the bound, as a share of the bound,
    /// times the measured window. Zero when within the bound.
    pub fn throttle_ms(&mut self, bound: f64, now_ms: i64) -> i64 {
        let rate = self.measure(now_ms);
        if rate <= bound || bound <= 0.0 {
            return 0;
        }
        let size = self.window_size_ms(now_ms) as f64;
        ((rate - bound) / bound * size).round() as i64
    }

    /// When anything was last recorded (or the rate was created).
    pub fn last_ms(&self) -> i64 {
        self.samples[self.current].last_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_burst_is_measured_over_ten_windows() {
        let mut r = Rate::new(WindowConfig::default(), 0);
        r.record(10_000.0, 0);
        // 10 full windows of padding: 10 000 bytes over 10 s.
        assert_eq!(r.window_size_ms(0), 10_000);
        assert_eq!(r.measure(0), 1000.0);
        assert_eq!(r.throttle_ms(1000.0, 0), 0);
        r.record(5_000.0, 500);
        // 15 000 over 10.5 s against 1000/s: (1428.57 - 1000) / 1000 * 10 500.
        assert_eq!(r.throttle_ms(1000.0, 500), 4500);
    }

    #[test]
    fn a_steady_overload_is_throttled_in_proportion() {
        let mut r = Rate::new(WindowConfig::default(), 0);
        // 2000 bytes a second for 20 s against a bound of 1000.
        for t in (0..20_000).step_by(100) {
            r.record(200.0, t);
        }
        let now = 19_950;
        let rate = r.measure(now);
        assert!((rate - 2000.0).abs() < 200.0, "{rate}");
        let t = r.throttle_ms(1000.0, now);
        let size = r.window_size_ms(now);
        assert_eq!(t, ((rate - 1000.0) / 1000.0 * size as f64).round() as i64);
        // Silent for that long, the client is back within the bound.
        assert!(r.measure(now + t) <= 1000.0 * 1.05, "{}", r.measure(now + t));
    }

    #[test]
    fn old_windows_are_forgotten() {
        let cfg = WindowConfig { samples: 3, window_ms: 1000 };
        let mut r = Rate::new(cfg, 0);
        r.record(3000.0, 0);
        for t in [1000, 2000] {
            r.record(0.0, t);
        }
        assert_eq!(r.measure(2500), 3000.0 / 2.5);
        // At 3000 ms the first sample is 3 windows old and goes.
        assert_eq!(r.measure(3000), 0.0);
        assert_eq!(r.throttle_ms(1.0, 3000), 0);
    }

    #[test]
    fn windows_are_reused_round_robin() {
        let cfg = WindowConfig { samples: 2, window_ms: 100 };
        let mut r = Rate::new(cfg, 0);
        for t in (0..1000).step_by(100) {
            r.record(10.0, t);
        }
        assert_eq!(r.samples.len(), 3, "one sample more than windows");
        // At 950 the sample of 700 is out of both windows; those of 800 and 900 are
        // measured over 150 ms.
        assert!((r.measure(950) - 20.0 / 0.15).abs() < 1e-9);
    }

    #[test]
    fn a_sample_is_kept_while_its_last_value_is_within_the_windows() {
        let cfg = WindowConfig { samples: 2, window_ms: 1000 };
        let mut r = Rate::new(cfg, 0);
        r.record(100.0, 0);
        r.record(100.0, 900);
        // It started 2.5 s ago but took a value 1.6 s ago: kept, and the rate is taken
        // from its start (Kafka's fix for rate spikes, KAFKA PR 15889).
        assert_eq!(r.window_size_ms(2500), 2500);
        assert_eq!(r.measure(2500), 80.0);
        assert_eq!(r.measure(2900), 0.0);
    }

    /// A consumer that fetches `fetch` bytes every `gap_ms` while it is not throttled (a
    /// throttled fetch is answered empty, taken back off the rate, and waited out, as the
    /// fetch path and KIP-219 clients do); when each fetch is served, in ms.
    fn served_fetches(cfg: WindowConfig, bound: f64, fetch: f64, gap_ms: i64, until_ms: i64) -> Vec<i64> {
        let mut r = Rate::new(cfg, 0);
        let (mut t, mut served) = (0, Vec::new());
        while t < until_ms {
            r.record(fetch, t);
            match r.throttle_ms(bound, t) {
                0 => {
                    served.push(t);
                    t += gap_ms;
                }
                wait => {
                    r.unrecord(fetch, t);
                    t += wait;
                }
            }
        }
        served
    }

    #[test]
    fn a_fast_client_reads_in_one_burst_a_cycle() {
        // The Java consumer of QuotaTest: 64 880-byte fetches, 500 kB/s, four windows of 1 s.
        let cfg = WindowConfig { samples: 4, window_ms: 1000 };
        let (bound, fetch) = (500_000.0, 64_880.0);
        let rate_over = |served: &[i64], from: i64, span: i64| {
            served.iter().filter(|t| **t >= from && **t < from + span).count() as f64 * fetch * 1000.0 / span as f64 / bound
        };
        // The test times from its first record (`from` 0 to 600 ms late) and skips 4 s: the
        // client's rate over the next two cycles of four windows is the quota, however fast
        // the client is and whatever the phase.
        for gap in [1, 2, 5, 10, 20, 60] {
            let served = served_fetches(cfg, bound, fetch, gap, 30_000);
            for from in (4000..4600).step_by(20) {
                let r = rate_over(&served, from, 8000);
                assert!((0.9..=1.1).contains(&r), "gap {gap} ms: {r:.3} of the quota over [{from}, {})", from + 8000);
            }
        }
        // A client that takes a window's credit at once waits seconds between bursts, and a
        // 5 s span (not a whole number of cycles) can catch two of them: what QuotaTest's Java
        // consumer met in a warm JVM (1.54x).
        let served = served_fetches(cfg, bound, fetch, 1, 30_000);
        assert!(served.windows(2).any(|w| w[1] - w[0] >= 3000), "no long wait between bursts");
        let most = (4000..4600).step_by(20).map(|from| rate_over(&served, from, 5000)).fold(0.0, f64::max);
        assert!(most > 1.5, "the most over 5 s: {most:.3}");
    }

    #[test]
    fn unrecord_takes_a_value_back() {
        let mut r = Rate::new(WindowConfig::default(), 0);
        r.record(5000.0, 10);
        r.unrecord(5000.0, 20);
        assert_eq!(r.measure(20), 0.0);
    }
}
