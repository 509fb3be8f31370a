//! The controller actor of the replication simulation: it registers and fences brokers,
//! applies AlterPartition with the real controller's checks, and elects leaders with
//! `controller::election` when a leader's broker goes (fenced, or restarted) or returns.
//! It never fails: the quorum under it is simulated on its own in `controller/quorum_tests.rs`.

use std::collections::BTreeMap;

use super::{Body, Node, Sim, IDS, SESSION_MS};
use crate::controller::election;
use crate::error::{Error, Result};
use crate::metadata::records::PartitionState;
use crate::partition::IsrChange;

/// Brokers poll the metadata log; here the controller sends the state again this often.
const REPUSH_MS: i64 = 100;

/// A broker's registration, as the controller has it.
pub struct Reg {
    pub epoch: u64,
    pub incarnation: u64,
    pub fenced: bool,
    pub last_heartbeat: i64,
    /// The partition epoch when it registered: `applied >= epoch` in `Controller::heartbeat`.
    pub caught_up_at: i32,
}

/// The active controller, reduced to what one partition needs.
pub struct Controller {
    pub state: PartitionState,
    pub brokers: BTreeMap<i32, Reg>,
    /// Stand-in for the metadata log's offset, which broker epochs come from.
    offset: u64,
    next_push: i64,
    /// Every leader ever chosen, by leader epoch.
    pub leaders: BTreeMap<i32, i32>,
}

impl Controller {
    pub fn new(state: PartitionState, brokers: BTreeMap<i32, Reg>, now: i64) -> Controller {
        let leaders = BTreeMap::from([(state.leader_epoch, state.leader)]);
        Controller { state, brokers, offset: 10, next_push: now, leaders }
    }

    pub fn live(&self, b: i32) -> bool {
        self.brokers.get(&b).is_some_and(|r| !r.fenced)
    }
}

impl Sim {
    /// Commits a new partition state, as a PartitionChange record would, and tells everyone.
    fn commit(&mut self, next: PartitionState, why: &str) {
        let cur = self.ctl.state.clone();
        if next.leader_epoch < cur.leader_epoch || next.partition_epoch <= cur.partition_epoch {
            self.fail(format!("controller epochs went back: {cur:?} -> {next:?}"));
        }
        if next.leader >= 0 && next.leader != cur.leader {
            if !cur.isr.contains(&next.leader) {
                self.fail(format!("{why}: elected {} from outside the ISR {:?}", next.leader, cur.isr));
            }
            if let Some(prev) = self.ctl.leaders.insert(next.leader_epoch, next.leader).filter(|p| *p != next.leader) {
                self.fail(format!("leader epoch {} given to {prev} and to {}", next.leader_epoch, next.leader));
            }
            self.stats.elections += 1;
        }
        if next.isr != cur.isr {
            self.stats.isr_changes += 1;
        }
        self.note(format!(
            "controller ({why}): leader {} -> {}, epoch {}, isr {:?} -> {:?}, partition epoch {}",
            cur.leader, next.leader, next.leader_epoch, cur.isr, next.isr, next.partition_epoch
        ));
        self.ctl.state = next;
        self.push_all();
    }

    fn push_all(&mut self) {
        self.ctl.next_push = self.now + REPUSH_MS;
        for id in IDS {
            self.send(Node::Controller, Node::Broker(id), Body::Push { state: self.ctl.state.clone() });
        }
    }

    /// `broker_gone_changes`: the broker leaves the ISR (unless last) and leadership moves.
    fn broker_gone(&mut self, b: i32, why: &str) {
        let live: Vec<i32> = IDS.iter().copied().filter(|x| self.ctl.live(*x)).collect();
        if let Some(c) = election::on_broker_gone(&self.ctl.state, b, &|x| live.contains(&x), false) {
            self.commit(c.state, why);
        }
    }

