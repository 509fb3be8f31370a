//! `controller-failover`: the active controller (the KRaft quorum's leader) is SIGKILLed.
//! Kafka's promise: the surviving voters elect a new controller, metadata changes (a topic
//! create) work again, the brokers that stayed are not fenced (the new controller gives each
//! a full session before judging it), and nothing acknowledged is lost.

use std::time::Duration;

use serde_json::json;

use super::harness::{ids, values, Harness};
use crate::dev_cluster::dev::DevCommand;

const RECORDS: usize = 300;

/// Runs the scenario; the error says what did not hold.
pub fn run(h: &mut Harness) -> Result<(), String> {
    let stamp = crate::clock::now_ms();
    let topic = format!("controller-failover-{stamp}");
    h.create_topic(&topic, 1, 3, &["min.insync.replicas=2"])?;
    let before = values("before", RECORDS);
    h.produce(&topic, 0, &before, "all")?;
    let old = h.controller()?;
    h.say(&format!("{RECORDS} records acknowledged; killing the active controller, node {old}"));
    h.dev(DevCommand::Kill { node: old as u16 })?;

    let new = h.wait_for("a new active controller", Duration::from_secs(30), |h| {
        h.seen("controller_changed", &[]).iter().filter_map(|e| e["controller_id"].as_i64()).rfind(|c| *c >= 0 && *c != old)
    })?;
    h.say(&format!("the quorum elected node {new} controller (controller_changed)"));
    h.wait_for(&format!("node {old} fenced by the new controller"), Duration::from_secs(30), |h| {
        (!h.seen("broker_fenced", &[("broker_id", json!(old))]).is_empty()).then_some(())
    })?;
    let created = format!("after-failover-{stamp}");
    h.create_topic(&created, 1, 2, &[])?;
    h.say(&format!("metadata changes work under controller {new}: created {created}"));
    let after = values("after", RECORDS);
    h.produce(&topic, 0, &after, "all").map_err(|e| format!("acks=all writes after the failover: {e}"))?;
    h.say(&format!("{RECORDS} more records acknowledged; {topic} isr {}", h.partition(&topic, 0)?["isr"]));

    let fenced = h.fenced()?;
    let survivors: Vec<i64> = h.nodes.iter().map(|n| n.id as i64).filter(|id| *id != old).collect();
    for id in &survivors {
        if fenced.get(id) != Some(&false) || !h.seen("broker_fenced", &[("broker_id", json!(id))]).is_empty() {
            return Err(format!("node {id} was fenced through the failover (fenced flags {fenced:?})"));
        }
    }
    h.say(&format!("nodes {survivors:?} stayed unfenced throughout: only the dead node {old} was fenced"));
    let acked: Vec<String> = before.into_iter().chain(after).collect();
    h.expect_intact(&topic, 0, &acked, &[], "after the failover")?;
    h.say(&format!("restarting node {old}"));
    h.dev(DevCommand::Restart { node: old as u16 })?;
    h.wait_partition(&topic, 0, &format!("node {old} back in the ISR"), Duration::from_secs(60), |s| ids(s, "isr").contains(&old))?;
    h.say(&format!("node {old} rejoined as a broker and voter; the controller stays node {}", h.controller()?));
    Ok(())
}
