//! A topic as this broker hosts it: the controller's view of each partition, and the
//! partitions that live here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use uuid::Uuid;

use super::Partition;
use crate::error::{Error, Result};
use crate::metadata::records::PartitionState;
use crate::metadata::TopicRecord;

/// A topic as this broker sees it: the controller's view of every partition, and the
/// partitions this broker hosts (leads or follows).
pub struct Topic {
    pub record: TopicRecord,
    pub states: Vec<PartitionState>,
    slots: Vec<Option<Arc<Partition>>>,
}

impl Topic {
    /// A topic from the controller's record and partition states, with the partitions hosted here.
    pub fn new(record: TopicRecord, states: Vec<PartitionState>, slots: Vec<Option<Arc<Partition>>>) -> Topic {
        Topic { record, states, slots }
    }

    /// Partition `i` if this broker hosts it.
    pub fn partition(&self, i: i32) -> Option<&Arc<Partition>> {
        self.slots.get(usize::try_from(i).ok()?)?.as_ref()
    }

    /// Partition `i`, or the error a client gets: it doesn't exist, or it lives elsewhere.
    pub fn get(&self, i: i32) -> Result<&Arc<Partition>> {
        if i < 0 || i >= self.record.partitions {
            return Err(Error::UnknownTopicOrPartition);
        }
        self.partition(i).ok_or(Error::NotLeaderOrFollower)
    }

    /// The partitions hosted here.
    pub fn local(&self) -> impl Iterator<Item = &Arc<Partition>> {
        self.slots.iter().flatten()
    }

    /// For a coordinator that owns the partitions it leads: (led now, gained, lost)
    /// against `owned`, or None when nothing changed.
    pub fn leadership_change(&self, owned: &HashSet<i32>) -> Option<(HashSet<i32>, HashSet<i32>, HashSet<i32>)> {
        let led: HashSet<i32> = self.local().filter(|p| p.is_leader()).map(|p| p.index).collect();
        let gained: HashSet<i32> = led.difference(owned).copied().collect();
        let lost: HashSet<i32> = owned.difference(&led).copied().collect();
        (!gained.is_empty() || !lost.is_empty()).then_some((led, gained, lost))
    }
}

/// The topics this broker knows, by name and by id (Produce v13+ and Fetch v13+ name
/// topics by id, once per topic per request).
#[derive(Default)]
pub(super) struct TopicMap {
    pub(super) by_name: HashMap<String, Arc<Topic>>,
    pub(super) by_id: HashMap<Uuid, Arc<Topic>>,
}

impl TopicMap {
    pub(super) fn new(by_name: HashMap<String, Arc<Topic>>) -> Self {
        let by_id = by_name.values().map(|t| (t.record.id, t.clone())).collect();
        TopicMap { by_name, by_id }
    }
}
