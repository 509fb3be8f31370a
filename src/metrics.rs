//! The metrics page (OpenMetrics text, which Prometheus reads) for what operators hunt:
//! ISR shrinks, elections, broker and controller failures, replication delays, request
//! rates, errors and times. Served on `/metrics` by the HTTP listener (module `http`).
//!
//! Counters and histograms live in [`crate::stats`], counted where things happen; the
//! gauges below are views of this node's state, computed when the page is asked for.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::broker::Broker;
use crate::metadata::image::Image;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabel {
    group: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeLabel {
    node_id: String,
}

/// Partition health as this node sees it.
#[derive(Debug, Default, PartialEq, Eq)]
struct PartitionCounts {
    partitions: i64,
    offline: i64,
    /// The next three: of the partitions this node leads.
    under_replicated: i64,
    under_min_isr: i64,
    at_min_isr: i64,
}

/// Counts partitions in `img`: all of them, offline ones (no leader), and of those `me`
/// leads, the ones whose ISR lacks replicas, is below, or is at `min.insync.replicas`
/// (the topic's, else `default_min_isr`).
fn partition_counts(img: &Image, me: i32, default_min_isr: usize) -> PartitionCounts {
    let mut c = PartitionCounts::default();
    for t in img.topics.values() {
        let min_isr = t.configs.get("min.insync.replicas").and_then(|v| v.parse::<usize>().ok()).unwrap_or(default_min_isr);
        for p in &t.partitions {
            c.partitions += 1;
            if p.leader < 0 {
                c.offline += 1;
            }
            if p.leader != me {
                continue;
            }
            // Replicas being added by a reassignment are not expected in the ISR yet.
            if p.isr.len() < p.replicas.len().saturating_sub(p.adding.len()) {
                c.under_replicated += 1;
            }
            if p.isr.len() < min_isr {
                c.under_min_isr += 1;
            } else if p.isr.len() == min_isr {
                c.at_min_isr += 1;
            }
        }
    }
    c
}

/// A gauge set to `value`, registered in `r`.
fn gauge(r: &mut Registry, name: &str, help: &str, value: i64) {
    let g: Gauge = Gauge::default();
    g.set(value);
    r.register(name, help, g);
}

/// The gauges that are views of the broker's state, as of now.
fn views(broker: &Broker) -> Registry {
    let me = broker.identity.node_id;
    let img = broker.cluster.image();
    let settings = broker.settings();
    let mut r = Registry::default();
    let counts = partition_counts(&img, me, settings.min_insync_replicas);
    let live = img.live_brokers().len() as i64;
    let fenced = img.brokers.values().filter(|b| b.fenced).count() as i64;
    gauge(&mut r, "sluice_live_brokers", "Registered, unfenced brokers", live);
    gauge(
        &mut r,
        "sluice_fenced_brokers",
        "Registered brokers the controller has fenced (kafka.controller:type=KafkaController,name=FencedBrokerCount)",
        fenced,
    );
    gauge(&mut r, "sluice_registered_brokers", "Brokers that ever registered", img.brokers.len() as i64);
    gauge(
        &mut r,
        "sluice_partitions",
        "Partitions in the cluster (kafka.controller:type=KafkaController,name=GlobalPartitionCount)",
        counts.partitions,
    );
    gauge(
        &mut r,
        "sluice_offline_partitions",
        "Partitions with no leader, from this node's metadata image; Kafka reports it on the active controller only \
         (kafka.controller:type=KafkaController,name=OfflinePartitionsCount)",
        counts.offline,
    );
    gauge(
        &mut r,
        "sluice_under_replicated_partitions",
        "Partitions this node leads whose ISR is smaller than their replicas (kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions)",
        counts.under_replicated,
    );
    gauge(
        &mut r,
        "sluice_under_min_isr_partitions",
        "Partitions this node leads whose ISR is below min.insync.replicas (kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount)",
        counts.under_min_isr,
    );
    gauge(
        &mut r,
        "sluice_at_min_isr_partitions",
        "Partitions this node leads whose ISR is exactly min.insync.replicas (kafka.server:type=ReplicaManager,name=AtMinIsrPartitionCount)",
        counts.at_min_isr,
    );
    let unclean: Counter = Counter::default();
    unclean.inc_by(img.unclean_elections);
    r.register(
        "sluice_unclean_leader_elections",
        "Leaders elected from outside the ISR, records may have been lost; from the metadata log \
         (kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec)",
        unclean,
    );
    gauge(
        &mut r,
        "sluice_metadata_offset",
        "Last metadata log offset applied on this node (kafka.controller:type=KafkaController,name=LastAppliedRecordOffset)",
        img.offset as i64,
    );
    // Before any stamped batch (an old log) there is nothing to measure against.
    let lag_ms = img.time_ms.map_or(0, |t| (crate::clock::now_ms() - t).max(0));
    gauge(
        &mut r,
        "sluice_metadata_lag_ms",
        "Now minus the time the active controller proposed the last metadata batch applied here \
         (kafka.controller:type=KafkaController,name=LastAppliedRecordLagMs)",
        lag_ms,
    );
    let active = broker.cluster.active_controller() == Some(me);
    gauge(
        &mut r,
        "sluice_active_controller",
        "1 on the node that is the active controller (kafka.controller:type=KafkaController,name=ActiveControllerCount)",
        active as i64,
    );
    // An info metric, so a scrape (or a sum of several) says which node it came from.
    let info: Family<NodeLabel, Gauge> = Family::default();
    info.get_or_create(&NodeLabel { node_id: me.to_string() }).set(1);
    r.register("sluice_node_info", "1, labelled with this node's node.id", info);
    let topics = broker.replicas.all_topics();
    let max_lag = topics.iter().flat_map(|t| t.local()).filter_map(|p| p.follower_lag()).max().unwrap_or(0);
    gauge(
        &mut r,
        "sluice_replica_max_lag_records",
        "Largest lag, in records, of a partition this node follows behind its leader's high watermark at the last fetch \
         (kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica)",
        max_lag,
    );
    fetch_sessions(&mut r, broker);
    let lag: Family<GroupLabel, Gauge> = Family::default();
    for (group, value) in group_lags(broker) {
        lag.get_or_create(&GroupLabel { group }).set(value);
    }
    r.register(
        "sluice_consumer_group_lag",
        "For groups this node coordinates: the sum over their committed partitions hosted here of high watermark minus committed offset \
         (what kafka-consumer-groups.sh --describe shows as LAG)",
        lag,
    );
    r
}

/// The incremental fetch session cache (kafka.server:type=FetchSessionCache).
fn fetch_sessions(r: &mut Registry, broker: &Broker) {
    let (sessions, partitions, evictions, incremental) = {
        let c = broker.fetch_sessions.lock();
        (c.len(), c.partitions(), c.evictions(), c.incremental_fetches())
    };
    gauge(r, "sluice_incremental_fetch_sessions", "Incremental fetch sessions open here (NumIncrementalFetchSessions)", sessions as i64);
    gauge(
        r,
        "sluice_incremental_fetch_session_partitions",
        "Partitions over all open fetch sessions (NumIncrementalFetchPartitionsCached)",
        partitions as i64,
    );
    let counter = |r: &mut Registry, name: &str, help: &str, value: u64| {
        let c: Counter = Counter::default();
        c.inc_by(value);
        r.register(name, help, c);
    };
    counter(
        r,
        "sluice_incremental_fetch_session_evictions",
        "Fetch sessions evicted to make room for new ones (IncrementalFetchSessionEvictionsPerSec)",
        evictions,
    );
    counter(r, "sluice_incremental_fetch_requests", "Fetches served as incremental fetches of a session", incremental);
}

/// Each group this node coordinates, with its lag on the partitions whose high watermark
/// this node knows (those it hosts).
fn group_lags(broker: &Broker) -> Vec<(String, i64)> {
    broker
        .groups
        .list()
        .into_iter()
        .map(|(group, ..)| {
            let lag = broker
                .groups
                .fetch_offsets(&group, None)
                .into_iter()
                .flat_map(|(topic, parts)| {
                    let t = broker.replicas.topic(&topic);
                    parts.into_iter().filter_map(move |(i, c)| {
                        let hw = t.as_ref()?.partition(i)?.with_state(|s| s.high_watermark);
                        Some((hw - c?.offset).max(0))
                    })
                })
                .sum();
            (group, lag)
        })
        .collect()
}

/// The metrics as text: every counter and histogram, then the views of this node's state.
pub fn render(broker: &Broker) -> String {
    let mut out = String::new();
    // The five kinds are on the page from the start, at zero until an election of each.
    for kind in crate::metadata::records::ElectionReason::ALL {
        crate::stats::leader_elections(kind.as_str());
    }
    crate::stats::encode(&mut out);
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode_registry(&mut out, &views(broker));
    // What clients pushed (KIP-714), before the end marker.
    broker.telemetry.maybe_expire(crate::clock::now_ms());
    broker.telemetry.exported.render(&mut out);
    let _ = prometheus_client::encoding::text::encode_eof(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::image::TopicImage;
    use crate::metadata::records::PartitionState;

    fn part(leader: i32, isr: &[i32]) -> PartitionState {
        PartitionState { replicas: vec![1, 2, 3], isr: isr.to_vec(), leader, ..Default::default() }
    }

    #[test]
    fn partition_health_counts_the_partitions_led_here_against_min_isr() {
        let mut img = Image::default();
        let topic = |name: &str, min_isr: Option<&str>, partitions| TopicImage {
            name: name.into(),
            id: uuid::Uuid::new_v4(),
            configs: min_isr.map(|v| [("min.insync.replicas".to_string(), v.to_string())].into()).unwrap_or_default(),
            partitions,
        };
        img.topics.insert("a".into(), topic("a", None, vec![part(1, &[1, 2, 3]), part(1, &[1]), part(2, &[2]), part(-1, &[])]));
        img.topics.insert("b".into(), topic("b", Some("2"), vec![part(1, &[1, 2]), part(1, &[1])]));
        let c = partition_counts(&img, 1, 1);
        assert_eq!(
            c,
            PartitionCounts { partitions: 6, offline: 1, under_replicated: 3, under_min_isr: 1, at_min_isr: 2 },
            "node 1 leads 4; a/1 [1] is at min ISR 1, b/0 [1,2] at 2, b/1 [1] under 2"
        );
    }
}
