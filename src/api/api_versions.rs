//! ApiVersions: the list is built from the handler table, so nothing unbuilt is advertised.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::Encodable;

use super::{sb, Ctx, SUPPORTED};
use crate::error::Error;
use crate::metadata::features::{self, FEATURES};

const UNSUPPORTED_VERSION: i16 = 35;

fn api_list() -> Vec<ApiVersion> {
    SUPPORTED
        .iter()
        .map(|&(k, min, max)| ApiVersion::default().with_api_key(k as i16).with_min_version(min).with_max_version(max))
        .collect()
}

/// v5 (KIP-1242): a client that knows which cluster and node it means to reach sends both;
/// a node of another cluster, or another node id at that address, answers
/// REBOOTSTRAP_REQUIRED (still with its API list, as every ApiVersions error does) so the
/// client drops its stale metadata. A request that leaves either out is not checked.
fn rebootstrap_needed(ctx: &Ctx<'_>, req: &ApiVersionsRequest) -> bool {
    match (&req.cluster_id, req.node_id) {
        (Some(cluster), node) if ctx.version >= 5 && node >= 0 => {
            **cluster != *ctx.broker.cluster_id || node != ctx.broker.identity.node_id
        }
        _ => false,
    }
}

pub async fn handle(ctx: &Ctx<'_>, req: ApiVersionsRequest) -> ApiVersionsResponse {
    let resp = ApiVersionsResponse::default().with_error_code(0).with_api_keys(api_list());
    if rebootstrap_needed(ctx, &req) {
        return resp.with_error_code(Error::RebootstrapRequired.code());
    }
    if ctx.version < 3 {
        return resp;
    }
    let image = ctx.broker.cluster.image();
    let supported =
        FEATURES.iter().map(|d| SupportedFeatureKey::default().with_name(sb(d.name)).with_min_version(d.min).with_max_version(d.max));
    // Kafka reports a finalized level as min = max = the level.
    let finalized = features::finalized(&image.features).into_iter().map(|(name, level)| {
        FinalizedFeatureKey::default().with_name(sb(name)).with_min_version_level(level).with_max_version_level(level)
    });
    resp.with_supported_features(supported.collect())
        .with_finalized_features_epoch(image.features_epoch as i64)
        .with_finalized_features(finalized.collect())
}

/// A complete v0 response frame with UNSUPPORTED_VERSION, for a version we don't know.
pub fn unsupported_version_frame(correlation_id: i32) -> BytesMut {
    let body = ApiVersionsResponse::default().with_error_code(UNSUPPORTED_VERSION).with_api_keys(api_list());
    let mut out = BytesMut::new();
    out.put_i32(0);
    out.put_i32(correlation_id);
    body.encode(&mut out, 0).expect("v0 ApiVersions always encodes");
    let len = (out.len() - 4) as i32;
    out[0..4].copy_from_slice(&len.to_be_bytes());
    out
}
