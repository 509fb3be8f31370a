//! One member of the metadata quorum: raft-rs's state machine, our durable log, and the
//! metadata image the committed records build.
//!
//! [`QuorumNode`] does no networking and reads no clock: ticks, incoming messages and
//! proposals come in as calls, and [`QuorumNode::process`] returns the messages to send.
//! The async driver in `driver.rs` feeds it from sockets and a timer; the tests in
//! `quorum_tests.rs` feed it from a simulated network.

use std::path::Path;
use std::sync::Arc;

use protobuf::Message as _;
use raft::eraftpb::{ConfChangeSingle, ConfChangeType, ConfChangeV2, EntryType, Message, MessageType};
use raft::{RawNode, SnapshotStatus, StateRole};

use super::raft_store::RaftStore;
use crate::journal::Journal;
use crate::metadata::image::Image;
use crate::metadata::published::Published;
use crate::metadata::records::RecordBatch;
use crate::metadata::voters::VoterChange;

/// Raft timing, in ticks.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub election_ticks: usize,
    pub heartbeat_ticks: usize,
}

/// A committed batch applied to the image.
#[derive(Debug)]
pub struct Applied {
    pub offset: u64,
    /// The proposer's tag, so it can answer its caller.
    pub context: Vec<u8>,
}

/// What one round of processing produced.
#[derive(Debug, Default)]
pub struct Output {
    pub messages: Vec<Message>,
    pub applied: Vec<Applied>,
    /// The leader changed (or this node lost or won leadership).
    pub leader_changed: bool,
}

/// Take a snapshot after this many applied entries,
const SNAPSHOT_EVERY: u64 = 4096;
/// or after this many bytes of records (Kafka's
/// `metadata.log.max.record.bytes.between.snapshots`), so a log of a few huge batches (a
/// restart of a broker leading 10 000 partitions) stays quick to replay.
const SNAPSHOT_BYTES: u64 = 20 << 20;

/// Raft reserves id 0 (`raft::INVALID_ID`, "no leader"), while Kafka's node ids start at 0,
/// so node 0 votes under this id. Every other node keeps its own number, which leaves the
/// logs of clusters formed before unchanged.
const NODE_ZERO: u64 = 1 << 32;

/// The raft id of Kafka node `node` (node ids are never negative).
pub fn raft_id(node: i32) -> u64 {
    if node == 0 {
        NODE_ZERO
    } else {
        node as u64
    }
}

/// The Kafka node id of raft id `id`.
pub fn node_id(id: u64) -> i32 {
    if id == NODE_ZERO {
        0
    } else {
        id as i32
    }
}

/// A quorum member.
pub struct QuorumNode {
    pub id: u64,
    raw: RawNode<RaftStore>,
    store: RaftStore,
    image: Arc<Published>,
    /// Events of the applied records (replayed from the retained log on restart).
    journal: Arc<Journal>,
    last_leader: u64,
    /// Record bytes applied since the last snapshot.
    bytes_since_snapshot: u64,
}

fn discard_logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

impl QuorumNode {
    /// Opens this node's log in `dir`; `voters` is the configured quorum.
    pub fn open(dir: &Path, id: u64, voters: &[u64], timing: Timing) -> anyhow::Result<QuorumNode> {
        let store = RaftStore::open(dir, voters)?;
        let snap = store.snapshot_now();
        let image = if snap.data.is_empty() { Image::default() } else { Image::from_snapshot(&snap.data).map_err(anyhow::Error::msg)? };
        let cfg = raft::Config {
            id,
            election_tick: timing.election_ticks,
            heartbeat_tick: timing.heartbeat_ticks,
            applied: snap.get_metadata().index,
            // A leader that cannot hear a majority steps down, so a minority never looks active.
            check_quorum: true,
            // A rejoining node does not disrupt a healthy leader with a higher term.
            pre_vote: true,
            max_size_per_msg: 1 << 20,
            max_inflight_msgs: 256,
            ..Default::default()
        };
        cfg.validate()?;
        let raw = RawNode::new(&cfg, store.clone(), &discard_logger())?;
        Ok(QuorumNode {
            id,
            raw,
            store,
            image: Arc::new(Published::new(image)),
            journal: Arc::default(),
            last_leader: 0,
            bytes_since_snapshot: 0,
        })
    }

    /// The image this node has applied, published as snapshots.
    pub fn image(&self) -> Arc<Published> {
        self.image.clone()
    }

    /// The events of the records this node applied.
    pub fn journal(&self) -> Arc<Journal> {
        self.journal.clone()
    }

    /// The log store (for serving committed entries to brokers).
    pub fn store(&self) -> &RaftStore {
        &self.store
    }

