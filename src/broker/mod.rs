//! The broker's shared state: configuration, metadata, and the partitions it hosts.

mod acls;
mod client_metrics;
mod configs;
mod group_configs;
pub mod log_dirs;
mod quotas;
pub use quotas::{quota_exceeded, MutationQuota};
mod reconcile;
mod share;
mod tokens;
mod topics;
pub mod txn_verify;

pub use crate::controller::rpc::CreateRequest;
pub use configs::{AlterOp, ConfigEntry, ConfigKind};

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::clock::now_ms;
use crate::config::{BrokerConfig, Settings};

use crate::cluster::{peer, Cluster};
use crate::group::classic::GroupConfig;
use crate::group::Coordinator;
use crate::partition::fetch_session::{FetchSessionCache, FetchSessionConfig};
use crate::partition::ReplicaManager;
pub use crate::partition::Topic;
use crate::txn::pid::ProducerIdManager;

/// How this broker is reached and identified.
#[derive(Debug, Clone)]
pub struct Identity {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub data_dir: PathBuf,
}

/// Everything the request handlers share.
pub struct Broker {
    pub identity: Identity,
    pub cluster_id: String,
    /// The controller, the metadata image, and this broker's membership.
    pub cluster: Arc<Cluster>,
    config: RwLock<BrokerConfig>,
    /// The typed settings of `config`, republished when the dynamic config changes.
    settings: arc_swap::ArcSwap<Settings>,
    /// The partitions hosted here.
    pub replicas: ReplicaManager,
    /// The configured log dirs (`log.dirs`) and where partitions are placed.
    pub log_dirs: crate::log::dirs::LogDirs,
    /// Serializes reconciliation with the metadata image.
    reconciling: Mutex<()>,
    /// Whether the image's roles (leader, follower) are acted on yet: not before this
    /// broker has caught up with the metadata log, as in Kafka, since the image it restarts
    /// on may be long stale (it could name this broker the leader of an ISR of one).
    applying_roles: std::sync::atomic::AtomicBool,
    pub producer_ids: ProducerIdManager,
    /// The group coordinator.
    pub groups: Coordinator,
    /// Share groups and the share partitions led here.
    pub shares: crate::share::ShareCoordinator,
    /// The share coordinator: share-partition state in `__share_group_state`.
    pub share_state: crate::share::coordinator::StateCoordinator,
    /// The transaction coordinator.
    pub txns: crate::txn::coordinator::TxnCoordinator,
    /// Replica fetchers and pending ISR changes.
    pub replication: crate::replication::Replication,
    /// Connections to other brokers (transaction markers and verification).
    pub peers: peer::Peers,
    /// Incremental fetch sessions (KIP-227) of the clients fetching here.
    pub fetch_sessions: Mutex<FetchSessionCache>,
    /// Client telemetry (KIP-714): subscriptions, client instances, pushed metrics.
    pub telemetry: crate::telemetry::Manager,
    /// The group configs last handed to the coordinators.
    applied_group_configs: Mutex<std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>>,
    /// The measured byte rates of clients under a quota.
    client_rates: quotas::ClientRates,
}

/// Marker file written by a clean shutdown: its absence means the logs need recovery.
const CLEAN_SHUTDOWN: &str = ".clean-shutdown";

