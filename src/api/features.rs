//! UpdateFeatures (KIP-584, KIP-1022), forwarded to the active controller; ApiVersions
//! reports the levels it finalizes.

use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::controller::rpc::Request;
use crate::metadata::features::{FeatureUpdate, UpgradeType};

/// The updates a request asks for, a feature named twice counting once (the last, as
/// Kafka's map of updates keeps it). v0 knows only AllowDowngrade, which Kafka reads as a
/// safe downgrade.
fn updates(req: &UpdateFeaturesRequest, version: i16) -> Vec<FeatureUpdate> {
    let mut out: Vec<FeatureUpdate> = Vec::with_capacity(req.feature_updates.len());
    for u in &req.feature_updates {
        let upgrade_type = match version {
            0 if u.allow_downgrade => UpgradeType::SafeDowngrade,
            0 => UpgradeType::Upgrade,
            _ => UpgradeType::from_code(u.upgrade_type),
        };
        out.retain(|o| *o.feature != *u.feature);
        out.push(FeatureUpdate { feature: u.feature.to_string(), level: u.max_version_level, upgrade_type });
    }
    out
}

pub async fn update_features(ctx: &Ctx<'_>, req: UpdateFeaturesRequest) -> UpdateFeaturesResponse {
    let updates = updates(&req, ctx.version);
    let names: Vec<String> = updates.iter().map(|u| u.feature.clone()).collect();
    // Kafka: ALTER on the cluster, else the whole request fails.
    let result = match ctx.check_cluster(Operation::Alter) {
        Ok(()) => {
            let timeout = std::time::Duration::from_millis(req.timeout_ms.max(1) as u64);
            let validate_only = ctx.version >= 1 && req.validate_only;
            ctx.broker.submit(Request::UpdateFeatures { updates, validate_only }, Some(timeout)).await.map(|_| ())
        }
        Err(e) => Err(e),
    };
    // The crate's defaults are empty strings; Kafka sends null messages on success.
    let resp = UpdateFeaturesResponse::default().with_error_message(None);
    match result {
        // Kafka's `createWithErrors`: one result per feature on success (v0–1 only: v2
        // dropped them), none on failure, where the top-level error says why.
        Ok(()) if ctx.version < 2 => resp.with_results(
            names.into_iter().map(|n| UpdatableFeatureResult::default().with_feature(sb(n)).with_error_message(None)).collect(),
        ),
        Ok(()) => resp,
        Err(e) => resp.with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
    }
}
