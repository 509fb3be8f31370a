//! The JSON views of `/v1/`: the cluster, brokers, topics and groups as this node sees
//! them, with Kafka's field names in snake_case. Offsets and lag are known where a
//! partition is led and a group coordinated: for one topic and for groups, this node asks
//! the nodes that lead or coordinate them over their HTTP listeners ([`super::remote`]);
//! `?local=true` answers with this node's own part only.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::remote::{self, get_json, http_of, local_only, segment};
use super::{error, Ctx};
use crate::broker::Broker;
use crate::controller::rpc::{Request, Response as ControllerAnswer};
use crate::metadata::health::{Health, PartitionHealth};
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
    let mut quorum = quorum;
    // The voters' progress is the active controller's to tell; a slow or absent answer
    // leaves it out rather than stalling the page.
    let ask = b.cluster.call(Request::DescribeQuorum, Duration::from_secs(2));
    if let Ok(Ok(ControllerAnswer::Quorum(q))) = tokio::time::timeout(Duration::from_secs(3), ask).await {
        quorum["high_watermark"] = json!(q.high_watermark);
        quorum["voter_states"] = q
            .voters
            .iter()
            .map(|(id, leo)| json!({ "node_id": id, "log_end_offset": leo, "lag": q.high_watermark.saturating_sub(*leo) }))
            .collect();
    }
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

/// Which of a topic's partitions a view shows: `?offset=N&limit=M` pages them (the console
/// shows a topic of 10 000 partitions a page at a time); `?summary=true` shows none, only
/// their counts.
#[derive(Clone, Copy)]
struct Window {
    offset: usize,
    limit: usize,
    summary: bool,
}

impl Window {
    fn parse(q: &HashMap<String, String>) -> Result<Window, String> {
        let number = |key: &str, default: usize| {
            q.get(key)
                .map_or(Ok(default), |v| v.trim().parse::<usize>().map_err(|_| format!("{key} must be an unsigned integer, not '{v}'")))
        };
        let summary = q.get("summary").is_some_and(|v| !matches!(v.as_str(), "false" | "0" | "no"));
        Ok(Window { offset: number("offset", 0)?, limit: number("limit", usize::MAX)?, summary })
    }
}

/// The topic's `min.insync.replicas`, as DescribeConfigs resolves it.
fn min_isr(b: &Broker, topic: &str) -> Option<usize> {
    let keys = ["min.insync.replicas".to_string()];
    let entries = b.describe_topic_configs(topic, Some(&keys)).ok()?;
    entries.first()?.value.as_deref()?.parse().ok()
}

fn health_of<'a>(t: &'a TopicImage, i: usize, min_isr: Option<usize>) -> PartitionHealth<'a> {
    let p = &t.partitions[i];
    PartitionHealth { topic: &t.name, partition: i as i32, leader: p.leader, replicas: &p.replicas, isr: &p.isr, min_isr }
}

