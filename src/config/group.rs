//! Group configs: the per-group overrides of Kafka 4.4's `GroupConfig` (ConfigResource type
//! GROUP, KIP-848 and KIP-932), their checks against the broker's `group.*` bounds, and the
//! effective values a group runs with.
//!
//! A group config falls back to its broker synonym (`consumer.session.timeout.ms` to
//! `group.consumer.session.timeout.ms`), or to Kafka's own default where there is none
//! (`share.auto.offset.reset`). The broker keys that only bound what a group may set live
//! here too, in [`BROKER_KEYS`].

use std::collections::BTreeMap;

use super::{BrokerConfig, ConfigType, KeyDef};

/// The broker keys group configs fall back to or are bounded by, with Kafka 4.4's defaults.
/// Changing one needs a restart, like the other `group.*` keys.
#[rustfmt::skip]
pub static BROKER_KEYS: &[KeyDef] = &[
    key!("group.consumer.min.session.timeout.ms", Some("45000"), Int, broker, false, "Least consumer.session.timeout.ms a group may set."),
    key!("group.consumer.max.session.timeout.ms", Some("60000"), Int, broker, false, "Most consumer.session.timeout.ms a group may set."),
    key!("group.consumer.min.heartbeat.interval.ms", Some("5000"), Int, broker, false, "Least consumer.heartbeat.interval.ms a group may set."),
    key!("group.consumer.max.heartbeat.interval.ms", Some("15000"), Int, broker, false, "Most consumer.heartbeat.interval.ms a group may set."),
    key!("group.consumer.assignment.interval.ms", Some("1000"), Int, broker, false, "Kafka's pause between assignment runs (kept; Sluice assigns at once)."),
    key!("group.consumer.min.assignment.interval.ms", Some("0"), Int, broker, false, "Least consumer.assignment.interval.ms a group may set."),
    key!("group.consumer.max.assignment.interval.ms", Some("15000"), Int, broker, false, "Most consumer.assignment.interval.ms a group may set."),
    key!("group.consumer.assignor.offload.enable", Some("true"), Boolean, broker, false, "Kafka's assignor offload (kept; Sluice assigns inline)."),
    key!("group.share.min.session.timeout.ms", Some("45000"), Int, broker, false, "Least share.session.timeout.ms a group may set."),
    key!("group.share.max.session.timeout.ms", Some("60000"), Int, broker, false, "Most share.session.timeout.ms a group may set."),
    key!("group.share.min.heartbeat.interval.ms", Some("5000"), Int, broker, false, "Least share.heartbeat.interval.ms a group may set."),
    key!("group.share.max.heartbeat.interval.ms", Some("15000"), Int, broker, false, "Most share.heartbeat.interval.ms a group may set."),
    key!("group.share.min.record.lock.duration.ms", Some("15000"), Int, broker, false, "Least share.record.lock.duration.ms a group may set."),
    key!("group.share.max.record.lock.duration.ms", Some("60000"), Int, broker, false, "Most share.record.lock.duration.ms a group may set."),
    key!("group.share.min.delivery.count.limit", Some("2"), Int, broker, false, "Least share.delivery.count.limit a group may set."),
    key!("group.share.max.delivery.count.limit", Some("10"), Int, broker, false, "Most share.delivery.count.limit a group may set."),
    key!("group.share.min.partition.max.record.locks", Some("100"), Int, broker, false, "Least share.partition.max.record.locks a group may set."),
    key!("group.share.max.partition.max.record.locks", Some("4000"), Int, broker, false, "Most share.partition.max.record.locks a group may set."),
    key!("group.share.assignment.interval.ms", Some("1000"), Int, broker, false, "Kafka's pause between assignment runs (kept; Sluice assigns at once)."),
    key!("group.share.min.assignment.interval.ms", Some("0"), Int, broker, false, "Least share.assignment.interval.ms a group may set."),
    key!("group.share.max.assignment.interval.ms", Some("15000"), Int, broker, false, "Most share.assignment.interval.ms a group may set."),
    key!("group.share.assignor.offload.enable", Some("true"), Boolean, broker, false, "Kafka's assignor offload (kept; Sluice assigns inline)."),
    key!("group.streams.session.timeout.ms", Some("45000"), Int, broker, false, "Session timeout of streams-group members."),
    key!("group.streams.heartbeat.interval.ms", Some("5000"), Int, broker, false, "Heartbeat interval given to streams-group members."),
    key!("group.streams.min.session.timeout.ms", Some("45000"), Int, broker, false, "Least streams.session.timeout.ms a group may set."),
    key!("group.streams.max.session.timeout.ms", Some("60000"), Int, broker, false, "Most streams.session.timeout.ms a group may set."),
    key!("group.streams.min.heartbeat.interval.ms", Some("5000"), Int, broker, false, "Least streams.heartbeat.interval.ms a group may set."),
    key!("group.streams.max.heartbeat.interval.ms", Some("15000"), Int, broker, false, "Most streams.heartbeat.interval.ms a group may set."),
    key!("group.streams.num.standby.replicas", Some("0"), Int, broker, false, "Standby replicas of each streams task."),
    key!("group.streams.max.size", Some("2147483647"), Int, broker, false, "Most members a streams group may have."),
    key!("group.streams.max.standby.replicas", Some("2"), Int, broker, false, "Most streams.num.standby.replicas a group may set."),
    key!("group.streams.initial.rebalance.delay.ms", Some("3000"), Int, broker, false, "Delay of a new streams group's first assignment."),
    key!("group.streams.assignment.interval.ms", Some("1000"), Int, broker, false, "Pause between a streams group's assignment runs."),
    key!("group.streams.min.assignment.interval.ms", Some("0"), Int, broker, false, "Least streams.assignment.interval.ms a group may set."),
    key!("group.streams.max.assignment.interval.ms", Some("15000"), Int, broker, false, "Most streams.assignment.interval.ms a group may set."),
    key!("group.streams.assignor.offload.enable", Some("true"), Boolean, broker, false, "Kafka's assignor offload for streams groups."),
    key!("group.streams.task.offset.interval.ms", Some("60000"), Int, broker, false, "How often streams members report task offsets."),
    key!("group.streams.min.task.offset.interval.ms", Some("15000"), Int, broker, false, "Least streams.task.offset.interval.ms a group may set."),
    key!("group.streams.num.warmup.replicas", Some("2"), Int, broker, false, "Warm-up replicas of each streams task."),
    key!("group.streams.max.warmup.replicas", Some("20"), Int, broker, false, "Most streams.num.warmup.replicas a group may set."),
    key!("group.streams.rack.aware.assignment.tags", Some(""), List, broker, false, "Client tags streams standbys are spread over."),
    key!("group.streams.acceptable.recovery.lag", Some("10000"), Long, broker, false, "Lag under which a streams task counts as caught up."),
    key!("group.streams.assignors", Some("sticky"), List, broker, false, "Streams task assignors; the first is the default."),
];

