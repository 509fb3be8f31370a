//! The controller: the metadata quorum and, on its leader, the active controller that
//! decides topics, placement, broker liveness and partition leadership.
//!
//! Every decision is a batch of metadata records proposed to the quorum; nothing changes
//! until the batch commits. Decisions are made one at a time (`ops`), against the image
//! as it is after the previous decision was applied, so two can never contradict.

mod acls;
pub mod driver;
pub mod election;
mod features;
pub mod net;
pub mod quorum;
mod quotas;
pub mod raft_store;
pub mod registrations;
pub mod rpc;
pub mod sasl;
mod scram;
mod tokens;
mod topics;
pub mod voters;

#[cfg(test)]
mod quorum_tests;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::clock::now_ms;
use crate::config::{BrokerConfig, Settings};
use crate::error::{Error, Result};
use crate::metadata::image::Image;
use crate::metadata::records::{ElectionReason, Record};
use driver::Quorum;
use rpc::{Request, Response};

/// The active-controller logic of a voter.
pub struct Controller {
    pub quorum: Arc<Quorum>,
    config: RwLock<BrokerConfig>,
    /// Last heartbeat per broker (ms), as seen by this node while it leads.
    heartbeats: Mutex<HashMap<i32, i64>>,
    ops: tokio::sync::Mutex<()>,
    last_rebalance: Mutex<i64>,
    /// When expired delegation tokens were last looked for.
    last_token_sweep: Mutex<i64>,
    /// Records the first active controller writes along with the cluster id (a migrated
    /// single-broker `metadata.json`), and the file to retire once they are in the log.
    bootstrap: Mutex<Option<(Vec<Record>, std::path::PathBuf)>>,
    /// Records a new cluster starts with (`--add-scram` credentials), written with its id.
    formation: Mutex<Vec<Record>>,
    /// Held while a voter is added or removed: one change at a time.
    voter_ops: tokio::sync::Mutex<()>,
    /// Nodes that fetch the metadata without voting (brokers): their log end offset and
    /// when they last fetched (epoch ms), DescribeQuorum's observers.
    fetchers: Mutex<HashMap<i32, (u64, i64)>>,
}

impl Controller {
    pub fn new(quorum: Arc<Quorum>, config: BrokerConfig) -> Arc<Controller> {
        Arc::new(Controller {
            quorum,
            config: RwLock::new(config),
            heartbeats: Mutex::new(HashMap::new()),
            ops: tokio::sync::Mutex::new(()),
            last_rebalance: Mutex::new(now_ms()),
            last_token_sweep: Mutex::new(now_ms()),
            bootstrap: Mutex::new(None),
            formation: Mutex::new(Vec::new()),
            voter_ops: tokio::sync::Mutex::new(()),
            fetchers: Mutex::new(HashMap::new()),
        })
    }

    /// Has the first active controller write `records` (which must begin with the cluster
    /// id) instead of a fresh cluster id, then rename `file` to `*.migrated`.
    pub fn bootstrap_from(&self, records: Vec<Record>, file: std::path::PathBuf) {
        *self.bootstrap.lock() = Some((records, file));
    }

    /// Has the first active controller of a new cluster write `records` along with the
    /// cluster id, as `kafka-storage format --add-scram` seeds Kafka's bootstrap metadata
    /// (a `ClusterId` among them names the cluster). A cluster that already has an id
    /// ignores them.
    pub fn add_on_formation(&self, records: Vec<Record>) {
        self.formation.lock().extend(records);
    }

    /// The applied image, as of now.
    fn image(&self) -> Arc<Image> {
        self.quorum.image()
    }

    /// The broker config with the dynamic overrides of the image snapshot a caller already
    /// works on, so both agree on them.
    fn config_from(&self, img: &Image) -> BrokerConfig {
        let mut c = self.config.read().clone();
        c.dynamic_set = img.broker_configs.clone();
        c
    }

