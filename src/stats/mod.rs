//! The process's counters and histograms, in one prometheus-client registry.
//!
//! The hot paths hold typed handles (atomics behind an `Arc`), looked up once: per API
//! in a static table indexed by API key, per topic in the partition's state when it is
//! opened. Counting is an atomic add: no lock and no allocation per request or batch.
//! Values that are views of state (partition counts, lag) are not kept here: the metrics
//! page computes them from the broker when it is rendered.

mod histogram;

use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

pub use prometheus_client::metrics::counter::Counter;
pub use prometheus_client::metrics::gauge::Gauge;

pub use histogram::{Histogram, ELECTION_BUCKETS, REQUEST_BUCKETS};

/// The label of per-API metrics: Kafka's name of the API (`Produce`, `Fetch`, …).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiLabel {
    api: String,
}

/// An API and the name of an error code its responses carried.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiErrorLabel {
    api: String,
    error: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabel {
    topic: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListenerLabel {
    listener: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

type HistogramFamily = Family<ApiLabel, Histogram, fn() -> Histogram>;

/// Every metric family, registered once.
struct Stats {
    registry: Registry,
    requests: Family<ApiLabel, Counter>,
    errors: Family<ApiErrorLabel, Counter>,
    durations: HistogramFamily,
    bytes_in: Family<TopicLabel, Counter>,
    bytes_out: Family<TopicLabel, Counter>,
    records_in: Family<TopicLabel, Counter>,
    connections: Family<ListenerLabel, Gauge>,
    isr_shrinks: Counter,
    isr_expands: Counter,
    elections: Family<KindLabel, Counter>,
    election_time: Histogram,
    controller_changes: Counter,
    throttles: Family<QuotaLabel, Counter>,
    throttle_ms: Family<QuotaLabel, Counter>,
}

/// A client quota's type, as Kafka's quota metrics name it (`Produce`, `Fetch`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QuotaLabel {
    quota: String,
}

/// A histogram of request times (the per-API family's constructor).
fn request_histogram() -> Histogram {
    Histogram::new(REQUEST_BUCKETS)
}

static STATS: LazyLock<Stats> = LazyLock::new(|| {
    let mut r = Registry::default();
    let s = Stats {
        registry: Registry::default(),
        requests: Family::default(),
        errors: Family::default(),
        durations: Family::new_with_constructor(request_histogram as fn() -> Histogram),
        bytes_in: Family::default(),
        bytes_out: Family::default(),
        records_in: Family::default(),
        connections: Family::default(),
        isr_shrinks: Counter::default(),
        isr_expands: Counter::default(),
        elections: Family::default(),
        election_time: Histogram::new(ELECTION_BUCKETS),
        controller_changes: Counter::default(),
        throttles: Family::default(),
        throttle_ms: Family::default(),
    };
    // prometheus-client adds `_total` to counters' sample names and a full stop to helps.
    r.register(
        "sluice_requests",
        "Requests answered, by API (kafka.network:type=RequestMetrics,name=RequestsPerSec,request=*)",
        s.requests.clone(),
    );
    r.register(
        "sluice_request_errors",
        "Error codes in responses, by API and Kafka error name; top-level codes, and per partition for Produce and Fetch, \
         per topic for Metadata, CreateTopics and DeleteTopics (kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=*,error=*)",
        s.errors.clone(),
    );
    r.register(
        "sluice_request_duration_seconds",
        "Time from a request's frame read to its response written, by API (kafka.network:type=RequestMetrics,name=TotalTimeMs,request=*)",
        s.durations.clone(),
    );
    r.register(
        "sluice_bytes_in",
        "Record batch bytes appended by producers, by topic (kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=*)",
        s.bytes_in.clone(),
    );
    r.register(
        "sluice_bytes_out",
        "Record bytes sent to consumers (not followers), by topic (kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,topic=*)",
        s.bytes_out.clone(),
    );
    r.register(
        "sluice_records_in",
        "Records appended by producers, by topic (kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=*)",
        s.records_in.clone(),
    );
    r.register(
        "sluice_connections",
        "Open client connections, by listener (kafka.server:type=socket-server-metrics,listener=*,name=connection-count)",
        s.connections.clone(),
    );
    r.register(
        "sluice_isr_shrinks",
        "Times the committed ISR of a partition this node leads lost a member (kafka.server:type=ReplicaManager,name=IsrShrinksPerSec)",
        s.isr_shrinks.clone(),
    );
    r.register(
        "sluice_isr_expands",
        "Times the committed ISR of a partition this node leads gained a member (kafka.server:type=ReplicaManager,name=IsrExpandsPerSec)",
        s.isr_expands.clone(),
    );
    r.register(
        "sluice_leader_elections",
        "Leader changes committed by this node as the active controller, by why they were made \
         (kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs)",
        s.elections.clone(),
    );
    r.register(
        "sluice_leader_election_seconds",
        "On the active controller: time from deciding a leader change to its commit \
         (kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs)",
        s.election_time.clone(),
    );
    r.register(
        "sluice_controller_changes",
        "Times this node saw a new metadata quorum leader (kafka.controller:type=KafkaController,name=NewActiveControllersCount)",
        s.controller_changes.clone(),
    );
    r.register(
        "sluice_quota_throttles",
        "Requests whose client went over its quota and was throttled, by quota type (kafka.server:type=Produce|Fetch,name=throttle-time)",
        s.throttles.clone(),
    );
    r.register(
        "sluice_quota_throttle_ms",
        "Throttle time given to clients over their quota, in ms, by quota type (kafka.server:type=Produce|Fetch,name=throttle-time)",
        s.throttle_ms.clone(),
    );
    Stats { registry: r, ..s }
});

/// Appends every registered metric in the OpenMetrics text format, without the final `# EOF`.
pub fn encode(out: &mut String) {
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode_registry(out, &STATS.registry);
}

/// Kafka's error codes run from -1 to about 130; the table has room to spare.
const ERROR_CODES: usize = 192;

/// The handles of one API.
pub struct ApiStats {
    api: String,
    requests: Counter,
    duration: Histogram,
    /// By error code + 1, made on the first response with that code.
    errors: Box<[OnceLock<Counter>]>,
}

impl ApiStats {
    /// One request answered after `took`.
    pub fn answered(&self, took: Duration) {
        self.requests.inc();
        self.duration.observe(took);
    }

    /// A response carried error `code` (0, NONE, is not counted).
    pub fn error(&self, code: i16) {
        if code == 0 {
            return;
        }
        let Some(slot) = usize::try_from(code as i32 + 1).ok().and_then(|i| self.errors.get(i)) else {
            STATS.errors.get_or_create(&ApiErrorLabel { api: self.api.clone(), error: error_name(code) }).inc();
            return;
        };
        slot.get_or_init(|| STATS.errors.get_or_create(&ApiErrorLabel { api: self.api.clone(), error: error_name(code) }).clone()).inc();
    }
}

/// API keys have room for this many.
const API_KEYS: usize = 128;

static APIS: [OnceLock<ApiStats>; API_KEYS] = [const { OnceLock::new() }; API_KEYS];

/// The handles of API `key`; None for a key no Kafka API has.
pub fn api(key: i16) -> Option<&'static ApiStats> {
    let slot = APIS.get(usize::try_from(key).ok()?)?;
    Some(slot.get_or_init(|| {
        let api = api_name(key);
        let label = ApiLabel { api: api.clone() };
        ApiStats {
            requests: STATS.requests.get_or_create(&label).clone(),
            duration: STATS.durations.get_or_create(&label).clone(),
            errors: (0..ERROR_CODES).map(|_| OnceLock::new()).collect(),
            api,
        }
    }))
}

