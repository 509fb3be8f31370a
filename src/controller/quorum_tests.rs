//! Tests of the metadata quorum without sockets or clocks: real nodes and real logs on
//! disk, a simulated network (seeded: messages are reordered, delayed, dropped, and cut
//! off), and a logical clock. raft-rs draws its election timeouts from its own random
//! source, so runs of a seed agree on the network, not on every election.

use std::collections::{BTreeMap, HashMap};

use raft::eraftpb::Message;
use tempfile::TempDir;

use super::quorum::{QuorumNode, Timing};
use crate::metadata::image::Image;
use crate::metadata::records::{Record, RecordBatch};
use crate::metadata::voters::{VoterChange, VoterInfo};
use crate::testing::Rng;

const TIMING: Timing = Timing { election_ticks: 10, heartbeat_ticks: 2 };

struct Sim {
    dirs: Vec<TempDir>,
    ids: Vec<u64>,
    /// The configured voters every node opens with (`controller.quorum.voters`).
    bootstrap: Vec<u64>,
    nodes: BTreeMap<u64, QuorumNode>,
    in_flight: Vec<Message>,
    rng: Rng,
    drop_percent: u64,
    /// Nodes cut off from everyone.
    isolated: Vec<u64>,
    /// Snapshot messages still to be lost on their way to a node, by node.
    lose_snapshots_to: HashMap<u64, usize>,
    /// Every leader seen, by term: two in one term would break Raft's election safety.
    leaders: HashMap<u64, u64>,
}

impl Sim {
    fn new(n: u64, seed: u64) -> Sim {
        Sim::with_voters(n, &(1..=n).collect::<Vec<_>>(), seed)
    }

    /// Nodes 1..=n, of which only `voters` vote: the others start as observers.
    fn with_voters(n: u64, voters: &[u64], seed: u64) -> Sim {
        let ids: Vec<u64> = (1..=n).collect();
        let dirs: Vec<TempDir> = ids.iter().map(|_| tempfile::tempdir().unwrap()).collect();
        let mut nodes = BTreeMap::new();
        for (i, id) in ids.iter().enumerate() {
            nodes.insert(*id, QuorumNode::open(dirs[i].path(), *id, voters, TIMING).unwrap());
        }
        Sim { dirs, ids, bootstrap: voters.to_vec(), nodes, in_flight: Vec::new(), rng: Rng(seed | 1), drop_percent: 5, isolated: Vec::new(), lose_snapshots_to: HashMap::new(), leaders: HashMap::new() }
    }

    fn crash(&mut self, id: u64) {
        self.nodes.remove(&id);
        self.in_flight.retain(|m| m.to != id && m.from != id);
    }

    fn restart(&mut self, id: u64) {
        let i = self.ids.iter().position(|x| *x == id).unwrap();
        self.nodes.insert(id, QuorumNode::open(self.dirs[i].path(), id, &self.bootstrap, TIMING).unwrap());
    }

    /// One logical step: every live node ticks, some messages are delivered, output is collected.
    fn step(&mut self) {
        for n in self.nodes.values_mut() {
            n.tick();
        }
        let mut msgs = std::mem::take(&mut self.in_flight);
        // Deliver in a shuffled order; hold some back for later, drop a few.
        for i in (1..msgs.len()).rev() {
            let j = (self.rng.next() % (i as u64 + 1)) as usize;
            msgs.swap(i, j);
        }
        for m in msgs {
            if self.rng.chance(self.drop_percent) || self.isolated.contains(&m.to) || self.isolated.contains(&m.from) {
                continue;
            }
            if m.get_msg_type() == raft::eraftpb::MessageType::MsgSnapshot {
                if let Some(left @ 1..) = self.lose_snapshots_to.get_mut(&m.to) {
                    *left -= 1;
                    continue;
                }
            }
            if self.rng.chance(10) {
                self.in_flight.push(m);
                continue;
            }
            if let Some(n) = self.nodes.get_mut(&m.to) {
                n.step(m);
            }
        }
        for (id, n) in self.nodes.iter_mut() {
            let out = n.process().unwrap();
            self.in_flight.extend(out.messages);
            if n.is_leader() {
                let prev = self.leaders.insert(n.term(), *id);
                assert!(prev.is_none_or(|p| p == *id), "two leaders ({prev:?} and {id}) in term {}", n.term());
            }
        }
    }

    fn run(&mut self, steps: usize) {
        for _ in 0..steps {
            self.step();
        }
    }

    fn leader(&self) -> Option<u64> {
        self.nodes.iter().find(|(id, n)| n.is_leader() && !self.isolated.contains(id)).map(|(id, _)| *id)
    }

