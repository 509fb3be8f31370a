//! UpdateFeatures on the active controller, and the feature levels a cluster starts with.

use super::rpc::Response;
use super::Controller;
use crate::error::{Error, Result};
use crate::metadata::features::{self, FeatureUpdate};

impl Controller {
    /// Checks every update against the finalized levels as Kafka's controller does; writes
    /// them all in one batch unless `validate_only` or one is refused.
    pub(super) async fn update_features(&self, updates: Vec<FeatureUpdate>, validate_only: bool) -> Result<Response> {
        let (recs, offset) = {
            let img = self.image();
            let node = self.quorum.status().leader_node().unwrap_or(-1);
            let recs = features::plan_updates(&features::finalized(&img.features), &updates, node).map_err(Error::FeatureUpdateRefused)?;
            // Every registered controller must be able to run the new levels (KIP-919).
            if let Some(why) = updates.iter().find_map(|u| super::registrations::unsupported_by_controllers(&img, node, &u.feature, u.level)) {
                return Err(Error::FeatureUpdateRefused(why));
            }
            (recs, img.offset)
        };
        if validate_only || recs.is_empty() {
            return Ok(Response::Done { offset });
        }
        for (u, r) in updates.iter().zip(&recs) {
            tracing::info!(feature = %u.feature, level = u.level, upgrade_type = ?u.upgrade_type, record = ?r, "feature level changed");
        }
        let offset = self.quorum.propose(recs).await?;
        Ok(Response::Done { offset })
    }

    /// A cluster whose log has no feature records yet (new, or from before them) gets
    /// Kafka 4.4's bootstrap levels written once, as `kafka-storage format` would have.
    pub(super) async fn bootstrap_features(&self) {
        if self.image().features.contains_key(features::METADATA_VERSION) {
            return;
        }
        match self.quorum.propose(features::bootstrap_records()).await {
            Ok(_) => tracing::info!("finalized the bootstrap feature levels"),
            Err(e) => tracing::debug!(error = %e, "could not write the bootstrap feature levels yet"),
        }
    }
}