/// Kafka's name of an API (`Produce`), or `api_<key>` for one the protocol crate lacks.
fn api_name(key: i16) -> String {
    match kafka_protocol::messages::ApiKey::try_from(key) {
        Ok(k) => format!("{k:?}"),
        Err(_) => format!("api_{key}"),
    }
}

/// Kafka's name of an error code, as its `Errors` enum spells it (`NOT_LEADER_OR_FOLLOWER`).
pub fn error_name(code: i16) -> String {
    use kafka_protocol::error::{ParseResponseErrorCode, ResponseError};
    match code.err() {
        None => "NONE".into(),
        Some(ResponseError::Unknown(c)) => format!("CODE_{c}"),
        Some(e) => upper_snake(&format!("{e:?}")),
    }
}

/// `NotLeaderOrFollower` → `NOT_LEADER_OR_FOLLOWER`.
fn upper_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.char_indices() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// A topic's traffic counters; clones count into the same series.
#[derive(Debug, Clone)]
pub struct TopicStats {
    pub bytes_in: Counter,
    pub bytes_out: Counter,
    pub records_in: Counter,
}

/// The counters of `topic` (a lookup under the families' locks: do it once, and keep them).
pub fn topic(topic: &str) -> TopicStats {
    let label = TopicLabel { topic: topic.to_string() };
    TopicStats {
        bytes_in: STATS.bytes_in.get_or_create(&label).clone(),
        bytes_out: STATS.bytes_out.get_or_create(&label).clone(),
        records_in: STATS.records_in.get_or_create(&label).clone(),
    }
}