/// What a group config's value must be, beyond its type (Kafka's validators).
#[derive(Debug, Clone, Copy)]
enum Rule {
    None,
    AtLeast(i64),
    OneOf(&'static [&'static str]),
    /// `latest`, `earliest` or `by_duration:<ISO-8601 duration>`.
    OffsetReset,
}

/// How the broker bounds a group config (checked after its type and rule).
#[derive(Debug, Clone, Copy)]
enum Bound {
    None,
    /// Between the values of two broker keys, inclusive.
    Range(&'static str, &'static str),
    Max(&'static str),
    Min(&'static str),
}

/// One group config key of Kafka 4.4's `GroupConfig`.
#[derive(Debug)]
pub struct GroupKeyDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// The broker key that supplies its default, if any.
    pub broker: Option<&'static str>,
    /// Kafka's default where there is no broker key.
    pub default: Option<&'static str>,
    /// Kafka's internal keys: settable, but not described.
    pub internal: bool,
    rule: Rule,
    bound: Bound,
    pub doc: &'static str,
}

macro_rules! gkey {
    ($name:literal, $kind:ident, $broker:expr, $default:expr, $internal:literal, $rule:expr, $bound:expr, $doc:literal) => {
        GroupKeyDef {
            name: $name,
            kind: ConfigType::$kind,
            broker: $broker,
            default: $default,
            internal: $internal,
            rule: $rule,
            bound: $bound,
            doc: $doc,
        }
    };
}

const ISOLATION: &[&str] = &["read_committed", "read_uncommitted"];
/// Group keys checked on their own (named here so they read as group keys, not broker keys).
const DLQ_TOPIC: &str = "errors.deadletterqueue.topic.name";
const STREAMS_ASSIGNOR: &str = "streams.assignor.name";

/// Every group config, in Kafka's order.
#[rustfmt::skip]
pub static GROUP_KEYS: &[GroupKeyDef] = &[
    gkey!("consumer.session.timeout.ms", Int, Some("group.consumer.session.timeout.ms"), None, false, Rule::AtLeast(1), Bound::Range("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"), "Session timeout of the group's consumer-protocol members."),
    gkey!("consumer.heartbeat.interval.ms", Int, Some("group.consumer.heartbeat.interval.ms"), None, false, Rule::AtLeast(1), Bound::Range("group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"), "Heartbeat interval given to the group's consumer-protocol members."),
    gkey!("consumer.assignment.interval.ms", Int, Some("group.consumer.assignment.interval.ms"), None, false, Rule::AtLeast(0), Bound::Range("group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms"), "Kafka's pause between assignment runs (kept; Sluice assigns at once)."),
    gkey!("consumer.assignor.offload.enable", Boolean, Some("group.consumer.assignor.offload.enable"), None, true, Rule::None, Bound::None, "Kafka's assignor offload (kept; Sluice assigns inline)."),
    gkey!("share.session.timeout.ms", Int, Some("group.share.session.timeout.ms"), None, false, Rule::AtLeast(1), Bound::Range("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"), "Session timeout of the share group's members."),
    gkey!("share.heartbeat.interval.ms", Int, Some("group.share.heartbeat.interval.ms"), None, false, Rule::AtLeast(1), Bound::Range("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"), "Heartbeat interval given to the share group's members."),
    gkey!("share.record.lock.duration.ms", Int, Some("group.share.record.lock.duration.ms"), None, false, Rule::AtLeast(1000), Bound::Range("group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"), "How long a member holds a record it acquired."),
    gkey!("share.delivery.count.limit", Int, Some("group.share.delivery.count.limit"), None, false, Rule::AtLeast(2), Bound::Range("group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"), "Deliveries of a record before it is archived."),
    gkey!("share.partition.max.record.locks", Int, Some("group.share.partition.max.record.locks"), None, false, Rule::AtLeast(100), Bound::Range("group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"), "Most in-flight records of one share partition."),
    gkey!("share.auto.offset.reset", String, None, Some("latest"), false, Rule::OffsetReset, Bound::None, "Where a new share partition starts: latest, earliest or by_duration:<ISO-8601 duration>."),
    gkey!("share.isolation.level", String, None, Some("read_uncommitted"), false, Rule::OneOf(ISOLATION), Bound::None, "read_committed: the group gets committed transactional records only."),
    gkey!("share.renew.acknowledge.enable", Boolean, None, Some("true"), false, Rule::None, Bound::None, "Whether members may RENEW acquisition locks (ShareFetch/ShareAcknowledge v2)."),
    gkey!("share.assignment.interval.ms", Int, Some("group.share.assignment.interval.ms"), None, false, Rule::AtLeast(0), Bound::Range("group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms"), "Kafka's pause between assignment runs (kept; Sluice assigns at once)."),
    gkey!("share.assignor.offload.enable", Boolean, Some("group.share.assignor.offload.enable"), None, true, Rule::None, Bound::None, "Kafka's assignor offload (kept; Sluice assigns inline)."),
    gkey!("streams.session.timeout.ms", Int, Some("group.streams.session.timeout.ms"), None, false, Rule::AtLeast(1), Bound::Range("group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"), "Session timeout of the streams group's members."),
    gkey!("streams.heartbeat.interval.ms", Int, Some("group.streams.heartbeat.interval.ms"), None, false, Rule::AtLeast(1), Bound::Range("group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"), "Heartbeat interval given to the streams group's members."),
    gkey!("streams.num.standby.replicas", Int, Some("group.streams.num.standby.replicas"), None, false, Rule::AtLeast(0), Bound::Max("group.streams.max.standby.replicas"), "Standby replicas of each streams task."),
    gkey!("streams.initial.rebalance.delay.ms", Int, Some("group.streams.initial.rebalance.delay.ms"), None, false, Rule::AtLeast(0), Bound::None, "Delay of the streams group's first assignment."),
    gkey!("streams.assignment.interval.ms", Int, Some("group.streams.assignment.interval.ms"), None, false, Rule::AtLeast(0), Bound::Range("group.streams.min.assignment.interval.ms", "group.streams.max.assignment.interval.ms"), "Pause between the streams group's assignment runs."),
    gkey!("streams.assignor.offload.enable", Boolean, Some("group.streams.assignor.offload.enable"), None, true, Rule::None, Bound::None, "Kafka's assignor offload for streams groups."),
    gkey!("streams.task.offset.interval.ms", Int, Some("group.streams.task.offset.interval.ms"), None, true, Rule::AtLeast(1), Bound::Min("group.streams.min.task.offset.interval.ms"), "How often streams members report task offsets."),
    gkey!("streams.num.warmup.replicas", Int, Some("group.streams.num.warmup.replicas"), None, true, Rule::AtLeast(0), Bound::Max("group.streams.max.warmup.replicas"), "Warm-up replicas of each streams task."),
    gkey!("streams.rack.aware.assignment.tags", List, Some("group.streams.rack.aware.assignment.tags"), None, false, Rule::None, Bound::None, "Client tags streams standbys are spread over."),
    gkey!("streams.acceptable.recovery.lag", Long, Some("group.streams.acceptable.recovery.lag"), None, true, Rule::AtLeast(0), Bound::None, "Lag under which a streams task counts as caught up."),
    gkey!("streams.assignor.name", String, Some("group.streams.assignors"), None, false, Rule::None, Bound::None, "The streams task assignor of the group (one of group.streams.assignors)."),
    gkey!("errors.deadletterqueue.topic.name", String, None, Some(""), false, Rule::None, Bound::None, "Dead-letter topic of the share group (KIP-1191; kept, not used by Sluice)."),
    gkey!("errors.deadletterqueue.copy.record.enable", Boolean, None, Some("false"), false, Rule::None, Bound::None, "Copy the record into the dead-letter topic (KIP-1191; kept, not used by Sluice)."),
];

/// Looks up a group config key.
pub fn group_key(name: &str) -> Option<&'static GroupKeyDef> {
    GROUP_KEYS.iter().find(|k| k.name == name)
}