    /// The typed settings against `img`'s dynamic overrides. Values are validated when set,
    /// so a failure here means an override that slipped past validation: say so loudly and
    /// decide by the static (startup-checked) settings instead.
    fn settings_from(&self, img: &Image) -> Settings {
        Settings::from_config(&self.config_from(img)).unwrap_or_else(|e| {
            tracing::error!(error = %e, "a dynamic cluster config does not parse; the controller uses the static settings");
            // main.rs refuses to start on static settings that do not parse; Kafka's defaults always do.
            Settings::from_config(&self.config.read())
                .or_else(|_| Settings::from_config(&BrokerConfig::default()))
                .expect("Kafka's default settings parse")
        })
    }

    fn not_controller(&self) -> Response {
        Response::NotController { leader: self.quorum.status().leader_node() }
    }

    /// Answers one request; only the leader decides, others point at it.
    pub async fn handle(&self, req: Request) -> Response {
        if let Request::FetchMetadata { from, node } = req {
            // Observers fetch from the leader, as in Kafka, so it knows how far each one is.
            if !self.quorum.status().is_leader {
                return self.not_controller();
            }
            if let Some(node) = node {
                self.fetchers.lock().insert(node, (from.saturating_sub(1), now_ms()));
            }
            return self.fetch_metadata(from).await;
        }
        if let Request::DescribeQuorum = req {
            return if self.quorum.status().is_leader { Response::Quorum(self.quorum_info()) } else { self.not_controller() };
        }
        if !self.quorum.status().is_leader {
            return self.not_controller();
        }
        // A voter change waits for the new voter to catch up, so it does not hold up the
        // other decisions (heartbeats among them) meanwhile.
        let voter_change = match &req {
            Request::AddVoter { id, directory_id, endpoints, timeout_ms } => {
                Some(self.add_voter(*id, *directory_id, endpoints.clone(), *timeout_ms).await)
            }
            Request::RemoveVoter { id, directory_id } => Some(self.remove_voter(*id, *directory_id).await),
            _ => None,
        };
        if let Some(r) = voter_change {
            return match r {
                Ok(resp) => resp,
                Err(Error::NotController) => self.not_controller(),
                Err(e) => Response::Failed(e),
            };
        }
        let _turn = self.ops.lock().await;
        let r = match req {
            Request::Register { id, incarnation, host, port, rack, controller, endpoints, http } => {
                self.heartbeats.lock().insert(id, now_ms());
                // A restarted broker may have lost what it had not flushed: its old self
                // leaves the ISRs and gives up leadership before the new one registers.
                let restarted = self.image().brokers.get(&id).is_some_and(|b| b.incarnation != incarnation);
                let mut recs = if restarted { self.broker_gone_changes(id, ElectionReason::Clean) } else { Vec::new() };
                if restarted && !recs.is_empty() {
                    tracing::info!(broker_id = id, partitions = recs.len(), "broker restarted: moving its leadership and ISR places");
                }
                recs.push(Record::RegisterBroker { id, incarnation, host, port, rack, controller, endpoints, http });
                self.quorum.propose(recs).await.map(|epoch| Response::Registered { epoch })
            }
            Request::Heartbeat { id, epoch, applied, shutting_down } => self.heartbeat(id, epoch, applied, shutting_down).await,
            Request::UnregisterBroker { id } => self.unregister_broker(id).await,
            Request::RegisterController { id, incarnation, endpoints, features } => {
                self.register_controller(id, incarnation, endpoints, features).await
            }
            Request::UnregisterController { id } => self.unregister_controller(id).await,
            Request::UpdateVoter { id, directory_id, endpoints, kraft_min, kraft_max } => {
                self.update_voter(id, directory_id, endpoints, (kraft_min, kraft_max)).await
            }
            Request::OfflineReplicas { broker, epoch, partitions } => self.offline_replicas(broker, epoch, partitions).await,
            Request::UpdateFeatures { updates, validate_only } => self.update_features(updates, validate_only).await,
            Request::CreateTopics { topics, validate_only } => self.create_topics(topics, validate_only).await,
            Request::DeleteTopics { names } => self.delete_topics(names).await,
            Request::CreatePartitions { name, count, assignments, validate_only } => {
                self.create_partitions(&name, count, assignments, validate_only).await
            }
            Request::SetConfigs { target, configs } => self.set_configs(target, configs).await,
            Request::AlterPartition { broker, epoch, topic_id, index, leader_epoch, partition_epoch, isr } => {
                self.alter_partition(broker, epoch, topic_id, index, leader_epoch, partition_epoch, isr).await
            }
            Request::ElectLeaders { preferred, partitions } => self.elect_leaders(preferred, partitions).await,
            Request::AlterReassignments { items } => self.alter_reassignments(items).await,
            Request::CreateAcls { acls } => self.create_acls(acls).await,
            Request::DeleteAcls { filters } => self.delete_acls(filters).await,
            Request::AlterScram { deletions, upsertions } => self.alter_scram(deletions, upsertions).await,
            Request::AlterClientQuotas { alterations, validate_only } => self.alter_client_quotas(alterations, validate_only).await,
            Request::CreateToken { requester, owner, renewers, max_lifetime_ms } => {
                self.create_token(requester, owner, renewers, max_lifetime_ms).await
            }
            Request::RenewToken { requester, hmac, period_ms } => self.change_token(requester, hmac.0, period_ms, false).await,
            Request::ExpireToken { requester, hmac, period_ms } => self.change_token(requester, hmac.0, period_ms, true).await,
            Request::FetchMetadata { .. } | Request::DescribeQuorum | Request::AddVoter { .. } | Request::RemoveVoter { .. } => {
                unreachable!("answered above")
            }
        };
        match r {
            Ok(resp) => resp,
            Err(Error::NotController) => self.not_controller(),
            Err(e) => Response::Failed(e),
        }
    }

