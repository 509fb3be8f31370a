//! What a coordinator (groups, transactions, and later share and streams groups) needs
//! from the broker it runs on, and nothing more: the partitions hosted here, and its
//! internal topic, created on first use. Like Kafka's coordinator `PartitionWriter`, it
//! keeps coordinators below the broker's wiring.

use std::sync::Arc;

use super::{ReplicaManager, Topic};
use crate::error::Result;

/// The broker as a coordinator sees it.
pub trait InternalPartitions: Send + Sync {
    /// The partitions hosted on this broker (append, read and wait go through them).
    fn replicas(&self) -> &ReplicaManager;

    /// The internal compacted topic `name`, created with `partitions` partitions if it
    /// does not exist yet, as Kafka creates `__consumer_offsets` on first use.
    fn ensure_internal_topic(&self, name: &str, partitions: i32) -> Result<Arc<Topic>>;
}
