//! `/v1/topics/{name}/partitions/{p}/records`: the console's message browser, reading the
//! replica of the partition this node hosts, and its test producer, appending through the
//! leader's own produce path (the Produce API's validation, then acks=all).
//!
//! - `GET ...?offset=N` or `?timestamp=MS` (the first record at or after it, as
//!   ListOffsets finds it), `&limit=M` (default 50, at most 500): records up to the high
//!   watermark, as a consumer sees them; without either, the last `limit`. Keys, values
//!   and header values are base64 (they are bytes); header keys are strings.
//! - `POST ...` with `{"key": "k", "value": "v", "headers": {"h": "x"}}` (UTF-8 text; a
//!   null key or value is a null one): 201 with the offset once every in-sync replica has
//!   it, as acks=all.
//!
//! A partition with no replica here is read from its leader (`local=true`: this node's
//! replica only, else a 409 naming the leader). A record for a
//! partition another broker leads is sent there as a Produce request (acks=all), over the
//! connection this broker uses for its peers; its Kafka error is the answer's.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Map, Value};

use super::{error, Ctx};
use crate::log::records::{self, FullRecord};
use crate::partition::{Partition, ReplicaManager};

const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 500;
/// Bytes read from the log per step, and the most a batch may inflate to.
const READ_BYTES: usize = 1 << 20;
const INFLATE_LIMIT: usize = 64 << 20;
/// How long acks=all may wait: Kafka's default request.timeout.ms.
const PRODUCE_TIMEOUT: Duration = Duration::from_secs(30);
/// The Produce version sent to a leader: the last that names topics (v13 uses ids).
const PRODUCE_VERSION: i16 = 12;

/// The hosted partition `name`-`p`, or a 400/404/409 saying why not.
fn hosted(ctx: &Ctx, name: &str, p: &str) -> Result<Arc<Partition>, Response> {
    let index: i32 = p.trim().parse().map_err(|_| error(StatusCode::BAD_REQUEST, format!("a partition is an integer, not '{p}'")))?;
    let img = ctx.broker.cluster.image();
    let Some(t) = img.topics.get(name) else { return Err(error(StatusCode::NOT_FOUND, format!("unknown topic '{name}'"))) };
    let Some(state) = usize::try_from(index).ok().and_then(|i| t.partitions.get(i)) else {
        return Err(error(StatusCode::NOT_FOUND, format!("topic '{name}' has no partition {index} (it has {})", t.partitions.len())));
    };
    ctx.broker.replicas.partition(name, index).ok_or_else(|| {
        error(StatusCode::CONFLICT, format!("{name}-{index} has no replica on this node; its leader is broker {}", state.leader))
    })
}

fn b64(b: &Option<Vec<u8>>) -> Value {
    b.as_ref().map_or(Value::Null, |b| Value::String(B64.encode(b)))
}

fn record_json(r: &FullRecord) -> Value {
    let headers: Vec<Value> = r.headers.iter().map(|(k, v)| json!({ "key": k, "value": b64(v) })).collect();
    json!({ "offset": r.offset, "timestamp": r.timestamp, "key": b64(&r.key), "value": b64(&r.value), "headers": headers })
}

