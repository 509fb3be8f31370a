//! The tool's view of a cluster: a bootstrap connection, connections to brokers by id as
//! Metadata names them, and routing to partition leaders and group coordinators, with a
//! metadata refresh and another try when leadership has moved.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_protocol::messages::metadata_response::MetadataResponse;
use kafka_protocol::messages::{BrokerId, TopicName};
use kafka_protocol::protocol::{Request, StrBytes};

use super::conn::Conn;
use super::props::Settings;
use super::CliError;

/// For `metadata`: no topics, brokers only.
pub const NO_TOPICS: &[String] = &[];

/// Metadata v12: topic ids in the answer, names in the request.
const METADATA_VERSION: i16 = 12;
/// How long routed requests keep retrying a moved leader or coordinator.
const RETRY_FOR: Duration = Duration::from_secs(15);
const BACKOFF: Duration = Duration::from_millis(100);

/// One partition as Metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    pub partition: i32,
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub offline_replicas: Vec<i32>,
    pub error_code: i16,
}

/// One topic as Metadata describes it.
#[derive(Debug, Clone)]
pub struct TopicInfo {
    pub name: String,
    pub topic_id: String,
    pub is_internal: bool,
    pub error_code: i16,
    pub partitions: Vec<PartitionInfo>,
}

/// A broker as Metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

/// A cluster as Metadata shows it.
#[derive(Debug, Clone)]
pub struct ClusterView {
    pub cluster_id: Option<String>,
    pub controller_id: i32,
    pub brokers: Vec<BrokerInfo>,
    pub topics: Vec<TopicInfo>,
}

impl ClusterView {
    /// The topic named `name`, if Metadata answered it without error.
    pub fn topic(&self, name: &str) -> Result<&TopicInfo, CliError> {
        let t = self.topics.iter().find(|t| t.name == name).ok_or_else(|| CliError::Kafka {
            code: 3,
            context: format!("topic {name}"),
            message: None,
        })?;
        CliError::check(t.error_code, || format!("topic {name}"), None)?;
        Ok(t)
    }
}

/// A client of one cluster.
pub struct Client {
    pub settings: Settings,
    bootstrap: Option<Conn>,
    conns: HashMap<i32, Conn>,
    brokers: BTreeMap<i32, String>,
}

fn view(r: MetadataResponse) -> ClusterView {
    ClusterView {
        cluster_id: r.cluster_id.map(|c| c.to_string()),
        controller_id: r.controller_id.0,
        brokers: r
            .brokers
            .iter()
            .map(|b| BrokerInfo {
                node_id: b.node_id.0,
                host: b.host.to_string(),
                port: b.port,
                rack: b.rack.as_ref().map(|r| r.to_string()),
            })
            .collect(),
        topics: r
            .topics
            .iter()
            .map(|t| TopicInfo {
                name: t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
                topic_id: t.topic_id.to_string(),
                is_internal: t.is_internal,
                error_code: t.error_code,
                partitions: {
                    let mut ps: Vec<PartitionInfo> = t
                        .partitions
                        .iter()
                        .map(|p| PartitionInfo {
                            partition: p.partition_index,
                            leader: p.leader_id.0,
                            leader_epoch: p.leader_epoch,
                            replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
                            isr: p.isr_nodes.iter().map(|b| b.0).collect(),
                            offline_replicas: p.offline_replicas.iter().map(|b| b.0).collect(),
                            error_code: p.error_code,
                        })
                        .collect();
                    ps.sort_by_key(|p| p.partition);
                    ps
                },
            })
            .collect(),
    }
}

impl Client {
    /// A client that has reached one of the bootstrap brokers.
    pub async fn connect(settings: Settings) -> Result<Client, CliError> {
        let mut last = None;
        for addr in &settings.bootstrap {
            match Conn::open(addr, &settings).await {
                Ok(c) => {
                    return Ok(Client { settings: settings.clone(), bootstrap: Some(c), conns: HashMap::new(), brokers: BTreeMap::new() })
                }
                // A refused login is not something another broker will fix.
                Err(e @ CliError::Kafka { .. }) | Err(e @ CliError::Usage(_)) => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| CliError::Usage("no bootstrap brokers".into())))
    }