impl Broker {
    /// Opens the data directory: metadata, then every partition's log.
    pub fn open(identity: Identity, mut config: BrokerConfig, cluster: Arc<Cluster>) -> anyhow::Result<Arc<Broker>> {
        let dir = identity.data_dir.clone();
        std::fs::create_dir_all(&dir)?;
        let (cluster_id, dynamic) = {
            let img = cluster.image();
            (img.cluster_id.clone().unwrap_or_default(), img.broker_configs.clone())
        };
        config.dynamic_set = dynamic;
        let log_dirs = crate::log::dirs::LogDirs::open(&crate::log::dirs::parse(&config.get("log.dirs")), identity.node_id)?;
        let marker = dir.join(CLEAN_SHUTDOWN);
        let clean = marker.exists();
        let s = Settings::from_config(&config).map_err(anyhow::Error::msg)?;
        let group_config = GroupConfig {
            min_session_timeout_ms: s.group_min_session_timeout_ms,
            max_session_timeout_ms: s.group_max_session_timeout_ms,
            initial_rebalance_delay_ms: s.group_initial_rebalance_delay_ms,
            max_size: s.group_max_size,
        };
        let consumer_config = crate::group::consumer::ConsumerConfig {
            session_timeout_ms: s.group_consumer_session_timeout_ms,
            heartbeat_interval_ms: s.group_consumer_heartbeat_interval_ms,
            assignors: s.group_consumer_assignors.clone(),
            max_size: s.group_consumer_max_size,
            streams: crate::group::streams::StreamsConfig {
                session_timeout_ms: s.group_streams_session_timeout_ms,
                heartbeat_interval_ms: s.group_streams_heartbeat_interval_ms,
                num_standby_replicas: s.group_streams_num_standby_replicas,
                max_size: s.group_streams_max_size,
                task_offset_interval_ms: s.group_streams_task_offset_interval_ms,
                acceptable_recovery_lag: s.group_streams_acceptable_recovery_lag,
                initial_rebalance_delay_ms: s.group_streams_initial_rebalance_delay_ms,
                assignment_interval_ms: s.group_streams_assignment_interval_ms,
                rack_aware_assignment_tags: s.group_streams_rack_aware_assignment_tags.clone(),
            },
        };
        let groups = Coordinator::new(group_config, consumer_config, s.offsets_topic_num_partitions, s.offsets_retention_ms);
        let txns = crate::txn::coordinator::TxnCoordinator::new(crate::txn::coordinator::TxnConfig {
            max_timeout_ms: s.transaction_max_timeout_ms,
            partitions: s.transaction_state_log_num_partitions,
        });
        let replication = crate::replication::Replication::new(identity.node_id, cluster.clone());
        let peers = peer::Peers::new(cluster.links.clone());
        let fetch_sessions = FetchSessionConfig {
            max_slots: config.get_i64("max.incremental.fetch.session.cache.slots").clamp(0, i32::MAX as i64) as usize,
            eviction_ms: config.get_i64("min.incremental.fetch.session.eviction.ms").max(0),
        };
        let s_telemetry_max_bytes = s.telemetry_max_bytes;
        let broker = Broker {
            shares: share::coordinator(&config),
            share_state: share::state_coordinator(&s),
            groups,
            txns,
            producer_ids: ProducerIdManager::open(dir.join("producer-ids"), identity.node_id)?,
            identity,
            cluster_id,
            cluster,
            config: RwLock::new(config),
            client_rates: quotas::ClientRates::new(&s),
            settings: arc_swap::ArcSwap::from_pointee(s),
            replicas: ReplicaManager::default(),
            log_dirs,
            reconciling: Mutex::new(()),
            applying_roles: std::sync::atomic::AtomicBool::new(false),
            replication,
            peers,
            fetch_sessions: Mutex::new(FetchSessionCache::new(fetch_sessions, Uuid::new_v4().as_u128() as u64)),
            applied_group_configs: Mutex::default(),
            telemetry: crate::telemetry::Manager::new(s_telemetry_max_bytes),
        };
        // Opens (and after a crash recovers) the logs the saved image names; roles, fetchers
        // and coordinator state wait for `start_applying_roles`.
        broker.reconcile(clean);
        if clean {
            std::fs::remove_file(&marker)?;
        } else if !broker.replicas.is_empty() {
            tracing::info!("no clean-shutdown marker: recovered the active segment of every partition");
        }
        Ok(Arc::new(broker))
    }

    /// Where a partition's files are: the log dir already holding them, else the online
    /// log dir with the fewest partitions.
    fn partition_dir(&self, topic: &str, index: i32) -> crate::error::Result<PathBuf> {
        let failures = crate::log::dir_failure::global();
        self.log_dirs
            .place(&format!("{topic}-{index}"), |d| failures.is_offline(d))
            .ok_or_else(|| crate::error::Error::Storage("every log dir is offline".into()))
    }

    /// The current broker config (a copy, so no lock is held by the caller).
    pub fn config(&self) -> BrokerConfig {
        self.config.read().clone()
    }

    /// The current typed settings (a snapshot: later config changes publish a new one).
    pub fn settings(&self) -> Arc<Settings> {
        self.settings.load_full()
    }