    /// Advances the logical clock by one tick.
    pub fn tick(&mut self) {
        self.raw.tick();
        // A transfer whose message was lost times out: a leader that is no voter tries again.
        if self.is_leader() && self.raw.raft.lead_transferee.is_none() && !self.raw.raft.prs().conf().voters().contains(self.id) {
            self.hand_over();
        }
    }

    /// Starts an election now (a lone voter need not wait for its timeout).
    pub fn campaign(&mut self) {
        let _ = self.raw.campaign();
    }

    /// Delivers a message from a peer. Messages from unknown peers are ignored by raft.
    pub fn step(&mut self, m: Message) {
        let _ = self.raw.step(m);
    }

    /// Proposes a change to the voter set; fails unless this node is the leader, or while
    /// an earlier change is not yet applied (one change at a time, as Kafka's
    /// AddVoterHandler and RemoveVoterHandler allow: REQUEST_TIMED_OUT).
    pub fn propose_voter_change(&mut self, context: Vec<u8>, change: &VoterChange) -> Result<(), crate::error::Error> {
        if !self.is_leader() {
            return Err(crate::error::Error::NotController);
        }
        if self.raw.raft.has_pending_conf() {
            return Err(crate::error::Error::RequestTimedOut(
                "timed out waiting for the leader to handle the previous add or remove voter request".into(),
            ));
        }
        let (kind, id) = match change {
            VoterChange::AddLearner { id, .. } => (ConfChangeType::AddLearnerNode, *id),
            VoterChange::Promote { id } => (ConfChangeType::AddNode, *id),
            VoterChange::Demote { id } => (ConfChangeType::AddLearnerNode, *id),
        };
        let mut single = ConfChangeSingle::default();
        single.set_change_type(kind);
        single.node_id = raft_id(id);
        let mut cc = ConfChangeV2::default();
        cc.set_changes(vec![single].into());
        cc.context = change.encode().into();
        self.raw.propose_conf_change(context, cc).map_err(|e| match e {
            raft::Error::ProposalDropped => crate::error::Error::NotController,
            other => crate::error::Error::InvalidRequest(format!("voter change refused: {other}")),
        })
    }

    /// Proposes a batch; fails unless this node is the leader.
    pub fn propose(&mut self, context: Vec<u8>, batch: &RecordBatch) -> Result<(), crate::error::Error> {
        if !self.is_leader() {
            return Err(crate::error::Error::NotController);
        }
        self.raw.propose(context, batch.encode()).map_err(|_| crate::error::Error::NotController)
    }

    pub fn is_leader(&self) -> bool {
        self.raw.raft.state == StateRole::Leader
    }

    /// Leads and has applied an entry of its own term (the one it appends on election), so
    /// its image holds every entry of earlier terms.
    pub fn is_active(&self) -> bool {
        let log = &self.raw.raft.raft_log;
        self.is_leader() && log.term(log.applied).is_ok_and(|t| t == self.raw.raft.term)
    }

    /// The current leader's id, if known.
    pub fn leader(&self) -> Option<u64> {
        Some(self.raw.raft.leader_id).filter(|&l| l != 0)
    }

    pub fn term(&self) -> u64 {
        self.raw.raft.term
    }

    pub fn commit_index(&self) -> u64 {
        self.raw.raft.raft_log.committed
    }

    pub fn last_index(&self) -> u64 {
        self.raw.raft.raft_log.last_index()
    }

    /// Each voter's replicated index, as the leader tracks it (empty on followers).
    pub fn progress(&self) -> Vec<(u64, u64)> {
        if !self.is_leader() {
            return Vec::new();
        }
        let mut v: Vec<(u64, u64)> = self.raw.raft.prs().iter().map(|(id, p)| (*id, p.matched)).collect();
        v.sort_unstable();
        v
    }

    /// The learners of the configuration: voters being added, catching up.
    pub fn learners(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.raw.raft.prs().conf().learners().iter().copied().collect();
        v.sort_unstable();
        v
    }

    /// Is a voter change proposed and not yet applied?
    pub fn voter_change_pending(&self) -> bool {
        self.raw.raft.has_pending_conf()
    }

    /// The voters of the configuration.
    pub fn voters(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.raw.raft.prs().conf().voters().ids().iter().collect();
        v.sort_unstable();
        v
    }

