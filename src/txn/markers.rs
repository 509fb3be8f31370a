//! Transaction markers (control batches, built in `log::control`) that end a transaction on a partition,
//! written here when this broker leads the partition, else sent to its leader with
//! WriteTxnMarkers.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kafka_protocol::messages::write_txn_markers_request::{WritableTxnMarker, WritableTxnMarkerTopic};
use kafka_protocol::messages::WriteTxnMarkersRequest;
use kafka_protocol::protocol::StrBytes;

use super::TxnHost;
use crate::clock::now_ms;
use crate::error::{Error, Result};

/// WriteTxnMarkers v1, the only version Kafka 4 speaks.
const WRITE_TXN_MARKERS_VERSION: i16 = 1;

/// Writes one marker on a partition this broker leads, and waits for the ISR to have
/// it (Kafka appends markers with acks=all). Group offsets waiting on the transaction
/// become visible or are dropped here, on the group's coordinator.
pub async fn write_local(host: &dyn TxnHost, topic: &str, partition: i32, pid: i64, epoch: i16, commit: bool, tv: i8) -> Result<()> {
    let t = host.replicas().topic(topic).ok_or(Error::UnknownTopicOrPartition)?;
    let p = t.get(partition)?.clone();
    let offset = p.write_marker(pid, epoch, commit, tv, now_ms())?;
    if topic == crate::metadata::names::OFFSETS_TOPIC {
        host.offsets_marker_written(pid, commit);
    }
    p.wait_replicated(offset, 1, Duration::from_secs(10)).await
}

/// Writes the markers of `pid`'s transaction to every partition in `parts`, retrying
/// partitions whose leader is moving until `deadline`. True when all are written (a
/// partition deleted meanwhile needs none).
pub async fn deliver(
    host: &dyn TxnHost,
    pid: i64,
    epoch: i16,
    commit: bool,
    parts: &BTreeSet<(String, i32)>,
    deadline: tokio::time::Instant,
) -> bool {
    let me = host.node_id();
    let mut pending: Vec<(String, i32)> = parts.iter().cloned().collect();
    loop {
        let mut by_leader: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
        for (t, p) in pending {
            let Some(topic) = host.replicas().topic(&t) else { continue };
            let Some(state) = usize::try_from(p).ok().and_then(|i| topic.states.get(i)) else { continue };
            by_leader.entry(state.leader).or_default().push((t, p));
        }
        let mut failed = Vec::new();
        for (leader, list) in by_leader {
            if leader == me {
                for (t, p) in list {
                    match write_local(host, &t, p, pid, epoch, commit, 0).await {
                        Ok(()) | Err(Error::UnknownTopicOrPartition) => {}
                        Err(e) => {
                            tracing::debug!(topic = %t, partition = p, error = %e, "writing transaction marker");
                            failed.push((t, p));
                        }
                    }
                }
            } else {
                failed.extend(send(host, leader, pid, epoch, commit, list).await);
            }
        }
        if failed.is_empty() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        pending = failed;
    }
}

/// Sends markers to another broker; returns the partitions still without one.
async fn send(host: &dyn TxnHost, leader: i32, pid: i64, epoch: i16, commit: bool, list: Vec<(String, i32)>) -> Vec<(String, i32)> {
    let Some(addr) = host.broker_address(leader) else { return list };
    let mut topics: Vec<WritableTxnMarkerTopic> = Vec::new();
    for (t, p) in &list {
        match topics.iter_mut().find(|x| *x.name.0 == **t) {
            Some(x) => x.partition_indexes.push(*p),
            None => topics.push(
                WritableTxnMarkerTopic::default().with_name(StrBytes::from_string(t.clone()).into()).with_partition_indexes(vec![*p]),
            ),
        }
    }
    let marker = WritableTxnMarker::default()
        .with_producer_id(pid.into())
        .with_producer_epoch(epoch)
        .with_transaction_result(commit)
        .with_topics(topics)
        .with_coordinator_epoch(0);
    let req = WriteTxnMarkersRequest::default().with_markers(vec![marker]);
    let resp = match host.peers().call(leader, &addr, host.node_id(), WRITE_TXN_MARKERS_VERSION, &req, Duration::from_secs(15)).await {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(leader, error = %e, "WriteTxnMarkers");
            return list;
        }
    };
    let mut failed = Vec::new();
    for (t, p) in list {
        let code = resp
            .markers
            .iter()
            .flat_map(|m| m.topics.iter())
            .filter(|x| *x.name.0 == *t)
            .flat_map(|x| x.partitions.iter())
            .find(|x| x.partition_index == p)
            .map_or(-1, |x| x.error_code);
        if code != 0 && code != Error::UnknownTopicOrPartition.code() {
            failed.push((t, p));
        }
    }
    failed
}