    /// A topic by name.
    pub fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.replicas.topic(name)
    }

    /// A topic by id.
    pub fn topic_by_id(&self, id: Uuid) -> Option<Arc<Topic>> {
        self.replicas.topic_by_id(id)
    }

    /// Every topic, sorted by name.
    pub fn all_topics(&self) -> Vec<Arc<Topic>> {
        self.replicas.all_topics()
    }

    /// Periodic work: flush by `flush.ms`, retention, producer-state snapshots.
    pub async fn run_background(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
        let mut last_retention = now_ms();
        let mut last_snapshot = now_ms();
        let mut last_offset_expiry = now_ms();
        let mut last_clean = now_ms();
        let mut last_idle_close = now_ms();
        let mut group_tick = tokio::time::interval(std::time::Duration::from_millis(100));
        loop {
            tokio::select! {
                _ = group_tick.tick() => {
                    self.groups.tick(&*self);
                    self.share_tick();
                    self.clone().flush_share_state();
                    for id in self.txns.tick(&*self) {
                        let b = self.clone();
                        tokio::spawn(async move {
                            if let Err(e) = b.txns.complete(&*b, &id).await {
                                tracing::debug!(transactional_id = %id, error = %e, "completing transaction");
                            }
                        });
                    }
                    let lag = self.settings().replica_lag_time_max_ms;
                    self.replication.shrink_lagging_isrs(&self.all_topics(), now_ms(), lag);
                    continue;
                }
                _ = shutdown.changed() => return,
                _ = tick.tick() => {}
            }
            if now_ms() - last_offset_expiry >= self.settings().offsets_retention_check_interval_ms {
                last_offset_expiry = now_ms();
                self.groups.expire_offsets(&*self);
            }
            if now_ms() - last_clean >= self.settings().log_cleaner_backoff_ms {
                last_clean = now_ms();
                let me = self.clone();
                // Compaction reads and writes whole segments: keep it off the request threads.
                let _ = tokio::task::spawn_blocking(move || me.compact_all()).await;
            }
            let now = now_ms();
            let retention_due = now - last_retention >= self.settings().log_retention_check_interval_ms;
            let snapshot_due = now - last_snapshot >= 30_000;
            let close_idle = now - last_idle_close >= 10_000;
            if close_idle {
                last_idle_close = now;
            }
            for topic in self.all_topics() {
                for p in topic.local() {
                    let r = p.with_state(|s| {
                        if close_idle {
                            // Idle partitions hold no file handles, however many there are.
                            s.log.close_idle_files(now, 60_000);
                        }
                        s.log.maybe_flush_by_time(now)?;
                        if retention_due {
                            let n = s.log.apply_retention(now)?;
                            if n > 0 {
                                tracing::info!(topic = %p.topic, partition = p.index, segments = n, start = s.log.log_start_offset(), "retention deleted segments");
                            }
                        }
                        Ok::<_, crate::error::Error>(())
                    });
                    if let Err(e) = r.and_then(|_| if snapshot_due { p.snapshot_producers() } else { Ok(()) }) {
                        tracing::warn!(topic = %p.topic, partition = p.index, error = %e, "background log work failed");
                    }
                }
            }
            if retention_due {
                last_retention = now;
            }
            if snapshot_due {
                last_snapshot = now;
            }
        }
    }

    /// Compacts every partition of every compacted topic that needs it.
    pub fn compact_all(&self) {
        for topic in self.all_topics() {
            for p in topic.local() {
                match p.compact(now_ms()) {
                    Ok(0) => {}
                    Ok(saved) => tracing::info!(topic = %p.topic, partition = p.index, bytes_saved = saved, "compacted"),
                    Err(e) => tracing::warn!(topic = %p.topic, partition = p.index, error = %e, "compaction failed"),
                }
            }
        }
    }

    /// Flushes everything to disk and leaves the marker that says the logs are whole.
    pub fn shutdown(&self) -> anyhow::Result<()> {
        let now = now_ms();
        for topic in self.all_topics() {
            for p in topic.local() {
                p.snapshot_producers()?;
                p.with_state(|s| s.log.flush(now))?;
            }
        }
        std::fs::write(self.identity.data_dir.join(CLEAN_SHUTDOWN), b"")?;
        Ok(())
    }
}
