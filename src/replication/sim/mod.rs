//! The world of the replication simulation (see `sim_tests.rs`): three brokers hosting one
//! partition with real `Partition`s and real logs in temp dirs, a controller actor, one
//! idempotent acks=all producer, and a seeded network that drops, delays and reorders.
//! Nothing here reads a clock or opens a socket: time is `Sim::now`, moved by `step`.
//!
//! The brokers make the calls the broker makes: the leader's side of a replica fetch as
//! `api/fetch.rs` does it, the follower's with `fetcher::handle_partition` itself, ISR
//! changes as `Broker::request_isr_change` asks for them (one at a time, waiting to see
//! the answer applied), acks=all through `Partition::replicated`. The controller actor is
//! in `controller.rs`, crashes and restarts in `faults.rs`.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{EpochEndOffset, PartitionData};
use tempfile::TempDir;

use crate::error::{Error, Result};
use crate::log::batch::{tests::make_batch, BatchHeader};
use crate::log::LogConfig;
use crate::metadata::records::PartitionState;
use crate::partition::{AppendConfig, IsrChange, Partition};
use crate::testing::Rng;

mod controller;
mod faults;
pub use controller::{Controller, Reg};

use super::fetcher::handle_partition;

pub const IDS: [i32; 3] = [1, 2, 3];
/// Simulated time per step. Every timing below is Kafka's shape at a smaller scale.
pub const STEP_MS: i64 = 5;
/// replica.lag.time.max.ms
pub const LAG_MS: i64 = 300;
/// broker.session.timeout.ms
pub const SESSION_MS: i64 = 600;
const HEARTBEAT_MS: i64 = 60;
/// How often a leader looks for lagging followers (the broker: every 100 ms).
const SHRINK_CHECK_MS: i64 = 20;
/// replica.fetch.wait.max.ms: a fetch that finds nothing new waits this long on the leader
/// for an append (the long poll of `api/fetch.rs`).
const FETCH_WAIT_MS: i64 = 100;
/// A fetch unanswered this long is given up (the connection is dropped and made again).
const FETCH_TIMEOUT_MS: i64 = FETCH_WAIT_MS + 200;
/// After an error the fetcher waits this long, or for new metadata.
const FETCH_BACKOFF_MS: i64 = 100;
/// How many bytes one fetch copies at most (small, so catching up takes several rounds).
const FETCH_MAX_BYTES: usize = 2048;
const ALTER_TIMEOUT_MS: i64 = 400;
const ALTER_BACKOFF_MS: i64 = 100;
pub const PRODUCE_TIMEOUT_MS: i64 = 400;
const PRODUCER_ID: i64 = 7;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    Broker(i32),
    Controller,
    Client,
}

#[derive(Debug)]
pub enum Body {
    Fetch { id: u64, offset: i64, last_epoch: i32, leader_epoch: i32 },
    FetchResp { id: u64, pd: PartitionData },
    Produce { id: u64, seq: i32 },
    ProduceResp { id: u64, result: Result<i64> },
    Alter { id: u64, broker_epoch: u64, change: IsrChange },
    AlterResp { id: u64, result: Result<i32> },
    Register { incarnation: u64 },
    Registered { incarnation: u64, epoch: u64 },
    Heartbeat { epoch: u64, applied: i32 },
    HeartbeatOk { fenced: bool },
    HeartbeatStale,
    Push { state: PartitionState },
}

pub struct Msg {
    at: i64,
    from: Node,
    to: Node,
    body: Body,
}

/// One batch of a replica's log (every batch here holds one record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub epoch: i32,
    /// The record's timestamp: the producer's sequence number plus [`TAG_BASE`].
    pub tag: i64,
    pub crc: u32,
}

pub const TAG_BASE: i64 = 10_000;

/// Where a leader's ISR change stands (`Broker::request_isr_change` keeps one per partition).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Alter {
    Idle,
    Sent {
        id: u64,
        until: i64,
    },
    /// Accepted: waiting until this broker's metadata shows it.
    Applying {
        partition_epoch: i32,
        until: i64,
    },
    Backoff {
        until: i64,
    },
}

/// A follower's fetch waiting on the leader for something to copy.
pub struct Parked {
    from: i32,
    id: u64,
    offset: i64,
    last_epoch: i32,
    leader_epoch: i32,
    until: i64,
}

