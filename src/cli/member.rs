//! `consume -g`: a KIP-848 consumer group member for one topic. It joins with
//! ConsumerGroupHeartbeat (member epoch 0), takes the partitions the coordinator assigns,
//! acknowledges them in the next heartbeat, beats at the interval the coordinator asks
//! for, rejoins when fenced, and leaves (epoch -1) on exit.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kafka_protocol::messages::consumer_group_heartbeat_request::{ConsumerGroupHeartbeatRequest, TopicPartitions};
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::client::Client;
use super::CliError;

/// How long the coordinator waits for this member to give up revoked partitions.
const REBALANCE_TIMEOUT_MS: i32 = 30_000;
/// Kafka's codes that mean "join again": UNKNOWN_MEMBER_ID (25), FENCED_MEMBER_EPOCH (110).
const REJOIN: [i16; 2] = [25, 110];

/// This process's membership of a group.
pub struct Member {
    group: String,
    topic: String,
    topic_id: Uuid,
    member_id: String,
    /// The member epoch (0 before joining).
    pub epoch: i32,
    interval: Duration,
    next_beat: Instant,
    /// The partitions of the topic this member owns.
    pub assigned: BTreeSet<i32>,
    /// Whether the last assignment still has to be acknowledged.
    unacked: bool,
}

impl Member {
    /// A member of `group` subscribed to `topic` (whose id is `topic_id`), not joined yet.
    pub fn new(group: &str, topic: &str, topic_id: Uuid) -> Member {
        Member {
            group: group.to_string(),
            topic: topic.to_string(),
            topic_id,
            // KIP-1082: the client names itself (v1); v0 takes the id the coordinator returns.
            member_id: Uuid::new_v4().to_string(),
            epoch: 0,
            interval: Duration::from_millis(100),
            next_beat: Instant::now(),
            assigned: BTreeSet::new(),
            unacked: false,
        }
    }

    /// The member id, for OffsetCommit.
    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    fn owned(&self) -> Vec<TopicPartitions> {
        if self.assigned.is_empty() {
            return Vec::new();
        }
        vec![TopicPartitions::default().with_topic_id(self.topic_id).with_partitions(self.assigned.iter().copied().collect())]
    }

    /// Heartbeats if it is time (or an assignment waits for its acknowledgement); returns
    /// whether the assignment changed.
    pub async fn beat_if_due(&mut self, client: &mut Client) -> Result<bool, CliError> {
        if Instant::now() < self.next_beat && !self.unacked {
            return Ok(false);
        }
        self.beat(client, self.epoch).await
    }

    async fn beat(&mut self, client: &mut Client, epoch: i32) -> Result<bool, CliError> {
        let node = client.coordinator(&self.group, 0).await?;
        let version = client.node(node).await?.version::<ConsumerGroupHeartbeatRequest>(1)?;
        let joining = epoch == 0;
        let mut req = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(self.group.clone())))
            .with_member_id(StrBytes::from_string(if joining && version == 0 { String::new() } else { self.member_id.clone() }))
            .with_member_epoch(epoch);
        if epoch >= 0 {
            req = req
                .with_rebalance_timeout_ms(if joining { REBALANCE_TIMEOUT_MS } else { -1 })
                .with_subscribed_topic_names(joining.then(|| vec![TopicName(StrBytes::from_string(self.topic.clone()))]))
                .with_topic_partitions(Some(self.owned()));
        }
        let r = match client.send_to(node, &req, 1).await {
            Ok((r, _)) => r,
            Err(e) if e.retriable() && epoch >= 0 => {
                self.next_beat = Instant::now() + Duration::from_millis(200);
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        if epoch < 0 {
            return Ok(false);
        }
        if REJOIN.contains(&r.error_code) {
            // Fenced: everything owned is lost; join again at once.
            self.epoch = 0;
            self.next_beat = Instant::now();
            let changed = !self.assigned.is_empty();
            self.assigned.clear();
            return Ok(changed);
        }
        if let Err(e) = CliError::check(r.error_code, || format!("heartbeat to group {}", self.group), r.error_message.as_deref()) {
            if e.retriable() {
                self.next_beat = Instant::now() + Duration::from_millis(200);
                return Ok(false);
            }
            return Err(e);
        }
        if let Some(id) = r.member_id.filter(|m| !m.is_empty()) {
            self.member_id = id.to_string();
        }
        self.epoch = r.member_epoch;
        self.interval = Duration::from_millis(r.heartbeat_interval_ms.clamp(100, 30_000) as u64);
        self.next_beat = Instant::now() + self.interval;
        self.unacked = false;
        let Some(a) = r.assignment else { return Ok(false) };
        let now: BTreeSet<i32> =
            a.topic_partitions.iter().filter(|tp| tp.topic_id == self.topic_id).flat_map(|tp| tp.partitions.iter().copied()).collect();
        if now == self.assigned {
            return Ok(false);
        }
        self.assigned = now;
        self.unacked = true;
        Ok(true)
    }

    /// Leaves the group (epoch -1); the coordinator hands the partitions to the others.
    pub async fn leave(&mut self, client: &mut Client) -> Result<(), CliError> {
        if self.epoch > 0 {
            self.beat(client, -1).await?;
        }
        Ok(())
    }
}