fn partition_view(b: &Broker, img: &Image, t: &TopicImage, i: usize, min_isr: Option<usize>) -> Value {
    let p = &t.partitions[i];
    let health = health_of(t, i, min_isr);
    let offline: Vec<i32> = p.replicas.iter().copied().filter(|r| !img.is_live(*r)).collect();
    let mut v = json!({
        "partition": i,
        "leader": p.leader,
        "leader_epoch": p.leader_epoch,
        "replicas": p.replicas,
        "isr": p.isr,
        "offline_replicas": offline,
        "offline": p.leader < 0,
        "under_replicated": health.under_replicated(),
        "under_min_isr": health.under_min_isr(),
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
}

fn topic_view(b: &Broker, img: &Image, t: &TopicImage, w: Window) -> Value {
    let min_isr = min_isr(b, &t.name);
    let mut v = json!({
        "topic": t.name,
        "topic_id": t.id,
        "internal": t.name.starts_with("__"),
        "partition_count": t.partitions.len(),
        "replication_factor": t.partitions.first().map_or(0, |p| p.replicas.len()),
        "min_insync_replicas": min_isr,
    });
    if w.summary {
        let all: Vec<PartitionHealth> = (0..t.partitions.len()).map(|i| health_of(t, i, min_isr)).collect();
        v["offline_count"] = json!(all.iter().filter(|p| p.leader < 0).count());
        v["under_replicated_count"] = json!(all.iter().filter(|p| p.under_replicated()).count());
        v["under_min_isr_count"] = json!(all.iter().filter(|p| p.under_min_isr()).count());
    } else {
        let end = w.offset.saturating_add(w.limit).min(t.partitions.len());
        let shown = (w.offset.min(end)..end).map(|i| partition_view(b, img, t, i, min_isr)).collect();
        v["partitions"] = Value::Array(shown);
    }
    v
}

pub(super) async fn topics(State(ctx): State<Ctx>, Query(q): Query<HashMap<String, String>>) -> Response {
    let w = match Window::parse(&q) {
        Ok(w) => w,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let img = ctx.broker.cluster.image();
    Json(Value::Array(img.topics.values().map(|t| topic_view(&ctx.broker, &img, t, w)).collect())).into_response()
}

pub(super) async fn topic(State(ctx): State<Ctx>, Path(name): Path<String>, Query(q): Query<HashMap<String, String>>) -> Response {
    let w = match Window::parse(&q) {
        Ok(w) => w,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let img = ctx.broker.cluster.image();
    let Some(t) = img.topics.get(&name) else {
        return error(StatusCode::NOT_FOUND, format!("unknown topic '{name}'"));
    };
    let mut v = topic_view(&ctx.broker, &img, t, w);
    if !local_only(&q) {
        if let Some(parts) = v["partitions"].as_array_mut() {
            add_remote_progress(&ctx.broker, &name, parts).await;
        }
    }
    Json(v).into_response()
}

/// Fills in the progress of the partitions in `parts` that other live nodes lead.
async fn add_remote_progress(b: &Broker, topic: &str, parts: &mut [Value]) {
    let me = b.identity.node_id;
    let remote: Vec<(usize, i32)> = parts
        .iter()
        .filter(|p| p.get("high_watermark").is_none())
        .filter_map(|p| Some((p["partition"].as_u64()? as usize, p["leader"].as_i64()? as i32)))
        .filter(|(_, l)| *l >= 0 && *l != me)
        .collect();
    if remote.is_empty() {
        return;
    }
    let got = remote::leaders_progress(b, topic, &remote).await;
    for p in parts.iter_mut() {
        let Some(Value::Object(fields)) = p["partition"].as_u64().and_then(|i| got.get(&(i as usize))) else { continue };
        for (k, x) in fields {
            p[k] = x.clone();
        }
    }
}

/// `GET /v1/health`: `sluice cluster health`'s answer from this node's image.
pub(super) async fn health(State(ctx): State<Ctx>) -> Json<Value> {
    let b = &ctx.broker;
    let img = b.cluster.image();
    let live: BTreeSet<i32> = img.live_brokers().iter().map(|x| x.id).collect();
    let min_isrs: BTreeMap<&str, Option<usize>> = img.topics.keys().map(|n| (n.as_str(), min_isr(b, n))).collect();
    let partitions = img.topics.values().flat_map(|t| (0..t.partitions.len()).map(|i| health_of(t, i, min_isrs[t.name.as_str()])));
    Json(Health::check(b.cluster.active_controller().unwrap_or(-1), &live, partitions).to_json())
}

/// `GET /v1/groups`: every group of the cluster, each with its `coordinator`, gathered from
/// the live nodes (a node that does not answer in time leaves its groups out).
pub(super) async fn groups(State(ctx): State<Ctx>, Query(q): Query<HashMap<String, String>>) -> Json<Value> {
    let b = &ctx.broker;
    let me = b.identity.node_id;
    let mut all: Vec<Value> = b
        .groups
        .list()
        .into_iter()
        .map(|(group_id, protocol_type, state, group_type)| {
            json!({ "group_id": group_id, "protocol_type": protocol_type, "state": state, "group_type": group_type, "coordinator": me })
        })
        .collect();
    all.extend(b.shares.list().into_iter().map(|(group_id, state)| {
        json!({ "group_id": group_id, "protocol_type": "share", "state": state, "group_type": "share", "coordinator": me })
    }));
    if !local_only(&q) {
        let peers = b.cluster.image().live_brokers().iter().filter_map(|x| http_of(b, x.id)).collect::<Vec<_>>();
        let asks = peers.iter().map(|addr| get_json(addr, "/v1/groups?local=true"));
        for answer in futures_util::future::join_all(asks).await {
            all.extend(answer.and_then(|v| v.as_array().cloned()).unwrap_or_default());
        }
        all.sort_by(|a, b| a["group_id"].as_str().cmp(&b["group_id"].as_str()));
    }
    Json(Value::Array(all))
}

pub(super) async fn group(State(ctx): State<Ctx>, Path(id): Path<String>, Query(q): Query<HashMap<String, String>>) -> Response {
    let b = &ctx.broker;
    let shares = b.shares.list().into_iter().map(|(g, state)| (g, "share".to_string(), state, "share"));
    let Some((_, protocol_type, state, group_type)) = b.groups.list().into_iter().chain(shares).find(|g| g.0 == id) else {
        let p = b.groups.offsets_partition(&id);
        let coordinator =
            b.cluster.image().topics.get(crate::group::OFFSETS_TOPIC).and_then(|t| t.partitions.get(p as usize)).map(|s| s.leader);
        // The coordinator's own view, asked of it.
        if let Some(addr) = coordinator.filter(|_| !local_only(&q)).and_then(|c| http_of(b, c)) {
            if let Some(v) = get_json(&addr, &format!("/v1/groups/{}?local=true", segment(&id))).await {
                return Json(v).into_response();
            }
        }
        let hint = match coordinator {
            Some(c) if c >= 0 && c != b.identity.node_id => format!(" (its coordinator is broker {c})"),
            _ => String::new(),
        };
        return error(StatusCode::NOT_FOUND, format!("no group '{id}' coordinated by this node{hint}"));
    };
    let members = super::group_view::members(b, &id).unwrap_or_default();
    let img = b.cluster.image();
    let mut partitions = Vec::new();
    for (topic, parts) in b.groups.fetch_offsets(&id, None) {
        let committed: Vec<(i32, i64)> = parts.into_iter().filter_map(|(p, c)| Some((p, c?.offset))).collect();
        let leader_of = |p: i32| img.topics.get(&topic).and_then(|t| t.partitions.get(p as usize)).map_or(-1, |s| s.leader);
        // The HW is the leader's: asked of the leaders of those this node does not lead (even
        // for `?local=true`: a topic's `?local=true` view asks no one further).
        let remote: Vec<(usize, i32)> = committed
            .iter()
            .map(|(p, _)| (*p as usize, leader_of(*p)))
            .filter(|(_, l)| *l >= 0 && *l != b.identity.node_id)
            .collect();
        let asked = if remote.is_empty() { HashMap::new() } else { remote::leaders_progress(b, &topic, &remote).await };
        for (partition, offset) in committed {
            let led_here = b.replicas.partition(&topic, partition).filter(|p| p.is_leader());
            let progress = match led_here {
                Some(p) => Some(p.with_state(|s| (s.high_watermark, s.log.log_end_offset()))),
                None => asked
                    .get(&(partition as usize))
                    .and_then(|v| Some((v["high_watermark"].as_i64()?, v["log_end_offset"].as_i64()?))),
            };
            let mut v = json!({ "topic": topic, "partition": partition, "committed_offset": offset });
            if let Some((hw, leo)) = progress {
                v["high_watermark"] = json!(hw);
                v["log_end_offset"] = json!(leo);
                v["lag"] = json!((hw - offset).max(0));
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
