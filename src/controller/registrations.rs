//! Controller registrations (KIP-919) and their removal (KIP-1312), and UpdateRaftVoter
//! (KIP-853), on the active controller; and the loop every controller runs to keep its
//! own registration and voter endpoints current.
//!
//! Every controller, voter or not, registers its controller endpoints and the feature
//! levels it supports, as Kafka's `ControllerRegistrationManager` does; UpdateFeatures
//! then refuses a level some registered controller cannot run. UnregisterController
//! removes a registration (a controller taken out of the cluster, whose stale support
//! range would otherwise block upgrades); a controller that still runs registers again,
//! as Kafka's does. A voter whose controller listener differs from the endpoints the log
//! recorded for it sends UpdateRaftVoter, so the others reach it where it listens now.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::rpc::{Request, Response};
use super::Controller;
use crate::auth::client::Login;
use crate::error::{Error, Result};
use crate::metadata::features::{finalized, FEATURES, KRAFT_VERSION, METADATA_VERSION};
use crate::metadata::image::Image;
use crate::metadata::records::Record;
use crate::metadata::voters::VoterEndpoint;
use crate::transport::Dialer;

/// `MetadataVersion.IBP_4_4_IV2`: the first level with UnregisterControllerRecord.
const MV_CONTROLLER_UNREGISTRATION: i16 = 33;

/// The (min, max) level of every feature this build supports, as a registration carries it.
pub fn supported_features() -> BTreeMap<String, (i16, i16)> {
    FEATURES.iter().map(|d| (d.name.to_string(), (d.min, d.max))).collect()
}

/// Why UnregisterController of `id` is refused, as Kafka's `QuorumController` and
/// `ClusterControlManager.unregisterController` check it, `active` being this controller.
pub fn check_unregister(img: &Image, active: i32, id: i32) -> Result<()> {
    let mv = finalized(&img.features).get(METADATA_VERSION).copied().unwrap_or(0);
    if mv < MV_CONTROLLER_UNREGISTRATION {
        return Err(Error::Unsupported("The current MetadataVersion is too old to support controller unregistration.".into()));
    }
    if id == active {
        return Err(Error::InvalidRequest("Controller cannot unregister itself while it is active.".into()));
    }
    if !img.controllers.contains_key(&id) {
        return Err(Error::ControllerIdNotRegistered(format!("Controller ID {id} is not currently registered.")));
    }
    Ok(())
}

/// Why a registered controller other than `me` cannot run `feature` at `level`, if one
/// cannot (Kafka's `FeatureControlManager.reasonNotSupported` over the registrations).
pub fn unsupported_by_controllers(img: &Image, me: i32, feature: &str, level: i16) -> Option<String> {
    img.controllers.values().filter(|c| c.id != me).find_map(|c| {
        let ok = match c.features.get(feature) {
            Some((min, max)) => (*min..=*max).contains(&level),
            None => level == 0,
        };
        (!ok).then(|| format!("Controller {} does not support {feature} level {level}", c.id))
    })
}

/// Why UpdateRaftVoter is refused (Kafka's `UpdateVoterHandler`); `listener` is the
/// default controller listener, which the voter must still listen on.
pub fn check_update(img: &Image, id: i32, dir: Uuid, endpoints: &[VoterEndpoint], range: (i16, i16), listener: &str) -> Result<()> {
    let kraft = finalized(&img.features).get(KRAFT_VERSION).copied().unwrap_or(0);
    if kraft < 1 {
        return Err(Error::Unsupported(format!("Cluster doesn't support changing the voters because the {KRAFT_VERSION} feature is {kraft}")));
    }
    if !(range.0..=range.1).contains(&kraft) {
        return Err(Error::InvalidRequest(format!("{KRAFT_VERSION} {kraft} is outside the voter's supported range {}-{}", range.0, range.1)));
    }
    if !endpoints.iter().any(|e| e.name == listener) {
        return Err(Error::InvalidRequest(format!("The voter's endpoints do not include the default listener {listener}")));
    }
    if !img.voters.get(&id).is_some_and(|v| v.directory_id == dir) {
        return Err(Error::VoterNotFound(format!("Voter {id} with directory id {} is not in the set of voters", crate::metadata::kafka_uuid(dir))));
    }
    Ok(())
}

