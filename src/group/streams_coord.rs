//! The coordinator's side of streams groups: feeding [`super::streams`] heartbeats with
//! the clock and topic metadata, and persisting the group to `__consumer_offsets`.

use super::store::{Key, StreamsGroupValue};
use super::streams::{Heartbeat, HeartbeatReply, StreamsGroup, TopicCounts};
use super::{Coordinator, Entry};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::partition::InternalPartitions;

/// Topic names and partition counts, as streams groups see them.
pub(super) fn topic_counts(host: &dyn InternalPartitions) -> TopicCounts {
    host.replicas().all_topics().iter().map(|t| (t.record.name.clone(), t.record.partitions)).collect()
}

impl Coordinator {
    pub(super) fn persist_streams(&self, host: &dyn InternalPartitions, group_id: &str, entry: &mut Entry) {
        let Some(s) = entry.streams.as_mut().filter(|s| s.dirty) else { return };
        s.dirty = false;
        let value = serde_json::to_vec(&StreamsGroupValue { v: 0, group: s.clone() }).expect("serializable");
        if let Err(e) = self.write(host, group_id, &[(Key::StreamsGroup { group: group_id.into() }.encode(), Some(value))]) {
            tracing::warn!(group = %group_id, error = %e, "could not persist streams group");
        }
    }

    /// StreamsGroupHeartbeat (KIP-1071). The reply names the internal topics to create.
    pub fn streams_heartbeat(&self, host: &dyn InternalPartitions, group_id: &str, hb: Heartbeat) -> Result<HeartbeatReply> {
        if group_id.is_empty() {
            return Err(Error::InvalidRequest("GroupId can't be empty.".into()));
        }
        let topics = topic_counts(host);
        let now = now_ms();
        let cfg = self.consumer_config_for(group_id).streams;
        let mut inner = self.inner.lock();
        let entry = inner.groups.entry(group_id.to_string()).or_insert_with(|| super::Entry::new(group_id, now));
        if entry.streams.is_none() {
            let busy_classic = !matches!(entry.group.state, super::classic::State::Empty | super::classic::State::Dead);
            let busy_consumer = entry.modern.as_ref().is_some_and(|m| !m.members.is_empty());
            if busy_classic || busy_consumer {
                return Err(Error::GroupIdNotFound(format!("Group {group_id} is not a streams group.")));
            }
            // An empty group of another type becomes a streams group, as in Kafka.
            entry.modern = None;
            entry.streams = Some(StreamsGroup::new(group_id));
        }
        let reply = entry.streams.as_mut().expect("set").heartbeat(hb, &topics, &cfg, now);
        self.persist_streams(host, group_id, entry);
        reply
    }

    /// StreamsGroupDescribe: the group, or GROUP_ID_NOT_FOUND.
    pub fn streams_describe(&self, group_id: &str) -> Result<StreamsGroup> {
        let inner = self.inner.lock();
        inner
            .groups
            .get(group_id)
            .map(|e| e.streams.clone().ok_or_else(|| Error::GroupIdNotFound(format!("Group {group_id} is not a streams group."))))
            .unwrap_or_else(|| Err(Error::GroupIdNotFound(format!("Streams group {group_id} not found."))))
    }

    /// Is `group_id` a streams group?
    pub fn is_streams_group(&self, group_id: &str) -> bool {
        self.inner.lock().groups.get(group_id).is_some_and(|e| e.streams.is_some())
    }
}
