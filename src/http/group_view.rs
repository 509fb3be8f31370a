//! A group's members with their assignments, for `/v1/groups/{id}`, whichever kind of group
//! it is: classic (the assignment decoded from the consumer protocol's bytes), consumer
//! (KIP-848), streams (tasks by subtopology) and share (KIP-932).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::broker::Broker;
use crate::group::consumer_protocol::assignment_partitions;
use crate::metadata::image::Image;

/// Topic-partitions named by id, grouped by topic name: `[{"topic", "partitions"}]`.
fn by_topic<'a>(img: &Image, tps: impl IntoIterator<Item = &'a (uuid::Uuid, i32)>) -> Value {
    let mut out: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for (id, p) in tps {
        let name = img.topic_by_id(*id).map_or_else(|| id.to_string(), |t| t.name.clone());
        out.entry(name).or_default().push(*p);
    }
    Value::Array(out.into_iter().map(|(topic, partitions)| json!({ "topic": topic, "partitions": partitions })).collect())
}

fn member(id: &str, instance: Option<&str>, client: &str, host: &str, assignment: Value) -> Value {
    json!({ "member_id": id, "group_instance_id": instance, "client_id": client, "client_host": host, "assignment": assignment })
}

/// The members of group `id` this node coordinates, or None if it coordinates no such group.
pub(super) fn members(b: &Broker, id: &str) -> Option<Vec<Value>> {
    let img = b.cluster.image();
    if let Ok(g) = b.groups.streams_describe(id) {
        let tasks = |t: &std::collections::BTreeSet<(String, i32)>| {
            let mut by: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
            for (sub, p) in t {
                by.entry(sub.as_str()).or_default().push(*p);
            }
            Value::Array(by.into_iter().map(|(s, ps)| json!({ "subtopology": s, "partitions": ps })).collect())
        };
        let offsets = |o: &crate::group::streams::task_offsets::Offsets| {
            Value::Array(o.iter().map(|((s, p), off)| json!({ "subtopology": s, "partition": p, "offset": off })).collect())
        };
        let v = g.members.values().map(|m| {
            let a =
                json!({ "active": tasks(&m.assigned.active), "standby": tasks(&m.assigned.standby), "warmup": tasks(&m.assigned.warmup) });
            let mut v = member(&m.id, m.instance_id.as_deref(), &m.client_id, &m.client_host, a);
            // What the member last reported of its tasks' changelogs (as StreamsGroupDescribe).
            v["task_offsets"] = offsets(&m.task_offsets.offsets);
            v["task_end_offsets"] = offsets(&m.task_offsets.end_offsets);
            v
        });
        return Some(v.collect());
    }
    if let Ok(g) = b.groups.consumer_describe(id) {
        let v =
            g.members.values().map(|m| member(&m.id, m.instance_id.as_deref(), &m.client_id, &m.client_host, by_topic(&img, &m.assigned)));
        return Some(v.collect());
    }
    if let Some(d) = b.groups.describe(id) {
        let consumer = d.protocol_type == "consumer";
        let v = d.members.iter().map(|(mid, instance, client, host, _, assignment)| {
            // Only the consumer protocol's bytes have a known shape; other protocols' are opaque.
            let a = match assignment_partitions(assignment).filter(|_| consumer) {
                Some(tps) => {
                    Value::Array(tps.into_iter().map(|(topic, partitions)| json!({ "topic": topic, "partitions": partitions })).collect())
                }
                None => Value::Null,
            };
            member(mid, instance.as_deref(), client, host, a)
        });
        return Some(v.collect());
    }
    let g = b.shares.describe(id).ok()?;
    Some(g.members.values().map(|m| member(&m.id, None, &m.client_id, &m.client_host, by_topic(&img, &m.assigned))).collect())
}
