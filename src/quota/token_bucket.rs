//! The controller mutation quota's measure (KIP-599, Kafka's `TokenBucket`): a bucket of
//! `quota × (num - 1) × window` tokens (the burst), full at first, refilled at `quota`
//! tokens a second; each partition created or deleted takes one. The bucket may go below
//! zero: the client then waits until it is back at zero.

use super::rate::WindowConfig;

/// One client's bucket.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    tokens: f64,
    last_ms: i64,
}

/// Whether a request may overdraw the bucket (Kafka's strict and permissive quotas).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// New request versions: a topic is refused while the bucket is below zero.
    Strict,
    /// Old request versions, whose clients know no THROTTLING_QUOTA_EXCEEDED: every topic
    /// goes through, and the client is throttled afterwards.
    Permissive,
}

impl TokenBucket {
    /// A full bucket for `bound` tokens a second at `now_ms`.
    pub fn new(cfg: WindowConfig, bound: f64, now_ms: i64) -> TokenBucket {
        TokenBucket { tokens: burst(cfg, bound), last_ms: now_ms }
    }

    fn refill(&mut self, cfg: WindowConfig, bound: f64, now_ms: i64) {
        let elapsed_s = (now_ms - self.last_ms).max(0) as f64 / 1000.0;
        self.tokens = (self.tokens + bound * elapsed_s).min(burst(cfg, bound));
        self.last_ms = self.last_ms.max(now_ms);
    }

    /// When the bucket was last looked at.
    pub fn last_ms(&self) -> i64 {
        self.last_ms
    }

    /// Below zero when last looked at.
    pub fn overdrawn(&self) -> bool {
        self.tokens < 0.0
    }

    /// The tokens left at `now_ms`.
    pub fn tokens(&mut self, cfg: WindowConfig, bound: f64, now_ms: i64) -> f64 {
        self.refill(cfg, bound, now_ms);
        self.tokens
    }

    /// Counts `permits` mutations as `mode` allows: Ok with the throttle time they earn, or
    /// Err with the throttle time when a strict request finds the bucket below zero (and
    /// takes nothing from it).
    pub fn take(&mut self, cfg: WindowConfig, bound: f64, permits: f64, mode: Mutation, now_ms: i64) -> Result<i64, i64> {
        if mode == Mutation::Strict {
            let left = self.tokens(cfg, bound, now_ms);
            if left < 0.0 {
                return Err(throttle_ms(left, bound));
            }
        }
        self.refill(cfg, bound, now_ms);
        self.tokens = (self.tokens - permits).min(burst(cfg, bound));
        match mode {
            Mutation::Permissive if self.tokens < 0.0 => Ok(throttle_ms(self.tokens, bound)),
            _ => Ok(0),
        }
    }
}

fn burst(cfg: WindowConfig, bound: f64) -> f64 {
    (cfg.samples.max(2) - 1) as f64 * (cfg.window_ms as f64 / 1000.0) * bound
}

/// How long until a bucket at `tokens` (below zero) is back at zero.
fn throttle_ms(tokens: f64, bound: f64) -> i64 {
    (-tokens / bound * 1000.0).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: WindowConfig = WindowConfig { samples: 11, window_ms: 1000 };

    #[test]
    fn a_full_bucket_takes_a_burst_then_strict_requests_are_refused_until_it_refills() {
        // 2 partitions a second: a burst of 20.
        let mut b = TokenBucket::new(CFG, 2.0, 0);
        assert_eq!(b.take(CFG, 2.0, 15.0, Mutation::Strict, 0), Ok(0));
        // 5 left: a strict request still gets through, and overdraws.
        assert_eq!(b.take(CFG, 2.0, 9.0, Mutation::Strict, 0), Ok(0));
        assert_eq!(b.tokens(CFG, 2.0, 0), -4.0);
        // Below zero: refused, told to wait until the bucket is back at zero (4 / 2 s).
        assert_eq!(b.take(CFG, 2.0, 1.0, Mutation::Strict, 0), Err(2000));
        assert_eq!(b.take(CFG, 2.0, 1.0, Mutation::Strict, 1000), Err(1000));
        assert_eq!(b.take(CFG, 2.0, 1.0, Mutation::Strict, 2000), Ok(0));
    }

    #[test]
    fn permissive_requests_always_go_through_and_are_throttled_after() {
        let mut b = TokenBucket::new(CFG, 2.0, 0);
        assert_eq!(b.take(CFG, 2.0, 20.0, Mutation::Permissive, 0), Ok(0));
        assert_eq!(b.take(CFG, 2.0, 6.0, Mutation::Permissive, 0), Ok(3000));
        assert_eq!(b.take(CFG, 2.0, 6.0, Mutation::Permissive, 0), Ok(6000));
    }

    #[test]
    fn the_bucket_refills_no_higher_than_the_burst() {
        let mut b = TokenBucket::new(CFG, 2.0, 0);
        assert_eq!(b.take(CFG, 2.0, 10.0, Mutation::Strict, 0), Ok(0));
        assert_eq!(b.tokens(CFG, 2.0, 2_000), 14.0);
        assert_eq!(b.tokens(CFG, 2.0, 60_000), 20.0);
    }
}