impl Controller {
    pub(super) async fn register_controller(
        &self,
        id: i32,
        incarnation: Uuid,
        endpoints: Vec<VoterEndpoint>,
        features: BTreeMap<String, (i16, i16)>,
    ) -> Result<Response> {
        let img = self.image();
        if img.controllers.get(&id).is_some_and(|c| c.incarnation == incarnation && c.endpoints == endpoints && c.features == features) {
            return Ok(Response::Done { offset: img.offset });
        }
        let offset = self.quorum.propose(vec![Record::RegisterController { id, incarnation, endpoints, features }]).await?;
        tracing::info!(controller_id = id, %incarnation, "controller registered");
        Ok(Response::Done { offset })
    }

    pub(super) async fn unregister_controller(&self, id: i32) -> Result<Response> {
        let active = self.quorum.status().leader_node().unwrap_or(-1);
        check_unregister(&self.image(), active, id)?;
        let offset = self.quorum.propose(vec![Record::UnregisterController { id }]).await?;
        tracing::info!(controller_id = id, "controller unregistered");
        Ok(Response::Done { offset })
    }

    /// UpdateRaftVoter: answered once the change is in the log, as Kafka answers once the
    /// VotersRecord is appended.
    pub(super) async fn update_voter(&self, id: i32, dir: Uuid, endpoints: Vec<VoterEndpoint>, range: (i16, i16)) -> Result<Response> {
        let Ok(_one_at_a_time) = self.voter_ops.try_lock() else { return Err(super::voters::pending()) };
        if self.quorum.status().voter_change_pending {
            return Err(super::voters::pending());
        }
        let listener = self.config.read().get("controller.listener.names").split(',').next().unwrap_or("CONTROLLER").trim().to_string();
        check_update(&self.image(), id, dir, &endpoints, range, &listener)?;
        let shown: Vec<String> = endpoints.iter().map(|e| format!("{}://{}", e.name, e.address())).collect();
        let offset = self.quorum.propose(vec![Record::VoterEndpoints { id, directory_id: dir, endpoints }]).await?;
        tracing::info!(voter = id, endpoints = ?shown, "voter endpoints updated");
        Ok(Response::Done { offset })
    }
}

/// How a controller reaches the active controller: its dialer and login, and the
/// configured voters' addresses (voters added since are reached where the log says).
pub struct LeaderLink {
    pub dialer: Dialer,
    pub login: Option<Arc<Login>>,
    pub voters: BTreeMap<i32, String>,
}

impl LeaderLink {
    async fn call(&self, c: &Controller, me: i32, req: &Request) -> Result<Response> {
        if c.quorum.status().is_leader {
            return Ok(c.handle(req.clone()).await);
        }
        let img = c.quorum.image();
        let address = |id: i32| {
            img.voters.get(&id).and_then(|v| v.endpoints.first()).map(|e| e.address()).or_else(|| self.voters.get(&id).cloned())
        };
        let mut targets: Vec<i32> = c.quorum.status().leader_node().into_iter().collect();
        targets.extend(self.voters.keys().chain(img.voters.keys()).copied().filter(|v| *v != me));
        for t in targets {
            let Some(addr) = address(t) else { continue };
            match super::net::call(&self.dialer, self.login.as_deref(), &addr, me, req, Duration::from_secs(5)).await {
                Ok(Response::NotController { .. }) | Err(_) => continue,
                Ok(r) => return Ok(r),
            }
        }
        Err(Error::NotController)
    }
}