/// The open-connections gauge of `listener` (looked up once per listener).
pub fn connections(listener: &str) -> Gauge {
    STATS.connections.get_or_create(&ListenerLabel { listener: listener.to_string() }).clone()
}

/// Counts one open connection in its listener's gauge until dropped.
pub struct Open(Gauge);

impl Open {
    pub fn new(gauge: &Gauge) -> Open {
        gauge.inc();
        Open(gauge.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The committed ISR of a partition this node leads lost at least one member.
pub fn isr_shrunk() {
    STATS.isr_shrinks.inc();
}

/// The committed ISR of a partition this node leads gained at least one member.
pub fn isr_expanded() {
    STATS.isr_expands.inc();
}

/// The leader-election counter of `kind` (made at zero on first use; elections are rare).
pub fn leader_elections(kind: &str) -> Counter {
    STATS.elections.get_or_create(&KindLabel { kind: kind.to_string() }).clone()
}

/// One committed leader change decided `took` before.
pub fn leader_elected(kind: &str, took: Duration) {
    leader_elections(kind).inc();
    STATS.election_time.observe(took);
}

/// This node saw the metadata quorum's leader change.
pub fn controller_changed() {
    STATS.controller_changes.inc();
}

/// A client over its `quota` (Produce, Fetch) was throttled for `ms`.
pub fn quota_throttled(quota: &str, ms: u64) {
    let label = QuotaLabel { quota: quota.to_string() };
    STATS.throttles.get_or_create(&label).inc();
    STATS.throttle_ms.get_or_create(&label).inc_by(ms);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_are_kafkas() {
        assert_eq!(error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(error_name(6), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(30000), "CODE_30000");
    }

    #[test]
    fn api_handles_are_made_once_and_count_into_the_page() {
        let a = api(18).expect("ApiVersions");
        assert!(std::ptr::eq(a, api(18).unwrap()));
        assert!(api(-1).is_none() && api(20000).is_none());
        a.answered(Duration::from_millis(3));
        a.error(35);
        a.error(0);
        a.error(i16::MAX);
        let mut out = String::new();
        encode(&mut out);
        let count = |prefix: &str| {
            out.lines().find(|l| l.starts_with(prefix)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse::<f64>().ok())
        };
        assert!(count("sluice_requests_total{api=\"ApiVersions\"}").unwrap() >= 1.0, "{out}");
        assert!(count("sluice_request_duration_seconds_count{api=\"ApiVersions\"}").unwrap() >= 1.0, "{out}");
        let inf = out.lines().filter(|l| l.starts_with("sluice_request_duration_seconds_bucket{"));
        assert!(inf.filter(|l| l.contains("le=\"+Inf\"") && l.contains("api=\"ApiVersions\"")).count() == 1, "{out}");
        assert!(count("sluice_request_errors_total{api=\"ApiVersions\",error=\"UNSUPPORTED_VERSION\"}").unwrap() >= 1.0, "{out}");
        assert!(!out.contains("error=\"NONE\""), "NONE is no error: {out}");
        assert!(out.contains("# TYPE sluice_request_duration_seconds histogram"), "{out}");
    }

    #[test]
    fn a_topic_lookup_shares_the_series_and_connections_are_counted_while_open() {
        let a = topic("stats-test-topic");
        let b = topic("stats-test-topic");
        a.bytes_in.inc_by(10);
        b.bytes_in.inc_by(5);
        assert_eq!(a.bytes_in.get(), 15);
        let g = connections("STATS_TEST");
        {
            let _one = Open::new(&g);
            let _two = Open::new(&g);
            assert_eq!(g.get(), 2);
        }
        assert_eq!(g.get(), 0);
    }

    #[test]
    fn upper_snake_splits_at_capitals() {
        assert_eq!(upper_snake("NotLeaderOrFollower"), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(upper_snake("KafkaStorageError"), "KAFKA_STORAGE_ERROR");
    }
}
