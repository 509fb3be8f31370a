//! Rebuilding group state from `__consumer_offsets` at startup, and expiring old
//! committed offsets.

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;

use super::classic::{Group, State};
use super::store::{self, ConsumerGroupValue, GroupValue, Key, OffsetValue, StreamsGroupValue};
use super::{Committed, Coordinator, Entry, OFFSETS_TOPIC};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::log::records;
use crate::metadata::names::coordinator_partition;
use crate::partition::InternalPartitions;

/// Share groups' stored values by group id, as read back from `__consumer_offsets`.
pub type SharedGroups = Vec<(String, Vec<u8>)>;

impl Coordinator {
    /// Expires offsets past `offsets.retention.minutes` and drops groups left with nothing.
    pub fn expire_offsets(&self, host: &dyn InternalPartitions) {
        let now = now_ms();
        let mut inner = self.inner.lock();
        let ids: Vec<String> = inner.groups.keys().cloned().collect();
        for id in ids {
            let entry = inner.groups.get_mut(&id).expect("listed");
            if entry.group.state != State::Empty || entry.is_active_modern() {
                continue;
            }
            let since_empty = entry.group.protocol_type.is_some().then_some(entry.group.state_since);
            let expired: Vec<(String, i32)> = entry
                .offsets
                .iter()
                .filter(|(_, c)| now - since_empty.unwrap_or(c.commit_ts) >= self.retention_ms)
                .map(|(k, _)| k.clone())
                .collect();
            let mut recs: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
            for (t, p) in &expired {
                entry.offsets.remove(&(t.clone(), *p));
                recs.push((Key::Offset { group: id.clone(), topic: t.clone(), partition: *p }.encode(), None));
            }
            let drop_group = entry.offsets.is_empty() && !expired.is_empty();
            if drop_group {
                recs.push((Key::Group { group: id.clone() }.encode(), None));
                inner.groups.remove(&id);
            }
            if !recs.is_empty() {
                tracing::info!(group = %id, offsets = expired.len(), "expired committed offsets");
                if let Err(e) = self.write(host, &id, &recs) {
                    tracing::warn!(group = %id, error = %e, "could not write offset expiry");
                }
            }
        }
    }

