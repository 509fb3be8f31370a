//! Creating, growing and deleting topics: decided by the controller, then applied here.

use std::sync::Arc;
use std::time::Duration;

use super::{Broker, CreateRequest, Topic};
use crate::clock::now_ms;
use crate::controller::rpc::{Request, Response};
use crate::error::{Error, Result};
use crate::metadata::image::TopicImage;
use crate::metadata::TopicRecord;
use crate::partition::Partition;

/// Kafka's file naming the topic id a partition directory belongs to.
const PARTITION_METADATA: &str = "partition.metadata";

impl Broker {
    pub(super) fn open_partition(&self, rec: &TopicRecord, index: i32, clean: bool) -> Result<Partition> {
        let dir = self.partition_dir(&rec.name, index)?;
        // A directory left by an older topic of the same name (deleted while this broker
        // was away) must not leak its records into the new one.
        let marker = dir.join(PARTITION_METADATA);
        let want = format!("version: 0\ntopic_id: {}\n", rec.id);
        if let Ok(found) = std::fs::read_to_string(&marker) {
            if found != want {
                tracing::warn!(topic = %rec.name, partition = index, "directory belongs to an older topic of the same name; removing it");
                std::fs::remove_dir_all(&dir)?;
            }
        }
        let (log_cfg, append_cfg) = self.partition_configs(&rec.configs);
        let p = Partition::open(&rec.name, index, rec.id, &dir, log_cfg, append_cfg, clean, now_ms())?;
        if !marker.exists() {
            std::fs::write(&marker, want)?;
        }
        Ok(p)
    }

    /// How long a metadata change may take before the client hears REQUEST_TIMED_OUT.
    fn controller_timeout(&self) -> Duration {
        Duration::from_millis(self.settings().controller_quorum_request_timeout_ms as u64)
    }

    /// Sends a decision to the controller and waits until this broker has applied it.
    pub async fn submit(&self, req: Request, timeout: Option<Duration>) -> Result<Response> {
        let timeout = timeout.unwrap_or_else(|| self.controller_timeout());
        let resp = self.cluster.call(req, timeout).await?;
        let offset = match &resp {
            Response::Done { offset }
            | Response::Topics { offset, .. }
            | Response::Each { offset, .. }
            | Response::Partition { offset, .. }
            | Response::Elected { offset, .. }
            | Response::AclsDeleted { offset, .. }
            | Response::Users { offset, .. }
            | Response::Token { offset, .. }
            | Response::TokenExpiry { offset, .. } => *offset,
            Response::Failed(e) => return Err(e.clone()),
            _ => 0,
        };
        self.cluster.wait_applied(offset, timeout).await?;
        self.reconcile(true);
        Ok(resp)
    }

