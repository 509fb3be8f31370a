//! `disk-failure`: a partition leader's disk fails its writes (`sluice fault disk --fail
//! write`). Kafka's path: the append fails, the request is answered KAFKA_STORAGE_ERROR, the
//! log dir goes offline, and a broker with no log dir left (Sluice has one, the data dir)
//! halts. Its partitions move to in-sync replicas once its session lapses, nothing
//! acknowledged is lost, and restarted it recovers its log and rejoins the ISR.

use std::time::Duration;

use super::harness::{ids, leader, values, Harness};
use crate::dev_cluster::dev::DevCommand;

const RECORDS: usize = 300;

/// Runs the scenario; the error says what did not hold.
pub fn run(h: &mut Harness) -> Result<(), String> {
    let topic = format!("disk-failure-{}", crate::clock::now_ms());
    let ps = h.create_topic(&topic, 3, 3, &["min.insync.replicas=2"])?;
    // A halted controller would add a controller failover to the story.
    let (p, state) = h.pick(&ps, "led by a node that is not the controller", |p, c| leader(p) != c)?;
    let l = leader(&state);
    let before = values("before", RECORDS);
    h.produce(&topic, p, &before, "all")?;
    h.say(&format!("{RECORDS} records acknowledged by {topic}-{p}'s leader {l}, isr {}", state["isr"]));
    let mark = h.log_mark(l as u16);
    h.fault(l as u16, &["disk", "--fail", "write", "--topic", &topic])?;

    let failed = values("on-failed-disk", 10);
    // Not retried: a client that retries (as the tool does by default) lands these on the
    // next leader, and the point here is the failed disk's own answer.
    match h.produce_with(&topic, p, &failed, "all", &["-X", "retries=0"]) {
        Ok(()) => return Err(format!("node {l} acknowledged a write its disk failed")),
        Err(e) if e.contains("KAFKA_STORAGE_ERROR (56)") => h.say(&format!("the write was answered KAFKA_STORAGE_ERROR: {e}")),
        Err(e) => return Err(format!("a write on the failed disk failed, but not with KAFKA_STORAGE_ERROR: {e}")),
    }
    h.wait_for(&format!("node {l} halting"), Duration::from_secs(30), |h| h.is_dead(l as u16).then_some(()))?;
    h.gone(l as u16);
    for line in h.log_lines(l as u16, mark, &["log dir"]) {
        h.say(&format!("node {l}'s log: {}", line.trim()));
    }
    h.say(&format!("node {l} halted: its only log dir is offline"));
    let s = h.wait_partition(&topic, p, "a new leader from the ISR", Duration::from_secs(30), |s| leader(s) >= 0 && leader(s) != l)?;
    h.say(&format!("leadership moved to node {} (epoch {}), isr {}", leader(&s), s["leader_epoch"], s["isr"]));
    let after = values("after", RECORDS);
    h.produce(&topic, p, &after, "all").map_err(|e| format!("acks=all writes after the failover: {e}"))?;
    h.say(&format!("{RECORDS} more records acknowledged by the new leader"));
    let acked: Vec<String> = before.into_iter().chain(after).collect();
    h.expect_intact(&topic, p, &acked, &failed, "with the failed node down")?;

    h.say(&format!("restarting node {l} (faults live in memory: it starts clean)"));
    h.dev(DevCommand::Restart { node: l as u16 })?;
    h.wait_partition(&topic, p, &format!("node {l} back in the ISR"), Duration::from_secs(60), |s| ids(s, "isr").contains(&l))?;
    let http = h.node(l as u16)?.http.clone();
    let left: serde_json::Value =
        serde_json::from_str(&h.sluice(&["fault", "--http", &http, "list", "--format", "json"])?).map_err(|e| e.to_string())?;
    if left["faults"].as_array().is_none_or(|f| !f.is_empty()) {
        return Err(format!("node {l} restarted with faults: {left}"));
    }
    h.say(&format!("node {l} recovered its log and rejoined the ISR, with no fault left"));
    h.expect_intact(&topic, p, &acked, &failed, "after the node rejoined").map(|_| ())
}