    /// The quorum with, as observers besides the learners, the nodes that fetched the
    /// metadata from this controller lately (Kafka lists every replica that fetches).
    fn quorum_info(&self) -> rpc::QuorumInfo {
        const OBSERVER_GONE_MS: i64 = 10_000;
        let mut info = self.quorum.info();
        let now = now_ms();
        let mut fetchers = self.fetchers.lock();
        fetchers.retain(|_, (_, at)| now - *at < OBSERVER_GONE_MS);
        for (id, (leo, at)) in fetchers.iter() {
            if info.voters.iter().chain(&info.observers).all(|(v, _)| v != id) {
                info.observers.push((*id, *leo));
                info.heard.push((*id, *at));
            }
        }
        info.observers.sort();
        info
    }

    async fn heartbeat(&self, id: i32, epoch: u64, applied: u64, shutting_down: bool) -> Result<Response> {
        let (registered, fenced) = {
            let img = self.image();
            match img.brokers.get(&id) {
                Some(b) if b.epoch == epoch => (true, b.fenced),
                _ => (false, true),
            }
        };
        if !registered {
            return Err(Error::StaleBrokerEpoch);
        }
        self.heartbeats.lock().insert(id, now_ms());
        if shutting_down {
            // Controlled shutdown: move leadership away first, then fence, in one batch.
            let mut recs = self.broker_gone_changes(id, ElectionReason::ControlledShutdown);
            if !fenced {
                recs.push(Record::FenceBroker { id, epoch });
            }
            if !recs.is_empty() {
                self.quorum.propose(recs).await?;
                tracing::info!(broker_id = id, epoch, "controlled shutdown: leadership moved, broker fenced");
            }
            return Ok(Response::Heartbeat { fenced: true, shutdown_ready: true });
        }
        if fenced && applied >= epoch {
            // The broker has caught up to its own registration: it may serve, and take
            // back leadership of partitions that were waiting for it.
            let mut recs = vec![Record::UnfenceBroker { id, epoch }];
            recs.extend(self.broker_back_changes(id));
            self.quorum.propose(recs).await?;
            tracing::info!(broker_id = id, epoch, "broker unfenced");
            return Ok(Response::Heartbeat { fenced: false, shutdown_ready: false });
        }
        Ok(Response::Heartbeat { fenced, shutdown_ready: false })
    }

