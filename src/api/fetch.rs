//! Fetch for consumers, with long poll: a request that finds too little data waits
//! until an append wakes it or `max_wait_ms` runs out. From v7 a client may open an
//! incremental fetch session (KIP-227, kept in [`crate::partition::fetch_session`]):
//! its later fetches name only what changed, and the answer only partitions with news.
//!
//! Records are never copied into the response: each partition's data is a range of
//! a segment file that the connection hands to the socket with `sendfile`. The
//! response around them is encoded here, by hand, for every version (v4–v18);
//! a test checks it byte for byte against the `kafka-protocol` encoder.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_response::{self, AbortedTransaction, FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::*;
use tokio::sync::Notify;

use super::{Chunk, Ctx};
use crate::auth::Operation;
use crate::error::Error;
use crate::log::FileSlice;
use crate::partition::fetch_session::{self as session, Answered, FetchParams, PartitionKey, Plan};
use crate::quota::ThrottleKind;

const READ_COMMITTED: i8 = 1;

/// One partition's answer.
struct PartResult {
    index: i32,
    error: i16,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    /// (producer id, first offset); None unless read_committed.
    aborted: Option<Vec<(i64, i64)>>,
    slice: Option<FileSlice>,
    /// (epoch, end offset) when the fetcher's last epoch is not in this log as it says.
    diverging: Option<(i32, i64)>,
    /// The follower a consumer should fetch from instead (KIP-392), or -1.
    preferred_read_replica: i32,
}

/// One topic's partitions to read, from the request or from its fetch session.
struct TopicTarget {
    name: TopicName,
    id: uuid::Uuid,
    parts: Vec<(i32, FetchParams)>,
}

impl TopicTarget {
    fn key(&self, partition: i32) -> PartitionKey {
        PartitionKey { topic_id: self.id, topic: self.name.0.clone(), partition }
    }
}

/// What a fetch answers: the session it belongs to (0 for none) and the partitions.
struct Answer {
    session_id: i32,
    topics: Vec<TopicResult>,
}

struct TopicResult {
    name: TopicName,
    id: uuid::Uuid,
    parts: Vec<PartResult>,
    /// The topic's bytes-out counter, for a consumer's fetch (followers' bytes are not
    /// counted, as in Kafka's BytesOutPerSec).
    bytes_out: Option<crate::stats::Counter>,
}

/// The follower's id if a replica sent this fetch, else -1 (a consumer).
fn replica_of(version: i16, req: &FetchRequest) -> i32 {
    if version >= 15 {
        req.replica_state.replica_id.0
    } else {
        req.replica_id.0
    }
}

