//! The broker's settings, typed: one place turns the keys the running broker reads into
//! values, with Kafka's bounds. A value that does not parse is an error here (at startup
//! or when AlterConfigs sets it), never a silent fallback; the broker publishes a new
//! snapshot whenever its dynamic config changes.

use super::BrokerConfig;

/// What the broker, its coordinators, replication and the controller read at run time.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub group_min_session_timeout_ms: i32,
    pub group_max_session_timeout_ms: i32,
    pub group_initial_rebalance_delay_ms: i64,
    pub group_max_size: usize,
    pub group_consumer_session_timeout_ms: i64,
    pub group_consumer_heartbeat_interval_ms: i32,
    pub group_consumer_assignors: Vec<String>,
    pub group_consumer_max_size: usize,
    pub group_streams_session_timeout_ms: i64,
    pub group_streams_heartbeat_interval_ms: i32,
    pub group_streams_num_standby_replicas: i32,
    pub group_streams_max_size: usize,
    pub group_streams_task_offset_interval_ms: i32,
    pub group_streams_acceptable_recovery_lag: i64,
    pub group_streams_initial_rebalance_delay_ms: i32,
    pub group_streams_assignment_interval_ms: i32,
    pub group_streams_rack_aware_assignment_tags: Vec<String>,
    pub offsets_topic_num_partitions: i32,
    pub offsets_topic_replication_factor: i64,
    pub offsets_retention_ms: i64,
    pub offsets_retention_check_interval_ms: i64,
    pub transaction_max_timeout_ms: i32,
    pub transaction_state_log_num_partitions: i32,
    pub transaction_state_log_replication_factor: i64,
    pub transaction_state_log_min_isr: i64,
    pub share_state_topic_num_partitions: i32,
    pub share_state_topic_replication_factor: i64,
    pub share_state_topic_min_isr: i64,
    pub share_snapshot_update_records_per_snapshot: u32,
    pub log_cleaner_backoff_ms: i64,
    pub log_retention_check_interval_ms: i64,
    pub replica_lag_time_max_ms: i64,
    pub replica_fetch_wait_max_ms: i32,
    pub replica_fetch_max_bytes: i32,
    /// KIP-392: `RackAwareReplicaSelector` sends consumers to a follower in their rack.
    pub rack_aware_replica_selector: bool,
    pub controller_quorum_request_timeout_ms: i64,
    pub auto_create_topics_enable: bool,
    pub delete_topic_enable: bool,
    pub socket_request_max_bytes: usize,
    /// `socket.send.buffer.bytes`: SO_SNDBUF of client connections (-1: the OS's).
    pub socket_send_buffer_bytes: i32,
    /// `socket.receive.buffer.bytes`: SO_RCVBUF of client connections (-1: the OS's).
    pub socket_receive_buffer_bytes: i32,
    /// `telemetry.max.bytes`: the largest PushTelemetry payload, before and after decompression.
    pub telemetry_max_bytes: usize,
    /// `quota.window.num`: samples a client quota's rate is measured over.
    pub quota_window_num: usize,
    /// `quota.window.size.seconds`, in ms.
    pub quota_window_size_ms: i64,
    /// `controller.quota.window.num`: the controller mutation quota's samples.
    pub controller_quota_window_num: usize,
    /// `controller.quota.window.size.seconds`, in ms.
    pub controller_quota_window_size_ms: i64,
    /// The most partitions one DescribeTopicPartitions answer holds (KIP-966).
    pub max_request_partition_size_limit: i32,
    pub broker_session_timeout_ms: i64,
    /// 0: the active controller writes no no-op batches.
    pub metadata_max_idle_interval_ms: i64,
    pub auto_leader_rebalance_enable: bool,
    pub leader_imbalance_check_interval_ms: i64,
    pub leader_imbalance_per_broker_percentage: i64,
    pub unclean_leader_election_enable: bool,
    pub num_partitions: i32,
    pub default_replication_factor: i64,
    pub min_insync_replicas: usize,
    /// `authorizer.class.name` is Kafka's StandardAuthorizer: requests are checked against ACLs.
    pub authorizer_enabled: bool,
    /// `super.users`, each as `Type:name`.
    pub super_users: Vec<String>,
    pub allow_everyone_if_no_acl_found: bool,
    /// `delegation.token.secret.key`; None (unset or empty) turns delegation tokens off.
    pub delegation_token_secret_key: Option<Secret>,
    pub delegation_token_max_lifetime_ms: i64,
    pub delegation_token_expiry_time_ms: i64,
    pub delegation_token_expiry_check_interval_ms: i64,
}

/// A secret setting: its value stays out of `Debug` output and so out of logs.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([hidden])")
    }
}

/// The `authorizer.class.name` that turns authorization on.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// `Type:name` with a non-empty type, as Kafka parses a principal.
fn principal(s: &str, key: &str) -> Result<String, String> {
    match s.split_once(':') {
        Some((kind, _)) if !kind.is_empty() => Ok(s.to_string()),
        _ => Err(format!("invalid principal '{s}' in {key}: expected Type:name, e.g. User:admin")),
    }
}

