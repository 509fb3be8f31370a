//! Resolving, describing and altering topic and broker configs (group configs: `group_configs`).

use std::collections::BTreeMap;

use super::{Broker, Topic};
use crate::config::{self, ConfigType, KeyDef, Source, KEYS};
use crate::controller::rpc::{ConfigTarget, Request};
use crate::error::{Error, Result};
use crate::log::LogConfig;
use crate::partition::AppendConfig;

/// One row of a DescribeConfigs answer.
#[derive(Debug, Clone)]
pub struct ConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub source: Source,
    pub read_only: bool,
    pub kind: ConfigType,
    pub doc: &'static str,
    /// Where else the value could come from, most specific first.
    pub synonyms: Vec<(String, String, Source)>,
}

/// The config resources Sluice serves (Kafka's ConfigResource types 2, 4, 16 and 32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKind {
    Topic,
    Broker,
    Group,
    ClientMetrics,
}

/// One IncrementalAlterConfigs operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterOp {
    Set,
    Delete,
    Append,
    Subtract,
}

impl AlterOp {
    pub fn from_code(c: i8) -> Option<AlterOp> {
        Some(match c {
            0 => AlterOp::Set,
            1 => AlterOp::Delete,
            2 => AlterOp::Append,
            3 => AlterOp::Subtract,
            _ => return None,
        })
    }
}

fn parse_i64(v: &str) -> i64 {
    v.trim().parse().unwrap_or(i64::MAX)
}

impl Broker {
    /// A topic key's effective value and its source, given the topic's overrides.
    fn resolve_topic_key(&self, overrides: &BTreeMap<String, String>, def: &KeyDef) -> (Option<String>, Source) {
        if let Some(v) = overrides.get(def.name) {
            return (Some(v.clone()), Source::DynamicTopic);
        }
        let syn = def.broker_synonym.expect("topic keys name a broker key");
        match self.config.read().lookup(syn) {
            Some((v, src)) => (Some(v), src),
            None => (None, Source::Default),
        }
    }

    fn topic_value(&self, overrides: &BTreeMap<String, String>, key: &str) -> Option<String> {
        self.resolve_topic_key(overrides, config::topic_key(key).expect("known topic key")).0
    }

