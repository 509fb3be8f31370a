//! ApiVersions: the list is built from the handler table, so nothing unbuilt is advertised.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::Encodable;

use super::{sb, Ctx, SUPPORTED};
use crate::error::Error;

const UNSUPPORTED_VERSION: i16 = 35;

fn api_list() -> Vec<ApiVersion> {
    SUPPORTED
        .iter()
        .map(|&(k, min, max)| ApiVersion::default().with_api_key(k as i16).with_min_version(min).with_max_version(max))
        .collect()
}

/// Feature levels this broker supports and has finalized: transactions v2 (KIP-890).
const TRANSACTION_VERSION: i16 = 2;

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
    resp.with_supported_features(vec![SupportedFeatureKey::default()
        .with_name(sb("transaction.version"))
        .with_min_version(0)
        .with_max_version(TRANSACTION_VERSION)])
        .with_finalized_features_epoch(1)
        .with_finalized_features(vec![FinalizedFeatureKey::default()
            .with_name(sb("transaction.version"))
            .with_min_version_level(TRANSACTION_VERSION)
            .with_max_version_level(TRANSACTION_VERSION)])
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