    pub(super) fn controller_receive(&mut self, from: Node, body: Body) {
        let Node::Broker(b) = from else { return };
        match body {
            Body::Register { incarnation } => {
                // A restarted broker's old self gives up its places before the new one registers.
                if self.ctl.brokers.get(&b).is_some_and(|r| r.incarnation != incarnation) {
                    self.broker_gone(b, &format!("broker {b} restarted"));
                }
                self.ctl.offset += 1;
                let epoch = self.ctl.offset;
                // It may serve once it has applied the metadata up to here (its old self's exit).
                let caught_up_at = self.ctl.state.partition_epoch;
                self.ctl.brokers.insert(b, Reg { epoch, incarnation, fenced: true, last_heartbeat: self.now, caught_up_at });
                self.send(Node::Controller, from, Body::Registered { incarnation, epoch });
            }
            Body::Heartbeat { epoch, applied } => {
                let Some(r) = self.ctl.brokers.get_mut(&b).filter(|r| r.epoch == epoch) else {
                    self.send(Node::Controller, from, Body::HeartbeatStale);
                    return;
                };
                r.last_heartbeat = self.now;
                let unfence = r.fenced && applied >= r.caught_up_at;
                let fenced = r.fenced && !unfence;
                r.fenced = fenced;
                self.send(Node::Controller, from, Body::HeartbeatOk { fenced });
                if unfence {
                    self.note(format!("controller: broker {b} unfenced"));
                    // `broker_back_changes`: an offline partition it can lead gets a leader.
                    let st = &self.ctl.state;
                    if st.leader < 0 && st.replicas.contains(&b) {
                        let live: Vec<i32> = IDS.iter().copied().filter(|x| self.ctl.live(*x)).collect();
                        if let Some(c) = election::elect(st, st.isr.clone(), &|x| live.contains(&x), false) {
                            self.commit(c.state, &format!("broker {b} back"));
                        }
                    }
                }
            }
            Body::Alter { id, broker_epoch, change } => {
                let result = self.alter_partition(b, broker_epoch, &change);
                if let Ok(next) = &result {
                    self.commit(next.clone(), &format!("AlterPartition from {b}"));
                }
                self.send(Node::Controller, from, Body::AlterResp { id, result: result.map(|s| s.partition_epoch) });
            }
            _ => {}
        }
    }

    /// The checks of `Controller::alter_partition`, in its order.
    fn alter_partition(&self, b: i32, broker_epoch: u64, change: &IsrChange) -> Result<PartitionState> {
        if self.ctl.brokers.get(&b).is_none_or(|r| r.epoch != broker_epoch || r.fenced) {
            return Err(Error::StaleBrokerEpoch);
        }
        let cur = &self.ctl.state;
        if cur.leader != b || cur.leader_epoch != change.leader_epoch {
            return Err(Error::FencedLeaderEpoch(change.leader_epoch));
        }
        if cur.partition_epoch != change.partition_epoch {
            return Err(Error::InvalidUpdateVersion);
        }
        if !change.isr.contains(&b) || change.isr.iter().any(|x| !cur.replicas.contains(x)) {
            return Err(Error::InvalidRequest(format!("ISR {:?} must hold the leader and only replicas", change.isr)));
        }
        if let Some(x) = change.isr.iter().find(|x| !cur.isr.contains(x) && !self.ctl.live(**x)) {
            return Err(Error::IneligibleReplica(format!("broker {x} is fenced")));
        }
        let mut next = cur.clone();
        next.isr = change.isr.clone();
        next.partition_epoch += 1;
        Ok(next)
    }

    pub(super) fn controller_tick(&mut self) {
        let now = self.now;
        let expired: Vec<i32> =
            self.ctl.brokers.iter().filter(|(_, r)| !r.fenced && now - r.last_heartbeat > SESSION_MS).map(|(b, _)| *b).collect();
        for b in expired {
            self.ctl.brokers.get_mut(&b).expect("registered").fenced = true;
            self.note(format!("controller: broker {b} missed its session, fenced"));
            self.broker_gone(b, &format!("broker {b} fenced"));
        }
        if now >= self.ctl.next_push {
            self.push_all();
        }
    }
}
