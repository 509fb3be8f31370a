//! A histogram of durations that records with atomics only: prometheus-client's own
//! takes a lock on every observation, and one is observed per request.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Upper bounds (seconds) for request times: 0.1 ms to about 33 s, doubling.
pub const REQUEST_BUCKETS: &[f64] =
    &[0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0];

/// Upper bounds (seconds) for leader elections: from the decision to its commit.
pub const ELECTION_BUCKETS: &[f64] = &[0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0];

/// A shared handle on one histogram (clones count into the same buckets).
#[derive(Debug, Clone)]
pub struct Histogram {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Upper bounds in nanoseconds, ascending; one more bucket counts the rest (+Inf).
    bounds_ns: Box<[u64]>,
    bounds: &'static [f64],
    buckets: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
}

impl Histogram {
    /// An empty histogram with the given upper bounds (seconds, ascending).
    pub fn new(bounds: &'static [f64]) -> Histogram {
        let bounds_ns = bounds.iter().map(|b| (b * 1e9) as u64).collect();
        let buckets = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        Histogram { inner: Arc::new(Inner { bounds_ns, bounds, buckets, sum_ns: AtomicU64::new(0) }) }
    }

    /// Records one duration.
    pub fn observe(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let i = bucket_of(&self.inner.bounds_ns, ns);
        self.inner.buckets[i].fetch_add(1, Relaxed);
        self.inner.sum_ns.fetch_add(ns, Relaxed);
    }

    /// (count, sum in seconds, per-bucket counts) as of now.
    pub fn snapshot(&self) -> (u64, f64, Vec<u64>) {
        let counts: Vec<u64> = self.inner.buckets.iter().map(|b| b.load(Relaxed)).collect();
        (counts.iter().sum(), self.inner.sum_ns.load(Relaxed) as f64 / 1e9, counts)
    }
}

/// The bucket a value of `ns` falls in: the first whose bound is not below it.
fn bucket_of(bounds_ns: &[u64], ns: u64) -> usize {
    bounds_ns.partition_point(|b| *b < ns)
}

impl TypedMetric for Histogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Histogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (count, sum, counts) = self.snapshot();
        // The crate writes an infinite bound as +Inf, and adds the counts up itself.
        let buckets: Vec<(f64, u64)> = self.inner.bounds.iter().copied().chain([f64::INFINITY]).zip(counts).collect();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_on_a_bound_counts_in_that_bucket_and_the_rest_in_inf() {
        let h = Histogram::new(&[0.001, 0.01]);
        h.observe(Duration::from_micros(1000));
        h.observe(Duration::from_micros(1001));
        h.observe(Duration::from_secs(3));
        let (count, sum, counts) = h.snapshot();
        assert_eq!(count, 3);
        assert_eq!(counts, vec![1, 1, 1]);
        assert!((sum - 3.002001).abs() < 1e-9, "{sum}");
    }
}