/// A group key's value when the group does not set it, and where that comes from.
pub fn group_default(def: &GroupKeyDef, cfg: &BrokerConfig) -> Option<(String, super::Source)> {
    match def.broker {
        Some(b) => cfg.lookup(b),
        None => def.default.map(|d| (d.to_string(), super::Source::Default)),
    }
}

/// Checks a group's whole set of overrides as Kafka's `GroupConfig.validate` does: names,
/// then types and rules, then the broker's bounds, then session against heartbeat. The
/// error is Kafka's message (its code is INVALID_CONFIG).
pub fn validate_group_configs(new: &BTreeMap<String, String>, cfg: &BrokerConfig) -> Result<(), String> {
    if let Some(k) = new.keys().find(|k| group_key(k).is_none()) {
        return Err(format!("Unknown group config name: {k}"));
    }
    for (k, v) in new {
        check_value(group_key(k).expect("known"), v)?;
    }
    let int = |k: &str| new.get(k).and_then(|v| v.trim().parse::<i64>().ok());
    let bound = |k: &str| cfg.get_i64(k);
    for def in GROUP_KEYS {
        let Some(v) = int(def.name) else { continue };
        let name = def.name;
        match def.bound {
            Bound::Range(lo, hi) if v < bound(lo) || v > bound(hi) => {
                return Err(format!("{name} must be in the range {} to {} inclusive.", bound(lo), bound(hi)));
            }
            Bound::Max(hi) if v > bound(hi) => return Err(format!("{name} must be less than or equal to {}", bound(hi))),
            Bound::Min(lo) if v < bound(lo) => return Err(format!("{name} must be greater than or equal to {}", bound(lo))),
            _ => {}
        }
    }
    for kind in ["consumer", "share", "streams"] {
        let (s, h) = (format!("{kind}.session.timeout.ms"), format!("{kind}.heartbeat.interval.ms"));
        if int(&s).is_none() && int(&h).is_none() {
            continue;
        }
        let session = int(&s).unwrap_or_else(|| bound(&format!("group.{s}")));
        let heartbeat = int(&h).unwrap_or_else(|| bound(&format!("group.{h}")));
        if session <= heartbeat {
            return Err(format!("{s} must be greater than {h}"));
        }
    }
    if let Some(name) = new.get(DLQ_TOPIC).filter(|n| n.trim().starts_with("__")) {
        return Err(format!("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__' (got '{name}')"));
    }
    if let Some(name) = new.get(STREAMS_ASSIGNOR) {
        let known: Vec<String> = cfg.get("group.streams.assignors").split(',').map(|s| s.trim().to_string()).collect();
        if !known.iter().any(|a| a == name.trim()) {
            return Err(format!(
                "streams.assignor.name '{name}' is not a registered task assignor. Registered assignors are: [{}].",
                known.join(", ")
            ));
        }
    }
    Ok(())
}