    fn run_until_leader(&mut self) -> u64 {
        for _ in 0..2000 {
            if let Some(l) = self.leader() {
                return l;
            }
            self.step();
        }
        panic!("no leader elected");
    }

    fn propose(&mut self, rec: Record) -> bool {
        let Some(l) = self.leader() else { return false };
        self.nodes.get_mut(&l).unwrap().propose(vec![], &RecordBatch::new(vec![rec])).is_ok()
    }

    /// Has the leader propose a voter change (retrying while it is not ready for one) and
    /// runs until it is applied there.
    fn change(&mut self, change: VoterChange) {
        for _ in 0..2000 {
            if let Some(l) = self.leader() {
                if self.nodes.get_mut(&l).unwrap().propose_voter_change(vec![], &change).is_ok() {
                    for _ in 0..2000 {
                        self.step();
                        if self.leader().is_some_and(|l| !self.nodes[&l].voter_change_pending()) {
                            return;
                        }
                    }
                }
            }
            self.step();
        }
        panic!("{change:?} was not applied");
    }

    fn images(&self) -> Vec<Image> {
        self.nodes.values().map(|n| Image::clone(&n.image().load())).collect()
    }

    /// Runs until every live node has applied the same image (and returns it).
    fn converge(&mut self) -> Image {
        let saved = self.drop_percent;
        self.drop_percent = 0;
        for _ in 0..3000 {
            self.step();
            let imgs = self.images();
            if imgs.windows(2).all(|w| w[0] == w[1]) && self.leader().is_some() {
                // Everything the leader holds, not just what it committed so far.
                let last = self.nodes[&self.leader().unwrap()].last_index();
                if imgs[0].offset >= last {
                    self.drop_percent = saved;
                    return imgs[0].clone();
                }
            }
        }
        panic!("images did not converge: offsets {:?}", self.images().iter().map(|i| i.offset).collect::<Vec<_>>());
    }
}

fn topic(i: u64) -> Record {
    Record::Topic { name: format!("t{i}"), id: uuid::Uuid::from_u64_pair(7, i), configs: Default::default() }
}

#[test]
fn elects_one_leader_and_replicates_to_everyone() {
    for seed in 1..6 {
        let mut sim = Sim::new(3, seed);
        sim.run_until_leader();
        let mut accepted = 0;
        for i in 0..30 {
            if sim.propose(topic(i)) {
                accepted += 1;
            }
            sim.run(3);
        }
        let img = sim.converge();
        assert!(accepted > 0, "seed {seed}: nothing proposed");
        assert!(img.topics.len() <= accepted && !img.topics.is_empty(), "seed {seed}");
    }
}

#[test]
fn leader_crash_elects_a_new_leader_and_keeps_committed_records() {
    for seed in 10..16 {
        let mut sim = Sim::new(3, seed);
        let first = sim.run_until_leader();
        for i in 0..10 {
            sim.propose(topic(i));
            sim.run(2);
        }
        let before = sim.converge();
        sim.crash(first);
        let second = sim.run_until_leader();
        assert_ne!(first, second);
        assert!(sim.propose(topic(100)));
        let after = sim.converge();
        // Everything committed before the crash survives on the new leader.
        for name in before.topics.keys() {
            assert!(after.topics.contains_key(name), "seed {seed}: lost {name}");
        }
        assert!(after.topics.contains_key("t100"));
        sim.restart(first);
        let rejoined = sim.converge();
        assert_eq!(rejoined, after, "seed {seed}: the restarted node caught up to the same image");
    }
}

/// Crashes a follower, commits `records` topics without it and compacts every live log past
/// what it has, so it can only catch up from a snapshot. Returns it (still down) and the image.
fn lag_a_follower_behind_a_snapshot(sim: &mut Sim, records: u64) -> (u64, Image) {
    let leader = sim.run_until_leader();
    let lagging = if leader == 3 { 2 } else { 3 };
    sim.crash(lagging);
    for i in 0..records {
        sim.propose(topic(i));
        sim.run(2);
    }
    let img = sim.converge();
    for n in sim.nodes.values_mut() {
        n.snapshot_now().unwrap();
    }
    (lagging, img)
}

#[test]
fn a_lagging_node_is_brought_up_by_snapshot() {
    let mut sim = Sim::new(3, 99);
    let (lagging, before) = lag_a_follower_behind_a_snapshot(&mut sim, 40);
    sim.run_until_leader();
    assert!(sim.propose(topic(1000)));
    sim.restart(lagging);
    let img = sim.converge();
    assert!(img.topics.contains_key("t1000") && before.topics.keys().all(|k| img.topics.contains_key(k)));
    // And the snapshot it installed survives its own restart.
    sim.crash(lagging);
    sim.restart(lagging);
    assert_eq!(sim.converge(), img);
}

