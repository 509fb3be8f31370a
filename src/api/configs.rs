//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, the broker, groups
//! and `client-metrics` resources.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_configs_response::{DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::broker::{ConfigEntry, ConfigKind};
use crate::config::is_sensitive as sensitive;
use crate::error::{Error, Result};

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const CLIENT_METRICS: i8 = 16;
const GROUP: i8 = 32;

fn resource_kind(t: i8) -> Result<ConfigKind> {
    match t {
        TOPIC => Ok(ConfigKind::Topic),
        BROKER => Ok(ConfigKind::Broker),
        GROUP => Ok(ConfigKind::Group),
        CLIENT_METRICS => Ok(ConfigKind::ClientMetrics),
        other => Err(Error::InvalidRequest(format!("resource type {other} is not supported"))),
    }
}

/// Kafka: `op` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic or group, or on the
/// cluster for broker configs.
fn authorized(ctx: &Ctx<'_>, kind: ConfigKind, name: &str, op: Operation) -> Result<ConfigKind> {
    match kind {
        ConfigKind::Topic => ctx.check_topic(op, name)?,
        ConfigKind::Broker => ctx.check_cluster(op)?,
        ConfigKind::Group => ctx.check_group(op, name)?,
        // Kafka: client-metrics resources are the cluster's.
        ConfigKind::ClientMetrics => ctx.check_cluster(op)?,
    }
    Ok(kind)
}

fn entry(e: ConfigEntry, synonyms: bool, docs: bool, version: i16) -> DescribeConfigsResourceResult {
    let hidden = sensitive(&e.name);
    let r = DescribeConfigsResourceResult::default()
        .with_value(if hidden { None } else { e.value.map(sb) })
        .with_name(sb(e.name))
        .with_read_only(e.read_only)
        .with_config_source(e.source as i8)
        .with_is_sensitive(hidden);
    let r = if synonyms {
        r.with_synonyms(
            e.synonyms
                .into_iter()
                .map(|(n, v, s)| {
                    let v = if hidden { None } else { Some(sb(v)) };
                    DescribeConfigsSynonym::default().with_name(sb(n)).with_value(v).with_source(s as i8)
                })
                .collect(),
        )
    } else {
        r
    };
    if version >= 3 {
        r.with_config_type(e.kind as i8).with_documentation(docs.then(|| sb(e.doc)))
    } else {
        r
    }
}

pub async fn describe_configs(ctx: &Ctx<'_>, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let results = req
        .resources
        .into_iter()
        .map(|res| {
            let keys: Option<Vec<String>> = res.configuration_keys.map(|k| k.iter().map(|s| s.to_string()).collect());
            let name = res.resource_name.to_string();
            let found =
                resource_kind(res.resource_type).and_then(|t| authorized(ctx, t, &name, Operation::DescribeConfigs)).and_then(|kind| {
                    match kind {
                        ConfigKind::Topic => ctx.broker.describe_topic_configs(&name, keys.as_deref()),
                        ConfigKind::Broker => ctx.broker.describe_broker_configs(&name, keys.as_deref()),
                        ConfigKind::Group => ctx.broker.describe_group_configs(&name, keys.as_deref()),
                        ConfigKind::ClientMetrics => ctx.broker.describe_client_metrics_configs(&name, keys.as_deref()),
                    }
                });
            let r = DescribeConfigsResult::default().with_resource_type(res.resource_type).with_resource_name(res.resource_name);
            match found {
                Ok(entries) => r.with_configs(
                    entries.into_iter().map(|e| entry(e, req.include_synonyms, req.include_documentation, ctx.version)).collect(),
                ),
                Err(e) => r.with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
            }
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

pub async fn alter_configs(ctx: &Ctx<'_>, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let responses = req
        .resources
        .into_iter()
        .map(|res| {
            let name = res.resource_name.to_string();
            let result =
                resource_kind(res.resource_type).and_then(|t| authorized(ctx, t, &name, Operation::AlterConfigs)).and_then(|kind| {
                    let mut set = BTreeMap::new();
                    for c in &res.configs {
                        let v = c.value.as_ref().ok_or_else(|| Error::InvalidRequest(format!("null value for {}", &*c.name)))?;
                        set.insert(c.name.to_string(), v.to_string());
                    }
                    ctx.broker.alter_configs(kind, &name, set, req.validate_only)
                });
            let r = alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name);
            match result {
                Ok(()) => r,
                Err(e) => r.with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
            }
        })
        .collect();
    AlterConfigsResponse::default().with_responses(responses)
}

pub async fn incremental_alter_configs(ctx: &Ctx<'_>, req: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse {
    use crate::broker::AlterOp;
    let responses = req
        .resources
        .into_iter()
        .map(|res| {
            let name = res.resource_name.to_string();
            let result =
                resource_kind(res.resource_type).and_then(|t| authorized(ctx, t, &name, Operation::AlterConfigs)).and_then(|kind| {
                    let mut ops = Vec::with_capacity(res.configs.len());
                    for c in &res.configs {
                        let op = AlterOp::from_code(c.config_operation)
                            .ok_or_else(|| Error::InvalidRequest(format!("unknown config operation {}", c.config_operation)))?;
                        ops.push((c.name.to_string(), op, c.value.as_ref().map(|v| v.to_string())));
                    }
                    ctx.broker.incremental_alter_configs(kind, &name, &ops, req.validate_only)
                });
            let r = incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name);
            match result {
                Ok(()) => r,
                Err(e) => r.with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
            }
        })
        .collect();
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}