/// The type and rule check of one value, with Kafka's `ConfigException` message.
fn check_value(def: &GroupKeyDef, value: &str) -> Result<(), String> {
    let v = value.trim();
    let bad = |why: String| format!("Invalid value {value} for configuration {}: {why}", def.name);
    let number = match def.kind {
        ConfigType::Int => Some(v.parse::<i32>().map(i64::from).map_err(|_| bad("Not a number of type INT".into()))?),
        ConfigType::Long => Some(v.parse::<i64>().map_err(|_| bad("Not a number of type LONG".into()))?),
        ConfigType::Boolean => {
            if !v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false") {
                return Err(bad("Expected value to be either true or false".into()));
            }
            None
        }
        _ => None,
    };
    match def.rule {
        Rule::AtLeast(min) if number.is_some_and(|n| n < min) => Err(bad(format!("Value must be at least {min}"))),
        Rule::OneOf(options) if !options.contains(&v) => Err(bad(format!("String must be one of: {}", options.join(", ")))),
        Rule::OffsetReset if OffsetReset::parse(v).is_none() => Err(bad(format!(
            "Invalid value `{value}` for configuration {}. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
            def.name
        ))),
        _ => Ok(()),
    }
}

/// The group config naming a streams group's rack tags; a group override, read from the
/// group's own settings rather than the broker's.
const STREAMS_RACK_TAGS: &str = "streams.rack.aware.assignment.tags";

