//! A plain-text metrics endpoint (Prometheus exposition format) for what operators hunt:
//! broker liveness, offline and under-replicated partitions, unclean elections and the
//! active controller. Served on `/metrics` by the HTTP listener (module `http`).

use std::fmt::Write as _;

use crate::broker::Broker;

/// The metrics as text, from this node's metadata image.
pub fn render(broker: &Broker) -> String {
    let active = broker.cluster.active_controller() == Some(broker.identity.node_id);
    let img = broker.cluster.image();
    let (mut partitions, mut offline, mut under) = (0u64, 0u64, 0u64);
    for t in img.topics.values() {
        for p in &t.partitions {
            partitions += 1;
            if p.leader < 0 {
                offline += 1;
            }
            if p.isr.len() < p.replicas.len() - p.adding.len() {
                under += 1;
            }
        }
    }
    let mut out = String::new();
    let mut metric = |name: &str, help: &str, kind: &str, value: u64| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
    };
    metric("sluice_live_brokers", "Registered, unfenced brokers.", "gauge", img.live_brokers().len() as u64);
    metric("sluice_registered_brokers", "Brokers that ever registered.", "gauge", img.brokers.len() as u64);
    metric("sluice_partitions", "Partitions in the cluster.", "gauge", partitions);
    metric("sluice_offline_partitions", "Partitions with no leader.", "gauge", offline);
    metric("sluice_under_replicated_partitions", "Partitions whose ISR is smaller than their replicas.", "gauge", under);
    metric(
        "sluice_unclean_leader_elections_total",
        "Leaders elected from outside the ISR (records may have been lost).",
        "counter",
        img.unclean_elections,
    );
    metric("sluice_metadata_offset", "Last metadata log offset applied on this node.", "gauge", img.offset);
    metric("sluice_active_controller", "1 on the node that is the active controller.", "gauge", active as u64);
    out
}