/// One pass over the requested partitions. Returns the results and the bytes found.
/// With `waiter`, each partition read is told to wake it when it changes.
fn read_all(ctx: &Ctx<'_>, req: &FetchRequest, targets: &[TopicTarget], waiter: Option<&Arc<Notify>>) -> (Vec<TopicResult>, usize, bool) {
    let broker = ctx.broker;
    let replica = replica_of(ctx.version, req);
    let now = crate::clock::now_ms();
    let committed = req.isolation_level == READ_COMMITTED;
    // KIP-392: Kafka's RackAwareReplicaSelector, when `replica.selector.class` names it,
    // for v11+ consumers that say their rack. Looked up once per pass, not per partition.
    let client_rack = (replica < 0 && ctx.version >= 11 && !req.rack_id.is_empty())
        .then(|| &*req.rack_id)
        .filter(|_| broker.settings().rack_aware_replica_selector);
    let mut remaining = req.max_bytes.max(0) as usize;
    let mut min_one = true;
    let mut total = 0usize;
    let mut any_error = false;
    let mut topics = Vec::with_capacity(targets.len());
    let follower_allowed = replica < 0 || ctx.cluster_allowed(Operation::ClusterAction);
    for ft in targets {
        let topic = if ctx.version >= 13 {
            broker.topic_by_id(ft.id).ok_or(Error::UnknownTopicId)
        } else {
            broker.topic(&ft.name.0).ok_or(Error::UnknownTopicOrPartition)
        };
        // Kafka: a follower needs CLUSTER_ACTION on the cluster, a consumer READ on the
        // topic; either way a refusal is TOPIC_AUTHORIZATION_FAILED per partition.
        let topic = match topic {
            Ok(t) if !follower_allowed => Err(Error::TopicAuthorizationFailed(t.record.name.clone())),
            Ok(t) if replica < 0 && !ctx.topic_allowed(Operation::Read, &t.record.name) => {
                Err(Error::TopicAuthorizationFailed(t.record.name.clone()))
            }
            Err(_) if !follower_allowed || (ctx.version < 13 && !ctx.topic_allowed(Operation::Read, &ft.name.0)) => {
                Err(Error::TopicAuthorizationFailed(ft.name.0.to_string()))
            }
            other => other,
        };
        let mut parts = Vec::with_capacity(ft.parts.len());
        let mut bytes_out = None;
        for &(partition, fp) in &ft.parts {
            let mut diverging = None;
            let mut preferred = -1;
            let result = topic.as_ref().map_err(Clone::clone).and_then(|t| {
                let p = t.get(partition)?;
                if replica < 0 && bytes_out.is_none() {
                    bytes_out = Some(p.stats.bytes_out.clone());
                }
                if let Some(w) = waiter {
                    p.watch(w);
                }
                let max = (fp.partition_max_bytes.max(0) as usize).min(remaining);
                if ctx.version >= 12 && fp.last_fetched_epoch >= 0 {
                    // The fetcher's log ends in an epoch: if ours ends that epoch sooner (or
                    // never had it), its tail diverges and it must truncate first.
                    let d = p.is_leader().then(|| p.diverging(fp.last_fetched_epoch, fp.fetch_offset)).flatten();
                    if d.is_some() {
                        diverging = d;
                        return p.fetch_slice_for_follower(fp.fetch_offset, 0, false, fp.current_leader_epoch);
                    }
                }
                if replica >= 0 {
                    // Its progress first, so the answer carries the high watermark it moved.
                    if let Some(change) = p.follower_fetched(replica, fp.fetch_offset, now) {
                        broker.replication.request_isr_change(p.clone(), change);
                    }
                    return p.fetch_slice_for_follower(fp.fetch_offset, max, min_one, fp.current_leader_epoch);
                }
                // A consumer in another rack than the leader is sent to an in-sync follower
                // in its own rack, which then serves it (any v11+ consumer may read there).
                if let Some(rack) = client_rack.filter(|_| p.is_leader()) {
                    if let Some(id) = preferred_read_replica(broker, t, partition, rack) {
                        preferred = id;
                        return p.fetch_slice_for_follower(fp.fetch_offset, 0, false, fp.current_leader_epoch);
                    }
                }
                p.fetch_slice(fp.fetch_offset, max, min_one, fp.current_leader_epoch, committed, ctx.version >= 11)
            });
            parts.push(match result {
                Ok(d) => {
                    if let Some(s) = &d.slice {
                        min_one = false;
                        remaining = remaining.saturating_sub(s.len);
                        total += s.len;
                    }
                    PartResult {
                        index: partition,
                        error: 0,
                        high_watermark: d.high_watermark,
                        last_stable_offset: d.last_stable_offset,
                        log_start_offset: d.log_start_offset,
                        aborted: committed.then(|| d.aborted.iter().map(|a| (a.producer_id, a.first)).collect()),
                        slice: d.slice,
                        diverging,
                        preferred_read_replica: preferred,
                    }
                }
                Err(e) => {
                    any_error = true;
                    PartResult {
                        index: partition,
                        error: e.code(),
                        high_watermark: -1,
                        last_stable_offset: -1,
                        log_start_offset: -1,
                        aborted: committed.then(Vec::new),
                        slice: None,
                        diverging: None,
                        preferred_read_replica: -1,
                    }
                }
            });
        }
        topics.push(TopicResult { name: ft.name.clone(), id: ft.id, parts, bytes_out });
    }
    (topics, total, any_error)
}

/// Kafka's RackAwareReplicaSelector: an in-sync, live follower in the client's rack,
/// unless the leader is in that rack itself.
fn preferred_read_replica(broker: &crate::broker::Broker, topic: &crate::broker::Topic, partition: i32, rack: &str) -> Option<i32> {
    let state = topic.states.get(usize::try_from(partition).ok()?)?;
    let img = broker.cluster.image();
    let in_rack = |id: &i32| img.live_broker(*id).is_some_and(|b| b.rack.as_deref() == Some(rack));
    if in_rack(&state.leader) {
        return None;
    }
    state.replicas.iter().copied().find(|id| *id != state.leader && state.isr.contains(id) && in_rack(id))
}

