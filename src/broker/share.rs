//! Wiring of share groups: the coordinator's settings from the broker config, the
//! topics it assigns, and the local partitions it starts.

use super::Broker;
use crate::clock::now_ms;
use crate::config::BrokerConfig;
use crate::error::{Error, Result};
use crate::partition::Partition;
use crate::share::group::{GroupConfig, Heartbeat, HeartbeatReply, Topics};
use crate::share::partition::{ShareConfig, SharePartition};
use crate::share::ShareCoordinator;

/// The share coordinator with the broker's `group.share.*` settings.
pub(super) fn coordinator(config: &BrokerConfig) -> ShareCoordinator {
    let group = GroupConfig {
        session_timeout_ms: config.get_i64("group.share.session.timeout.ms"),
        heartbeat_interval_ms: config.get_i64("group.share.heartbeat.interval.ms").clamp(1, i32::MAX as i64) as i32,
        max_size: config.get_i64("group.share.max.size").clamp(1, i32::MAX as i64) as usize,
    };
    let share = ShareConfig {
        record_lock_duration_ms: config.get_i64("group.share.record.lock.duration.ms").max(1),
        delivery_count_limit: config.get_i64("group.share.delivery.count.limit").clamp(1, i16::MAX as i64) as i16,
        max_record_locks: config.get_i64("group.share.partition.max.record.locks").max(1),
        ..ShareConfig::default()
    };
    let sessions = config.get_i64("group.share.max.share.sessions").clamp(1, i32::MAX as i64) as usize;
    ShareCoordinator::new(group, share, sessions)
}

impl Broker {
    /// Topic names to ids and partition counts, as share groups see them.
    fn share_topics(&self) -> Topics {
        self.all_topics().iter().map(|t| (t.record.name.clone(), (t.record.id, t.record.partitions))).collect()
    }

    /// ShareGroupHeartbeat on the group's coordinator. A group id is of one type: one in
    /// use by a classic or consumer group is not a share group. The share partitions this
    /// broker leads start when first assigned, at `share.auto.offset.reset`'s offset.
    pub fn share_heartbeat(&self, group_id: &str, hb: Heartbeat) -> Result<HeartbeatReply> {
        if !self.shares.is_share_group(group_id) && self.groups.list().iter().any(|(id, ..)| id == group_id) {
            return Err(Error::GroupIdNotFound(format!("Group {group_id} is not a share group.")));
        }
        let reply = self.shares.heartbeat(group_id, hb, &self.share_topics(), now_ms())?;
        if reply.assignment.is_some() {
            // Every member's, not just this one's: a join moves partitions to the others too.
            for tp in self.shares.assigned_partitions(group_id) {
                self.init_share_partition(group_id, tp);
            }
        }
        Ok(reply)
    }

    /// Starts the share partition of `tp` for the group if this broker leads it.
    pub fn init_share_partition(&self, group_id: &str, tp: (uuid::Uuid, i32)) {
        let Some(p) = self.topic_by_id(tp.0).and_then(|t| t.partition(tp.1).cloned()) else { return };
        let (log_start, hw, leader) = p.with_state(|s| (s.log.log_start_offset(), s.high_watermark, s.replicas.is_leader()));
        if leader {
            self.shares.init_partition(group_id, tp, || self.share_start_offset(group_id, &p, log_start, hw));
        }
    }

    /// Where the group's new share partition on `p` starts: its `share.auto.offset.reset`
    /// (a group config), `by_duration` looked up in the log's time index.
    pub fn share_start_offset(&self, group_id: &str, p: &Partition, log_start: i64, hw: i64) -> i64 {
        let reset = self.shares.share_config_for(group_id).auto_offset_reset;
        let at = |age_ms: i64| p.with_state(|s| s.log.offset_for_timestamp(now_ms().saturating_sub(age_ms)).ok().flatten().map(|(o, _)| o));
        SharePartition::initial_offset(reset, log_start, hw, at)
    }

    /// Share sessions and record locks that ran out; called a few times a second.
    pub fn share_tick(&self) {
        let released = self.shares.tick(&self.share_topics(), now_ms());
        if released > 0 {
            tracing::debug!(records = released, "share record locks released");
        }
    }
}