    /// UnregisterBroker, as Kafka's controller does it: the broker leaves every ISR it is
    /// not the last member of and leads nothing, then its registration is removed. A broker
    /// that is still running finds its epoch stale at its next heartbeat and registers anew.
    async fn unregister_broker(&self, id: i32) -> Result<Response> {
        let Some(epoch) = self.image().brokers.get(&id).map(|b| b.epoch) else {
            return Err(Error::BrokerIdNotRegistered(id));
        };
        let mut recs = self.broker_gone_changes(id, ElectionReason::Clean);
        recs.push(Record::UnregisterBroker { id, epoch });
        let offset = self.quorum.propose(recs).await?;
        self.heartbeats.lock().remove(&id);
        tracing::info!(broker_id = id, epoch, "broker unregistered");
        Ok(Response::Done { offset })
    }

    /// A broker's replicas in a failed log dir: it leaves their ISRs (unless it is the last
    /// member) and leads none of them, as if it were gone for these partitions only.
    async fn offline_replicas(&self, broker: i32, epoch: u64, partitions: Vec<(Uuid, i32)>) -> Result<Response> {
        let recs = {
            let img = self.image();
            if img.brokers.get(&broker).is_none_or(|b| b.epoch != epoch) {
                return Err(Error::StaleBrokerEpoch);
            }
            let settings = self.settings_from(&img);
            let live = |b: i32| img.is_live(b);
            let mut out = Vec::new();
            for (id, index) in partitions {
                let Some(t) = img.topic_by_id(id) else { continue };
                let Some(p) = t.partitions.get(index as usize) else { continue };
                if let Some(c) = election::on_broker_gone(p, broker, &live, unclean_allowed(&settings, t)) {
                    let reason = c.reason(p, ElectionReason::Clean);
                    log_change(&t.name, index as usize, p, &c, reason);
                    out.push(Record::PartitionChange { topic_id: id, index, state: c.state, unclean: c.unclean, reason });
                }
            }
            out
        };
        let offset = if recs.is_empty() { 0 } else { self.quorum.propose(recs).await? };
        tracing::info!(broker_id = broker, "replicas in a failed log dir taken offline");
        Ok(Response::Done { offset })
    }

    /// Partition changes for a broker that is going away (fenced or shutting down), with
    /// `cause` as the reason of the elections it triggers.
    fn broker_gone_changes(&self, broker: i32, cause: ElectionReason) -> Vec<Record> {
        let img = self.image();
        let settings = self.settings_from(&img);
        let live = |b: i32| img.is_live(b);
        let mut out = Vec::new();
        for t in img.topics.values() {
            let unclean_ok = unclean_allowed(&settings, t);
            for (i, p) in t.partitions.iter().enumerate() {
                if let Some(c) = election::on_broker_gone(p, broker, &live, unclean_ok) {
                    let reason = c.reason(p, cause);
                    log_change(&t.name, i, p, &c, reason);
                    out.push(Record::PartitionChange { topic_id: t.id, index: i as i32, state: c.state, unclean: c.unclean, reason });
                }
            }
        }
        out
    }

