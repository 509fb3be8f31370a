//! Records to events: what one metadata record means to an operator, decided from the
//! image just before it. No clock, no I/O: the batch carries its time, the log its offset.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::metadata::image::Image;
use crate::metadata::records::{ElectionReason, PartitionState, Record, RecordBatch};

/// Event sequence numbers are `offset × SEQ_PER_OFFSET + index`: the same on every node for
/// the same metadata record, ordered as the log is.
pub const SEQ_PER_OFFSET: u64 = 1_000_000;

/// One thing that happened to the cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Increasing; for metadata-derived events the same on every node.
    pub seq: u64,
    /// When the active controller proposed the record (null in logs written before that
    /// was stamped); for `controller_changed`, when this node saw the change.
    pub time_ms: Option<i64>,
    #[serde(flatten)]
    pub kind: Kind,
}

/// Whose config changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceType {
    Topic,
    Broker,
    Group,
    ClientMetrics,
}

/// The event types, with Kafka's field names in snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Kind {
    BrokerRegistered {
        broker_id: i32,
        epoch: u64,
        /// Listener name to `host:port`.
        endpoints: BTreeMap<String, String>,
    },
    BrokerFenced {
        broker_id: i32,
        epoch: u64,
    },
    BrokerUnfenced {
        broker_id: i32,
        epoch: u64,
    },
    BrokerUnregistered {
        broker_id: i32,
        epoch: u64,
    },
    /// From the Raft leader changes this node observed (not a metadata record).
    ControllerChanged {
        controller_id: i32,
        /// The Raft term.
        epoch: u64,
    },
    LeaderChanged {
        topic: String,
        partition: i32,
        previous_leader: i32,
        leader: i32,
        leader_epoch: i32,
        reason: ElectionReason,
    },
    IsrShrunk {
        topic: String,
        partition: i32,
        isr_before: Vec<i32>,
        isr_after: Vec<i32>,
        leader: i32,
    },
    IsrExpanded {
        topic: String,
        partition: i32,
        isr_before: Vec<i32>,
        isr_after: Vec<i32>,
        leader: i32,
    },
    TopicCreated {
        topic: String,
        topic_id: Uuid,
        partitions: i32,
        replication_factor: i32,
    },
    TopicDeleted {
        topic: String,
        topic_id: Uuid,
    },
    PartitionsCreated {
        topic: String,
        count_before: i32,
        count_after: i32,
    },
    ConfigChanged {
        resource_type: ResourceType,
        /// The topic, or "" for the cluster-wide broker default (as Kafka names it).
        name: String,
        key: String,
        /// Null when removed, and for a sensitive key (`sensitive` is then true).
        value: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sensitive: bool,
    },
    ReassignmentStarted {
        topic: String,
        partition: i32,
        replicas_before: Vec<i32>,
        replicas_after: Vec<i32>,
    },
    ReassignmentCompleted {
        topic: String,
        partition: i32,
        replicas_before: Vec<i32>,
        replicas_after: Vec<i32>,
    },
    /// A fault injected on this node (node-local, not a metadata record).
    FaultInjected {
        fault_id: u64,
        /// The fault's kind: `inject`, `isolate`, ...
        fault: String,
        description: String,
    },
    /// A fault on this node ended: cleared, its count used up, or expired.
    FaultCleared {
        fault_id: u64,
        fault: String,
        description: String,
        reason: String,
    },
    /// A step of a scenario this node runs for its console (node-local, not a metadata record).
    ScenarioStep {
        scenario: String,
        message: String,
    },
}

impl Kind {
    /// The `type` field's value.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::BrokerRegistered { .. } => "broker_registered",
            Kind::BrokerFenced { .. } => "broker_fenced",
            Kind::BrokerUnfenced { .. } => "broker_unfenced",
            Kind::BrokerUnregistered { .. } => "broker_unregistered",
            Kind::ControllerChanged { .. } => "controller_changed",
            Kind::LeaderChanged { .. } => "leader_changed",
            Kind::IsrShrunk { .. } => "isr_shrunk",
            Kind::IsrExpanded { .. } => "isr_expanded",
            Kind::TopicCreated { .. } => "topic_created",
            Kind::TopicDeleted { .. } => "topic_deleted",
            Kind::PartitionsCreated { .. } => "partitions_created",
            Kind::ConfigChanged { .. } => "config_changed",
            Kind::ReassignmentStarted { .. } => "reassignment_started",
            Kind::ReassignmentCompleted { .. } => "reassignment_completed",
            Kind::FaultInjected { .. } => "fault_injected",
            Kind::FaultCleared { .. } => "fault_cleared",
            Kind::ScenarioStep { .. } => "scenario_step",
        }
    }
}

