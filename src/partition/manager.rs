//! The replica manager: the partitions this broker hosts, found by topic name or id,
//! and the delayed part of `acks=all` (waiting for the ISR to have an append).
//! Long-polling fetches wait on each partition's own watchers (see `watchers.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use uuid::Uuid;

use super::topic::{Topic, TopicMap};
use super::Partition;
use crate::error::Result;

/// The partitions hosted here. The map is replaced whole on each reconciliation, so a
/// reader holds its lock only for one lookup.
#[derive(Default)]
pub struct ReplicaManager {
    topics: RwLock<TopicMap>,
}

impl ReplicaManager {
    /// A topic by name.
    pub fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics.read().by_name.get(name).cloned()
    }

    /// A topic by id.
    pub fn topic_by_id(&self, id: Uuid) -> Option<Arc<Topic>> {
        self.topics.read().by_id.get(&id).cloned()
    }

    /// Every topic, sorted by name.
    pub fn all_topics(&self) -> Vec<Arc<Topic>> {
        let mut v: Vec<_> = self.topics.read().by_name.values().cloned().collect();
        v.sort_by(|a, b| a.record.name.cmp(&b.record.name));
        v
    }

    /// A partition by topic name and index, if hosted here.
    pub fn partition(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        self.topic(topic)?.partition(index).cloned()
    }

    /// The topics by name, as last reconciled.
    pub fn by_name(&self) -> HashMap<String, Arc<Topic>> {
        self.topics.read().by_name.clone()
    }

    /// No topic is known.
    pub fn is_empty(&self) -> bool {
        self.topics.read().by_name.is_empty()
    }

    /// Installs the topics of a new reconciliation.
    pub fn replace(&self, by_name: HashMap<String, Arc<Topic>>) {
        *self.topics.write() = TopicMap::new(by_name);
    }

    /// The delayed part of `acks=all`: waits until each partition's ISR has its append
    /// up to the given offset, all within one `timeout`. One result per wait, in order.
    pub async fn await_replication(waits: &[(Arc<Partition>, i64)], timeout: Duration) -> Vec<Result<()>> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut out = Vec::with_capacity(waits.len());
        for (p, last) in waits {
            let min_isr = p.with_state(|s| s.append_config.min_insync_replicas).max(1) as usize;
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            out.push(p.wait_replicated(*last, min_isr, left).await);
        }
        out
    }
}
