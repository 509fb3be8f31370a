//! Replication on the broker: one fetcher per leader this broker follows, and the ISR
//! changes leaders ask the controller for.

mod fetcher;
#[cfg(test)]
mod sim;
#[cfg(test)]
mod sim_tests;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::cluster::Cluster;
use crate::controller::rpc::{Request, Response};
use crate::partition::{IsrChange, Partition, Topic};

pub use fetcher::Settings;

/// The follower side's running fetchers, by leader id, and the leader side's ISR
/// change requests to the controller.
pub struct Replication {
    me: i32,
    cluster: Arc<Cluster>,
    fetchers: Mutex<HashMap<i32, (watch::Sender<Vec<Arc<Partition>>>, tokio::task::JoinHandle<()>)>>,
    /// ISR changes asked for and not yet answered, so each is asked once.
    pending: Arc<Mutex<HashSet<(uuid::Uuid, i32)>>>,
}

impl Replication {
    /// Replication for broker `me`, reaching the controller through `cluster`.
    pub fn new(me: i32, cluster: Arc<Cluster>) -> Replication {
        Replication { me, cluster, fetchers: Default::default(), pending: Default::default() }
    }

    /// Points the fetchers at the leaders of the partitions this broker follows.
    pub fn update_fetchers(&self, topics: &[Arc<Topic>], settings: Settings) {
        let me = self.me;
        let mut by_leader: HashMap<i32, Vec<Arc<Partition>>> = HashMap::new();
        for t in topics {
            for p in t.local() {
                let leader = t.states.get(p.index as usize).map_or(-1, |s| s.leader);
                // A replica in a failed log dir fetches nothing (Kafka drops it from its fetchers).
                if leader >= 0 && leader != me && !p.is_offline() {
                    by_leader.entry(leader).or_default().push(p.clone());
                }
            }
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let mut fetchers = self.fetchers.lock();
        fetchers.retain(|leader, (tx, task)| {
            let keep = by_leader.contains_key(leader);
            if !keep {
                let _ = tx.send(Vec::new());
                task.abort();
            }
            keep
        });
        for (leader, parts) in by_leader {
            match fetchers.get(&leader) {
                Some((tx, _)) => {
                    tx.send_if_modified(|cur| {
                        let same = cur.len() == parts.len() && cur.iter().zip(&parts).all(|(a, b)| Arc::ptr_eq(a, b));
                        if !same {
                            *cur = parts;
                        }
                        !same
                    });
                }
                None => {
                    let (tx, rx) = watch::channel(parts);
                    let task = rt.spawn(fetcher::run(leader, self.cluster.clone(), rx, settings.clone()));
                    fetchers.insert(leader, (tx, task));
                }
            }
        }
    }

    /// Asks the controller for an ISR change of a partition this broker leads. The answer
    /// comes back through the metadata log; until then the same change is not asked again.
    pub fn request_isr_change(&self, p: Arc<Partition>, change: IsrChange) {
        let key = (p.topic_id, p.index);
        if !self.pending.lock().insert(key) {
            return;
        }
        let pending = self.pending.clone();
        let cluster = self.cluster.clone();
        let me = self.me;
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            self.pending.lock().remove(&key);
            return;
        };
        tracing::info!(topic = %p.topic, partition = p.index, isr = ?change.isr, "asking the controller to change the ISR");
        rt.spawn(async move {
            let req = Request::AlterPartition {
                broker: me,
                epoch: cluster.broker_epoch(),
                topic_id: p.topic_id,
                index: p.index,
                leader_epoch: change.leader_epoch,
                partition_epoch: change.partition_epoch,
                isr: change.isr.clone(),
            };
            let r = cluster.call(req, std::time::Duration::from_secs(10)).await;
            match &r {
                Ok(Response::Partition { offset, .. }) => {
                    // Wait until the change is applied here, so the next check sees it.
                    let _ = cluster.wait_applied(*offset, std::time::Duration::from_secs(10)).await;
                }
                other => {
                    tracing::info!(topic = %p.topic, partition = p.index, isr = ?change.isr, result = ?other, "ISR change not made");
                    // Not again at once: what refused it (a fenced broker, a stale epoch) takes a moment to change.
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
            }
            pending.lock().remove(&key);
        });
    }

    /// Leader duty: drops followers that fell behind for `lag` ms (`replica.lag.time.max.ms`).
    pub fn shrink_lagging_isrs(&self, topics: &[Arc<Topic>], now_ms: i64, lag: i64) {
        for t in topics {
            for p in t.local() {
                if let Some(change) = p.isr_shrink(now_ms, lag) {
                    self.request_isr_change(p.clone(), change);
                }
            }
        }
    }
}
