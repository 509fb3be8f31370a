//! Runs a [`QuorumNode`] on tokio: a timer ticks it, peers' messages step it, callers
//! propose through it and wait for their batch to be applied.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use raft::eraftpb::Message;
use tokio::sync::{mpsc, oneshot, watch};

use super::quorum::QuorumNode;
use super::raft_store::RaftStore;
use super::rpc::QuorumInfo;
use crate::error::{Error, Result};
use crate::journal::Journal;
use crate::metadata::image::Image;
use crate::metadata::published::Published;
use crate::metadata::records::{Record, RecordBatch};
use crate::metadata::voters::VoterChange;

/// Milliseconds per Raft tick. With 10 ticks to an election, a dead leader is replaced
/// within 0.5–1 s (the timeout is randomized between 10 and 20 ticks).
pub const TICK_MS: u64 = 50;

/// Commands waiting for the driver. It takes up to 257 per pass, so this is many passes.
const COMMANDS_QUEUED: usize = 4096;

enum Cmd {
    Step(Message),
    /// A batch, who waits for it, and when it was proposed.
    Propose(RecordBatch, oneshot::Sender<Result<u64>>, Instant),
    /// A change to the voter set, and who waits for it to be applied.
    ChangeVoters(VoterChange, oneshot::Sender<Result<u64>>),
}

/// A proposal of this node's, waiting to commit.
struct Pending {
    reply: oneshot::Sender<Result<u64>>,
    /// Why each leader change in it was made (counted once it commits).
    elections: Vec<&'static str>,
    proposed: Instant,
}

/// The kinds of the leader changes in `batch`, for `sluice_leader_elections_total`.
fn elections_in(batch: &RecordBatch) -> Vec<&'static str> {
    batch
        .records
        .iter()
        .filter_map(|r| match r {
            Record::PartitionChange { reason: Some(why), .. } => Some(why.as_str()),
            _ => None,
        })
        .collect()
}

/// Whether the active controller should write a no-op batch: nothing was proposed for
/// `interval_ms` (Kafka's `metadata.max.idle.interval.ms`; 0 turns no-ops off), so that
/// every node's time of its last applied batch, and so its metadata lag, stays current.
pub fn noop_due(now_ms: i64, last_proposal_ms: i64, interval_ms: i64) -> bool {
    interval_ms > 0 && now_ms - last_proposal_ms >= interval_ms
}

/// What callers can see of the quorum without asking the driver.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub leader: Option<u64>,
    /// Leads, and has applied the log up to an entry of its own term, so every entry of
    /// earlier terms is in its image: only then does it decide anything (Kafka's controller
    /// too becomes active once it has replayed the log up to its epoch's start). A leader
    /// deciding before that would compute records from an image that lacks ones already
    /// in its log, which then commit ahead of its own.
    pub is_leader: bool,
    pub term: u64,
    pub commit: u64,
    pub progress: Vec<(u64, u64)>,
    pub voters: Vec<u64>,
    /// Voters being added, catching up as learners.
    pub learners: Vec<u64>,
    /// A voter change is proposed and not yet applied.
    pub voter_change_pending: bool,
    /// When each peer was last heard from (epoch ms), for DescribeQuorum's fetch times.
    pub heard: Vec<(u64, i64)>,
}

impl Status {
    /// The leader's Kafka node id (`leader` is its raft id).
    pub fn leader_node(&self) -> Option<i32> {
        self.leader.map(super::quorum::node_id)
    }
}

/// A handle on the running quorum member.
pub struct Quorum {
    pub node_id: u64,
    cmd: mpsc::Sender<Cmd>,
    image: Arc<Published>,
    journal: Arc<Journal>,
    applied: watch::Receiver<u64>,
    status: watch::Receiver<Status>,
    store: RaftStore,
    /// When this node last proposed a batch (ms), for the no-op timer.
    last_proposal_ms: AtomicI64,
}