/// The request's own partitions.
fn request_targets(req: &FetchRequest) -> Vec<TopicTarget> {
    req.topics
        .iter()
        .map(|ft| TopicTarget {
            name: ft.topic.clone(),
            id: ft.topic_id,
            parts: ft.partitions.iter().map(|fp| (fp.partition, params(fp))).collect(),
        })
        .collect()
}

fn params(fp: &fetch_request::FetchPartition) -> FetchParams {
    FetchParams {
        fetch_offset: fp.fetch_offset,
        partition_max_bytes: fp.partition_max_bytes,
        current_leader_epoch: fp.current_leader_epoch,
        last_fetched_epoch: fp.last_fetched_epoch,
    }
}

/// A session's partitions, each run of one topic as one target.
fn session_targets(partitions: &[(PartitionKey, FetchParams)]) -> Vec<TopicTarget> {
    let mut targets: Vec<TopicTarget> = Vec::new();
    for (k, p) in partitions {
        match targets.last_mut() {
            Some(t) if t.id == k.topic_id && t.name.0 == k.topic => t.parts.push((k.partition, *p)),
            _ => targets.push(TopicTarget { name: TopicName(k.topic.clone()), id: k.topic_id, parts: vec![(k.partition, *p)] }),
        }
    }
    targets
}

/// How the request's session (if any) says to serve it. Before v7 there are no sessions.
fn plan(ctx: &Ctx<'_>, req: &FetchRequest, now: i64) -> Result<Plan, Error> {
    if ctx.version < 7 {
        return Ok(Plan::Sessionless);
    }
    let full = req.session_epoch == session::INITIAL_EPOCH || req.session_epoch == session::FINAL_EPOCH;
    let (requested, forgotten) = if full {
        (Vec::new(), Vec::new())
    } else {
        let requested = request_targets(req).iter().flat_map(|t| t.parts.iter().map(|(i, p)| (t.key(*i), *p))).collect::<Vec<_>>();
        let forgotten = req
            .forgotten_topics_data
            .iter()
            .flat_map(|f| f.partitions.iter().map(|i| PartitionKey { topic_id: f.topic_id, topic: f.topic.0.clone(), partition: *i }))
            .collect::<Vec<_>>();
        (requested, forgotten)
    };
    ctx.broker.fetch_sessions.lock().begin(req.session_id, req.session_epoch, &requested, &forgotten, ctx.version >= 13, now)
}

fn answered(p: &PartResult) -> Answered {
    Answered {
        error: p.error,
        high_watermark: p.high_watermark,
        last_stable_offset: p.last_stable_offset,
        log_start_offset: p.log_start_offset,
        has_records: p.slice.as_ref().is_some_and(|s| s.len > 0),
        redirects: p.diverging.is_some() || p.preferred_read_replica >= 0,
    }
}

/// After the read: opens the session a full fetch asked for, or keeps only the changed
/// partitions of an incremental one.
fn settle(ctx: &Ctx<'_>, req: &FetchRequest, plan: Plan, targets: &[TopicTarget], topics: Vec<TopicResult>, now: i64) -> Answer {
    match plan {
        Plan::Sessionless => Answer { session_id: session::INVALID_SESSION_ID, topics },
        Plan::Full => {
            let keys: Vec<_> = targets.iter().flat_map(|t| t.parts.iter().map(|(i, p)| (t.key(*i), *p))).collect();
            let answers = topics.iter().flat_map(|t| t.parts.iter().map(answered));
            let entries = keys.iter().zip(answers).map(|((k, p), a)| (k, *p, a));
            let privileged = replica_of(ctx.version, req) >= 0;
            let session_id = ctx.broker.fetch_sessions.lock().open(privileged, ctx.version >= 13, entries, now);
            Answer { session_id, topics }
        }
        Plan::Incremental { session_id, partitions } => {
            let answers: Vec<_> =
                partitions.iter().zip(topics.iter().flat_map(|t| t.parts.iter())).map(|((k, _), p)| (k, answered(p))).collect();
            let keep = ctx.broker.fetch_sessions.lock().respond(session_id, &answers);
            let mut keep = keep.into_iter();
            let topics = topics
                .into_iter()
                .filter_map(|mut t| {
                    t.parts.retain(|_| keep.next().unwrap_or(true));
                    (!t.parts.is_empty()).then_some(t)
                })
                .collect();
            Answer { session_id, topics }
        }
    }
}

