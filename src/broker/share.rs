//! Wiring of share groups: the coordinators' settings from the broker config, the
//! topics they assign, the local partitions they start, and the broker as their
//! [`ShareHost`].

use std::sync::Arc;

use super::{Broker, Topic};
use crate::clock::now_ms;
use crate::config::{BrokerConfig, Settings};
use crate::error::{Error, Result};
use crate::partition::Partition;
use crate::share::coordinator::{StateConfig, StateCoordinator};
use crate::share::group::{GroupConfig, Heartbeat, HeartbeatReply, Topics, Tp};
use crate::share::partition::{ShareConfig, SharePartition};
use crate::share::{persister, ShareCoordinator, ShareHost};

/// The share coordinator with the broker's `share.coordinator.*` settings.
pub(super) fn state_coordinator(s: &Settings) -> StateCoordinator {
    StateCoordinator::new(StateConfig {
        partitions: s.share_state_topic_num_partitions,
        snapshot_every: s.share_snapshot_update_records_per_snapshot,
    })
}

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
    pub fn share_heartbeat(self: &Arc<Self>, group_id: &str, hb: Heartbeat) -> Result<HeartbeatReply> {
        if !self.shares.is_share_group(group_id) && self.groups.list().iter().any(|(id, ..)| id == group_id) {
            return Err(Error::GroupIdNotFound(format!("Group {group_id} is not a share group.")));
        }
        let reply = self.shares.heartbeat(group_id, hb, &self.share_topics(), now_ms());
        self.persist_share_groups();
        let reply = reply?;
        if reply.assignment.is_some() {
            // Every member's, not just this one's: a join moves partitions to the others too.
            // Read in (or started at the reset offset) in the background: a heartbeat
            // does not wait for share coordinators.
            for tp in self.shares.assigned_partitions(group_id) {
                let (me, group) = (self.clone(), group_id.to_string());
                tokio::spawn(async move {
                    if let Err(e) = me.load_share_partition(&group, tp).await {
                        tracing::debug!(group, partition = tp.1, error = %e, "share partition not loaded yet");
                    }
                });
            }
        }
        Ok(reply)
    }

    /// Reads the group's share partition of `tp` in, if this broker leads `tp` and has
    /// not read it at the current leader epoch; a new one starts at the reset offset.
    /// NOT_LEADER_OR_FOLLOWER when another broker leads `tp`. Returns which reading-in of
    /// it is in memory, for [`Broker::flush_share_partition`].
    pub async fn load_share_partition(&self, group_id: &str, tp: Tp) -> Result<u64> {
        let p = self.topic_by_id(tp.0).ok_or(Error::UnknownTopicId)?.get(tp.1)?.clone();
        let (log_start, hw, leader, epoch) =
            p.with_state(|s| (s.log.log_start_offset(), s.high_watermark, s.replicas.is_leader(), s.leader_epoch));
        if !leader {
            return Err(Error::NotLeaderOrFollower);
        }
        let key = (group_id.to_string(), tp.0, tp.1);
        persister::load(self, &self.shares, &key, epoch, || self.share_start_offset(group_id, &p, log_start, hw)).await
    }

    /// DeleteGroups of a share group: the group (an empty one only), then its durable
    /// state on every share coordinator, as Kafka deletes it through the persister.
    /// The state goes first: a failure leaves the group for DeleteGroups to be tried again.
    pub async fn delete_share_group(&self, group_id: &str) -> Result<()> {
        if !self.shares.describe(group_id)?.members.is_empty() {
            return Err(Error::NonEmptyGroup(group_id.into()));
        }
        let tps: Vec<Tp> = self
            .all_topics()
            .iter()
            .filter(|t| !crate::metadata::names::is_internal(&t.record.name))
            .flat_map(|t| (0..t.record.partitions).map(move |p| (t.record.id, p)))
            .collect();
        persister::delete_group(self, group_id, &tps).await?;
        self.shares.delete_group(group_id)?;
        self.persist_share_groups();
        self.groups.wait_durable(self, group_id).await
    }

    /// Writes the share groups changed since their last write to `__consumer_offsets`.
    /// Callers that answer a client wait for `groups.wait_durable` after it.
    pub fn persist_share_groups(&self) {
        self.shares.persist_groups(|id, value| self.groups.write_share_group(self, id, value));
    }

    /// Writes the group's share partition of `tp` to its share coordinator, after a change
    /// made to the reading-in `changed`.
    pub async fn flush_share_partition(&self, group_id: &str, tp: Tp, changed: u64) -> Result<()> {
        persister::flush(self, &self.shares, &(group_id.to_string(), tp.0, tp.1), Some(changed)).await
    }

    /// Writes what released and timed-out records changed, off the caller's task; one
    /// such pass at a time.
    pub fn flush_share_state(self: Arc<Self>) {
        static RUNNING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if self.shares.dirty().is_empty() || RUNNING.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        tokio::spawn(async move {
            persister::flush_dirty(&*self, &self.shares).await;
            RUNNING.store(false, std::sync::atomic::Ordering::Release);
        });
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
        self.share_state.prune(self);
        let released = self.shares.tick(&self.share_topics(), now_ms());
        self.persist_share_groups();
        if released > 0 {
            tracing::debug!(records = released, "share record locks released");
        }
    }
}

impl ShareHost for Broker {
    fn node_id(&self) -> i32 {
        self.identity.node_id
    }

    fn leader_endpoint(&self, topic: &Topic, p: i32) -> Result<(i32, String, i32)> {
        Broker::leader_endpoint(self, topic, p)
    }

    fn broker_address(&self, id: i32) -> Option<String> {
        self.cluster.image().live_broker(id).map(|b| b.address())
    }

    fn peers(&self) -> &crate::cluster::peer::Peers {
        &self.peers
    }

    fn share_state(&self) -> &StateCoordinator {
        &self.share_state
    }

    fn has_partition(&self, topic: uuid::Uuid, p: i32) -> bool {
        self.topic_by_id(topic).is_some_and(|t| p >= 0 && p < t.record.partitions)
    }
}