/// An acks=all produce waiting for the high watermark (the purgatory).
pub struct Waiting {
    id: u64,
    base_offset: i64,
    last_offset: i64,
    tag: i64,
    deadline: i64,
}

pub struct Broker {
    pub id: i32,
    pub dir: TempDir,
    /// None while crashed: the process and its memory are gone, the directory stays.
    pub part: Option<Partition>,
    pub incarnation: u64,
    /// The partition's state in this broker's metadata image. It outlives a crash, like
    /// the metadata log on disk of a combined node (sometimes it is lost: see `restart`).
    pub known: Option<PartitionState>,
    /// Broker epoch from the controller; None until registered.
    pub epoch: Option<u64>,
    /// Answers clients and followers: a restarted broker starts serving once the controller
    /// unfences it, which it does when the broker has caught up with the metadata (main.rs).
    pub serving: bool,
    next_register: i64,
    next_heartbeat: i64,
    /// The fetch in flight: its id, when it was sent, and the leader epoch it was made in.
    fetch: Option<(u64, i64, i32)>,
    next_fetch: i64,
    pub alter: Alter,
    next_shrink: i64,
    pub paused_until: i64,
    waiting: Vec<Waiting>,
    parked: Vec<Parked>,
    /// What the log holds, offset by offset, kept in step with the disk after every call
    /// that writes it (while crashed: what the disk holds).
    pub mirror: Vec<Entry>,
    /// While leading: (incarnation, leader epoch, highest HW seen), so HW never goes back.
    pub lead: Option<(u64, i32, i64)>,
    /// Highest leader epoch applied in this incarnation.
    pub epoch_seen: i32,
}

pub struct Client {
    /// The sequence number of the record being produced (retried until acknowledged).
    pub seq: i32,
    pub inflight: Option<(u64, i64)>,
    next_send: i64,
    pub stop: bool,
}

pub struct Sim {
    pub rng: Rng,
    pub now: i64,
    pub brokers: Vec<Broker>,
    pub ctl: Controller,
    pub client: Client,
    net: Vec<Msg>,
    pub loss_percent: u64,
    pub slow_percent: u64,
    /// Broker id → until when it is cut off from everyone.
    pub isolated: BTreeMap<i32, i64>,
    next_id: u64,
    pub min_isr: i32,
    /// Acknowledged records: offset → tag.
    pub acked: BTreeMap<i64, i64>,
    /// The first broken invariant seen inside a handler (checked after the step).
    pub violation: Option<String>,
    /// Recent notable events, printed when a seed fails.
    pub trace: Vec<String>,
    /// How many events `trace` keeps.
    pub trace_len: usize,
    /// Also trace every produce and acknowledgement (for replaying one seed).
    pub verbose: bool,
    pub stats: Stats,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub acked: u64,
    pub elections: u64,
    pub isr_changes: u64,
    pub truncations: u64,
    pub crashes: u64,
}

fn batch_for(seq: i32) -> Vec<u8> {
    make_batch(1, TAG_BASE + seq as i64, PRODUCER_ID, 0, seq)
}

fn open(dir: &std::path::Path, min_isr: i32, now: i64) -> Partition {
    let cfg = AppendConfig { min_insync_replicas: min_isr, ..Default::default() };
    Partition::open("sim", 0, uuid::Uuid::nil(), dir, LogConfig::default(), cfg, false, now).expect("open the partition")
}