/// Keeps this controller registered (again after an UnregisterController) and, while it
/// votes, its voter endpoints current, until `shutdown`.
pub async fn run(
    c: Arc<Controller>,
    me: i32,
    directory_id: Uuid,
    endpoints: Vec<VoterEndpoint>,
    link: LeaderLink,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let incarnation = Uuid::new_v4();
    let features = supported_features();
    let mut applied = c.quorum.applied();
    loop {
        let img = c.quorum.image();
        if img.cluster_id.is_some() {
            let mine = img.controllers.get(&me);
            if !mine.is_some_and(|r| r.incarnation == incarnation && r.endpoints == endpoints) {
                let req = Request::RegisterController { id: me, incarnation, endpoints: endpoints.clone(), features: features.clone() };
                match link.call(&c, me, &req).await {
                    Ok(Response::Done { .. }) => {}
                    other => tracing::debug!(result = ?other, "controller registration not accepted yet"),
                }
            }
            let recorded = img.voters.get(&me).filter(|v| v.directory_id == directory_id);
            let votes = c.quorum.status().voters.contains(&super::quorum::raft_id(me));
            if votes && recorded.is_some_and(|v| v.endpoints != endpoints) {
                let (min, max) = FEATURES.iter().find(|d| d.name == KRAFT_VERSION).map_or((0, 0), |d| (d.min, d.max));
                let req = Request::UpdateVoter { id: me, directory_id, endpoints: endpoints.clone(), kraft_min: min, kraft_max: max };
                match link.call(&c, me, &req).await {
                    Ok(Response::Done { .. }) => tracing::info!("sent UpdateRaftVoter: the voter set has this controller's new endpoints"),
                    other => tracing::debug!(result = ?other, "UpdateRaftVoter not accepted yet"),
                }
            }
        }
        tokio::select! {
            _ = applied.changed() => tokio::time::sleep(Duration::from_millis(200)).await,
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = shutdown.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::image::ControllerInfo;
    use crate::metadata::voters::VoterInfo;

    fn ep(port: u16) -> Vec<VoterEndpoint> {
        vec![VoterEndpoint { name: "CONTROLLER".into(), host: "localhost".into(), port }]
    }

    fn registered(img: &mut Image, id: i32, features: BTreeMap<String, (i16, i16)>) {
        img.controllers.insert(id, ControllerInfo { id, incarnation: Uuid::new_v4(), endpoints: ep(9093), features });
    }

    #[test]
    fn unregistering_needs_4_4_iv2_a_registration_and_not_the_active_controller() {
        let mut img = Image::default();
        registered(&mut img, 2, supported_features());
        registered(&mut img, 1, supported_features());
        assert!(check_unregister(&img, 1, 2).is_ok(), "bootstrap levels are 4.4-IV2");
        assert!(matches!(check_unregister(&img, 1, 1), Err(Error::InvalidRequest(_))));
        let e = check_unregister(&img, 1, 7).unwrap_err();
        assert_eq!(e.code(), crate::error::CONTROLLER_ID_NOT_REGISTERED);
        img.features.insert(METADATA_VERSION.into(), 32);
        assert!(matches!(check_unregister(&img, 1, 2), Err(Error::Unsupported(_))));
    }

    #[test]
    fn a_registered_controller_that_lacks_a_level_blocks_it() {
        let mut img = Image::default();
        registered(&mut img, 1, supported_features());
        let mut old = supported_features();
        old.insert(METADATA_VERSION.into(), (7, 30));
        registered(&mut img, 2, old);
        assert!(unsupported_by_controllers(&img, 1, METADATA_VERSION, 33).unwrap().contains("Controller 2"));
        assert!(unsupported_by_controllers(&img, 1, METADATA_VERSION, 30).is_none());
        img.controllers.remove(&2);
        assert!(unsupported_by_controllers(&img, 1, METADATA_VERSION, 33).is_none(), "unregistered, it no longer counts");
    }

    #[test]
    fn update_voter_is_checked_as_kafkas_update_voter_handler_does() {
        let dir = Uuid::new_v4();
        let mut img = Image::default();
        img.voters.insert(4, VoterInfo { directory_id: dir, endpoints: ep(9093) });
        assert!(check_update(&img, 4, dir, &ep(9094), (0, 1), "CONTROLLER").is_ok());
        assert!(matches!(check_update(&img, 4, Uuid::new_v4(), &ep(9094), (0, 1), "CONTROLLER"), Err(Error::VoterNotFound(_))));
        assert!(matches!(check_update(&img, 5, dir, &ep(9094), (0, 1), "CONTROLLER"), Err(Error::VoterNotFound(_))));
        assert!(matches!(check_update(&img, 4, dir, &ep(9094), (0, 1), "OTHER"), Err(Error::InvalidRequest(_))));
        assert!(matches!(check_update(&img, 4, dir, &ep(9094), (0, 0), "CONTROLLER"), Err(Error::InvalidRequest(_))));
        img.features.insert(METADATA_VERSION.into(), 33);
        assert!(matches!(check_update(&img, 4, dir, &ep(9094), (0, 1), "CONTROLLER"), Err(Error::Unsupported(_))), "kraft.version 0");
    }
}
