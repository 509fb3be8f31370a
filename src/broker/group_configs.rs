//! Group configs (ConfigResource GROUP): describing and altering a group's overrides, which
//! live in the metadata log, and handing the values each group runs with to the consumer
//! and share coordinators whenever the image changes them.

use std::collections::{BTreeMap, HashMap};

use super::configs::{broker_synonyms, ConfigEntry};
use super::Broker;
use crate::config::group::{group_default, group_key, validate_group_configs, GroupSettings, GROUP_KEYS};
use crate::config::{BrokerConfig, Source};
use crate::controller::rpc::{ConfigTarget, Request};
use crate::error::{Error, Result};
use crate::share::group::GroupConfig as ShareGroupConfig;
use crate::share::partition::ShareConfig;

/// Kafka refuses a group resource without a name.
fn check_name(group: &str) -> Result<()> {
    if group.is_empty() {
        return Err(Error::InvalidRequest("Group name must not be empty".into()));
    }
    Ok(())
}

impl Broker {
    /// The group's overrides in the metadata image (empty when it has none).
    pub(super) fn group_overrides(&self, group: &str) -> BTreeMap<String, String> {
        self.cluster.image().group_configs.get(group).cloned().unwrap_or_default()
    }

    /// A group key's value given `overrides`, else its default.
    pub(super) fn group_value(&self, overrides: &BTreeMap<String, String>, key: &str) -> Option<String> {
        if let Some(v) = overrides.get(key) {
            return Some(v.clone());
        }
        group_key(key).and_then(|d| group_default(d, &self.config.read())).map(|(v, _)| v)
    }

    /// DescribeConfigs for a group: every key Kafka describes (its internal ones are left
    /// out), or just `keys`. The group need not exist, as in Kafka.
    pub fn describe_group_configs(&self, group: &str, keys: Option<&[String]>) -> Result<Vec<ConfigEntry>> {
        check_name(group)?;
        let overrides = self.group_overrides(group);
        let cfg = self.config.read().clone();
        Ok(GROUP_KEYS
            .iter()
            .filter(|d| !d.internal && keys.is_none_or(|k| k.iter().any(|x| x == d.name)))
            .map(|d| {
                let mut synonyms = Vec::new();
                if let Some(v) = overrides.get(d.name) {
                    synonyms.push((d.name.to_string(), v.clone(), Source::Group));
                }
                match d.broker {
                    Some(b) => synonyms.extend(broker_synonyms(&cfg, b)),
                    None => synonyms.extend(d.default.map(|v| (d.name.to_string(), v.to_string(), Source::Default))),
                }
                let (value, source) = match synonyms.first() {
                    Some((_, v, s)) => (Some(v.clone()), *s),
                    None => (group_default(d, &cfg).map(|x| x.0), Source::Default),
                };
                ConfigEntry { name: d.name.into(), value, source, read_only: false, kind: d.kind, doc: d.doc, synonyms }
            })
            .collect())
    }

    /// Replaces a group's overrides after Kafka's checks; an empty set removes them all.
    pub(super) fn replace_group_configs(&self, group: &str, new: BTreeMap<String, String>, validate_only: bool) -> Result<()> {
        check_name(group)?;
        validate_group_configs(&new, &self.config.read()).map_err(Error::InvalidConfig)?;
        if validate_only {
            return Ok(());
        }
        self.submit_blocking(Request::SetConfigs { target: ConfigTarget::Group(group.to_string()), configs: new }).map(|_| ())
    }

    /// Hands the image's group configs to the coordinators when they changed.
    pub(super) fn apply_group_configs(&self, image: &BTreeMap<String, BTreeMap<String, String>>) {
        let mut applied = self.applied_group_configs.lock();
        if *applied == *image {
            return;
        }
        let cfg = self.config.read().clone();
        let (consumer, share) =
            overrides(image, &cfg, &self.groups.consumer_config, (&self.shares.group_config, &self.shares.share_config));
        self.groups.set_consumer_overrides(consumer);
        self.shares.set_overrides(share);
        *applied = image.clone();
    }
}

type ShareDefaults<'a> = (&'a ShareGroupConfig, &'a ShareConfig);

/// Every group's coordinator settings: the broker's, with its group configs applied.
fn overrides(
    image: &BTreeMap<String, BTreeMap<String, String>>,
    cfg: &BrokerConfig,
    consumer: &crate::group::consumer::ConsumerConfig,
    share: ShareDefaults<'_>,
) -> (HashMap<String, crate::group::consumer::ConsumerConfig>, HashMap<String, (ShareGroupConfig, ShareConfig)>) {
    let mut consumers = HashMap::new();
    let mut shares = HashMap::new();
    for (group, o) in image {
        let s = GroupSettings::resolve(o, cfg);
        let mut c = consumer.clone();
        c.session_timeout_ms = s.consumer_session_timeout_ms;
        c.heartbeat_interval_ms = s.consumer_heartbeat_interval_ms;
        c.streams.session_timeout_ms = s.streams_session_timeout_ms;
        c.streams.heartbeat_interval_ms = s.streams_heartbeat_interval_ms;
        c.streams.num_standby_replicas = s.streams_num_standby_replicas;
        c.streams.initial_rebalance_delay_ms = s.streams_initial_rebalance_delay_ms;
        c.streams.assignment_interval_ms = s.streams_assignment_interval_ms;
        c.streams.task_offset_interval_ms = s.streams_task_offset_interval_ms;
        c.streams.acceptable_recovery_lag = s.streams_acceptable_recovery_lag;
        c.streams.rack_aware_assignment_tags = s.streams_rack_aware_assignment_tags;
        consumers.insert(group.clone(), c);
        let g = ShareGroupConfig {
            session_timeout_ms: s.share_session_timeout_ms,
            heartbeat_interval_ms: s.share_heartbeat_interval_ms,
            ..share.0.clone()
        };
        let p = ShareConfig {
            record_lock_duration_ms: s.share_record_lock_duration_ms,
            delivery_count_limit: s.share_delivery_count_limit,
            max_record_locks: s.share_partition_max_record_locks,
            auto_offset_reset: s.share_auto_offset_reset,
            read_committed: s.share_read_committed,
            renew_enabled: s.share_renew_acknowledge_enable,
        };
        shares.insert(group.clone(), (g, p));
    }
    (consumers, shares)
}