/// Runs the fetch, waiting as the request allows. Err is a top-level error code.
async fn collect(ctx: &Ctx<'_>, req: &FetchRequest) -> Result<Answer, i16> {
    let now = crate::clock::now_ms();
    let plan = plan(ctx, req, now).map_err(|e| e.code())?;
    let targets = match &plan {
        Plan::Incremental { partitions, .. } => session_targets(partitions),
        Plan::Full | Plan::Sessionless => request_targets(req),
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(req.max_wait_ms.max(0) as u64);
    // Only a fetch that may wait registers with the partitions it reads.
    let waiter = (req.max_wait_ms > 0 && req.min_bytes > 0).then(|| Arc::new(Notify::new()));
    loop {
        // Registered before reading (inside the pass), so a change in between is kept.
        let (topics, bytes, any_error) = read_all(ctx, req, &targets, waiter.as_ref());
        let done = bytes >= req.min_bytes.max(0) as usize || any_error || tokio::time::Instant::now() >= deadline;
        let Some(w) = waiter.as_ref().filter(|_| !done) else {
            return Ok(settle(ctx, req, plan, &targets, topics, crate::clock::now_ms()));
        };
        tokio::select! {
            _ = w.notified() => {}
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}

/// The crate's response type, with records copied in. Used by the generic dispatch
/// path (and the encoder test); clients are served by [`handle_frame`].
pub async fn handle(ctx: &Ctx<'_>, req: FetchRequest) -> FetchResponse {
    match collect(ctx, &req).await {
        Err(code) => FetchResponse::default().with_error_code(code),
        Ok(answer) => to_response(answer),
    }
}

fn to_response(answer: Answer) -> FetchResponse {
    let responses = answer
        .topics
        .into_iter()
        .map(|t| {
            let partitions = t
                .parts
                .into_iter()
                .map(|p| {
                    let records = p.slice.map(|s| Bytes::from(s.to_vec().unwrap_or_default())).unwrap_or_default();
                    PartitionData::default()
                        .with_partition_index(p.index)
                        .with_error_code(p.error)
                        .with_high_watermark(p.high_watermark)
                        .with_last_stable_offset(p.last_stable_offset)
                        .with_log_start_offset(p.log_start_offset)
                        .with_aborted_transactions(p.aborted.map(|v| {
                            v.into_iter()
                                .map(|(pid, first)| AbortedTransaction::default().with_producer_id(pid.into()).with_first_offset(first))
                                .collect()
                        }))
                        .with_records(Some(records))
                        .with_preferred_read_replica(p.preferred_read_replica.into())
                        .with_diverging_epoch(
                            p.diverging
                                .map(|(epoch, end)| fetch_response::EpochEndOffset::default().with_epoch(epoch).with_end_offset(end))
                                .unwrap_or_default(),
                        )
                })
                .collect();
            FetchableTopicResponse::default().with_topic(t.name).with_topic_id(t.id).with_partitions(partitions)
        })
        .collect();
    FetchResponse::default().with_session_id(answer.session_id).with_responses(responses)
}

/// Writes Kafka's primitive types, compact (flexible versions) or not.
struct Enc {
    flexible: bool,
    buf: BytesMut,
    chunks: Vec<Chunk>,
}

impl Enc {
    fn uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.put_u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.put_u8(v as u8);
    }
    fn array_len(&mut self, n: Option<usize>) {
        match (self.flexible, n) {
            (true, None) => self.uvarint(0),
            (true, Some(n)) => self.uvarint(n as u64 + 1),
            (false, None) => self.buf.put_i32(-1),
            (false, Some(n)) => self.buf.put_i32(n as i32),
        }
    }
    fn string(&mut self, s: &str) {
        if self.flexible {
            self.uvarint(s.len() as u64 + 1);
        } else {
            self.buf.put_i16(s.len() as i16);
        }
        self.buf.put_slice(s.as_bytes());
    }
    fn tags(&mut self) {
        if self.flexible {
            self.uvarint(0);
        }
    }
    fn records(&mut self, slice: Option<FileSlice>) {
        let len = slice.as_ref().map_or(0, |s| s.len);
        self.array_len(Some(len));
        if let Some(s) = slice {
            let head = self.buf.split().freeze();
            self.chunks.push(Chunk::Bytes(head));
            self.chunks.push(Chunk::File(s));
        }
    }
    fn finish(mut self) -> Vec<Chunk> {
        let tail = self.buf.split().freeze();
        if !tail.is_empty() {
            self.chunks.push(Chunk::Bytes(tail));
        }
        self.chunks
    }
}

/// Encodes a whole response frame (length prefix and header included).
fn encode_frame(version: i16, correlation_id: i32, result: Result<Answer, i16>, throttle_ms: i32) -> Vec<Chunk> {
    let flexible = version >= 12;
    let mut e = Enc { flexible, buf: BytesMut::with_capacity(256), chunks: Vec::new() };
    e.buf.put_i32(0); // length, patched below
    e.buf.put_i32(correlation_id);
    e.tags(); // response header v1 for flexible versions
    e.buf.put_i32(throttle_ms);
    let (error, answer) = match result {
        Ok(a) => (0, a),
        Err(code) => (code, Answer { session_id: session::INVALID_SESSION_ID, topics: vec![] }),
    };
    let topics = answer.topics;
    if version >= 7 {
        e.buf.put_i16(error);
        e.buf.put_i32(answer.session_id);
    }
    e.array_len(Some(topics.len()));
    for t in topics {
        if version >= 13 {
            e.buf.put_slice(t.id.as_bytes());
        } else {
            e.string(&t.name.0);
        }
        e.array_len(Some(t.parts.len()));
        for p in t.parts {
            e.buf.put_i32(p.index);
            e.buf.put_i16(p.error);
            e.buf.put_i64(p.high_watermark);
            e.buf.put_i64(p.last_stable_offset);
            if version >= 5 {
                e.buf.put_i64(p.log_start_offset);
            }
            e.array_len(p.aborted.as_ref().map(Vec::len));
            for (pid, first) in p.aborted.unwrap_or_default() {
                e.buf.put_i64(pid);
                e.buf.put_i64(first);
                e.tags();
            }
            if version >= 11 {
                e.buf.put_i32(p.preferred_read_replica);
            }
            e.records(p.slice);
            match (version >= 12, p.diverging) {
                (true, Some((epoch, end))) => {
                    // One tagged field: DivergingEpoch (tag 0), itself epoch, end offset, no tags.
                    e.uvarint(1);
                    e.uvarint(0);
                    e.uvarint(13);
                    e.buf.put_i32(epoch);
                    e.buf.put_i64(end);
                    e.uvarint(0);
                }
                _ => e.tags(),
            }
        }
        e.tags();
    }
    e.tags();
    let mut chunks = e.finish();
    let total: usize = chunks.iter().map(Chunk::len).sum::<usize>() - 4;
    if let Some(Chunk::Bytes(first)) = chunks.first_mut() {
        let mut b = BytesMut::from(&first[..]);
        b[0..4].copy_from_slice(&(total as i32).to_be_bytes());
        *first = b.freeze();
    }
    chunks
}

/// Serves a Fetch, returning the frame as bytes and file ranges.
pub async fn handle_frame(ctx: &Ctx<'_>, mut req: FetchRequest, correlation_id: i32) -> Vec<Chunk> {
    // A consumer's (not a follower's) fetch counts against its consumer_byte_rate quota.
    // A follower's fetch is exempt from both, as in Kafka.
    let consumer = replica_of(ctx.version, &req) < 0;
    let quota = if consumer { ctx.quota(ThrottleKind::Fetch) } else { None };
    if let Some(gov) = &quota {
        // As Kafka (`getMaxValueInQuotaWindow`): no response bigger than the quota allows
        // over all windows but the current one, else it could never fit and would be
        // answered empty for ever.
        let s = ctx.broker.settings();
        let window_bytes = gov.bound * (s.quota_window_num.saturating_sub(1).max(1) as f64) * (s.quota_window_size_ms as f64 / 1000.0);
        req.max_bytes = req.max_bytes.min(window_bytes.clamp(1.0, i32::MAX as f64) as i32);
    }
    let (result, handle_ns) = super::request_quota::timed(collect(ctx, &req)).await;
    let request_ms = if consumer { ctx.record_request_time(ApiKey::Fetch, handle_ns) } else { 0 };
    let result = match result {
        Ok(answer) => {
            // The record bytes: what the response's size is, to within its headers.
            let size: usize = answer.topics.iter().flat_map(|t| &t.parts).map(|p| p.slice.as_ref().map_or(0, |s| s.len)).sum();
            let bytes_ms = quota.as_ref().map_or(0, |gov| ctx.record_quota(ThrottleKind::Fetch, gov, size));
            if bytes_ms == 0 && request_ms == 0 {
                Ok(answer)
            } else {
                // Over either quota: Kafka answers at once without records (taking their
                // bytes back off the byte rate), and the client waits out the throttle
                // before fetching again.
                if let Some(gov) = &quota {
                    ctx.broker.unrecord_quota(ThrottleKind::Fetch, gov, size);
                }
                Ok(Answer { session_id: answer.session_id, topics: Vec::new() })
            }
        }
        Err(code) => Err(code),
    };
    count(&result);
    encode_frame(ctx.version, correlation_id, result, ctx.throttle_ms())
}

/// Counts what a fetch answers: its error codes, and the record bytes sent to a consumer.
fn count(result: &Result<Answer, i16>) {
    let Some(s) = crate::stats::api(ApiKey::Fetch as i16) else { return };
    match result {
        Err(code) => s.error(*code),
        Ok(answer) => {
            for t in &answer.topics {
                let mut sent = 0;
                for p in &t.parts {
                    s.error(p.error);
                    sent += p.slice.as_ref().map_or(0, |sl| sl.len);
                }
                if let Some(c) = &t.bytes_out {
                    c.inc_by(sent as u64);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::protocol::Encodable;

    fn sample(dir: &std::path::Path) -> Vec<TopicResult> {
        let path = dir.join("f");
        std::fs::write(&path, b"0123456789abcdef").unwrap();
        let file = std::sync::Arc::new(std::fs::File::open(&path).unwrap());
        let part = |index, slice: Option<FileSlice>, aborted| PartResult {
            index,
            error: 0,
            high_watermark: 10,
            last_stable_offset: 9,
            log_start_offset: 1,
            aborted,
            slice,
            diverging: (index == 1).then_some((3, 42)),
            preferred_read_replica: if index == 2 { 3 } else { -1 },
        };
        vec![TopicResult {
            name: kafka_protocol::protocol::StrBytes::from_static_str("topic").into(),
            id: uuid::Uuid::from_u128(42),
            parts: vec![
                part(0, Some(FileSlice { file: file.clone(), pos: 3, len: 7, last_offset: 0 }), Some(vec![(5, 6)])),
                part(1, None, Some(vec![])),
                part(2, Some(FileSlice { file, pos: 0, len: 16, last_offset: 0 }), None),
            ],
            bytes_out: None,
        }]
    }

    fn flatten(chunks: Vec<Chunk>) -> Vec<u8> {
        chunks
            .into_iter()
            .flat_map(|c| match c {
                Chunk::Bytes(b) => b.to_vec(),
                Chunk::File(s) => s.to_vec().unwrap(),
            })
            .collect()
    }

    #[test]
    fn hand_encoding_matches_the_crate_at_every_version() {
        let dir = tempfile::tempdir().unwrap();
        for v in 4..=18 {
            // Before v7 there is no session id on the wire.
            let session_id = if v >= 7 { 0x5e55 } else { 0 };
            let ours = flatten(encode_frame(v, 77, Ok(Answer { session_id, topics: sample(dir.path()) }), 0));
            let mut topics = sample(dir.path());
            if v >= 13 {
                topics[0].name = Default::default();
            } else {
                topics[0].id = uuid::Uuid::nil();
            }
            if v < 11 {
                // No preferred read replica field before v11: the crate refuses a set one.
                topics[0].parts.iter_mut().for_each(|p| p.preferred_read_replica = -1);
            }
            let resp = to_response(Answer { session_id, topics });
            let mut body = BytesMut::new();
            ResponseHeader::default().with_correlation_id(77).encode(&mut body, if v >= 12 { 1 } else { 0 }).unwrap();
            resp.encode(&mut body, v).unwrap();
            assert_eq!(&ours[4..], &body[..], "fetch v{v}");
            assert_eq!(i32::from_be_bytes(ours[0..4].try_into().unwrap()) as usize, body.len());
        }
    }
}