impl Quorum {
    /// Starts driving `node`; `send` delivers a message to a peer (best effort).
    pub fn start(mut node: QuorumNode, send: Box<dyn Fn(Message) + Send + Sync>) -> Arc<Quorum> {
        let (cmd_tx, mut cmd_rx) = mpsc::channel(COMMANDS_QUEUED);
        let image = node.image();
        let (applied_tx, applied) = watch::channel(image.load().offset);
        let (status_tx, status) = watch::channel(Status::default());
        let store = node.store().clone();
        if node.voters() == [node.id] {
            node.campaign();
        }
        let node_id = node.id;
        let shared = image.clone();
        let journal = node.journal();
        let events = journal.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(TICK_MS));
            let mut pending: HashMap<Vec<u8>, Pending> = HashMap::new();
            // The quorum leader last seen, so each new one is counted once.
            let mut seen_leader: Option<u64> = None;
            let mut next_tag: u64 = rand_seed();
            let mut heard: HashMap<u64, i64> = HashMap::new();
            // The first pass runs at once: a lone voter's campaign is ready to persist, and
            // the timer would round even an immediate first tick up to the next millisecond.
            let mut first = true;
            loop {
                let cmd = if std::mem::take(&mut first) {
                    None
                } else {
                    tokio::select! {
                        _ = tick.tick() => { node.tick(); None }
                        c = cmd_rx.recv() => match c { Some(c) => Some(c), None => return },
                    }
                };
                let mut handle = |c: Cmd, node: &mut QuorumNode| match c {
                    Cmd::Step(m) => {
                        heard.insert(m.from, crate::clock::now_ms());
                        node.step(m)
                    }
                    Cmd::ChangeVoters(change, reply) => {
                        next_tag = next_tag.wrapping_add(1);
                        let tag = next_tag.to_be_bytes().to_vec();
                        match node.propose_voter_change(tag.clone(), &change) {
                            Ok(()) => {
                                pending.insert(tag, Pending { reply, elections: Vec::new(), proposed: Instant::now() });
                            }
                            Err(e) => {
                                let _ = reply.send(Err(e));
                            }
                        }
                    }
                    Cmd::Propose(batch, reply, proposed) => {
                        next_tag = next_tag.wrapping_add(1);
                        let tag = next_tag.to_be_bytes().to_vec();
                        match node.propose(tag.clone(), &batch) {
                            Ok(()) => {
                                pending.insert(tag, Pending { reply, elections: elections_in(&batch), proposed });
                            }
                            Err(e) => {
                                let _ = reply.send(Err(e));
                            }
                        }
                    }
                };
                if let Some(c) = cmd {
                    handle(c, &mut node);
                }
                // Take whatever else is queued, so one fsync covers many messages.
                for _ in 0..256 {
                    match cmd_rx.try_recv() {
                        Ok(c) => handle(c, &mut node),
                        Err(_) => break,
                    }
                }
                let out = match node.process() {
                    Ok(out) => out,
                    Err(e) => {
                        // The metadata log is the cluster's memory: never run on after losing it.
                        tracing::error!(error = %e, "metadata log failure; stopping");
                        std::process::exit(70);
                    }
                };
                for m in out.messages {
                    send(m);
                }
                for a in out.applied {
                    if let Some(p) = pending.remove(&a.context) {
                        // Committed and applied: the elections in it are made.
                        for kind in &p.elections {
                            crate::stats::leader_elected(kind, p.proposed.elapsed());
                        }
                        let _ = p.reply.send(Ok(a.offset));
                    }
                }
                if out.leader_changed {
                    tracing::info!(leader = node.leader().unwrap_or(0), term = node.term(), "metadata quorum leader changed");
                    if let Some(leader) = node.leader() {
                        events.controller_changed(super::quorum::node_id(leader), node.term(), crate::clock::now_ms());
                    }
                    if node.leader().is_some() && node.leader() != seen_leader {
                        seen_leader = node.leader();
                        crate::stats::controller_changed();
                    }
                    if !node.is_leader() {
                        for (_, p) in pending.drain() {
                            let _ = p.reply.send(Err(Error::NotController));
                        }
                    }
                }
                let offset = image.load().offset;
                applied_tx.send_if_modified(|v| std::mem::replace(v, offset) != offset);
                let st = Status {
                    leader: node.leader(),
                    is_leader: node.is_active(),
                    term: node.term(),
                    commit: node.commit_index(),
                    progress: node.progress(),
                    voters: node.voters(),
                    learners: node.learners(),
                    voter_change_pending: node.voter_change_pending(),
                    heard: heard.iter().map(|(k, v)| (*k, *v)).collect(),
                };
                status_tx.send_if_modified(|s| {
                    let changed = s.leader != st.leader
                        || s.is_leader != st.is_leader
                        || s.term != st.term
                        || s.commit != st.commit
                        || s.progress != st.progress
                        || s.voters != st.voters
                        || s.learners != st.learners
                        || s.voter_change_pending != st.voter_change_pending;
                    *s = st;
                    changed
                });
            }
        });
        Arc::new(Quorum {
            node_id,
            cmd: cmd_tx,
            image: shared,
            journal,
            applied,
            status,
            store,
            last_proposal_ms: AtomicI64::new(crate::clock::now_ms()),
        })
    }

    /// Delivers a peer's message.
    pub fn step(&self, m: Message) {
        // Dropped when the queue is full, as the peer links drop what they cannot send at
        // once: Raft retransmits what matters, and a flooding peer must not grow memory.
        if self.cmd.try_send(Cmd::Step(m)).is_err() {
            tracing::debug!("metadata quorum busy; a peer's message was dropped");
        }
    }

    /// Appends records to the metadata log; resolves once they are committed and applied here.
    pub async fn propose(&self, records: Vec<Record>) -> Result<u64> {
        let (tx, rx) = oneshot::channel();
        let proposed = Instant::now();
        self.last_proposal_ms.store(crate::clock::now_ms(), Ordering::Relaxed);
        // Waiting for room cannot deadlock: the driver never sends to itself and waits on
        // nothing a proposer could hold across this await (its one lock is the image's, a
        // parking_lot lock, whose guards cannot cross an await in a spawned task).
        self.cmd
            .send(Cmd::Propose(RecordBatch::new(records).at(crate::clock::now_ms()), tx, proposed))
            .await
            .map_err(|_| Error::NotController)?;
        rx.await.map_err(|_| Error::NotController)?
    }

    /// Changes the voter set (one change at a time); resolves once the change is applied here.
    pub async fn change_voters(&self, change: VoterChange) -> Result<u64> {
        let (tx, rx) = oneshot::channel();
        self.cmd.send(Cmd::ChangeVoters(change, tx)).await.map_err(|_| Error::NotController)?;
        rx.await.map_err(|_| Error::NotController)?
    }

    /// Where the applied image is published (a broker on this node reads it there).
    pub fn published(&self) -> Arc<Published> {
        self.image.clone()
    }

    /// The events of the applied log, and the controller changes seen here.
    pub fn journal(&self) -> Arc<Journal> {
        self.journal.clone()
    }

    /// The applied image, as of now (a snapshot: later batches do not change it).
    pub fn image(&self) -> Arc<Image> {
        self.image.load()
    }

    /// The offset applied so far; changes are signalled.
    pub fn applied(&self) -> watch::Receiver<u64> {
        self.applied.clone()
    }

    pub fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    /// Signalled on leader, term or commit changes.
    pub fn status_watch(&self) -> watch::Receiver<Status> {
        self.status.clone()
    }

    pub fn store(&self) -> &RaftStore {
        &self.store
    }

    /// When this node last proposed a batch (epoch ms).
    pub fn last_proposal_ms(&self) -> i64 {
        self.last_proposal_ms.load(Ordering::Relaxed)
    }

    /// The quorum as DescribeQuorum reports it: the voters, then as observers the learners
    /// heard from within `OBSERVER_GONE_MS` (the controllers the leader replicates to
    /// without counting their votes; Kafka too lists only observers that fetch).
    pub fn info(&self) -> QuorumInfo {
        const OBSERVER_GONE_MS: i64 = 10_000;
        let st = self.status();
        let now = crate::clock::now_ms();
        let heard: HashMap<u64, i64> = st.heard.iter().copied().collect();
        let live = |v: &&u64| heard.get(*v).is_some_and(|t| now - t < OBSERVER_GONE_MS);
        let progress: HashMap<u64, u64> = st.progress.iter().copied().collect();
        let image = self.image();
        let replica = |v: &u64| {
            let id = super::quorum::node_id(*v);
            let dir = image.voters.get(&id).map_or(uuid::Uuid::nil(), |i| i.directory_id);
            (id, progress.get(v).copied().unwrap_or(0), dir)
        };
        QuorumInfo {
            leader: st.leader.map_or(-1, super::quorum::node_id),
            term: st.term,
            high_watermark: st.commit,
            voters: st.voters.iter().map(|v| { let (id, leo, _) = replica(v); (id, leo) }).collect(),
            directory_ids: st.voters.iter().chain(&st.learners).map(|v| { let (id, _, dir) = replica(v); (id, dir) }).collect(),
            observers: st.learners.iter().filter(live).map(|v| { let (id, leo, _) = replica(v); (id, leo) }).collect(),
            heard: st.heard.iter().map(|(v, t)| (super::quorum::node_id(*v), *t)).collect(),
            endpoints: image.voters.iter().map(|(id, i)| (*id, i.endpoints.clone())).collect(),
        }
    }
}