/// The sequence number of the `index`-th event of the batch at `offset`.
pub fn seq(offset: u64, index: usize) -> u64 {
    offset * SEQ_PER_OFFSET + index as u64
}

/// Applies `batch` (at log `offset`) to `image` record by record, and returns its events:
/// each record is judged against the image just before it, so before/after are exact
/// even when one batch changes a partition twice.
pub fn apply_batch(image: &mut Image, offset: u64, batch: &RecordBatch) -> Vec<Event> {
    let mut out = Vec::new();
    for (i, rec) in batch.records.iter().enumerate() {
        for kind in record_events(image, offset, batch, i) {
            // A batch yielding a million events would run into the next offset's numbers.
            if (out.len() as u64) < SEQ_PER_OFFSET {
                out.push(Event { seq: seq(offset, out.len()), time_ms: batch.time_ms, kind });
            }
        }
        image.apply(offset, rec);
    }
    // The batch-level fields (time, offset), as the image takes them from any batch.
    image.apply_batch(offset, &RecordBatch { v: batch.v, records: Vec::new(), time_ms: batch.time_ms });
    out
}

/// What `batch.records[i]` (at log `offset`) means, given `before`: the image with the
/// batch's earlier records applied. Records that name something unknown mean nothing,
/// as the image ignores them too.
pub fn record_events(before: &Image, offset: u64, batch: &RecordBatch, i: usize) -> Vec<Kind> {
    let rec = &batch.records[i];
    match rec {
        Record::RegisterBroker { id, host, port, endpoints, .. } => {
            let endpoints = if endpoints.is_empty() {
                // Registered before named listeners: one address serves every listener.
                BTreeMap::from([("default".to_string(), format!("{host}:{port}"))])
            } else {
                endpoints.iter().map(|e| (e.listener.clone(), format!("{}:{}", e.host, e.port))).collect()
            };
            vec![Kind::BrokerRegistered { broker_id: *id, epoch: offset, endpoints }]
        }
        Record::FenceBroker { id, epoch } | Record::UnfenceBroker { id, epoch } => {
            let fence = matches!(rec, Record::FenceBroker { .. });
            match before.brokers.get(id) {
                Some(b) if b.epoch == *epoch && b.fenced != fence => {
                    let (broker_id, epoch) = (*id, *epoch);
                    vec![if fence { Kind::BrokerFenced { broker_id, epoch } } else { Kind::BrokerUnfenced { broker_id, epoch } }]
                }
                _ => Vec::new(),
            }
        }
        Record::UnregisterBroker { id, epoch } => match before.brokers.get(id) {
            Some(b) if b.epoch == *epoch => vec![Kind::BrokerUnregistered { broker_id: *id, epoch: *epoch }],
            _ => Vec::new(),
        },
        Record::Topic { name, id, .. } => {
            let mine = partitions_in(batch, *id);
            vec![Kind::TopicCreated {
                topic: name.clone(),
                topic_id: *id,
                partitions: mine.iter().map(|(index, _)| index + 1).max().unwrap_or(0),
                replication_factor: mine.first().map_or(0, |(_, s)| s.replicas.len() as i32),
            }]
        }
        Record::Partition { topic_id, index, state } => {
            let Some(t) = before.topic_by_id(*topic_id) else { return Vec::new() };
            if let Some(prev) = t.partitions.get(*index as usize) {
                return partition_change(&t.name, *index, prev, state, None, false);
            }
            // New partitions of an existing topic: one event for the batch, at its first
            // new partition; those of a topic created in this batch are in topic_created.
            // Backwards, as the record that settles it is usually the one just before.
            let mentioned_before = batch.records[..i].iter().rev().any(|r| match r {
                Record::Topic { id, .. } | Record::Partition { topic_id: id, .. } => id == topic_id,
                _ => false,
            });
            if mentioned_before {
                return Vec::new();
            }
            let after = partitions_in(batch, *topic_id).iter().map(|(index, _)| index + 1).max().unwrap_or(0);
            vec![Kind::PartitionsCreated { topic: t.name.clone(), count_before: t.partitions.len() as i32, count_after: after }]
        }
        Record::PartitionChange { topic_id, index, state, unclean, reason } => {
            let Some(t) = before.topic_by_id(*topic_id) else { return Vec::new() };
            let Some(prev) = t.partitions.get(*index as usize) else { return Vec::new() };
            partition_change(&t.name, *index, prev, state, *reason, *unclean)
        }
        Record::RemoveTopic { id } => match before.topic_by_id(*id) {
            Some(t) => vec![Kind::TopicDeleted { topic: t.name.clone(), topic_id: *id }],
            None => Vec::new(),
        },
        Record::TopicConfig { id, key, value } => match before.topic_by_id(*id) {
            Some(t) => vec![config_changed(ResourceType::Topic, &t.name, key, value)],
            None => Vec::new(),
        },
        Record::BrokerConfig { key, value } => vec![config_changed(ResourceType::Broker, "", key, value)],
        Record::GroupConfig { group, key, value } => vec![config_changed(ResourceType::Group, group, key, value)],
        Record::ClientMetricsConfig { name, key, value } => vec![config_changed(ResourceType::ClientMetrics, name, key, value)],
        Record::ClusterId { .. }
        | Record::AccessControlEntry { .. }
        | Record::RemoveAccessControlEntry { .. }
        | Record::UserScramCredential { .. }
        | Record::RemoveUserScramCredential { .. }
        | Record::DelegationToken { .. }
        | Record::RemoveDelegationToken { .. }
        | Record::FeatureLevel { .. }
        | Record::ClientQuota { .. }
        | Record::RegisterController { .. }
        | Record::UnregisterController { .. }
        | Record::VoterEndpoints { .. } => Vec::new(),
    }
}