    /// Handles everything raft has ready: persists, applies, and returns what to send.
    pub fn process(&mut self) -> anyhow::Result<Output> {
        let mut out = Output::default();
        if !self.raw.has_ready() {
            return Ok(out);
        }
        let mut rd = self.raw.ready();
        out.messages.extend(rd.take_messages());
        if !rd.snapshot().is_empty() {
            let snap = rd.snapshot().clone();
            let image = Image::from_snapshot(&snap.data).map_err(anyhow::Error::msg)?;
            self.store.apply_snapshot(snap)?;
            self.bytes_since_snapshot = 0;
            self.image.publish(image);
        }
        self.apply(rd.take_committed_entries(), &mut out)?;
        self.store.append(rd.entries())?;
        if let Some(hs) = rd.hs() {
            self.store.set_hard_state(hs)?;
        }
        if rd.must_sync() || !rd.entries().is_empty() {
            self.store.sync()?;
        }
        out.messages.extend(rd.take_persisted_messages());
        let mut light = self.raw.advance(rd);
        if let Some(commit) = light.commit_index() {
            let mut hs = self.raw.raft.hard_state();
            hs.commit = commit;
            self.store.set_hard_state(&hs)?;
        }
        out.messages.extend(light.take_messages());
        self.apply(light.take_committed_entries(), &mut out)?;
        self.raw.advance_apply();
        let leader = self.raw.raft.leader_id;
        if leader != self.last_leader {
            self.last_leader = leader;
            out.leader_changed = true;
        }
        self.maybe_snapshot()?;
        if self.store.take_snapshot_wanted() {
            self.snapshot_now()?;
        }
        // raft-rs holds a follower it sent a snapshot to until told how the send went; a
        // snapshot lost on the way (a dropped link, a fault) would leave that follower stuck
        // until the next election. Reported as handed over, the follower is probed again and
        // sent a fresh snapshot if it still lacks the compacted entries.
        for m in out.messages.iter().filter(|m| m.get_msg_type() == MessageType::MsgSnapshot) {
            self.raw.report_snapshot(m.to, SnapshotStatus::Finish);
        }
        Ok(out)
    }

    fn apply(&mut self, entries: Vec<raft::eraftpb::Entry>, out: &mut Output) -> anyhow::Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        // One copy of the image per ready batch of entries, published when all are applied.
        let mut events = Vec::new();
        let mut left_voters = false;
        let applied = self.image.update(|image| {
            for e in entries {
                if e.get_entry_type() == EntryType::EntryConfChangeV2 {
                    let cc = ConfChangeV2::parse_from_bytes(&e.data).map_err(|err| anyhow::anyhow!("metadata log entry {}: {err}", e.index))?;
                    self.raw.apply_conf_change(&cc)?;
                    match VoterChange::decode(&cc.context) {
                        Some(VoterChange::AddLearner { id, info }) => {
                            image.voters.insert(id, info);
                        }
                        // A demoted voter keeps its entry: it is still replicated to there.
                        Some(VoterChange::Promote { .. } | VoterChange::Demote { .. }) | None => {}
                    }
                    left_voters |= !self.raw.raft.prs().conf().voters().contains(self.id);
                    image.offset = image.offset.max(e.index);
                    out.applied.push(Applied { offset: e.index, context: e.context.to_vec() });
                    continue;
                }
                if e.get_entry_type() != EntryType::EntryNormal || e.data.is_empty() {
                    image.offset = image.offset.max(e.index);
                    continue;
                }
                self.bytes_since_snapshot += e.data.len() as u64;
                match RecordBatch::decode(&e.data) {
                    Ok(batch) => events.extend(crate::journal::apply_batch(image, e.index, &batch)),
                    // A batch from a newer build: applying part of the log would be worse than stopping.
                    Err(msg) => anyhow::bail!("metadata log entry {}: {msg}", e.index),
                }
                image.offset = image.offset.max(e.index);
                out.applied.push(Applied { offset: e.index, context: e.context.to_vec() });
            }
            Ok(())
        });
        self.journal.push(events);
        if left_voters && self.is_leader() {
            self.hand_over();
        }
        applied
    }

    /// A leader that its own removal took out of the voters resigns, as Kafka's does once
    /// the change commits: it hands leadership to the voter furthest along.
    fn hand_over(&mut self) {
        let voters = self.raw.raft.prs().conf().voters().ids();
        let best = self.raw.raft.prs().iter().filter(|(id, _)| voters.contains(**id)).max_by_key(|(_, p)| p.matched).map(|(id, _)| *id);
        if let Some(to) = best {
            tracing::info!(to = node_id(to), "this controller left the voters; handing leadership over");
            self.raw.transfer_leader(to);
        }
    }

    fn maybe_snapshot(&mut self) -> anyhow::Result<()> {
        let applied = self.raw.raft.raft_log.applied;
        if applied >= self.store.snapshot_index() + SNAPSHOT_EVERY || self.bytes_since_snapshot >= SNAPSHOT_BYTES {
            self.snapshot_now()?;
        }
        Ok(())
    }

    /// Forces a snapshot at the applied index (tests use it to exercise the snapshot path).
    pub fn snapshot_now(&mut self) -> anyhow::Result<()> {
        let applied = self.raw.raft.raft_log.applied;
        let bytes = self.image.load().to_snapshot();
        self.store.compact(applied, bytes, self.raw.raft.prs().conf().to_conf_state())?;
        self.bytes_since_snapshot = 0;
        Ok(())
    }
}
