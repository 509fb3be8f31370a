//! `leader-crash`: a partition's leader dies (SIGKILL) under an acks=all load. Kafka's
//! promise: the controller elects a new leader from the ISR, the producer and consumers go
//! on against it, nothing acknowledged is lost or doubled, and the old leader, restarted,
//! truncates to the new leader's log and rejoins the ISR.

use std::time::Duration;

use super::harness::{ids, values, Harness};
use crate::dev_cluster::dev::DevCommand;

const RECORDS: usize = 500;

/// Runs the scenario; the error says what did not hold.
pub fn run(h: &mut Harness) -> Result<(), String> {
    let topic = format!("leader-crash-{}", crate::clock::now_ms());
    h.create_topic(&topic, 1, 3, &["min.insync.replicas=2"])?;
    let before = values("before", RECORDS);
    h.produce(&topic, 0, &before, "all")?;
    h.say(&format!("produced {RECORDS} records with acks=all"));
    let p = h.partition(&topic, 0)?;
    let (leader, isr) = (p["leader"].as_i64().unwrap_or(-1), ids(&p, "isr"));
    h.say(&format!("killing the leader, node {leader} (isr {isr:?}, leader epoch {})", p["leader_epoch"]));
    h.dev(DevCommand::Kill { node: leader as u16 })?;

    let after = values("after", RECORDS);
    h.produce(&topic, 0, &after, "all").map_err(|e| format!("the producer did not continue after the crash: {e}"))?;
    h.say(&format!("the producer went on: {RECORDS} more records acknowledged"));
    let p = h.wait_for("a new leader", Duration::from_secs(30), |h| {
        h.partition(&topic, 0).ok().filter(|p| p["leader"].as_i64().is_some_and(|l| l >= 0 && l != leader))
    })?;
    let new = p["leader"].as_i64().unwrap_or(-1);
    if !isr.contains(&new) {
        return Err(format!("new leader {new} was not in the ISR {isr:?} (an unclean election)"));
    }
    h.say(&format!("new leader: node {new}, from the ISR {isr:?}; leader epoch {}, isr now {}", p["leader_epoch"], p["isr"]));

    let acked: Vec<String> = before.into_iter().chain(after).collect();
    h.expect_intact(&topic, 0, &acked, &[], "after the election")?;
    h.say(&format!("restarting node {leader}"));
    h.dev(DevCommand::Restart { node: leader as u16 })?;
    let p = h.wait_for(&format!("node {leader} back in the ISR"), Duration::from_secs(60), |h| {
        h.partition(&topic, 0).ok().filter(|p| ids(p, "isr").contains(&leader))
    })?;
    h.say(&format!("node {leader} rejoined: isr {}", p["isr"]));
    h.expect_intact(&topic, 0, &acked, &[], "after the old leader rejoined").map(|_| ())
}