    /// [`submit`](Self::submit) for callers that are not async (coordinators, auto-creation).
    /// Needs the multi-threaded runtime: the worker steps aside while it waits.
    pub fn submit_blocking(&self, req: Request) -> Result<Response> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| Error::CoordinatorNotAvailable)?;
        tokio::task::block_in_place(|| handle.block_on(self.submit(req, None)))
    }

    /// CreateTopics: the controller validates and places; results in request order.
    pub async fn create_topics(&self, reqs: Vec<CreateRequest>, validate_only: bool, timeout: Duration) -> Vec<Result<TopicImage>> {
        let n = reqs.len();
        match self.submit(Request::CreateTopics { topics: reqs, validate_only }, Some(timeout)).await {
            Ok(Response::Topics { results, .. }) => results,
            Ok(other) => vec![Err(Error::InvalidRequest(format!("unexpected controller answer {other:?}"))); n],
            Err(e) => vec![Err(e); n],
        }
    }

    /// Creates one topic from synchronous code.
    pub fn create_topic(&self, req: &CreateRequest) -> Result<Arc<Topic>> {
        match self.submit_blocking(Request::CreateTopics { topics: vec![req.clone()], validate_only: false })? {
            Response::Topics { mut results, .. } if results.len() == 1 => {
                let t = results.remove(0)?;
                self.topic(&t.name).ok_or(Error::UnknownTopicOrPartition)
            }
            other => Err(Error::InvalidRequest(format!("unexpected controller answer {other:?}"))),
        }
    }

    /// Creates a topic with broker defaults if `auto.create.topics.enable` allows.
    pub fn auto_create(&self, name: &str) -> Result<Arc<Topic>> {
        if let Some(t) = self.topic(name) {
            return Ok(t);
        }
        if !self.settings().auto_create_topics_enable {
            return Err(Error::UnknownTopicOrPartition);
        }
        let req = CreateRequest { name: name.to_string(), partitions: -1, replication_factor: -1, ..Default::default() };
        match self.create_topic(&req) {
            Err(Error::TopicAlreadyExists(_)) => self.topic(name).ok_or(Error::LeaderNotAvailable),
            other => other,
        }
    }

    /// DeleteTopics by name; results in request order.
    pub async fn delete_topics(&self, names: Vec<String>, timeout: Duration) -> Vec<Result<()>> {
        let n = names.len();
        match self.submit(Request::DeleteTopics { names }, Some(timeout)).await {
            Ok(Response::Each { results, .. }) => results,
            Ok(other) => vec![Err(Error::InvalidRequest(format!("unexpected controller answer {other:?}"))); n],
            Err(e) => vec![Err(e); n],
        }
    }

    /// Raises a topic's partition count to `count`.
    pub async fn create_partitions(
        &self,
        name: &str,
        count: i32,
        assignments: Option<Vec<Vec<i32>>>,
        validate_only: bool,
        timeout: Duration,
    ) -> Result<()> {
        let req = Request::CreatePartitions { name: name.to_string(), count, assignments, validate_only };
        self.submit(req, Some(timeout)).await.map(|_| ())
    }

    /// (node id, host, port) of the live leader of `topic`'s partition `p`.
    pub fn leader_endpoint(&self, topic: &Topic, p: i32) -> Result<(i32, String, i32)> {
        let leader = usize::try_from(p).ok().and_then(|i| topic.states.get(i)).map_or(-1, |s| s.leader);
        let img = self.cluster.image();
        img.live_broker(leader).map(|b| (b.id, b.host.clone(), b.port)).ok_or(Error::LeaderNotAvailable)
    }

    /// An internal compacted topic (`__consumer_offsets`, `__transaction_state`),
    /// created on first use as Kafka does.
    pub fn ensure_internal_topic(&self, name: &str, partitions: i32) -> Result<Arc<Topic>> {
        if let Some(t) = self.topic(name) {
            return Ok(t);
        }
        // The share coordinator's records are not keyed by latest value (a ShareUpdate
        // needs the snapshot before it): as in Kafka, its topic is never compacted or
        // expired, and the coordinator deletes what its snapshots made redundant.
        let policy: &[(&str, &str)] = if name == crate::metadata::names::SHARE_STATE_TOPIC {
            &[("cleanup.policy", "delete"), ("retention.ms", "-1"), ("retention.bytes", "-1")]
        } else {
            &[("cleanup.policy", "compact")]
        };
        let configs = policy.iter().chain(&[("segment.bytes", "104857600")]).map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let req = CreateRequest { name: name.into(), partitions, replication_factor: -1, assignments: vec![], configs };
        match self.create_topic(&req) {
            Ok(t) => Ok(t),
            Err(Error::TopicAlreadyExists(_)) => self.topic(name).ok_or(Error::CoordinatorNotAvailable),
            Err(e) => Err(e),
        }
    }
}

impl crate::partition::InternalPartitions for Broker {
    fn replicas(&self) -> &crate::partition::ReplicaManager {
        &self.replicas
    }

    fn ensure_internal_topic(&self, name: &str, partitions: i32) -> Result<Arc<Topic>> {
        Broker::ensure_internal_topic(self, name, partitions)
    }
}

impl crate::txn::TxnHost for Broker {
    fn node_id(&self) -> i32 {
        self.identity.node_id
    }

    fn allocate_producer_id(&self) -> Result<i64> {
        Ok(self.producer_ids.allocate()?)
    }

    fn leader_endpoint(&self, topic: &Topic, p: i32) -> Result<(i32, String, i32)> {
        Broker::leader_endpoint(self, topic, p)
    }

    fn broker_address(&self, id: i32) -> Option<String> {
        self.cluster.image().live_broker(id).map(|b| b.address())
    }

    fn peers(&self) -> &crate::cluster::peer::Peers {
        &self.peers
    }

    fn offsets_marker_written(&self, pid: i64, commit: bool) {
        self.groups.complete_txn(pid, commit);
    }
}

impl Broker {
    /// AlterUserScramCredentials: the controller validates and commits; results per user.
    pub async fn alter_scram_credentials(
        &self,
        deletions: Vec<(String, i8)>,
        upsertions: Vec<crate::controller::rpc::ScramUpsertion>,
    ) -> Result<Vec<(String, Result<()>)>> {
        match self.submit(Request::AlterScram { deletions, upsertions }, None).await? {
            Response::Users { results, .. } => Ok(results),
            other => Err(Error::InvalidRequest(format!("unexpected controller answer {other:?}"))),
        }
    }
}
