//! `unclean-election`: a partition's leader dies while its only other replica is out of the
//! ISR, holding acknowledged records that replica lacks. Kafka's trade-off, played twice:
//! with `unclean.leader.election.enable=false` (the default) the partition goes offline and
//! waits for the leader, and nothing is lost; with it set on the topic, the out-of-sync
//! replica becomes leader at once and the records it lacked are gone, counted here.

use std::time::Duration;

use super::harness::{ids, leader, values, Harness};
use crate::dev_cluster::dev::DevCommand;

/// Records per step.
const RECORDS: usize = 100;

/// Runs the scenario; the error says what did not hold.
pub fn run(h: &mut Harness) -> Result<(), String> {
    let topic = format!("unclean-election-{}", crate::clock::now_ms());
    // RF=2, min.insync.replicas=1: the leader alone may acknowledge once the follower is out.
    let ps = h.create_topic(&topic, 3, 2, &[])?;
    // A partition whose two replicas leave the controller out: both can be cut and killed
    // while the controller quorum (2 of 3) stays.
    let (p, _) = h.pick(&ps, "whose replicas leave the controller out", |p, c| !ids(p, "replicas").contains(&c))?;
    let mut acked = Vec::new();

    h.say("--- unclean.leader.election.enable=false (Kafka's default)");
    let (l, f, only_on_leader) = leader_alone_holds(h, &topic, p, "off", &mut acked)?;
    h.say(&format!("killing the leader, node {l}: the only replica left, node {f}, lacks {RECORDS} acknowledged records"));
    h.dev(DevCommand::Kill { node: l as u16 })?;
    let off = h.wait_partition(&topic, p, "the partition offline", Duration::from_secs(30), |s| leader(s) < 0)?;
    // The controller decided when it fenced the leader; give it a while to change its mind.
    std::thread::sleep(Duration::from_secs(3));
    let still = h.partition(&topic, p)?;
    if leader(&still) >= 0 {
        return Err(format!("node {} became leader with unclean.leader.election.enable=false", leader(&still)));
    }
    h.say(&format!("offline: no leader, isr {} (node {f} is not eligible); consumers and producers wait", off["isr"]));
    h.fault(f as u16, &["clear"])?;
    h.dev(DevCommand::Restart { node: l as u16 })?;
    let back = h.wait_partition(&topic, p, &format!("node {l} leading again"), Duration::from_secs(60), |s| leader(s) == l)?;
    h.say(&format!("node {l} is back and leads again (leader epoch {}): the partition is available", back["leader_epoch"]));
    let r = h.expect_intact(&topic, p, &acked, &[], "with unclean election off")?;
    h.say(&format!("unclean.leader.election.enable=false: {} records lost, {} were only on the dead leader", r.lost.len(), only_on_leader));
    h.wait_partition(&topic, p, "both replicas in sync", Duration::from_secs(60), |s| ids(s, "isr").len() == 2)?;

    h.say("--- unclean.leader.election.enable=true, set on the topic");
    h.client(&["topic", "alter-config", &topic, "--set", "unclean.leader.election.enable=true"])?;
    let (l, f, only_on_leader) = leader_alone_holds(h, &topic, p, "on", &mut acked)?;
    h.say(&format!("killing the leader, node {l}: node {f} lacks {only_on_leader} acknowledged records"));
    h.dev(DevCommand::Kill { node: l as u16 })?;
    let s = h.wait_partition(&topic, p, &format!("node {f} elected"), Duration::from_secs(30), |s| leader(s) == f)?;
    h.say(&format!(
        "node {f} was out of sync and became leader anyway (leader epoch {}, isr {}): available again",
        s["leader_epoch"], s["isr"]
    ));
    let r = h.read_back(&topic, p, &acked)?;
    h.say(&format!("unclean.leader.election.enable=true: {} acknowledged records lost (e.g. {:?})", r.lost.len(), r.lost.first()));
    if r.lost.len() != only_on_leader {
        return Err(format!("{} acknowledged records lost; the {only_on_leader} only the old leader had were expected", r.lost.len()));
    }
    if !r.unacknowledged.is_empty() || r.doubled > 0 {
        return Err(format!("{} records never acknowledged and {} doubles read back", r.unacknowledged.len(), r.doubled));
    }
    h.fault(f as u16, &["clear"])?;
    h.dev(DevCommand::Restart { node: l as u16 })?;
    h.wait_partition(&topic, p, &format!("node {l} back in the ISR"), Duration::from_secs(60), |s| ids(s, "isr").contains(&l))?;
    let r = h.read_back(&topic, p, &acked)?;
    h.say(&format!("node {l} rejoined as a follower, truncating to node {f}'s log: the {} records stay lost", r.lost.len()));
    if r.lost.len() != only_on_leader {
        return Err(format!("after node {l} rejoined, {} acknowledged records are missing, not {only_on_leader}", r.lost.len()));
    }
    Ok(())
}

/// Cuts the follower of partition `p` off from its leader until the leader alone is the ISR,
/// then has the leader acknowledge [`RECORDS`] records (acks=all) the follower lacks. Returns
/// (leader, follower, records only the leader holds); `acked` gets everything acknowledged.
fn leader_alone_holds(h: &mut Harness, topic: &str, p: u16, tag: &str, acked: &mut Vec<String>) -> Result<(i64, i64, usize), String> {
    let s = h.partition(topic, p)?;
    let l = leader(&s);
    let f = ids(&s, "replicas").into_iter().find(|r| *r != l).ok_or("no follower")?;
    let synced = values(&format!("{tag}-both"), RECORDS);
    h.produce(topic, p, &synced, "all")?;
    acked.extend(synced);
    h.say(&format!("{RECORDS} records acknowledged by leader {l} and follower {f}; cutting node {f} off from node {l}"));
    h.fault(f as u16, &["cut", "--peer", &l.to_string()])?;
    h.wait_partition(topic, p, &format!("node {f} out of the ISR"), Duration::from_secs(60), |s| ids(s, "isr") == [l])?;
    let lone = values(&format!("{tag}-leader-only"), RECORDS);
    h.produce(topic, p, &lone, "all")?;
    acked.extend(lone);
    h.say(&format!("isr [{l}] meets min.insync.replicas=1: {RECORDS} more acks=all records, on node {l} only"));
    Ok((l, f, RECORDS))
}
