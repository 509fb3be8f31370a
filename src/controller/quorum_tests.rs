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
use crate::testing::Rng;

const TIMING: Timing = Timing { election_ticks: 10, heartbeat_ticks: 2 };

struct Sim {
    dirs: Vec<TempDir>,
    ids: Vec<u64>,
    nodes: BTreeMap<u64, QuorumNode>,
    in_flight: Vec<Message>,
    rng: Rng,
    drop_percent: u64,
    /// Nodes cut off from everyone.
    isolated: Vec<u64>,
    /// Every leader seen, by term: two in one term would break Raft's election safety.
    leaders: HashMap<u64, u64>,
}

impl Sim {
    fn new(n: u64, seed: u64) -> Sim {
        let ids: Vec<u64> = (1..=n).collect();
        let dirs: Vec<TempDir> = ids.iter().map(|_| tempfile::tempdir().unwrap()).collect();
        let mut nodes = BTreeMap::new();
        for (i, id) in ids.iter().enumerate() {
            nodes.insert(*id, QuorumNode::open(dirs[i].path(), *id, &ids, TIMING).unwrap());
        }
        Sim { dirs, ids, nodes, in_flight: Vec::new(), rng: Rng(seed | 1), drop_percent: 5, isolated: Vec::new(), leaders: HashMap::new() }
    }

    fn crash(&mut self, id: u64) {
        self.nodes.remove(&id);
        self.in_flight.retain(|m| m.to != id && m.from != id);
    }

    fn restart(&mut self, id: u64) {
        let i = self.ids.iter().position(|x| *x == id).unwrap();
        self.nodes.insert(id, QuorumNode::open(self.dirs[i].path(), id, &self.ids, TIMING).unwrap());
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

#[test]
fn a_lagging_node_is_brought_up_by_snapshot() {
    let mut sim = Sim::new(3, 99);
    let leader = sim.run_until_leader();
    let lagging = if leader == 3 { 2 } else { 3 };
    sim.crash(lagging);
    for i in 0..40 {
        sim.propose(topic(i));
        sim.run(2);
    }
    let before = sim.converge();
    // Compact every live log past what node 3 has: it can only catch up from a snapshot.
    for n in sim.nodes.values_mut() {
        n.snapshot_now().unwrap();
    }
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