/// A comma-separated list of client tag keys, as Kafka's `AssignmentConfigsImpl` parses it.
pub fn tag_list(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_string).collect()
}

/// Where a new share partition starts (`share.auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    Earliest,
    Latest,
    /// The first record at most this many milliseconds old.
    ByDuration(i64),
}

impl OffsetReset {
    /// Parses Kafka's values; None for anything else.
    pub fn parse(s: &str) -> Option<OffsetReset> {
        match s.trim() {
            "earliest" => Some(OffsetReset::Earliest),
            "latest" => Some(OffsetReset::Latest),
            other => other.strip_prefix("by_duration:").and_then(iso8601_duration_ms).map(OffsetReset::ByDuration),
        }
    }
}

/// Java's `Duration.parse` subset Kafka accepts here: `PnDTnHnMn.nS`, not negative.
fn iso8601_duration_ms(s: &str) -> Option<i64> {
    let rest = s.trim().strip_prefix('P').or_else(|| s.trim().strip_prefix('p'))?;
    let (days, time) = match rest.split_once(['T', 't']) {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let mut ms: f64 = 0.0;
    let mut any = false;
    if !days.is_empty() {
        ms += days.strip_suffix(['D', 'd'])?.parse::<u64>().ok()? as f64 * 86_400_000.0;
        any = true;
    }
    if let Some(mut t) = time {
        if t.is_empty() {
            return None;
        }
        for (unit, scale) in [('H', 3_600_000.0), ('M', 60_000.0), ('S', 1000.0)] {
            let lower = unit.to_ascii_lowercase();
            if let Some(i) = t.find([unit, lower]) {
                let n: f64 = t[..i].parse().ok().filter(|n: &f64| *n >= 0.0 && t[..i].chars().all(|c| c.is_ascii_digit() || c == '.'))?;
                if unit != 'S' && t[..i].contains('.') {
                    return None;
                }
                ms += n * scale;
                t = &t[i + 1..];
                any = true;
            }
        }
        if !t.is_empty() {
            return None;
        }
    }
    (any && ms <= i64::MAX as f64).then_some(ms as i64)
}

/// The values a group runs with: its overrides within the broker's current bounds (as
/// Kafka's `GroupConfig.evaluate` caps them), else the broker's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSettings {
    pub consumer_session_timeout_ms: i64,
    pub consumer_heartbeat_interval_ms: i32,
    pub streams_session_timeout_ms: i64,
    pub streams_heartbeat_interval_ms: i32,
    pub streams_num_standby_replicas: i32,
    pub streams_initial_rebalance_delay_ms: i32,
    pub streams_assignment_interval_ms: i32,
    pub streams_task_offset_interval_ms: i32,
    pub streams_acceptable_recovery_lag: i64,
    pub streams_rack_aware_assignment_tags: Vec<String>,
    pub share_session_timeout_ms: i64,
    pub share_heartbeat_interval_ms: i32,
    pub share_record_lock_duration_ms: i64,
    pub share_delivery_count_limit: i16,
    pub share_partition_max_record_locks: i64,
    pub share_auto_offset_reset: OffsetReset,
    pub share_read_committed: bool,
    pub share_renew_acknowledge_enable: bool,
}

