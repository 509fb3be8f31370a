//! ListConfigResources (KIP-1000, KIP-1142): the config resources a client may describe.
//!
//! v0 (ListClientMetricsResources) lists client-metrics resources only; v1 lists those of
//! the types asked for (all when none): topics, brokers, groups with group configs, and
//! client-metrics resources. Kafka also lists BROKER_LOGGER resources; this broker has no
//! logger configs to describe, so that type is refused as an unsupported one.

use std::collections::BTreeSet;

use kafka_protocol::messages::list_config_resources_response::ConfigResource;
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::error::Error;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const CLIENT_METRICS: i8 = 16;
const GROUP: i8 = 32;

/// The types v1 lists when the request names none.
const ALL_V1: [i8; 4] = [TOPIC, BROKER, CLIENT_METRICS, GROUP];

pub async fn handle(ctx: &Ctx<'_>, req: ListConfigResourcesRequest) -> ListConfigResourcesResponse {
    // Kafka: DESCRIBE_CONFIGS on the cluster, whatever the types.
    if let Err(e) = ctx.check_cluster(Operation::DescribeConfigs) {
        return ListConfigResourcesResponse::default().with_error_code(e.code());
    }
    let types: BTreeSet<i8> = match (ctx.version, req.resource_types.is_empty()) {
        (0, _) => [CLIENT_METRICS].into(),
        (_, true) => ALL_V1.into(),
        _ => req.resource_types.iter().copied().collect(),
    };
    if let Some(t) = types.iter().find(|t| !ALL_V1.contains(t)) {
        let e = Error::Unsupported(format!("config resource type {t} cannot be listed"));
        return ListConfigResourcesResponse::default().with_error_code(e.code());
    }
    let image = ctx.broker.cluster.image();
    let mut out = Vec::new();
    let mut add = |kind: i8, names: Vec<String>| {
        out.extend(names.into_iter().map(|n| ConfigResource::default().with_resource_name(sb(n)).with_resource_type(kind)));
    };
    for kind in types {
        match kind {
            TOPIC => add(TOPIC, image.topics.keys().cloned().collect()),
            BROKER => add(BROKER, image.brokers.keys().map(|id| id.to_string()).collect()),
            GROUP => add(GROUP, image.group_configs.keys().cloned().collect()),
            CLIENT_METRICS => add(CLIENT_METRICS, image.client_metrics.keys().cloned().collect()),
            _ => {}
        }
    }
    ListConfigResourcesResponse::default().with_config_resources(out)
}