pub(super) async fn browse(
    State(ctx): State<Ctx>,
    Path((name, p)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let number = |key: &str| {
        q.get(key).map(|v| v.trim().parse::<i64>().ok().filter(|n| *n >= 0).ok_or(format!("{key} must be an unsigned integer, not '{v}'")))
    };
    let (offset, timestamp, limit) = match (number("offset").transpose(), number("timestamp").transpose(), number("limit").transpose()) {
        (Ok(o), Ok(t), Ok(l)) => (o, t, l.map_or(DEFAULT_LIMIT, |l| l as usize)),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return error(StatusCode::BAD_REQUEST, e),
    };
    if offset.is_some() && timestamp.is_some() {
        return error(StatusCode::BAD_REQUEST, "give offset or timestamp, not both".into());
    }
    if limit == 0 || limit > MAX_LIMIT {
        return error(StatusCode::BAD_REQUEST, format!("limit must be between 1 and {MAX_LIMIT}, not {limit}"));
    }
    let part = match hosted(&ctx, &name, &p) {
        Ok(p) => p,
        Err(r) if r.status() == StatusCode::CONFLICT && !super::remote::local_only(&q) => return browse_at_leader(&ctx, &name, &p, &q).await,
        Err(r) => return r,
    };
    let read = part.with_state(|s| -> crate::error::Result<Value> {
        let (start, hw, leo) = (s.log.log_start_offset(), s.high_watermark, s.log.log_end_offset());
        let from = match (offset, timestamp) {
            (Some(o), _) => o,
            (_, Some(t)) => s.log.offset_for_timestamp(t)?.map_or(hw, |(o, _)| o),
            _ => hw - limit as i64,
        }
        .max(start);
        let mut out = Vec::new();
        let mut at = from;
        while at < hw && out.len() < limit {
            let r = s.log.read(at, hw, READ_BYTES, true)?;
            if r.bytes.is_empty() {
                break;
            }
            for batch in records::batches(&r.bytes) {
                let (h, recs) = records::decode(batch, INFLATE_LIMIT)?;
                at = at.max(h.last_offset() + 1);
                if h.is_control() {
                    continue;
                }
                out.extend(recs.iter().filter(|r| r.offset >= from && r.offset < hw).map(record_json));
            }
        }
        out.truncate(limit);
        Ok(json!({
            "topic": name, "partition": part.index, "from": from, "log_start_offset": start,
            "high_watermark": hw, "log_end_offset": leo, "is_leader": s.replicas.is_leader(), "records": out,
        }))
    });
    match read {
        Ok(v) => Json(v).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("reading {name}-{p}: {}", e.message())),
    }
}

/// A partition with no replica here is read from its leader's HTTP listener, asked for its
/// own replica only (`local=true`), so the question goes one hop at most. The leader's
/// answer is passed on as it is; a leader that is down or has no listener leaves the 409.
async fn browse_at_leader(ctx: &Ctx, name: &str, p: &str, q: &HashMap<String, String>) -> Response {
    let img = ctx.broker.cluster.image();
    let leader = img.topics.get(name).and_then(|t| p.trim().parse::<usize>().ok().and_then(|i| t.partitions.get(i))).map_or(-1, |s| s.leader);
    let Some(addr) = super::remote::http_of(&ctx.broker, leader) else {
        return error(StatusCode::CONFLICT, format!("{name}-{p} has no replica on this node, and its leader (broker {leader}) has no HTTP listener that is up"));
    };
    let mut query: Vec<String> = q.iter().filter(|(k, _)| k.as_str() != "local").map(|(k, v)| format!("{}={}", super::remote::segment(k), super::remote::segment(v))).collect();
    query.push("local=true".into());
    let path = format!("/v1/topics/{}/partitions/{}/records?{}", super::remote::segment(name), super::remote::segment(p.trim()), query.join("&"));
    super::remote::relay(&format!("broker {leader}"), &addr, "GET", &path, b"", PRODUCE_TIMEOUT, "application/json").await
}

/// The text fields of a produce body.
struct Produced {
    key: Option<String>,
    value: Option<String>,
    headers: Vec<(String, Option<String>)>,
}

fn parse_produce(body: &[u8]) -> Result<Produced, String> {
    let shape = "the body must be a JSON object {\"key\": text|null, \"value\": text|null, \"headers\": {\"name\": text|null}}";
    let v: Map<String, Value> = serde_json::from_slice(body).map_err(|e| format!("{shape}: {e}"))?;
    if let Some(k) = v.keys().find(|k| !matches!(k.as_str(), "key" | "value" | "headers")) {
        return Err(format!("unknown field '{k}'; {shape}"));
    }
    let text = |field: &str, x: Option<&Value>| match x {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("{field} must be text or null, not {other}")),
    };
    let headers = match v.get("headers") {
        None | Some(Value::Null) => vec![],
        Some(Value::Object(h)) => {
            h.iter().map(|(k, x)| Ok((k.clone(), text(&format!("header '{k}'"), Some(x))?))).collect::<Result<_, String>>()?
        }
        Some(other) => return Err(format!("headers must be an object of name to text, not {other}")),
    };
    Ok(Produced { key: text("key", v.get("key"))?, value: text("value", v.get("value"))?, headers })
}