    /// Partition changes for a broker that came back: offline partitions it can lead.
    fn broker_back_changes(&self, broker: i32) -> Vec<Record> {
        let img = self.image();
        let settings = self.settings_from(&img);
        let live = |b: i32| b == broker || img.is_live(b);
        let mut out = Vec::new();
        for t in img.topics.values() {
            let unclean_ok = unclean_allowed(&settings, t);
            for (i, p) in t.partitions.iter().enumerate() {
                if p.leader >= 0 || !p.replicas.contains(&broker) {
                    continue;
                }
                if let Some(c) = election::elect(p, p.isr.clone(), &live, unclean_ok) {
                    let reason = c.reason(p, ElectionReason::Clean);
                    log_change(&t.name, i, p, &c, reason);
                    out.push(Record::PartitionChange { topic_id: t.id, index: i as i32, state: c.state, unclean: c.unclean, reason });
                }
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    async fn alter_partition(
        &self,
        broker: i32,
        epoch: u64,
        topic_id: Uuid,
        index: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        isr: Vec<i32>,
    ) -> Result<Response> {
        let (change, reason) = {
            let img = self.image();
            if img.brokers.get(&broker).is_none_or(|b| b.epoch != epoch || b.fenced) {
                return Err(Error::StaleBrokerEpoch);
            }
            let t = img.topic_by_id(topic_id).ok_or(Error::UnknownTopicOrPartition)?;
            let cur = t.partitions.get(index as usize).ok_or(Error::UnknownTopicOrPartition)?;
            if cur.leader != broker || cur.leader_epoch != leader_epoch {
                return Err(Error::FencedLeaderEpoch(leader_epoch));
            }
            if cur.partition_epoch != partition_epoch {
                return Err(Error::InvalidUpdateVersion);
            }
            if !isr.contains(&broker) || isr.iter().any(|b| !cur.replicas.contains(b)) {
                return Err(Error::InvalidRequest(format!("ISR {isr:?} must hold the leader and only replicas")));
            }
            if let Some(b) = isr.iter().find(|b| !cur.isr.contains(b) && !img.is_live(**b)) {
                return Err(Error::IneligibleReplica(format!("broker {b} is fenced")));
            }
            let mut next = cur.clone();
            next.isr = isr;
            next.partition_epoch += 1;
            tracing::info!(topic = %t.name, partition = index, isr_before = ?cur.isr, isr_after = ?next.isr, leader = cur.leader, "ISR changed");
            let next = match election::complete_reassignment(&next, &|b| img.is_live(b)) {
                Some(done) => {
                    tracing::info!(topic = %t.name, partition = index, replicas = ?done.replicas, leader = done.leader, "reassignment completed");
                    done
                }
                None => next,
            };
            let reason = election::leader_moved(cur, &next, ElectionReason::Reassignment);
            (next, reason)
        };
        let change_record = Record::PartitionChange { topic_id, index, state: change.clone(), unclean: false, reason };
        let offset = self.quorum.propose(vec![change_record]).await?;
        Ok(Response::Partition { state: change, offset })
    }

    async fn elect_leaders(&self, preferred: bool, which: Option<Vec<(String, i32)>>) -> Result<Response> {
        let (recs, results) = {
            let img = self.image();
            let live = |b: i32| img.is_live(b);
            let all = which.is_none();
            let targets: Vec<(String, i32)> = match which {
                Some(v) => v,
                None => img.topics.values().flat_map(|t| (0..t.partitions.len() as i32).map(move |i| (t.name.clone(), i))).collect(),
            };
            let mut recs = Vec::new();
            let mut results = Vec::new();
            for (name, i) in targets {
                let r = img
                    .topics
                    .get(&name)
                    .and_then(|t| Some((t, t.partitions.get(i as usize)?)))
                    .ok_or(Error::UnknownTopicOrPartition)
                    .and_then(|(t, p)| {
                        let c = if preferred {
                            election::preferred(p, &live)?
                        } else if p.leader >= 0 {
                            return Err(Error::ElectionNotNeeded);
                        } else {
                            election::elect(p, p.isr.clone(), &live, true).ok_or(Error::EligibleLeadersNotAvailable)?
                        };
                        let reason = c.reason(p, if preferred { ElectionReason::Preferred } else { ElectionReason::Clean });
                        log_change(&t.name, i as usize, p, &c, reason);
                        recs.push(Record::PartitionChange { topic_id: t.id, index: i, state: c.state, unclean: c.unclean, reason });
                        Ok(())
                    });
                // Asked for every partition, Kafka leaves out those that needed no
                // election; asked for some, it answers each one.
                if !(all && matches!(r, Err(Error::ElectionNotNeeded))) {
                    results.push((name, i, r));
                }
            }
            (recs, results)
        };
        let offset = if recs.is_empty() { self.image().offset } else { self.quorum.propose(recs).await? };
        Ok(Response::Elected { results, offset })
    }

    async fn alter_reassignments(&self, items: Vec<(String, i32, Option<Vec<i32>>)>) -> Result<Response> {
        let mut recs = Vec::new();
        let results: Vec<Result<()>> = {
            let img = self.image();
            let live = |b: i32| img.is_live(b);
            items
                .iter()
                .map(|(name, index, target)| {
                    let t = img.topics.get(name).ok_or(Error::UnknownTopicOrPartition)?;
                    let cur = t.partitions.get(*index as usize).ok_or(Error::UnknownTopicOrPartition)?;
                    if let Some(target) = target {
                        topics::check_replicas(&img, target)?;
                    }
                    let next = election::reassign(cur, target.as_deref(), &live)?;
                    tracing::info!(topic = %name, partition = index, from = ?cur.replicas, to = ?next.replicas, adding = ?next.adding, removing = ?next.removing, "reassignment");
                    let reason = election::leader_moved(cur, &next, ElectionReason::Reassignment);
                    recs.push(Record::PartitionChange { topic_id: t.id, index: *index, state: next, unclean: false, reason });
                    Ok(())
                })
                .collect()
        };
        let offset = if recs.is_empty() { self.image().offset } else { self.quorum.propose(recs).await? };
        Ok(Response::Each { results, offset })
    }

    /// The leader's periodic duties: fence silent brokers, rebalance leadership.
    pub async fn tick(&self) {
        if !self.quorum.status().is_leader {
            self.heartbeats.lock().clear();
            return;
        }
        let _turn = self.ops.lock().await;
        if self.image().cluster_id.is_none() {
            // The first active controller names the cluster; a later duplicate is ignored on apply.
            let boot = self.bootstrap.lock().clone();
            let formation = self.formation.lock().clone();
            let mut records = match &boot {
                Some((recs, _)) => recs.clone(),
                // The id a formation names (`--cluster-id`, as `kafka-storage format -t`).
                None if formation.iter().any(|r| matches!(r, Record::ClusterId { .. })) => vec![],
                None => vec![Record::ClusterId { id: crate::metadata::new_cluster_id() }],
            };
            records.extend(formation);
            match self.quorum.propose(records).await {
                Ok(_) => match boot {
                    Some((recs, file)) => {
                        let topics = recs.iter().filter(|r| matches!(r, Record::Topic { .. })).count();
                        tracing::info!(topics, file = %file.display(), "migrated single-broker metadata into the metadata log");
                        let _ = std::fs::rename(&file, file.with_extension("json.migrated"));
                        *self.bootstrap.lock() = None;
                    }
                    None => tracing::info!(cluster = ?self.image().cluster_id, "new cluster"),
                },
                Err(e) => tracing::debug!(error = %e, "could not name the cluster yet"),
            }
            return;
        }
        self.bootstrap_features().await;
        let now = now_ms();
        let settings = self.settings_from(&self.image());
        let timeout = settings.broker_session_timeout_ms;
        let expired: Vec<(i32, u64)> = {
            let img = self.image();
            let mut hb = self.heartbeats.lock();
            img.brokers
                .values()
                .filter(|b| !b.fenced)
                // A new controller gives every broker a full session before judging it.
                .filter(|b| now - *hb.entry(b.id).or_insert(now) > timeout)
                .map(|b| (b.id, b.epoch))
                .collect()
        };
        for (id, epoch) in expired {
            let mut recs = vec![Record::FenceBroker { id, epoch }];
            recs.extend(self.broker_gone_changes(id, ElectionReason::Clean));
            tracing::warn!(broker_id = id, epoch, timeout_ms = timeout, "broker missed its session timeout: fencing it");
            if let Err(e) = self.quorum.propose(recs).await {
                tracing::warn!(broker_id = id, error = %e, "could not fence broker");
                return;
            }
        }
        self.sweep_tokens(now).await;
        // Kafka's NoOpRecord: an idle log still gets a stamped batch now and then, so each
        // node's metadata lag measures how far behind it is, not how quiet the cluster is.
        if driver::noop_due(now_ms(), self.quorum.last_proposal_ms(), settings.metadata_max_idle_interval_ms) {
            if let Err(e) = self.quorum.propose(Vec::new()).await {
                tracing::debug!(error = %e, "no-op metadata batch not written");
            }
        }
        let interval = settings.leader_imbalance_check_interval_ms;
        if settings.auto_leader_rebalance_enable && now - *self.last_rebalance.lock() >= interval {
            *self.last_rebalance.lock() = now;
            let recs = self.rebalance_changes(settings.leader_imbalance_per_broker_percentage);
            if !recs.is_empty() {
                tracing::info!(partitions = recs.len(), "leader imbalance above threshold: electing preferred leaders");
                let _ = self.quorum.propose(recs).await;
            }
        }
    }

    /// Preferred-leader elections for brokers whose imbalance ratio exceeds `percent`.
    fn rebalance_changes(&self, percent: i64) -> Vec<Record> {
        let img = self.image();
        let live = |b: i32| img.is_live(b);
        let mut preferred_count: HashMap<i32, (u32, u32)> = HashMap::new();
        for t in img.topics.values() {
            for p in &t.partitions {
                if let Some(&pref) = p.replicas.first() {
                    let e = preferred_count.entry(pref).or_default();
                    e.0 += 1;
                    if p.leader != pref {
                        e.1 += 1;
                    }
                }
            }
        }
        let mut out = Vec::new();
        for t in img.topics.values() {
            for (i, p) in t.partitions.iter().enumerate() {
                let Some(&pref) = p.replicas.first() else { continue };
                let (total, off) = preferred_count[&pref];
                if (off as i64) * 100 <= percent * total as i64 {
                    continue;
                }
                if let Ok(c) = election::preferred(p, &live) {
                    let reason = c.reason(p, ElectionReason::Preferred);
                    out.push(Record::PartitionChange { topic_id: t.id, index: i as i32, state: c.state, unclean: false, reason });
                }
            }
        }
        out
    }

    async fn fetch_metadata(&self, from: u64) -> Response {
        // Long poll: wait briefly for something new, so followers learn changes at once.
        let mut applied = self.quorum.applied();
        let _ = tokio::time::timeout(std::time::Duration::from_millis(500), applied.wait_for(|&a| a >= from)).await;
        match self.quorum.store().committed_since(from, 512) {
            Some(entries) => Response::Batches {
                batches: entries
                    .into_iter()
                    .filter_map(|e| {
                        // A voter change is Raft's business: brokers see an empty batch there.
                        let b = if e.data.is_empty() || e.get_entry_type() != raft::eraftpb::EntryType::EntryNormal {
                            crate::metadata::records::RecordBatch::new(vec![])
                        } else {
                            crate::metadata::records::RecordBatch::decode(&e.data).ok()?
                        };
                        Some((e.index, b))
                    })
                    .collect(),
            },
            None => Response::Snapshot { image: self.image().to_snapshot() },
        }
    }
}

fn unclean_allowed(settings: &Settings, t: &crate::metadata::image::TopicImage) -> bool {
    t.configs.get("unclean.leader.election.enable").map_or(settings.unclean_leader_election_enable, |v| v == "true")
}

/// Logs an election and an ISR change with the fields of the journal's events.
fn log_change(
    topic: &str,
    index: usize,
    before: &crate::metadata::records::PartitionState,
    c: &election::Change,
    reason: Option<ElectionReason>,
) {
    let (previous_leader, leader, leader_epoch) = (before.leader, c.state.leader, c.state.leader_epoch);
    let reason = reason.map(ElectionReason::as_str);
    if c.unclean {
        tracing::warn!(
            topic,
            partition = index,
            previous_leader,
            leader,
            leader_epoch,
            reason,
            "unclean leader election: the new leader was not in the ISR; records it lacks are lost"
        );
    } else if before.leader != c.state.leader {
        tracing::info!(topic, partition = index, previous_leader, leader, leader_epoch, reason, "leader elected");
    }
    if before.isr != c.state.isr {
        tracing::info!(topic, partition = index, isr_before = ?before.isr, isr_after = ?c.state.isr, leader, "ISR changed");
    }
}