/// The batch's `Partition` records of topic `id`, as (index, state).
fn partitions_in(batch: &RecordBatch, id: Uuid) -> Vec<(i32, &PartitionState)> {
    batch
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Partition { topic_id, index, state } if *topic_id == id => Some((*index, state)),
            _ => None,
        })
        .collect()
}

fn config_changed(resource_type: ResourceType, name: &str, key: &str, value: &Option<String>) -> Kind {
    let sensitive = crate::config::is_sensitive(key);
    Kind::ConfigChanged {
        resource_type,
        name: name.to_string(),
        key: key.to_string(),
        value: if sensitive { None } else { value.clone() },
        sensitive,
    }
}

/// The replicas a reassignment moves to: the current ones less those being removed.
fn target(p: &PartitionState) -> Vec<i32> {
    p.replicas.iter().copied().filter(|r| !p.removing.contains(r)).collect()
}

/// The replicas before a reassignment began: the current ones less those being added.
fn original(p: &PartitionState) -> Vec<i32> {
    p.replicas.iter().copied().filter(|r| !p.adding.contains(r)).collect()
}

fn reassigning(p: &PartitionState) -> bool {
    !p.adding.is_empty() || !p.removing.is_empty()
}

/// Leader, ISR and reassignment events of one partition going from `before` to `after`.
fn partition_change(
    topic: &str,
    partition: i32,
    before: &PartitionState,
    after: &PartitionState,
    reason: Option<ElectionReason>,
    unclean: bool,
) -> Vec<Kind> {
    let topic = topic.to_string();
    let mut out = Vec::new();
    if before.leader != after.leader {
        // Records from before the reason was written: the unclean flag is all there is.
        let reason = reason.unwrap_or(if unclean { ElectionReason::Unclean } else { ElectionReason::Clean });
        out.push(Kind::LeaderChanged {
            topic: topic.clone(),
            partition,
            previous_leader: before.leader,
            leader: after.leader,
            leader_epoch: after.leader_epoch,
            reason,
        });
    }
    let (isr_before, isr_after) = (before.isr.clone(), after.isr.clone());
    if before.isr.iter().any(|r| !after.isr.contains(r)) {
        out.push(Kind::IsrShrunk {
            topic: topic.clone(),
            partition,
            isr_before: isr_before.clone(),
            isr_after: isr_after.clone(),
            leader: after.leader,
        });
    }
    if after.isr.iter().any(|r| !before.isr.contains(r)) {
        out.push(Kind::IsrExpanded { topic: topic.clone(), partition, isr_before, isr_after, leader: after.leader });
    }
    let started =
        |replicas_before, replicas_after| Kind::ReassignmentStarted { topic: topic.clone(), partition, replicas_before, replicas_after };
    let completed =
        |replicas_before, replicas_after| Kind::ReassignmentCompleted { topic: topic.clone(), partition, replicas_before, replicas_after };
    match (reassigning(before), reassigning(after)) {
        (false, true) => out.push(started(before.replicas.clone(), target(after))),
        (true, false) => out.push(completed(original(before), after.replicas.clone())),
        // A new target replaces the one in progress.
        (true, true) if target(before) != target(after) => out.push(started(original(before), target(after))),
        // Nothing to copy (replicas only removed, or reordered): started and done at once.
        (false, false) if before.replicas != after.replicas => {
            out.push(started(before.replicas.clone(), after.replicas.clone()));
            out.push(completed(before.replicas.clone(), after.replicas.clone()));
        }
        _ => {}
    }
    out
}
