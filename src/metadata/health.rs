//! Cluster health by `rpk cluster health`'s rules: one check shared by `sluice cluster
//! health` (which reads it from Metadata) and the HTTP listener (which reads its image),
//! so the CLI and the web console name the same reasons.

use std::collections::BTreeSet;

use serde_json::{json, Value};

/// What a health check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    pub controller_id: i32,
    pub all_nodes: Vec<i32>,
    pub nodes_down: Vec<i32>,
    pub leaderless: Vec<String>,
    pub under_replicated: Vec<String>,
    pub under_min_isr: Vec<String>,
}

/// One partition as a health check needs it.
pub struct PartitionHealth<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub leader: i32,
    pub replicas: &'a [i32],
    pub isr: &'a [i32],
    /// The topic's `min.insync.replicas`, when known.
    pub min_isr: Option<usize>,
}

impl PartitionHealth<'_> {
    /// Fewer in sync than assigned.
    pub fn under_replicated(&self) -> bool {
        self.isr.len() < self.replicas.len()
    }

    /// Fewer in sync than `acks=all` needs.
    pub fn under_min_isr(&self) -> bool {
        self.min_isr.is_some_and(|m| self.isr.len() < m)
    }
}

impl Health {
    /// Checks `partitions` against the `live` brokers (those Metadata lists: registered and
    /// not fenced); a node is down when a replica list names it but it is not live.
    pub fn check<'a>(controller_id: i32, live: &BTreeSet<i32>, partitions: impl IntoIterator<Item = PartitionHealth<'a>>) -> Health {
        let mut all = live.clone();
        let mut h = Health { controller_id, ..Health::default() };
        for p in partitions {
            let name = format!("{}/{}", p.topic, p.partition);
            all.extend(p.replicas.iter().copied());
            if p.leader < 0 {
                h.leaderless.push(name.clone());
            }
            if p.under_replicated() {
                h.under_replicated.push(name.clone());
            }
            if p.under_min_isr() {
                h.under_min_isr.push(name);
            }
        }
        h.all_nodes = all.iter().copied().collect();
        h.nodes_down = all.difference(live).copied().collect();
        h
    }

    /// The reasons it is not healthy, by rpk's names.
    pub fn reasons(&self) -> Vec<&'static str> {
        let mut r = Vec::new();
        if self.controller_id < 0 {
            r.push("no_elected_controller");
        }
        if !self.nodes_down.is_empty() {
            r.push("nodes_down");
        }
        if !self.leaderless.is_empty() {
            r.push("leaderless_partitions");
        }
        if !self.under_replicated.is_empty() {
            r.push("under_replicated_partitions");
        }
        if !self.under_min_isr.is_empty() {
            r.push("under_min_isr_partitions");
        }
        r
    }

    /// Whether there is no reason.
    pub fn healthy(&self) -> bool {
        self.reasons().is_empty()
    }

    /// The JSON of `sluice cluster health --format json` and `GET /v1/health`.
    pub fn to_json(&self) -> Value {
        json!({"is_healthy": self.healthy(), "unhealthy_reasons": self.reasons(), "controller_id": self.controller_id,
               "all_nodes": self.all_nodes, "nodes_down": self.nodes_down, "leaderless_partitions": self.leaderless,
               "under_replicated_partitions": self.under_replicated, "under_min_isr_partitions": self.under_min_isr})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part<'a>(partition: i32, leader: i32, replicas: &'a [i32], isr: &'a [i32], min_isr: Option<usize>) -> PartitionHealth<'a> {
        PartitionHealth { topic: "t", partition, leader, replicas, isr, min_isr }
    }

    #[test]
    fn a_full_isr_with_every_node_live_is_healthy() {
        let live = BTreeSet::from([1, 2, 3]);
        let h = Health::check(1, &live, [part(0, 1, &[1, 2, 3], &[1, 2, 3], Some(2))]);
        assert!(h.healthy(), "{:?}", h.reasons());
        assert_eq!(h.all_nodes, vec![1, 2, 3]);
    }

    #[test]
    fn each_reason_is_named() {
        let live = BTreeSet::from([1, 2]);
        let h = Health::check(
            -1,
            &live,
            [part(0, 1, &[1, 2, 3], &[1, 2], None), part(1, -1, &[3], &[3], Some(1)), part(2, 2, &[1, 2, 3], &[2], Some(2))],
        );
        assert_eq!(
            h.reasons(),
            ["no_elected_controller", "nodes_down", "leaderless_partitions", "under_replicated_partitions", "under_min_isr_partitions"]
        );
        assert_eq!(h.nodes_down, vec![3]);
        assert_eq!(h.leaderless, vec!["t/1"]);
        assert_eq!(h.under_replicated, vec!["t/0", "t/2"]);
        assert_eq!(h.under_min_isr, vec!["t/2"]);
    }
}