impl Sim {
    pub fn new(seed: u64) -> Sim {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let now = 1_000_000;
        let min_isr = if rng.chance(75) { 2 } else { 1 };
        // Replica order decides who is elected first: vary it.
        let mut replicas = IDS.to_vec();
        replicas.rotate_left(rng.below(3) as usize);
        let state = PartitionState {
            replicas: replicas.clone(),
            isr: replicas.clone(),
            leader: replicas[0],
            leader_epoch: 0,
            partition_epoch: 0,
            ..Default::default()
        };
        let mut brokers = Vec::new();
        let mut regs = BTreeMap::new();
        for (i, id) in IDS.iter().enumerate() {
            let dir = tempfile::tempdir().expect("temp dir");
            let part = open(dir.path(), min_isr, now);
            part.set_replica_state_at(&state, *id, now);
            regs.insert(*id, Reg { epoch: i as u64, incarnation: 0, fenced: false, last_heartbeat: now, caught_up_at: 0 });
            brokers.push(Broker {
                id: *id,
                dir,
                part: Some(part),
                incarnation: 0,
                known: Some(state.clone()),
                epoch: Some(i as u64),
                serving: true,
                next_register: now,
                next_heartbeat: now,
                fetch: None,
                next_fetch: now,
                alter: Alter::Idle,
                next_shrink: now,
                paused_until: 0,
                waiting: Vec::new(),
                parked: Vec::new(),
                mirror: Vec::new(),
                lead: None,
                epoch_seen: 0,
            });
        }
        let ctl = Controller::new(state, regs, now);
        Sim {
            loss_percent: rng.below(8),
            slow_percent: rng.below(8),
            rng,
            now,
            brokers,
            ctl,
            client: Client { seq: 0, inflight: None, next_send: now, stop: false },
            net: Vec::new(),
            isolated: BTreeMap::new(),
            next_id: 1,
            min_isr,
            acked: BTreeMap::new(),
            violation: None,
            trace: Vec::new(),
            trace_len: 60,
            verbose: false,
            stats: Stats::default(),
        }
    }

    pub fn note(&mut self, what: String) {
        if self.trace.len() >= self.trace_len {
            self.trace.remove(0);
        }
        self.trace.push(format!("t={} {what}", self.now));
    }

