//! The JSON views of `/v1/`: the cluster, brokers, topics and groups as this node sees
//! them, with Kafka's field names in snake_case. Offsets and lag come from the partitions
//! this node hosts: a leader shows its followers' progress, a coordinator its groups.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{error, Ctx};
use crate::broker::Broker;
use crate::metadata::image::{BrokerInfo, Image, TopicImage};

pub(super) async fn cluster(State(ctx): State<Ctx>) -> Json<Value> {
    let b = &ctx.broker;
    let img = b.cluster.image();
    let voters: Vec<i32> = b.cluster.voters.keys().copied().collect();
    let quorum = match &b.cluster.controller {
        Some(c) => {
            let st = c.quorum.status();
            json!({
                "leader_id": st.leader_node(),
                "leader_epoch": st.term,
                "high_watermark": st.commit,
                "voters": if voters.is_empty() { vec![b.identity.node_id] } else { voters },
            })
        }
        // A broker that does not vote knows the voters, not the Raft state.
        None => json!({ "leader_id": b.cluster.active_controller(), "leader_epoch": null, "voters": voters }),
    };
    Json(json!({
        "cluster_id": img.cluster_id,
        "node_id": b.identity.node_id,
        "controller_id": b.cluster.active_controller(),
        "metadata_offset": img.offset,
        "quorum": quorum,
    }))
}

fn broker_view(info: &BrokerInfo) -> Value {
    let endpoints: BTreeMap<String, String> = if info.endpoints.is_empty() {
        BTreeMap::from([("default".to_string(), info.address())])
    } else {
        info.endpoints.iter().map(|e| (e.listener.clone(), format!("{}:{}", e.host, e.port))).collect()
    };
    json!({
        "broker_id": info.id,
        "epoch": info.epoch,
        "endpoints": endpoints,
        "rack": info.rack,
        "fenced": info.fenced,
        "live": !info.fenced,
        "voter": info.controller,
    })
}

pub(super) async fn brokers(State(ctx): State<Ctx>) -> Json<Value> {
    let img = ctx.broker.cluster.image();
    Json(Value::Array(img.brokers.values().map(broker_view).collect()))
}

fn topic_view(b: &Broker, img: &Image, t: &TopicImage) -> Value {
    let partitions: Vec<Value> = t
        .partitions
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let offline: Vec<i32> = p.replicas.iter().copied().filter(|r| !img.is_live(*r)).collect();
            let mut v = json!({
                "partition": i,
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "replicas": p.replicas,
                "isr": p.isr,
                "offline_replicas": offline,
            });
            if !p.adding.is_empty() || !p.removing.is_empty() {
                v["adding_replicas"] = json!(p.adding);
                v["removing_replicas"] = json!(p.removing);
            }
            if let Some(lp) = b.replicas.partition(&t.name, i as i32).and_then(|local| local.leader_progress()) {
                v["high_watermark"] = json!(lp.high_watermark);
                v["log_end_offset"] = json!(lp.log_end_offset);
                v["followers"] = lp
                    .followers
                    .iter()
                    .map(|(id, leo)| {
                        let known = (*leo >= 0).then_some(*leo);
                        json!({ "broker_id": id, "log_end_offset": known, "lag": lp.log_end_offset - known.unwrap_or(0) })
                    })
                    .collect();
            }
            v
        })
        .collect();
    json!({
        "topic": t.name,
        "topic_id": t.id,
        "internal": t.name.starts_with("__"),
        "partitions": partitions,
    })
}

pub(super) async fn topics(State(ctx): State<Ctx>) -> Json<Value> {
    let img = ctx.broker.cluster.image();
    Json(Value::Array(img.topics.values().map(|t| topic_view(&ctx.broker, &img, t)).collect()))
}

pub(super) async fn topic(State(ctx): State<Ctx>, Path(name): Path<String>) -> Response {
    let img = ctx.broker.cluster.image();
    match img.topics.get(&name) {
        Some(t) => Json(topic_view(&ctx.broker, &img, t)).into_response(),
        None => error(StatusCode::NOT_FOUND, format!("unknown topic '{name}'")),
    }
}

pub(super) async fn groups(State(ctx): State<Ctx>) -> Json<Value> {
    let list = ctx.broker.groups.list();
    Json(Value::Array(
        list.into_iter()
            .map(|(group_id, protocol_type, state, group_type)| {
                json!({ "group_id": group_id, "protocol_type": protocol_type, "state": state, "group_type": group_type })
            })
            .collect(),
    ))
}

pub(super) async fn group(State(ctx): State<Ctx>, Path(id): Path<String>) -> Response {
    let b = &ctx.broker;
    let Some((_, protocol_type, state, group_type)) = b.groups.list().into_iter().find(|g| g.0 == id) else {
        let p = b.groups.offsets_partition(&id);
        let coordinator =
            b.cluster.image().topics.get(crate::group::OFFSETS_TOPIC).and_then(|t| t.partitions.get(p as usize)).map(|s| s.leader);
        let hint = match coordinator {
            Some(c) if c >= 0 && c != b.identity.node_id => format!(" (its coordinator is broker {c})"),
            _ => String::new(),
        };
        return error(StatusCode::NOT_FOUND, format!("no group '{id}' coordinated by this node{hint}"));
    };
    let members: Vec<Value> = match b.groups.consumer_describe(&id) {
        Ok(g) => g
            .members
            .values()
            .map(|m| json!({ "member_id": m.id, "group_instance_id": m.instance_id, "client_id": m.client_id, "client_host": m.client_host }))
            .collect(),
        Err(_) => b
            .groups
            .describe(&id)
            .map(|d| d.members)
            .unwrap_or_default()
            .into_iter()
            .map(|(member_id, instance, client_id, host, _, _)| {
                json!({ "member_id": member_id, "group_instance_id": instance, "client_id": client_id, "client_host": host })
            })
            .collect(),
    };
    let mut partitions = Vec::new();
    for (topic, parts) in b.groups.fetch_offsets(&id, None) {
        for (partition, committed) in parts {
            let Some(c) = committed else { continue };
            let local = b.replicas.partition(&topic, partition).map(|p| p.with_state(|s| (s.high_watermark, s.log.log_end_offset())));
            let mut v = json!({ "topic": topic, "partition": partition, "committed_offset": c.offset });
            if let Some((hw, leo)) = local {
                v["high_watermark"] = json!(hw);
                v["log_end_offset"] = json!(leo);
                v["lag"] = json!((hw - c.offset).max(0));
            }
            partitions.push(v);
        }
    }
    Json(json!({
        "group_id": id,
        "state": state,
        "protocol_type": protocol_type,
        "group_type": group_type,
        "members": members,
        "partitions": partitions,
    }))
    .into_response()
}