    /// Follows leadership of `__consumer_offsets`: a partition this broker now leads has
    /// its groups loaded from its log; one it no longer leads has its groups dropped.
    /// Share groups, kept by the share group coordinator, go to `share_groups` (which
    /// groups to keep, and those read back) before this broker answers as coordinator.
    pub fn sync_ownership(&self, host: &dyn InternalPartitions, share_groups: impl FnOnce(&dyn Fn(&str) -> bool, SharedGroups)) {
        let Some(topic) = host.replicas().topic(OFFSETS_TOPIC) else { return };
        let Some((led, gained, lost)) = topic.leadership_change(&self.owned.lock()) else { return };
        let n = self.offsets_partitions;
        let keep = |g: &str| {
            let p = coordinator_partition(g, n);
            !lost.contains(&p) && !gained.contains(&p)
        };
        self.inner.lock().groups.retain(|g, _| keep(g));
        let loaded = self.load(host, &gained).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "could not load group state");
            Vec::new()
        });
        share_groups(&keep, loaded);
        *self.owned.lock() = led;
        if !lost.is_empty() {
            tracing::info!(partitions = ?lost, "no longer the coordinator for these {OFFSETS_TOPIC} partitions");
        }
    }

    /// Waits until everything written so far for `group` is on its partition's whole ISR,
    /// as Kafka acknowledges commits only with acks=all.
    pub async fn wait_durable(&self, host: &dyn InternalPartitions, group: &str) -> Result<()> {
        let Some(topic) = host.replicas().topic(OFFSETS_TOPIC) else { return Ok(()) };
        let Some(p) = topic.partition(self.offsets_partition(group)) else { return Ok(()) };
        let leo = p.fetch_position().0;
        if leo == 0 || p.high_watermark() >= leo {
            return Ok(());
        }
        p.wait_replicated(leo - 1, 1, std::time::Duration::from_secs(10)).await
    }

    /// Is this broker the coordinator of `group` (it leads the group's partition)?
    pub fn check_coordinator(&self, host: &dyn InternalPartitions, group: &str) -> Result<()> {
        if host.replicas().topic(OFFSETS_TOPIC).is_none() {
            // FindCoordinator creates it; until then there is no coordinator to ask.
            return Err(Error::CoordinatorNotAvailable);
        }
        if self.owned.lock().contains(&self.offsets_partition(group)) {
            Ok(())
        } else {
            Err(Error::NotCoordinator)
        }
    }

    /// Writes a share group's stored value (None: its tombstone) to its partition.
    pub fn write_share_group(&self, host: &dyn InternalPartitions, group: &str, value: Option<Vec<u8>>) -> Result<()> {
        self.write(host, group, &[(Key::ShareGroup { group: group.into() }.encode(), value)])
    }

    /// Rebuilds groups and offsets from the given `__consumer_offsets` partitions; returns
    /// the share groups' stored values found there, for their own coordinator.
    fn load(&self, host: &dyn InternalPartitions, only: &HashSet<i32>) -> Result<SharedGroups> {
        let Some(topic) = host.replicas().topic(OFFSETS_TOPIC) else { return Ok(Vec::new()) };
        if only.is_empty() {
            return Ok(Vec::new());
        }
        let now = now_ms();
        let mut groups: HashMap<String, Option<GroupValue>> = HashMap::new();
        let mut moderns: HashMap<String, Option<ConsumerGroupValue>> = HashMap::new();
        let mut streams: HashMap<String, Option<StreamsGroupValue>> = HashMap::new();
        let mut shares: HashMap<String, Option<Vec<u8>>> = HashMap::new();
        type PendingOffsets = Vec<((String, String, i32), Option<OffsetValue>)>;
        let mut txn_pending: HashMap<i64, PendingOffsets> = HashMap::new();
        let mut offsets: HashMap<(String, String, i32), Option<OffsetValue>> = HashMap::new();
        for p in topic.local().filter(|p| only.contains(&p.index)) {
            p.replay(|b| {
                let Some((h, recs)) = records::parse(b) else { return };
                if h.is_control() {
                    let commit = crate::log::control::marker_type(b) == Some(true);
                    for ((g, t, p), v) in txn_pending.remove(&h.producer_id).unwrap_or_default() {
                        if commit {
                            offsets.insert((g, t, p), v);
                        }
                    }
                    return;
                }
                if h.is_transactional() {
                    for r in recs {
                        if let Some(Key::Offset { group, topic, partition }) = r.key.as_deref().and_then(Key::decode) {
                            let v = r.value.and_then(|v| serde_json::from_slice(&v).ok());
                            txn_pending.entry(h.producer_id).or_default().push(((group, topic, partition), v));
                        }
                    }
                    return;
                }
                for r in recs {
                    let Some(key) = r.key.as_deref().and_then(Key::decode) else { continue };
                    match key {
                        Key::Group { group } => {
                            groups.insert(group, r.value.and_then(|v| serde_json::from_slice(&v).ok()));
                        }
                        Key::ConsumerGroup { group } => {
                            moderns.insert(group, r.value.and_then(|v| serde_json::from_slice(&v).ok()));
                        }
                        Key::StreamsGroup { group } => {
                            streams.insert(group, r.value.and_then(|v| serde_json::from_slice(&v).ok()));
                        }
                        Key::ShareGroup { group } => {
                            shares.insert(group, r.value.map(|v| v.to_vec()));
                        }
                        Key::Offset { group, topic, partition } => {
                            offsets.insert((group, topic, partition), r.value.and_then(|v| serde_json::from_slice(&v).ok()));
                        }
                    }
                }
            })?;
        }
        let mut inner = self.inner.lock();
        for (id, v) in groups {
            let Some(v) = v else { continue };
            let members = v
                .members
                .into_iter()
                .map(|m| {
                    let proto = v.protocol.clone().unwrap_or_default();
                    let sub = store::unhex(&m.subscription).unwrap_or_default();
                    Group::stored_member(
                        m.id,
                        m.instance_id,
                        m.client_id,
                        m.client_host,
                        v.protocol_type.clone().unwrap_or_default(),
                        vec![(proto, Bytes::from(sub))],
                        m.session_timeout_ms,
                        m.rebalance_timeout_ms,
                        Bytes::from(store::unhex(&m.assignment).unwrap_or_default()),
                    )
                })
                .collect();
            let mut g = Group::restore(&id, v.generation, v.protocol_type, v.protocol, v.leader, members, now);
            if g.state == State::Empty {
                g.state_since = v.state_ts;
            }
            inner.groups.insert(id, Entry { group: g, modern: None, streams: None, offsets: BTreeMap::new() });
        }
        for (id, v) in moderns {
            let Some(v) = v else { continue };
            let mut m = v.group;
            m.touch_all(now);
            inner.groups.entry(id.clone()).or_insert_with(|| Entry::new(&id, now)).modern = Some(m);
        }
        for (id, v) in streams {
            let Some(v) = v else { continue };
            let mut s = v.group;
            s.touch_all(now);
            inner.groups.entry(id.clone()).or_insert_with(|| Entry::new(&id, now)).streams = Some(s);
        }
        let mut count = 0;
        for ((g, t, p), v) in offsets {
            let Some(v) = v else { continue };
            let entry = inner.groups.entry(g.clone()).or_insert_with(|| Entry::new(&g, now));
            entry
                .offsets
                .insert((t, p), Committed { offset: v.offset, leader_epoch: v.leader_epoch, metadata: v.metadata, commit_ts: v.commit_ts });
            count += 1;
        }
        for (pid, items) in txn_pending {
            let list = items
                .into_iter()
                .filter_map(|((g, t, p), v)| {
                    v.map(|v| {
                        (
                            g,
                            t,
                            p,
                            Committed { offset: v.offset, leader_epoch: v.leader_epoch, metadata: v.metadata, commit_ts: v.commit_ts },
                        )
                    })
                })
                .collect();
            inner.pending_txn.insert(pid, list);
        }
        let shares: SharedGroups = shares.into_iter().filter_map(|(g, v)| Some((g, v?))).collect();
        tracing::info!(
            partitions = only.len(),
            groups = inner.groups.len(),
            share_groups = shares.len(),
            offsets = count,
            "loaded group state from {OFFSETS_TOPIC}"
        );
        Ok(shares)
    }
}