impl Settings {
    /// The typed settings of `config`, or the first key whose value does not parse.
    pub fn from_config(config: &BrokerConfig) -> Result<Settings, String> {
        let int = |k: &str| -> Result<i64, String> {
            let v = config.get(k);
            v.trim().parse::<i64>().map_err(|_| format!("invalid value '{v}' for {k}"))
        };
        let boolean = |k: &str| -> Result<bool, String> {
            match config.get(k).trim() {
                "true" => Ok(true),
                "false" => Ok(false),
                v => Err(format!("invalid value '{v}' for {k}")),
            }
        };
        let authorizer_enabled = match config.get("authorizer.class.name").trim() {
            "" => false,
            STANDARD_AUTHORIZER => true,
            other => return Err(format!("unknown authorizer.class.name '{other}': only {STANDARD_AUTHORIZER} is supported")),
        };
        let super_users = config
            .get("super.users")
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| principal(s, "super.users"))
            .collect::<Result<Vec<_>, _>>()?;
        let positive_i32 = |k: &str| int(k).map(|v| v.clamp(1, i32::MAX as i64) as i32);
        Ok(Settings {
            group_min_session_timeout_ms: int("group.min.session.timeout.ms")?.clamp(0, i32::MAX as i64) as i32,
            group_max_session_timeout_ms: int("group.max.session.timeout.ms")?.clamp(0, i32::MAX as i64) as i32,
            group_initial_rebalance_delay_ms: int("group.initial.rebalance.delay.ms")?,
            group_max_size: positive_i32("group.max.size")? as usize,
            group_consumer_session_timeout_ms: int("group.consumer.session.timeout.ms")?,
            group_consumer_heartbeat_interval_ms: positive_i32("group.consumer.heartbeat.interval.ms")?,
            group_consumer_assignors: config
                .get("group.consumer.assignors")
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            group_consumer_max_size: positive_i32("group.consumer.max.size")? as usize,
            group_streams_session_timeout_ms: int("group.streams.session.timeout.ms")?,
            group_streams_heartbeat_interval_ms: positive_i32("group.streams.heartbeat.interval.ms")?,
            group_streams_num_standby_replicas: int("group.streams.num.standby.replicas")?.clamp(0, i32::MAX as i64) as i32,
            group_streams_max_size: positive_i32("group.streams.max.size")? as usize,
            group_streams_task_offset_interval_ms: positive_i32("group.streams.task.offset.interval.ms")?,
            group_streams_acceptable_recovery_lag: int("group.streams.acceptable.recovery.lag")?,
            group_streams_initial_rebalance_delay_ms: int("group.streams.initial.rebalance.delay.ms")?.clamp(0, i32::MAX as i64) as i32,
            group_streams_assignment_interval_ms: int("group.streams.assignment.interval.ms")?.clamp(0, i32::MAX as i64) as i32,
            group_streams_rack_aware_assignment_tags: super::group::tag_list(&config.get("group.streams.rack.aware.assignment.tags")),
            offsets_topic_num_partitions: int("offsets.topic.num.partitions")?.clamp(1, 10_000) as i32,
            offsets_topic_replication_factor: int("offsets.topic.replication.factor")?,
            offsets_retention_ms: int("offsets.retention.minutes")?.saturating_mul(60_000),
            offsets_retention_check_interval_ms: int("offsets.retention.check.interval.ms")?,
            transaction_max_timeout_ms: positive_i32("transaction.max.timeout.ms")?,
            transaction_state_log_num_partitions: int("transaction.state.log.num.partitions")?.clamp(1, 10_000) as i32,
            transaction_state_log_replication_factor: int("transaction.state.log.replication.factor")?,
            transaction_state_log_min_isr: int("transaction.state.log.min.isr")?,
            share_state_topic_num_partitions: int("share.coordinator.state.topic.num.partitions")?.clamp(1, 10_000) as i32,
            share_state_topic_replication_factor: int("share.coordinator.state.topic.replication.factor")?,
            share_state_topic_min_isr: int("share.coordinator.state.topic.min.isr")?,
            share_snapshot_update_records_per_snapshot: int("share.coordinator.snapshot.update.records.per.snapshot")?.clamp(0, 500) as u32,
            log_cleaner_backoff_ms: int("log.cleaner.backoff.ms")?,
            log_retention_check_interval_ms: int("log.retention.check.interval.ms")?,
            replica_lag_time_max_ms: int("replica.lag.time.max.ms")?,
            replica_fetch_wait_max_ms: int("replica.fetch.wait.max.ms")?.clamp(0, 60_000) as i32,
            replica_fetch_max_bytes: int("replica.fetch.max.bytes")?.clamp(1024, i32::MAX as i64) as i32,
            rack_aware_replica_selector: config.get("replica.selector.class").ends_with("RackAwareReplicaSelector"),
            controller_quorum_request_timeout_ms: int("controller.quorum.request.timeout.ms")?.max(100),
            auto_create_topics_enable: boolean("auto.create.topics.enable")?,
            delete_topic_enable: boolean("delete.topic.enable")?,
            socket_request_max_bytes: int("socket.request.max.bytes")?.clamp(0, i32::MAX as i64) as usize,
            socket_send_buffer_bytes: int("socket.send.buffer.bytes")?.clamp(-1, i32::MAX as i64) as i32,
            socket_receive_buffer_bytes: int("socket.receive.buffer.bytes")?.clamp(-1, i32::MAX as i64) as i32,
            telemetry_max_bytes: positive_i32("telemetry.max.bytes")? as usize,
            quota_window_num: positive_i32("quota.window.num")? as usize,
            quota_window_size_ms: positive_i32("quota.window.size.seconds")? as i64 * 1000,
            controller_quota_window_num: positive_i32("controller.quota.window.num")? as usize,
            controller_quota_window_size_ms: positive_i32("controller.quota.window.size.seconds")? as i64 * 1000,
            max_request_partition_size_limit: positive_i32("max.request.partition.size.limit")?,
            broker_session_timeout_ms: int("broker.session.timeout.ms")?,
            metadata_max_idle_interval_ms: int("metadata.max.idle.interval.ms")?.max(0),
            auto_leader_rebalance_enable: boolean("auto.leader.rebalance.enable")?,
            leader_imbalance_check_interval_ms: int("leader.imbalance.check.interval.seconds")?.saturating_mul(1000),
            leader_imbalance_per_broker_percentage: int("leader.imbalance.per.broker.percentage")?,
            unclean_leader_election_enable: boolean("unclean.leader.election.enable")?,
            num_partitions: int("num.partitions")?.clamp(1, i32::MAX as i64) as i32,
            default_replication_factor: int("default.replication.factor")?,
            min_insync_replicas: int("min.insync.replicas")?.max(1) as usize,
            authorizer_enabled,
            super_users,
            allow_everyone_if_no_acl_found: boolean("allow.everyone.if.no.acl.found")?,
            // Kafka reads its deprecated alias delegation.token.master.key when the new name is unset.
            delegation_token_secret_key: [config.get("delegation.token.secret.key"), config.get("delegation.token.master.key")]
                .into_iter()
                .find(|k| !k.is_empty())
                .map(Secret),
            // Kafka's lower bound for all three is 1 ms.
            delegation_token_max_lifetime_ms: int("delegation.token.max.lifetime.ms")?.max(1),
            delegation_token_expiry_time_ms: int("delegation.token.expiry.time.ms")?.max(1),
            delegation_token_expiry_check_interval_ms: int("delegation.token.expiry.check.interval.ms")?.max(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_defaults_are_typed() {
        let s = Settings::from_config(&BrokerConfig::default()).unwrap();
        assert_eq!(s.replica_lag_time_max_ms, 30_000);
        assert_eq!(s.offsets_retention_ms, 10_080 * 60_000);
        assert_eq!(s.leader_imbalance_check_interval_ms, 300_000);
        assert!(s.auto_create_topics_enable && !s.unclean_leader_election_enable);
        assert_eq!(s.group_consumer_assignors, ["uniform", "range"]);
        assert!(!s.authorizer_enabled && !s.allow_everyone_if_no_acl_found);
    }

    #[test]
    fn authorizer_keys_are_checked() {
        let mut c = BrokerConfig::default();
        c.set_static("authorizer.class.name", STANDARD_AUTHORIZER).unwrap();
        c.set_static("super.users", " User:admin ; User:CN=ops,O=x ;").unwrap();
        let s = Settings::from_config(&c).unwrap();
        assert!(s.authorizer_enabled);
        assert_eq!(s.super_users, ["User:admin", "User:CN=ops,O=x"], "no broker principal is added behind the user's back");
        c.set_static("super.users", "admin").unwrap();
        assert!(Settings::from_config(&c).unwrap_err().contains("super.users"));
        c.set_static("super.users", "").unwrap();
        c.set_static("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer").unwrap();
        assert!(Settings::from_config(&c).unwrap_err().contains("authorizer.class.name"));
    }

    #[test]
    fn a_value_that_does_not_parse_is_an_error_not_a_fallback() {
        let mut c = BrokerConfig::default();
        c.dynamic_set.insert("replica.lag.time.max.ms".into(), "soon".into());
        let e = Settings::from_config(&c).unwrap_err();
        assert!(e.contains("replica.lag.time.max.ms"), "{e}");
        c.dynamic_set.insert("replica.lag.time.max.ms".into(), "1000".into());
        assert_eq!(Settings::from_config(&c).unwrap().replica_lag_time_max_ms, 1000);
    }

    #[test]
    fn delegation_token_master_key_is_the_secret_key_s_deprecated_alias() {
        let mut c = BrokerConfig::default();
        assert!(Settings::from_config(&c).unwrap().delegation_token_secret_key.is_none());
        c.set_static("delegation.token.master.key", "old").unwrap();
        assert_eq!(Settings::from_config(&c).unwrap().delegation_token_secret_key.unwrap().0, "old");
        c.set_static("delegation.token.secret.key", "new").unwrap();
        assert_eq!(Settings::from_config(&c).unwrap().delegation_token_secret_key.unwrap().0, "new", "the new name wins");
    }
}
