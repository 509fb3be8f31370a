//! This broker's log dirs as the admin APIs see them (DescribeLogDirs,
//! AlterReplicaLogDirs), and what a failed dir does to the partitions in it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::Broker;
use crate::clock::now_ms;
use crate::controller::rpc::Request;
use crate::error::{Error, Result};
use crate::log::dir_failure;

/// One partition replica in a log dir, as DescribeLogDirs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaInfo {
    pub topic: String,
    pub partition: i32,
    pub size: i64,
    /// The current replica: how far its end is below the high watermark (0 on a leader);
    /// a future replica: how far its copy is behind the current log's end.
    pub offset_lag: i64,
    pub is_future: bool,
}

/// One configured log dir, as DescribeLogDirs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirInfo {
    pub path: String,
    /// Set for a dir that is offline (KAFKA_STORAGE_ERROR).
    pub error: Option<Error>,
    pub replicas: Vec<ReplicaInfo>,
    /// The volume's total and usable bytes; -1 when unknown (as Kafka).
    pub total_bytes: i64,
    pub usable_bytes: i64,
}

impl Broker {
    /// Every configured log dir with the replicas in it that `wanted` selects (all when
    /// `wanted` is None), as Kafka's `ReplicaManager.describeLogDirs`.
    pub fn describe_log_dirs(&self, wanted: Option<&dyn Fn(&str, i32) -> bool>) -> Vec<DirInfo> {
        let failures = dir_failure::global();
        let mut out: Vec<DirInfo> = self
            .log_dirs
            .all()
            .iter()
            .map(|d| {
                let offline = failures.is_offline(&d.path);
                let (total, usable) = if offline { None } else { crate::log::dirs::volume_bytes(&d.path) }.unwrap_or((-1, -1));
                DirInfo {
                    path: d.path.to_string_lossy().into_owned(),
                    error: offline.then(|| Error::Storage(format!("log dir {} is offline", d.path.display()))),
                    replicas: Vec::new(),
                    total_bytes: total,
                    usable_bytes: usable,
                }
            })
            .collect();
        for topic in self.all_topics() {
            for p in topic.local() {
                if wanted.is_some_and(|w| !w(&p.topic, p.index)) {
                    continue;
                }
                let (dir, size, leo, hw) =
                    p.with_state(|s| (s.log.dir().parent().map(Path::to_path_buf), s.log.size(), s.log.log_end_offset(), s.high_watermark));
                let mut add = |at: &Path, r: ReplicaInfo| {
                    if let Some(d) = out.iter_mut().find(|d| Path::new(&d.path) == at && d.error.is_none()) {
                        d.replicas.push(r);
                    }
                };
                let info = |size: u64, offset_lag: i64, is_future: bool| ReplicaInfo {
                    topic: p.topic.clone(),
                    partition: p.index,
                    size: size as i64,
                    offset_lag,
                    is_future,
                };
                if let Some(dir) = dir {
                    add(&dir, info(size, (hw - leo).max(0), false));
                }
                if let Some(f) = p.future() {
                    add(&f.log_dir, info(f.size, (leo - f.offset).max(0), true));
                }
            }
        }
        out
    }

    /// Moves a partition's replica here to the log dir `path` (AlterReplicaLogDirs), in
    /// the background: Kafka answers once the future replica exists, and DescribeLogDirs
    /// shows the move until it is done.
    pub fn alter_replica_log_dir(self: &Arc<Self>, path: &str, topic: &str, index: i32) -> Result<()> {
        let dir = self
            .log_dirs
            .get(path)
            .ok_or_else(|| Error::LogDirNotFound(format!("log dir {path} is not in this broker's log.dirs")))?
            .path
            .clone();
        if dir_failure::global().is_offline(&dir) {
            return Err(Error::Storage(format!("log dir {} is offline", dir.display())));
        }
        let t = self.topic(topic).ok_or(Error::UnknownTopicOrPartition)?;
        if index < 0 || index as usize >= t.states.len() {
            return Err(Error::UnknownTopicOrPartition);
        }
        let p = t.partition(index).cloned().ok_or(Error::ReplicaNotAvailable)?;
        if p.is_offline() {
            return Err(Error::Storage(format!("partition {topic}-{index} is in an offline log dir")));
        }
        if p.request_move(&dir) {
            let me = self.clone();
            tokio::task::spawn_blocking(move || match p.run_move(&now_ms) {
                Ok(Some((from, to))) => {
                    me.log_dirs.moved(&from, Some(&to));
                    tracing::info!(topic = %p.topic, partition = p.index, from = %from.display(), to = %to.display(), "moved a replica to another log dir");
                }
                Ok(None) => tracing::info!(topic = %p.topic, partition = p.index, "replica move cancelled"),
                Err(e) => tracing::warn!(topic = %p.topic, partition = p.index, error = %e, "replica move failed; the replica stays where it was"),
            });
        }
        Ok(())
    }

    /// A log dir failed: its partitions' replicas here are offline. The controller moves
    /// their leadership to other replicas and takes this broker out of their ISRs; the
    /// partitions in other dirs keep serving. Retried until the controller has it.
    pub async fn log_dir_failed(self: Arc<Self>, dir: PathBuf) {
        let partitions: Vec<(uuid::Uuid, i32)> = self
            .all_topics()
            .iter()
            .flat_map(|t| t.local().filter(|p| p.log_dir() == dir).map(|p| (p.topic_id, p.index)).collect::<Vec<_>>())
            .collect();
        tracing::warn!(dir = %dir.display(), partitions = partitions.len(), "log dir offline: asking the controller to move its partitions' leadership");
        loop {
            let req = Request::OfflineReplicas { broker: self.identity.node_id, epoch: self.cluster.broker_epoch(), partitions: partitions.clone() };
            match self.submit(req, None).await {
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "telling the controller of an offline log dir failed; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
        // Stop fetching into the dead dir.
        let me = self.clone();
        let _ = tokio::task::spawn_blocking(move || me.reconcile(true)).await;
    }
}