#[test]
fn a_follower_whose_snapshot_was_lost_gets_another() {
    let mut sim = Sim::new(3, 41);
    let (lagging, _) = lag_a_follower_behind_a_snapshot(&mut sim, 20);
    sim.lose_snapshots_to.insert(lagging, 1);
    sim.restart(lagging);
    // With no election to reset it, the leader must send the snapshot again by itself.
    let img = sim.converge();
    assert_eq!(sim.lose_snapshots_to[&lagging], 0, "the first snapshot was sent and lost");
    assert!(img.topics.contains_key("t19"));
}

#[test]
fn five_voters_survive_two_failures_but_not_three() {
    let mut sim = Sim::new(5, 5);
    let l = sim.run_until_leader();
    let others: Vec<u64> = sim.ids.iter().copied().filter(|i| *i != l).collect();
    sim.crash(others[0]);
    sim.crash(others[1]);
    assert!(sim.propose(topic(1)));
    let img = sim.converge();
    assert!(img.topics.contains_key("t1"));
    sim.crash(others[2]);
    sim.propose(topic(2));
    sim.run(400);
    // Two of five cannot commit; with check-quorum the old leader also steps down.
    assert!(sim.images().iter().all(|i| !i.topics.contains_key("t2")));
    assert!(sim.leader().is_none(), "a minority must not keep an active leader");
}

#[test]
fn an_isolated_leader_steps_down_and_the_majority_moves_on() {
    let mut sim = Sim::new(3, 42);
    let old = sim.run_until_leader();
    sim.isolated.push(old);
    let new = sim.run_until_leader();
    assert_ne!(old, new);
    assert!(sim.propose(topic(7)));
    sim.run(300);
    assert!(!sim.nodes[&old].is_leader(), "the cut-off leader noticed it lost the quorum");
    sim.isolated.clear();
    let img = sim.converge();
    assert!(img.topics.contains_key("t7"));
}

#[test]
fn a_voter_joins_as_a_learner_is_promoted_and_the_leader_can_remove_itself() {
    // Without and with a compacted log: the learner then catches up from a snapshot that
    // must name it in its configuration.
    for (seed, compact) in [(7, false), (8, true)] {
        let mut sim = Sim::with_voters(4, &[1, 2, 3], seed);
        sim.run_until_leader();
        for i in 0..10 {
            sim.propose(topic(i));
            sim.run(2);
        }
        sim.run(100);
        if compact {
            for (_, n) in sim.nodes.iter_mut().filter(|(id, _)| **id != 4) {
                n.snapshot_now().unwrap();
            }
        }
        let info = VoterInfo { directory_id: uuid::Uuid::from_u64_pair(4, 4), endpoints: vec![] };
        sim.change(VoterChange::AddLearner { id: 4, info: info.clone() });
        let l = sim.run_until_leader();
        assert_eq!(sim.nodes[&l].learners(), vec![4], "seed {seed}");
        let target = sim.nodes[&l].commit_index();
        for _ in 0..3000 {
            let l = sim.run_until_leader();
            if sim.nodes[&l].progress().iter().any(|(id, m)| *id == 4 && *m >= target) {
                break;
            }
            sim.step();
        }
        sim.change(VoterChange::Promote { id: 4 });
        let img = sim.converge();
        assert_eq!(img.voters.get(&4), Some(&info), "seed {seed}");
        assert!(sim.nodes.values().all(|n| n.voters() == vec![1, 2, 3, 4]), "seed {seed}");
        assert!(sim.propose(topic(50)));
        assert!(sim.converge().topics.contains_key("t50"), "seed {seed}: four voters commit");

        // The leader removes itself: it stays a learner and hands leadership over.
        let old = sim.run_until_leader();
        sim.change(VoterChange::Demote { id: old as i32 });
        let mut new = old;
        for _ in 0..3000 {
            new = sim.run_until_leader();
            if new != old {
                break;
            }
            sim.step();
        }
        assert_ne!(new, old, "seed {seed}: the removed leader resigned");
        let rest: Vec<u64> = (1..=4).filter(|i| *i != old).collect();
        assert!(sim.propose(topic(60)));
        let img = sim.converge();
        assert!(img.topics.contains_key("t60"), "seed {seed}: the removed node still follows the log");
        assert!(sim.nodes.values().all(|n| n.voters() == rest), "seed {seed}");

        // The voter set is in the log: restarts keep it, whatever the configured voters say.
        for id in 1..=4 {
            sim.crash(id);
            sim.restart(id);
        }
        sim.run_until_leader();
        sim.converge();
        assert!(sim.nodes.values().all(|n| n.voters() == rest), "seed {seed}: after restarts");
    }
}