    /// The log and append settings a topic's partitions use.
    pub(super) fn partition_configs(&self, overrides: &BTreeMap<String, String>) -> (LogConfig, AppendConfig) {
        let get = |k: &str| self.topic_value(overrides, k).map(|v| parse_i64(&v)).unwrap_or(i64::MAX);
        let policy = self.topic_value(overrides, "cleanup.policy").unwrap_or_default();
        let log = LogConfig {
            segment_bytes: get("segment.bytes").max(1) as u64,
            segment_ms: get("segment.ms"),
            retention_ms: get("retention.ms"),
            retention_bytes: get("retention.bytes"),
            index_interval_bytes: get("index.interval.bytes").max(1) as u64,
            delete_policy: policy.split(',').any(|p| p.trim() == "delete"),
            flush_messages: get("flush.messages").max(1),
            flush_ms: get("flush.ms"),
            compact: policy.split(',').any(|p| p.trim() == "compact").then(|| crate::log::cleaner::CleanConfig {
                delete_retention_ms: get("delete.retention.ms"),
                min_compaction_lag_ms: get("min.compaction.lag.ms"),
                min_cleanable_dirty_ratio: self
                    .topic_value(overrides, "min.cleanable.dirty.ratio")
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0.5),
            }),
        };
        let append = AppendConfig {
            max_message_bytes: get("max.message.bytes").clamp(0, i32::MAX as i64) as usize,
            log_append_time: self.topic_value(overrides, "message.timestamp.type").as_deref() == Some("LogAppendTime"),
            min_insync_replicas: get("min.insync.replicas").clamp(1, i32::MAX as i64) as i32,
            timestamp_before_max_ms: get("message.timestamp.before.max.ms"),
            timestamp_after_max_ms: get("message.timestamp.after.max.ms"),
            compacted: policy.split(',').any(|p| p.trim() == "compact"),
        };
        (log, append)
    }

    /// Pushes current settings into every open partition of `topic`.
    pub(super) fn reconfigure(&self, topic: &Topic) {
        let (log_cfg, append_cfg) = self.partition_configs(&topic.record.configs);
        for p in topic.local() {
            p.with_state(|s| {
                s.log.reconfigure(log_cfg.clone());
                s.append_config = append_cfg.clone();
            });
        }
    }

    /// DescribeConfigs for a topic: every topic key, or just `keys`.
    pub fn describe_topic_configs(&self, name: &str, keys: Option<&[String]>) -> Result<Vec<ConfigEntry>> {
        let topic = self.topic(name).ok_or(Error::UnknownTopicOrPartition)?;
        let cfg = self.config.read().clone();
        Ok(KEYS
            .iter()
            .filter(|d| d.topic && keys.map_or(true, |k| k.iter().any(|x| x == d.name)))
            .map(|d| {
                let (value, source) = self.resolve_topic_key(&topic.record.configs, d);
                let mut synonyms = Vec::new();
                if let Some(v) = topic.record.configs.get(d.name) {
                    synonyms.push((d.name.to_string(), v.clone(), Source::DynamicTopic));
                }
                let syn = d.broker_synonym.expect("topic keys name a broker key");
                synonyms.extend(broker_synonyms(&cfg, syn));
                ConfigEntry { name: d.name.into(), value, source, read_only: false, kind: d.kind, doc: d.doc, synonyms }
            })
            .collect())
    }

    /// DescribeConfigs for this broker.
    pub fn describe_broker_configs(&self, resource: &str, keys: Option<&[String]>) -> Result<Vec<ConfigEntry>> {
        self.check_broker_resource(resource)?;
        let cfg = self.config.read().clone();
        Ok(KEYS
            .iter()
            .filter(|d| !d.topic && keys.map_or(true, |k| k.iter().any(|x| x == d.name)))
            .map(|d| {
                let (value, source) = match cfg.lookup(d.name) {
                    Some((v, s)) => (Some(v), s),
                    None => (None, Source::Default),
                };
                ConfigEntry {
                    name: d.name.into(),
                    value,
                    source,
                    read_only: !d.dynamic,
                    kind: d.kind,
                    doc: d.doc,
                    synonyms: broker_synonyms(&cfg, d.name),
                }
            })
            .collect())
    }

    fn check_broker_resource(&self, resource: &str) -> Result<()> {
        if resource.is_empty() || resource == self.identity.node_id.to_string() {
            Ok(())
        } else {
            Err(Error::InvalidRequest(format!("this is broker {}, not '{resource}'", self.identity.node_id)))
        }
    }

    /// Applies a topic's new overrides after checking every key.
    fn replace_topic_configs(&self, name: &str, new: BTreeMap<String, String>, validate_only: bool) -> Result<()> {
        let topic = self.topic(name).ok_or(Error::UnknownTopicOrPartition)?;
        for (k, v) in &new {
            let def = config::topic_key(k).ok_or_else(|| Error::InvalidConfig(format!("unknown topic config '{k}'")))?;
            config::validate(def, v).map_err(Error::InvalidConfig)?;
        }
        if validate_only {
            return Ok(());
        }
        drop(topic);
        self.submit_blocking(Request::SetConfigs { target: ConfigTarget::Topic(name.to_string()), configs: new }).map(|_| ())
    }

    fn replace_broker_configs(&self, resource: &str, new: BTreeMap<String, String>, validate_only: bool) -> Result<()> {
        self.check_broker_resource(resource)?;
        for (k, v) in &new {
            let def = config::broker_key(k).ok_or_else(|| Error::InvalidConfig(format!("unknown broker config '{k}'")))?;
            if !def.dynamic {
                return Err(Error::InvalidRequest(format!("cannot update {k} dynamically; set it in the config file")));
            }
            config::validate(def, v).map_err(Error::InvalidConfig)?;
        }
        if validate_only {
            return Ok(());
        }
        self.submit_blocking(Request::SetConfigs { target: ConfigTarget::Broker, configs: new }).map(|_| ())
    }

    /// AlterConfigs: the given set replaces every dynamic value of the resource.
    pub fn alter_configs(&self, kind: ConfigKind, name: &str, set: BTreeMap<String, String>, validate_only: bool) -> Result<()> {
        match kind {
            ConfigKind::Topic => self.replace_topic_configs(name, set, validate_only),
            ConfigKind::Broker => self.replace_broker_configs(name, set, validate_only),
            ConfigKind::Group => self.replace_group_configs(name, set, validate_only),
            ConfigKind::ClientMetrics => self.replace_client_metrics_configs(name, set, validate_only),
        }
    }

    /// IncrementalAlterConfigs: operations on single keys, applied together or not at all.
    pub fn incremental_alter_configs(
        &self,
        kind: ConfigKind,
        name: &str,
        ops: &[(String, AlterOp, Option<String>)],
        validate_only: bool,
    ) -> Result<()> {
        let mut new = match kind {
            ConfigKind::Topic => self.topic(name).ok_or(Error::UnknownTopicOrPartition)?.record.configs.clone(),
            ConfigKind::Broker => {
                self.check_broker_resource(name)?;
                self.config.read().dynamic_set.clone()
            }
            ConfigKind::Group => self.group_overrides(name),
            ConfigKind::ClientMetrics => self.client_metrics_overrides(name),
        };
        for (key, op, value) in ops {
            let key_type = match kind {
                ConfigKind::Topic => config::topic_key(key).map(|d| d.kind),
                ConfigKind::Broker => config::broker_key(key).map(|d| d.kind),
                ConfigKind::Group => config::group::group_key(key).map(|d| d.kind),
                ConfigKind::ClientMetrics => crate::telemetry::subscription::KEYS.iter().find(|(k, ..)| k == key).map(|(_, t, ..)| *t),
            };
            let key_type = key_type.ok_or_else(|| match kind {
                ConfigKind::Group => Error::InvalidConfig(format!("Unknown group config name: {key}")),
                ConfigKind::ClientMetrics => Error::InvalidRequest(format!("Unknown client metrics configuration: {key}")),
                _ => Error::InvalidConfig(format!("unknown config '{key}'")),
            })?;
            match op {
                AlterOp::Set => {
                    let v = value.clone().ok_or_else(|| Error::InvalidRequest(format!("null value for {key}")))?;
                    new.insert(key.clone(), v);
                }
                AlterOp::Delete => {
                    new.remove(key);
                }
                AlterOp::Append | AlterOp::Subtract => {
                    if key_type != ConfigType::List {
                        return Err(Error::InvalidConfig(format!("{key} is not a list; APPEND and SUBTRACT need one")));
                    }
                    let effective = match kind {
                        ConfigKind::Topic => self.topic_value(&new, key),
                        ConfigKind::Broker => self.config.read().lookup(key).map(|x| x.0),
                        ConfigKind::Group => self.group_value(&new, key),
                        ConfigKind::ClientMetrics => new.get(key).cloned(),
                    };
                    let mut items: Vec<String> =
                        effective.unwrap_or_default().split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
                    for v in value.as_deref().unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()) {
                        if *op == AlterOp::Append {
                            if !items.iter().any(|i| i == v) {
                                items.push(v.to_string());
                            }
                        } else {
                            items.retain(|i| i != v);
                        }
                    }
                    new.insert(key.clone(), items.join(","));
                }
            }
        }
        self.alter_configs(kind, name, new, validate_only)
    }
}

/// A broker key's synonyms: dynamic, static, then default.
pub(super) fn broker_synonyms(cfg: &config::BrokerConfig, key: &str) -> Vec<(String, String, Source)> {
    let mut out = Vec::new();
    if let Some(v) = cfg.dynamic_set.get(key) {
        out.push((key.to_string(), v.clone(), Source::DynamicBroker));
    }
    if let Some(v) = cfg.static_set.get(key) {
        out.push((key.to_string(), v.clone(), Source::StaticBroker));
    }
    if let Some(d) = config::broker_key(key).and_then(|d| d.default) {
        out.push((key.to_string(), d.to_string(), Source::Default));
    }
    out
}
