//! `min-isr`: a topic with `replication.factor=2` and `min.insync.replicas=2` loses its
//! follower. Kafka's promise: once the ISR is smaller than min.insync.replicas, acks=all
//! writes are refused with NOT_ENOUGH_REPLICAS rather than acknowledged by too few copies,
//! acks=1 writes still land, and acks=all works again when the replica is back in sync.
//! (Two of three replicas lost would also lose this three-node cluster's controller quorum;
//! one follower of two shows the same rule.)

use std::time::Duration;

use super::harness::{ids, values, Harness};
use crate::dev_cluster::dev::DevCommand;

/// Runs the scenario; the error says what did not hold.
pub fn run(h: &mut Harness) -> Result<(), String> {
    let topic = format!("min-isr-{}", crate::clock::now_ms());
    h.create_topic(&topic, 1, 2, &["min.insync.replicas=2"])?;
    h.produce(&topic, 0, &values("in-sync", 100), "all")?;
    h.say("100 records acknowledged with acks=all while both replicas are in sync");
    let p = h.partition(&topic, 0)?;
    let leader = p["leader"].as_i64().unwrap_or(-1);
    let follower = ids(&p, "replicas").into_iter().find(|r| *r != leader).ok_or("no follower")?;
    h.say(&format!("killing the follower, node {follower} (leader {leader})"));
    h.dev(DevCommand::Kill { node: follower as u16 })?;
    h.wait_for(&format!("node {follower} out of the ISR"), Duration::from_secs(30), |h| {
        h.partition(&topic, 0).ok().filter(|p| ids(p, "isr") == [leader])
    })?;
    h.say(&format!("isr is [{leader}]: fewer than min.insync.replicas=2"));

    match h.produce(&topic, 0, &values("refused", 10), "all") {
        Ok(()) => return Err("an acks=all write was acknowledged with 1 replica in sync".into()),
        Err(e) if e.contains("NOT_ENOUGH_REPLICAS (19)") => h.say(&format!("acks=all refused, as it must be: {e}")),
        Err(e) => return Err(format!("acks=all failed, but not with NOT_ENOUGH_REPLICAS: {e}")),
    }
    h.produce(&topic, 0, &values("acks-1", 10), "1").map_err(|e| format!("acks=1 should still land: {e}"))?;
    h.say("acks=1 still lands: the leader alone takes it");

    h.say(&format!("restarting node {follower}"));
    h.dev(DevCommand::Restart { node: follower as u16 })?;
    h.wait_for(&format!("node {follower} back in the ISR"), Duration::from_secs(60), |h| {
        h.partition(&topic, 0).ok().filter(|p| ids(p, "isr").len() == 2)
    })?;
    h.produce(&topic, 0, &values("healed", 10), "all").map_err(|e| format!("acks=all after the replica returned: {e}"))?;
    h.say("both replicas in sync again: acks=all is acknowledged");
    let got = h.consume(&topic, 0)?;
    let refused = got.iter().filter(|v| v.starts_with("refused-")).count();
    if refused > 0 || got.len() != 120 {
        return Err(format!("read {} records back ({refused} of them refused ones), expected the 120 acknowledged", got.len()));
    }
    h.say("read back exactly the 120 acknowledged records: the refused ones were never appended");
    Ok(())
}
