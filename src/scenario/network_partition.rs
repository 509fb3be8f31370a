//! `network-partition`: a partition's leader is cut off from every other node (`sluice fault
//! isolate`: clients still reach it) under an acks=all load, RF=3, `min.insync.replicas=2`.
//! Kafka's promise: the isolated leader acknowledges nothing after the cut (its followers
//! cannot fetch and it cannot shrink the ISR without the controller), the other two elect a
//! new leader and take the writes, and after healing the old leader truncates its divergent
//! tail to the new leader's log and rejoins the ISR; nothing acknowledged is lost.

use std::time::Duration;

use super::harness::{ids, leader, Harness};
use super::load::{expect_no_loss, outcome, spawn_produce, Load};

/// The write sent straight to the isolated node after the cut.
const PROBE: &str = "probe-after-cut";

/// Runs the scenario; the error says what did not hold.
pub fn run(h: &mut Harness) -> Result<(), String> {
    let topic = format!("network-partition-{}", crate::clock::now_ms());
    let ps = h.create_topic(&topic, 3, 3, &["min.insync.replicas=2"])?;
    // Isolating the controller as well would be a controller failover on top.
    let (p, state) = h.pick(&ps, "led by a node that is not the controller", |p, c| leader(p) != c)?;
    let l = leader(&state);
    let others = h.bootstrap(&[l as u16]);
    // Bootstrapped from the other two: their metadata names the new leader once there is one,
    // where the isolated node would go on naming itself.
    let load = Load::start(h, &others, &topic, p, "w", 2_000);
    load.wait_more(h, 100, "the load acknowledged before the cut", Duration::from_secs(30))?;
    let epoch = state["leader_epoch"].as_i64().unwrap_or(-1);
    h.say(&format!("acks=all load on {topic}-{p}: leader {l} (epoch {epoch}), isr {}; isolating node {l}", state["isr"]));
    let mark = h.log_mark(l as u16);
    h.fault(l as u16, &["isolate"])?;
    let cut_at = load.now();

    // A write straight to the isolated node, which still answers clients and still thinks it leads.
    // Its deadline (the tool's retries) passes before the heal.
    let addr = h.node(l as u16)?.addr.clone();
    let probe = spawn_produce(h.exe(), &addr, &topic, p, &[PROBE.to_string()], 2_000)?;
    h.say(&format!("sent {PROBE:?} with acks=all straight to the isolated node ({addr})"));
    let s =
        h.wait_partition(&topic, p, "a new leader among the other two", Duration::from_secs(30), |s| leader(s) >= 0 && leader(s) != l)?;
    h.say(&format!("node {} leads {topic}-{p} now (epoch {}), isr {}", leader(&s), s["leader_epoch"], s["isr"]));
    load.wait_more(h, 100, "writes acknowledged by the new leader", Duration::from_secs(30))?;
    h.say("the load goes on through the new leader");
    match outcome(probe) {
        Ok(()) => return Err(format!("the isolated node {l} acknowledged an acks=all write after the cut")),
        Err(e) => h.say(&format!("the isolated node {l} acknowledged nothing: {e}")),
    }

    h.fault(l as u16, &["clear"])?;
    h.wait_partition(&topic, p, &format!("node {l} back in the ISR"), Duration::from_secs(60), |s| ids(s, "isr").contains(&l))?;
    let (t, pp) = (format!("topic={topic}"), format!("partition={p}"));
    let truncated = h.wait_for(&format!("node {l} truncating its divergent tail"), Duration::from_secs(20), |h| {
        h.log_lines(l as u16, mark, &["truncated a divergent tail", &t, &pp]).pop()
    })?;
    h.say(&format!("node {l} rejoined the ISR after truncating what it took alone: {}", truncated.trim()));
    load.wait_more(h, 40, "the load going on after the heal", Duration::from_secs(30))?;
    let report = load.finish();
    let late: Vec<&str> =
        report.batches.iter().filter(|b| b.error.is_none() && b.sent > cut_at).flat_map(|b| b.values.iter().map(String::as_str)).collect();
    h.say(&format!("{} records acknowledged after the cut, by the new leader; {}", late.len(), report.latency()));
    expect_no_loss(h, &topic, p, &report, "after the heal")?;
    if h.consume(&topic, p)?.iter().any(|v| v == PROBE) {
        return Err("the write the isolated node took survived the heal".into());
    }
    h.say("the probe the isolated node appended is gone: it was never acknowledged");
    Ok(())
}