impl GroupSettings {
    /// Resolves `overrides` (already validated) against the broker config.
    pub fn resolve(overrides: &BTreeMap<String, String>, cfg: &BrokerConfig) -> GroupSettings {
        let group_int = |key: &str| -> i64 {
            let def = group_key(key).expect("known group key");
            let base = cfg.get_i64(def.broker.expect("numeric group keys have a broker synonym"));
            let Some(v) = overrides.get(key).and_then(|v| v.trim().parse::<i64>().ok()) else { return base };
            match def.bound {
                Bound::Range(lo, hi) => v.clamp(cfg.get_i64(lo), cfg.get_i64(hi).max(cfg.get_i64(lo))),
                Bound::Max(hi) => v.min(cfg.get_i64(hi)),
                Bound::Min(lo) => v.max(cfg.get_i64(lo)),
                Bound::None => v,
            }
        };
        let text = |key: &str| overrides.get(key).map(|v| v.trim().to_string()).or_else(|| group_key(key)?.default.map(str::to_string));
        GroupSettings {
            consumer_session_timeout_ms: group_int("consumer.session.timeout.ms"),
            consumer_heartbeat_interval_ms: group_int("consumer.heartbeat.interval.ms").clamp(1, i32::MAX as i64) as i32,
            streams_session_timeout_ms: group_int("streams.session.timeout.ms"),
            streams_heartbeat_interval_ms: group_int("streams.heartbeat.interval.ms").clamp(1, i32::MAX as i64) as i32,
            streams_num_standby_replicas: group_int("streams.num.standby.replicas").clamp(0, i32::MAX as i64) as i32,
            streams_initial_rebalance_delay_ms: group_int("streams.initial.rebalance.delay.ms").clamp(0, i32::MAX as i64) as i32,
            streams_assignment_interval_ms: group_int("streams.assignment.interval.ms").clamp(0, i32::MAX as i64) as i32,
            streams_task_offset_interval_ms: group_int("streams.task.offset.interval.ms").clamp(1, i32::MAX as i64) as i32,
            streams_acceptable_recovery_lag: group_int("streams.acceptable.recovery.lag").max(0),
            streams_rack_aware_assignment_tags: tag_list(
                &overrides.get(STREAMS_RACK_TAGS).cloned().unwrap_or_else(|| cfg.get("group.streams.rack.aware.assignment.tags")),
            ),
            share_session_timeout_ms: group_int("share.session.timeout.ms"),
            share_heartbeat_interval_ms: group_int("share.heartbeat.interval.ms").clamp(1, i32::MAX as i64) as i32,
            share_record_lock_duration_ms: group_int("share.record.lock.duration.ms").max(1),
            share_delivery_count_limit: group_int("share.delivery.count.limit").clamp(1, i16::MAX as i64) as i16,
            share_partition_max_record_locks: group_int("share.partition.max.record.locks").max(1),
            share_auto_offset_reset: text("share.auto.offset.reset").and_then(|v| OffsetReset::parse(&v)).unwrap_or(OffsetReset::Latest),
            share_read_committed: text("share.isolation.level").as_deref() == Some("read_committed"),
            share_renew_acknowledge_enable: text("share.renew.acknowledge.enable").is_none_or(|v| !v.eq_ignore_ascii_case("false")),
        }
    }
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