    /// Any ready connection (the bootstrap one, else reopened).
    pub async fn any(&mut self) -> Result<&mut Conn, CliError> {
        if self.bootstrap.is_none() {
            let mut last = None;
            let mut addrs: Vec<String> = self.brokers.values().cloned().collect();
            addrs.extend(self.settings.bootstrap.iter().cloned());
            for addr in addrs {
                match Conn::open(&addr, &self.settings).await {
                    Ok(c) => {
                        self.bootstrap = Some(c);
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            if self.bootstrap.is_none() {
                return Err(last.unwrap_or_else(|| CliError::Io("no broker reachable".into())));
            }
        }
        Ok(self.bootstrap.as_mut().expect("set above"))
    }

    /// The connection to broker `id`, opened on first use from Metadata's address.
    pub async fn node(&mut self, id: i32) -> Result<&mut Conn, CliError> {
        if !self.conns.contains_key(&id) {
            if !self.brokers.contains_key(&id) {
                self.metadata(Some(NO_TOPICS)).await?;
            }
            let addr = self.brokers.get(&id).cloned().ok_or_else(|| CliError::Kafka {
                code: 8,
                context: format!("broker {id} is not in the cluster's metadata"),
                message: None,
            })?;
            let c = Conn::open(&addr, &self.settings).await?;
            self.conns.insert(id, c);
        }
        Ok(self.conns.get_mut(&id).expect("inserted above"))
    }

    /// Drops a connection that failed, so the next use dials again.
    pub fn forget(&mut self, id: Option<i32>) {
        match id {
            Some(id) => {
                self.conns.remove(&id);
            }
            None => self.bootstrap = None,
        }
    }

    /// Sends to any broker; a broken connection is reopened once.
    pub async fn send_any<R: Request>(&mut self, req: &R, cap: i16) -> Result<(R::Response, i16), CliError> {
        let first = self.any().await?.send(req, cap).await;
        match first {
            Err(CliError::Io(_)) | Err(CliError::Timeout(_)) => {
                self.forget(None);
                self.any().await?.send(req, cap).await
            }
            r => r,
        }
    }

    /// Sends to broker `id`; a failed connection is dropped.
    pub async fn send_to<R: Request>(&mut self, id: i32, req: &R, cap: i16) -> Result<(R::Response, i16), CliError> {
        let r = self.node(id).await?.send(req, cap).await;
        if matches!(r, Err(CliError::Io(_)) | Err(CliError::Timeout(_))) {
            self.forget(Some(id));
        }
        r
    }

    /// Metadata for `topics` (None: all; Some(&[]): none, brokers only).
    pub async fn metadata(&mut self, topics: Option<&[String]>) -> Result<ClusterView, CliError> {
        let req = MetadataRequest::default().with_allow_auto_topic_creation(false).with_topics(topics.map(|ts| {
            ts.iter().map(|t| MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_string(t.clone()))))).collect()
        }));
        let (r, _) = self.send_any(&req, METADATA_VERSION).await?;
        let v = view(r);
        for b in &v.brokers {
            let addr = format!("{}:{}", b.host, b.port);
            if self.brokers.get(&b.node_id) != Some(&addr) {
                self.conns.remove(&b.node_id);
            }
            self.brokers.insert(b.node_id, addr);
        }
        Ok(v)
    }

    /// Metadata of one topic, waiting out a topic still being created (no leaders yet). A
    /// partition that had a leader and lost it (leader epoch above 0) is offline, not new:
    /// it is returned as it is.
    pub async fn topic(&mut self, name: &str) -> Result<TopicInfo, CliError> {
        let deadline = Instant::now() + RETRY_FOR;
        loop {
            let v = self.metadata(Some(&[name.to_string()])).await?;
            match v.topic(name) {
                Ok(t) if t.partitions.iter().all(|p| p.leader >= 0 || p.leader_epoch > 0) || Instant::now() > deadline => {
                    return Ok(t.clone())
                }
                Ok(_) => {}
                Err(e) if !e.retriable() || Instant::now() > deadline => return Err(e),
                Err(e) if e.code() == Some(3) => return Err(e),
                Err(_) => {}
            }
            tokio::time::sleep(BACKOFF).await;
        }
    }

    /// The coordinator of `key` (key_type 0: a group, 1: a transactional id).
    pub async fn coordinator(&mut self, key: &str, key_type: i8) -> Result<i32, CliError> {
        let deadline = Instant::now() + RETRY_FOR;
        loop {
            let req = FindCoordinatorRequest::default().with_key_type(key_type);
            let version = self.any().await?.version::<FindCoordinatorRequest>(6)?;
            let req = if version >= 4 {
                req.with_coordinator_keys(vec![StrBytes::from_string(key.to_string())])
            } else {
                req.with_key(StrBytes::from_string(key.to_string()))
            };
            let (r, version) = self.send_any(&req, 6).await?;
            let (code, msg, node, host, port) = if version >= 4 {
                let c = r.coordinators.first().ok_or_else(|| CliError::Protocol("FindCoordinator answered no coordinator".into()))?;
                (c.error_code, c.error_message.as_ref().map(|m| m.to_string()), c.node_id.0, c.host.to_string(), c.port)
            } else {
                (r.error_code, r.error_message.as_ref().map(|m| m.to_string()), r.node_id.0, r.host.to_string(), r.port)
            };
            match CliError::check(code, || format!("FindCoordinator for {key}"), msg.as_deref()) {
                Ok(()) => {
                    let addr = format!("{host}:{port}");
                    if self.brokers.get(&node) != Some(&addr) {
                        self.conns.remove(&node);
                        self.brokers.insert(node, addr);
                    }
                    return Ok(node);
                }
                Err(e) if e.retriable() && Instant::now() < deadline => tokio::time::sleep(BACKOFF).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// When routed requests stop retrying.
    pub fn retry_deadline() -> Instant {
        Instant::now() + RETRY_FOR
    }

    /// The pause between tries.
    pub async fn backoff() {
        tokio::time::sleep(BACKOFF).await
    }
}

/// A broker id for requests.
pub fn broker(id: i32) -> BrokerId {
    BrokerId(id)
}