pub(super) async fn produce(State(ctx): State<Ctx>, Path((name, p)): Path<(String, String)>, body: Bytes) -> Response {
    let rec = match parse_produce(&body) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let index: i32 = match p.trim().parse() {
        Ok(i) => i,
        Err(_) => return error(StatusCode::BAD_REQUEST, format!("a partition is an integer, not '{p}'")),
    };
    let now = crate::clock::now_ms();
    let headers: Vec<records::Header> = rec.headers.iter().map(|(k, v)| (k.as_str(), v.as_deref().map(str::as_bytes))).collect();
    let batch =
        records::build_with_headers(&[(rec.key.as_deref().map(str::as_bytes), rec.value.as_deref().map(str::as_bytes), &headers)], now);
    let refused = |e: crate::error::Error| {
        // The cluster's state refused it, not the request: LEADER_NOT_AVAILABLE,
        // NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, BROKER_NOT_AVAILABLE, NOT_ENOUGH_REPLICAS(_AFTER_APPEND).
        let status = match e.code() {
            5 | 6 | 7 | 8 | 19 | 20 => StatusCode::CONFLICT,
            _ => StatusCode::BAD_REQUEST,
        };
        error(status, format!("{} ({}): {}", crate::error::code_name(e.code()), e.code(), e.message()))
    };
    let offset = match ctx.broker.replicas.partition(&name, index).filter(|p| p.is_leader()) {
        Some(part) => append_here(&part, &batch, now).await,
        None => match hosted(&ctx, &name, &p) {
            Err(r) if r.status() == StatusCode::NOT_FOUND => return r,
            _ => append_at_leader(&ctx, &name, index, batch).await,
        },
    };
    let offset = match offset {
        Ok(o) => o,
        Err(e) => return refused(e),
    };
    (StatusCode::CREATED, Json(json!({ "topic": name, "partition": index, "offset": offset, "timestamp": now }))).into_response()
}

/// This node leads the partition: the Produce API's append, then its acks=all wait.
async fn append_here(part: &Arc<Partition>, batch: &[u8], now: i64) -> crate::error::Result<i64> {
    let info = part.append(batch, -1, now)?;
    let waited = ReplicaManager::await_replication(&[(part.clone(), info.last_offset)], PRODUCE_TIMEOUT).await;
    waited.into_iter().next().unwrap_or(Ok(())).map(|()| info.base_offset)
}

/// Another broker leads it: a Produce request (acks=all) to the leader, as a client would send.
async fn append_at_leader(ctx: &Ctx, topic: &str, index: i32, batch: Vec<u8>) -> crate::error::Result<i64> {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::ProduceRequest;
    use kafka_protocol::protocol::StrBytes;
    let b = &ctx.broker;
    let img = b.cluster.image();
    let leader = img.topics.get(topic).and_then(|t| t.partitions.get(index as usize)).map_or(-1, |s| s.leader);
    let addr = img.live_broker(leader).map(|x| x.address()).ok_or(crate::error::Error::LeaderNotAvailable)?;
    let data = PartitionProduceData::default().with_index(index).with_records(Some(batch.into()));
    let req = ProduceRequest::default().with_acks(-1).with_timeout_ms(PRODUCE_TIMEOUT.as_millis() as i32).with_topic_data(vec![
        TopicProduceData::default().with_name(StrBytes::from_string(topic.to_string()).into()).with_partition_data(vec![data]),
    ]);
    let resp = b.peers.call(leader, &addr, b.identity.node_id, PRODUCE_VERSION, &req, PRODUCE_TIMEOUT + Duration::from_secs(5)).await?;
    let r = resp.responses.first().and_then(|t| t.partition_responses.first()).ok_or(crate::error::Error::UnknownTopicOrPartition)?;
    match crate::error::Error::from_code(r.error_code) {
        Some(e) => Err(e),
        None => Ok(r.base_offset),
    }
}