    fn fail(&mut self, what: String) {
        if self.violation.is_none() {
            self.violation = Some(what);
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub fn index(id: i32) -> usize {
        IDS.iter().position(|b| *b == id).expect("a broker id")
    }

    fn cut(&self, n: Node) -> bool {
        matches!(n, Node::Broker(b) if self.isolated.contains_key(&b))
    }

    fn send(&mut self, from: Node, to: Node, body: Body) {
        if self.cut(from) || self.cut(to) || self.rng.chance(self.loss_percent) {
            return;
        }
        let mut steps = 1 + self.rng.below(4) as i64;
        if self.rng.chance(self.slow_percent) {
            steps += 10 + self.rng.below(50) as i64;
        }
        self.net.push(Msg { at: self.now + steps * STEP_MS, from, to, body });
    }

    /// One step: time moves, due messages arrive in a shuffled order, then every actor's timers.
    pub fn step(&mut self) {
        self.now += STEP_MS;
        let now = self.now;
        self.isolated.retain(|_, until| *until > now);
        let (mut due, rest): (Vec<Msg>, Vec<Msg>) = std::mem::take(&mut self.net).into_iter().partition(|m| m.at <= now);
        self.net = rest;
        for i in (1..due.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            due.swap(i, j);
        }
        for m in due {
            // A link cut while the message was on it loses it too.
            if self.cut(m.from) || self.cut(m.to) {
                continue;
            }
            match m.to {
                Node::Controller => self.controller_receive(m.from, m.body),
                Node::Broker(b) => self.broker_receive(b, m.from, m.body),
                Node::Client => self.client_receive(m.body),
            }
        }
        self.controller_tick();
        for id in IDS {
            self.broker_tick(id);
        }
        self.client_tick();
    }

    // ---- brokers ----

    fn broker_receive(&mut self, b: i32, from: Node, body: Body) {
        let i = Self::index(b);
        if self.brokers[i].part.is_none() {
            return; // nobody listens on a crashed broker's port
        }
        if matches!(body, Body::Fetch { .. } | Body::Produce { .. }) && !self.brokers[i].serving {
            return;
        }
        match body {
            Body::Fetch { id, offset, last_epoch, leader_epoch } => {
                let Node::Broker(from) = from else { return };
                let f = Parked { from, id, offset, last_epoch, leader_epoch, until: self.now + FETCH_WAIT_MS };
                self.serve(i, f, false);
            }
            Body::FetchResp { id, pd } => self.fetched(b, id, pd),
            Body::Produce { id, seq } => {
                let p = self.brokers[i].part.as_ref().expect("up");
                match p.append(&batch_for(seq), -1, self.now) {
                    Ok(info) => {
                        if self.verbose {
                            self.note(format!("broker {b} appended sequence {seq} at {} (epoch {})", info.base_offset, p.leader_epoch()));
                        }
                        let tag = TAG_BASE + seq as i64;
                        let w = Waiting {
                            id,
                            base_offset: info.base_offset,
                            last_offset: info.last_offset,
                            tag,
                            deadline: self.now + PRODUCE_TIMEOUT_MS,
                        };
                        self.brokers[i].waiting.push(w);
                        self.sync_mirror(i);
                        // The append wakes the fetches waiting for data.
                        for f in std::mem::take(&mut self.brokers[i].parked) {
                            self.serve(i, f, true);
                        }
                    }
                    Err(e) => {
                        // One request in flight, every earlier sequence acknowledged: the leader
                        // of the current epoch is out of step only if it lost one. (A zombie
                        // leader, cut off or on stale metadata, may well be.)
                        let st = &self.ctl.state;
                        if matches!(e, Error::OutOfOrderSequence { .. }) && st.leader == b && p.leader_epoch() == st.leader_epoch {
                            self.fail(format!("leader {b} refused sequence {seq}: {e}"));
                        }
                        self.send(Node::Broker(b), Node::Client, Body::ProduceResp { id, result: Err(e) });
                    }
                }
            }
            Body::AlterResp { id, result } => {
                if matches!(self.brokers[i].alter, Alter::Sent { id: sent, .. } if sent == id) {
                    self.brokers[i].alter = match result {
                        Ok(partition_epoch) => Alter::Applying { partition_epoch, until: self.now + ALTER_TIMEOUT_MS },
                        Err(_) => Alter::Backoff { until: self.now + ALTER_BACKOFF_MS },
                    };
                }
            }
            Body::Registered { incarnation, epoch } => {
                let br = &mut self.brokers[i];
                if incarnation == br.incarnation && br.epoch.is_none() {
                    br.epoch = Some(epoch);
                    br.next_heartbeat = self.now;
                }
            }
            Body::HeartbeatOk { fenced } if !fenced && !self.brokers[i].serving => {
                self.brokers[i].serving = true;
                self.note(format!("broker {b} serves"));
                // `start_applying_roles`: the roles of the image it has caught up to.
                if let Some(k) = self.brokers[i].known.clone() {
                    let p = self.brokers[i].part.as_ref().expect("up");
                    p.set_replica_state_at(&k, b, self.now);
                    self.brokers[i].next_fetch = self.now;
                }
            }
            Body::HeartbeatStale => {
                // The controller forgot this registration: register again.
                self.brokers[i].epoch = None;
                self.brokers[i].next_register = self.now;
            }
            Body::Push { state } if self.brokers[i].known.as_ref().is_none_or(|k| state.partition_epoch >= k.partition_epoch) => {
                if self.brokers[i].serving {
                    self.apply_state(i, state);
                } else {
                    // Caught up in the metadata, not acted on: `follow_image` waits for the roles.
                    self.brokers[i].known = Some(state);
                }
            }
            _ => {}
        }
        self.check_waiting(i);
    }

    /// Answers a follower's fetch, or (the first time, with nothing to copy) parks it.
    fn serve(&mut self, i: usize, f: Parked, last_try: bool) {
        let b = self.brokers[i].id;
        let p = self.brokers[i].part.as_ref().expect("up");
        let (pd, change) = serve_fetch(p, f.from, f.offset, f.last_epoch, f.leader_epoch, self.now);
        if let Some(c) = change {
            self.request_isr_change(b, c);
        }
        let nothing = pd.error_code == 0 && pd.records.as_ref().is_none_or(|r| r.is_empty()) && pd.diverging_epoch.end_offset < 0;
        if nothing && !last_try {
            self.brokers[i].parked.push(f);
        } else {
            self.send(Node::Broker(b), Node::Broker(f.from), Body::FetchResp { id: f.id, pd });
        }
    }

    /// What `reconcile` does with a partition state: `set_replica_state`, fetchers re-pointed.
    pub fn apply_state(&mut self, i: usize, state: PartitionState) {
        let now = self.now;
        let br = &mut self.brokers[i];
        let leader_moved = br.known.as_ref().is_none_or(|k| k.leader != state.leader);
        if let Some(p) = &br.part {
            p.set_replica_state_at(&state, br.id, now);
        }
        if leader_moved {
            // The fetcher of the old leader is stopped; a new one starts at once.
            br.fetch = None;
            br.next_fetch = now;
        } else {
            br.next_fetch = br.next_fetch.min(now);
        }
        if matches!(br.alter, Alter::Applying { partition_epoch, .. } if state.partition_epoch >= partition_epoch) {
            br.alter = Alter::Idle;
        }
        br.known = Some(state);
    }

    /// `Broker::request_isr_change`: one change in flight per partition.
    fn request_isr_change(&mut self, b: i32, change: IsrChange) {
        let i = Self::index(b);
        if self.brokers[i].alter != Alter::Idle {
            return;
        }
        let ends: Vec<usize> = self.brokers.iter().map(|b| b.mirror.len()).collect();
        let hw = self.brokers[i].part.as_ref().map_or(-1, |p| p.high_watermark());
        self.note(format!(
            "broker {b} asks for ISR {:?} (epochs {}/{}; HW {hw}, log ends {ends:?})",
            change.isr, change.leader_epoch, change.partition_epoch
        ));
        let id = self.id();
        let broker_epoch = self.brokers[i].epoch.unwrap_or(0);
        self.brokers[i].alter = Alter::Sent { id, until: self.now + ALTER_TIMEOUT_MS };
        self.send(Node::Broker(b), Node::Controller, Body::Alter { id, broker_epoch, change });
    }

    fn fetched(&mut self, b: i32, id: u64, pd: PartitionData) {
        let i = Self::index(b);
        let Some((_, _, fetched_in)) = self.brokers[i].fetch.filter(|(sent, _, _)| *sent == id) else {
            return; // an answer to a fetch given up on
        };
        self.brokers[i].fetch = None;
        let before = self.brokers[i].mirror.len();
        let p = self.brokers[i].part.as_ref().expect("up");
        let r = handle_partition(p, &pd, fetched_in, self.now);
        if self.verbose && (r.is_err() || pd.error_code != 0) {
            self.note(format!("broker {b} fetch: error {} hw {}, applying it: {r:?}", pd.error_code, pd.high_watermark));
        }
        self.sync_mirror(i);
        let after = self.brokers[i].mirror.len();
        if after < before {
            self.stats.truncations += 1;
            self.note(format!("broker {b} truncated {before} -> {after} (error {}, diverging {:?})", pd.error_code, pd.diverging_epoch));
        }
        let wait = match r {
            Err(e) => {
                if matches!(e, Error::CorruptMessage(_)) {
                    self.fail(format!("broker {b} could not append what its leader sent: {e}"));
                }
                FETCH_BACKOFF_MS
            }
            Ok(()) => 0,
        };
        self.brokers[i].next_fetch = self.now + wait;
    }

    /// acks=all: answers every waiting produce whose fate is known, as `wait_replicated` would.
    fn check_waiting(&mut self, i: usize) {
        let now = self.now;
        let br = &mut self.brokers[i];
        let Some(p) = br.part.as_ref() else { return };
        let mut answers = Vec::new();
        br.waiting.retain(|w| match p.replicated(w.last_offset, self_min_isr(p)) {
            Ok(true) => {
                answers.push((w.id, Ok(w.base_offset), Some(w.tag)));
                false
            }
            Ok(false) if now < w.deadline => true,
            Ok(false) => {
                answers.push((w.id, Err(Error::RequestTimedOut("not replicated in time".into())), None));
                false
            }
            Err(e) => {
                answers.push((w.id, Err(e), None));
                false
            }
        });
        let b = self.brokers[i].id;
        for (id, result, tag) in answers {
            if let (Ok(offset), Some(tag)) = (&result, tag) {
                self.check_on_isr(b, *offset, tag);
            }
            self.send(Node::Broker(b), Node::Client, Body::ProduceResp { id, result });
        }
    }

    /// At the moment of an acknowledgement, every ISR member (as the controller has it)
    /// holds the record: any of them may be the next leader.
    fn check_on_isr(&mut self, leader: i32, offset: i64, tag: i64) {
        for m in self.ctl.state.isr.clone() {
            let have = self.brokers[Self::index(m)].mirror.get(offset as usize).map(|e| e.tag);
            if have != Some(tag) {
                self.fail(format!(
                    "broker {leader} acknowledged offset {offset} (tag {tag}) but ISR member {m} holds {have:?} there (controller ISR {:?})",
                    self.ctl.state.isr
                ));
            }
        }
    }

    fn broker_tick(&mut self, b: i32) {
        let i = Self::index(b);
        let now = self.now;
        if self.brokers[i].part.is_none() {
            return;
        }
        let br = &mut self.brokers[i];
        br.alter = match br.alter {
            Alter::Sent { until, .. } if until <= now => Alter::Backoff { until: now + ALTER_BACKOFF_MS },
            Alter::Applying { until, .. } | Alter::Backoff { until } if until <= now => Alter::Idle,
            a => a,
        };
        if br.epoch.is_none() && now >= br.next_register {
            br.next_register = now + 100;
            let incarnation = br.incarnation;
            self.send(Node::Broker(b), Node::Controller, Body::Register { incarnation });
        }
        let br = &mut self.brokers[i];
        if let Some(epoch) = br.epoch.filter(|_| now >= br.next_heartbeat) {
            br.next_heartbeat = now + HEARTBEAT_MS;
            let applied = br.known.as_ref().map_or(-1, |k| k.partition_epoch);
            self.send(Node::Broker(b), Node::Controller, Body::Heartbeat { epoch, applied });
        }
        self.fetch_tick(i);
        let (due, waiting): (Vec<Parked>, Vec<Parked>) =
            std::mem::take(&mut self.brokers[i].parked).into_iter().partition(|f| f.until <= now);
        self.brokers[i].parked = waiting;
        for f in due {
            self.serve(i, f, true);
        }
        if now >= self.brokers[i].next_shrink && self.brokers[i].serving {
            self.brokers[i].next_shrink = now + SHRINK_CHECK_MS;
            let change = self.brokers[i].part.as_ref().and_then(|p| p.isr_shrink(now, LAG_MS));
            if let Some(c) = change {
                self.request_isr_change(b, c);
            }
        }
        self.check_waiting(i);
    }

    /// The fetcher: one fetch in flight to the leader the metadata names, as `fetcher::run`.
    fn fetch_tick(&mut self, i: usize) {
        let now = self.now;
        let br = &mut self.brokers[i];
        let leader = br.known.as_ref().map_or(-1, |k| k.leader);
        if leader < 0 || leader == br.id || now < br.paused_until || !br.serving {
            return;
        }
        if let Some((_, sent, _)) = br.fetch {
            if now - sent <= FETCH_TIMEOUT_MS {
                return;
            }
            br.fetch = None;
            br.next_fetch = now + FETCH_BACKOFF_MS;
        }
        if now < br.next_fetch {
            return;
        }
        let p = br.part.as_ref().expect("up");
        let (offset, last_epoch, _) = p.fetch_position();
        let leader_epoch = p.leader_epoch();
        let id = self.id();
        self.brokers[i].fetch = Some((id, now, leader_epoch));
        let b = self.brokers[i].id;
        self.send(Node::Broker(b), Node::Broker(leader), Body::Fetch { id, offset, last_epoch, leader_epoch });
    }

    /// Brings `mirror` in step with the log: drops what was truncated, reads what was added.
    pub fn sync_mirror(&mut self, i: usize) {
        let br = &mut self.brokers[i];
        let Some(p) = &br.part else { return };
        let leo = p.with_state(|s| s.log.log_end_offset());
        br.mirror.truncate(leo.max(0) as usize);
        let mut bad = None;
        while (br.mirror.len() as i64) < leo {
            let from = br.mirror.len() as i64;
            let bytes = p.with_state(|s| s.log.read(from, leo, 1 << 20, true)).map(|r| r.bytes).unwrap_or_default();
            let before = br.mirror.len();
            for raw in crate::log::records::batches(&bytes) {
                let Ok(h) = BatchHeader::parse(raw) else { break };
                if h.base_offset != br.mirror.len() as i64 || h.records_count != 1 {
                    bad = Some(format!(
                        "broker {}: batch at {} holds {} records, expected offset {}",
                        br.id,
                        h.base_offset,
                        h.records_count,
                        br.mirror.len()
                    ));
                    break;
                }
                br.mirror.push(Entry { epoch: h.partition_leader_epoch, tag: h.base_timestamp, crc: h.crc });
            }
            if bad.is_some() || br.mirror.len() == before {
                bad.get_or_insert_with(|| format!("broker {}: cannot read its log at {from} (end {leo})", br.id));
                break;
            }
        }
        if let Some(b) = bad {
            self.fail(b);
        }
    }

    // ---- the producer ----

    fn client_tick(&mut self) {
        let now = self.now;
        if let Some((_, sent)) = self.client.inflight {
            // request.timeout.ms: a bit more than the broker's own wait.
            if now - sent > PRODUCE_TIMEOUT_MS + 50 {
                self.client.inflight = None;
                self.client.next_send = now + 20;
            }
            return;
        }
        if self.client.stop || now < self.client.next_send {
            return;
        }
        // The client's metadata: mostly the current leader, sometimes a stale guess.
        let target = if self.rng.chance(10) { IDS[self.rng.below(3) as usize] } else { self.ctl.state.leader };
        if target < 0 {
            self.client.next_send = now + 50;
            return;
        }
        let id = self.id();
        self.client.inflight = Some((id, now));
        let seq = self.client.seq;
        self.send(Node::Client, Node::Broker(target), Body::Produce { id, seq });
    }

    fn client_receive(&mut self, body: Body) {
        let Body::ProduceResp { id, result } = body else { return };
        if self.client.inflight.is_none_or(|(sent, _)| sent != id) {
            return; // an answer to a request already given up on
        }
        self.client.inflight = None;
        let tag = TAG_BASE + self.client.seq as i64;
        match result {
            Ok(offset) => {
                if self.verbose {
                    self.note(format!("client: sequence {} acknowledged at {offset}", self.client.seq));
                }
                if let Some(old) = self.acked.insert(offset, tag) {
                    self.fail(format!("offset {offset} acknowledged twice: tags {old} and {tag}"));
                }
                self.stats.acked += 1;
                self.client.seq += 1;
                self.client.next_send = self.now + self.rng.below(8) as i64 * STEP_MS;
            }
            Err(e @ (Error::InvalidRecord(_) | Error::CorruptMessage(_))) => {
                self.fail(format!("producing sequence {} failed: {e}", self.client.seq));
            }
            Err(_) => self.client.next_send = self.now + 30,
        }
    }
}

fn self_min_isr(p: &Partition) -> usize {
    p.with_state(|s| s.append_config.min_insync_replicas).max(1) as usize
}

/// The leader's side of one partition of a replica fetch, as `api/fetch.rs` does it (v12):
/// a diverging fetcher is told where to truncate; otherwise its progress is noted first,
/// so the answer carries the high watermark it moved. Errors go out as codes, with -1 offsets.
fn serve_fetch(
    p: &Partition,
    replica: i32,
    offset: i64,
    last_epoch: i32,
    leader_epoch: i32,
    now: i64,
) -> (PartitionData, Option<IsrChange>) {
    let mut diverging = None;
    let mut change = None;
    let result = if last_epoch >= 0 && p.is_leader() && p.diverging(last_epoch, offset).is_some() {
        diverging = p.diverging(last_epoch, offset);
        p.fetch_slice_for_follower(offset, 0, false, leader_epoch)
    } else {
        change = p.follower_fetched(replica, offset, now);
        p.fetch_slice_for_follower(offset, FETCH_MAX_BYTES, true, leader_epoch)
    };
    let pd = match result {
        Ok(d) => PartitionData::default()
            .with_high_watermark(d.high_watermark)
            .with_last_stable_offset(d.last_stable_offset)
            .with_log_start_offset(d.log_start_offset)
            .with_records(Some(d.slice.map(|s| Bytes::from(s.to_vec().unwrap_or_default())).unwrap_or_default()))
            .with_diverging_epoch(
                diverging.map(|(e, end)| EpochEndOffset::default().with_epoch(e).with_end_offset(end)).unwrap_or_default(),
            ),
        Err(e) => {
            PartitionData::default().with_error_code(e.code()).with_high_watermark(-1).with_last_stable_offset(-1).with_log_start_offset(-1)
        }
    };
    (pd, change)
}