fn rand_seed() -> u64 {
    let (a, b) = uuid::Uuid::new_v4().as_u64_pair();
    a ^ b
}

#[cfg(test)]
mod tests {
    use super::{elections_in, noop_due};
    use crate::metadata::records::{ElectionReason, PartitionState, Record, RecordBatch};

    #[test]
    fn the_elections_of_a_batch_are_its_leader_changes_by_reason() {
        let change = |reason| Record::PartitionChange {
            topic_id: uuid::Uuid::nil(),
            index: 0,
            state: PartitionState::default(),
            unclean: false,
            reason,
        };
        let batch = RecordBatch::new(vec![
            change(Some(ElectionReason::Clean)),
            change(None),
            Record::FenceBroker { id: 1, epoch: 1 },
            change(Some(ElectionReason::ControlledShutdown)),
        ]);
        assert_eq!(elections_in(&batch), vec!["clean", "controlled_shutdown"]);
        assert!(elections_in(&RecordBatch::new(vec![])).is_empty(), "a no-op elects nobody");
    }

    #[test]
    fn a_noop_is_due_once_the_log_was_idle_for_the_interval() {
        assert!(!noop_due(1_400, 1_000, 500), "idle for 400 ms of 500");
        assert!(noop_due(1_500, 1_000, 500));
        assert!(noop_due(9_000, 1_000, 500));
        assert!(!noop_due(9_000, 1_000, 0), "0 turns no-ops off");
    }
}
