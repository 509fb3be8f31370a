//! KIP-932: ShareFetch and ShareAcknowledge, on the partitions' leader. A fetch first
//! applies the acknowledgements it carries, then acquires records for the member and
//! returns their batches with the acquired offset ranges; the client drops whatever
//! else the batches hold. With nothing to acquire it waits, as Fetch does, for an
//! append or a released record, up to `max_wait_ms`. A share partition is read from its
//! share coordinator on first use; acquisitions and acknowledgements are answered only
//! once the coordinator has them (else the partition, or its acknowledgement, fails).
//! v2 (KIP-1206, KIP-1222) adds the acquire mode and RENEW acknowledgements: a request
//! that says `IsRenewAck` only acknowledges, and fetches nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::share_acknowledge_response as sar;
use kafka_protocol::messages::share_fetch_response::{self as sfr, AcquiredRecords, ShareFetchableTopicResponse};
use kafka_protocol::messages::*;
use tokio::sync::Notify;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::error::{Error, Result};
use crate::log::batch::{BatchHeader, HEADER_LEN};
use crate::share::group::Tp;
use crate::share::partition::{check_ack_batches, AbortedTxn, AcquireMode, Acquired, LogBatch};
use crate::share::session::{FINAL_EPOCH, INITIAL_EPOCH};

/// Bytes read from one partition per fetch (the client's max.partition.fetch.bytes).
const PARTITION_MAX_BYTES: usize = 1 << 20;
/// How often a waiting fetch looks again for records whose locks ran out.
const RECHECK_MS: u64 = 100;

type Acks = Vec<(i64, i64, Vec<i8>)>;

/// One partition's part of the answer.
#[derive(Default)]
struct PartOut {
    error: Option<Error>,
    ack_error: Option<Error>,
    leader: (i32, i32),
    records: Option<Bytes>,
    acquired: Vec<Acquired>,
}

/// The group and member a share request names; both are required.
fn ids(group: &Option<GroupId>, member: &Option<kafka_protocol::protocol::StrBytes>) -> Result<(String, String)> {
    let g = group.as_ref().map(|g| g.0.to_string()).unwrap_or_default();
    let m = member.as_ref().map(|m| m.to_string()).unwrap_or_default();
    if g.is_empty() {
        return Err(Error::InvalidRequest("GroupId can't be empty.".into()));
    }
    if m.is_empty() {
        return Err(Error::InvalidRequest("MemberId can't be empty.".into()));
    }
    Ok((g, m))
}

/// The leader id and epoch of a partition, as the answer reports them.
fn leader_of(ctx: &Ctx<'_>, tp: Tp) -> (i32, i32) {
    ctx.broker
        .topic_by_id(tp.0)
        .and_then(|t| t.states.get(usize::try_from(tp.1).ok()?).map(|s| (s.leader, s.leader_epoch)))
        .unwrap_or((-1, -1))
}

/// Applies each partition's acknowledgements and writes them to the share coordinator;
/// the error, if any, per partition. `is_renew_ack` is the request's flag (v2), which
/// RENEW acknowledgements need.
async fn acknowledge(
    ctx: &Ctx<'_>,
    group: &str,
    member: &str,
    acks: &BTreeMap<Tp, Acks>,
    is_renew_ack: bool,
) -> BTreeMap<Tp, Option<Error>> {
    let mut out = BTreeMap::new();
    for (tp, batches) in acks {
        let r = match check_ack_batches(batches, ctx.version >= 2, is_renew_ack).and_then(|()| check_topic(ctx, *tp)) {
            Ok(_) => acknowledge_partition(ctx, group, member, *tp, batches).await,
            Err(e) => Err(e),
        };
        out.insert(*tp, r.err());
    }
    out
}

async fn acknowledge_partition(ctx: &Ctx<'_>, group: &str, member: &str, tp: Tp, batches: &Acks) -> Result<()> {
    let loaded = ctx.broker.load_share_partition(group, tp).await?;
    let applied = ctx.broker.shares.acknowledge(group, member, tp, batches, crate::clock::now_ms());
    // Whatever part was applied is written before anyone hears of it.
    ctx.broker.flush_share_partition(group, tp, loaded).await?;
    applied
}

/// The topic exists and the client may read it.
fn check_topic(ctx: &Ctx<'_>, tp: Tp) -> Result<Arc<crate::broker::Topic>> {
    let t = ctx.broker.topic_by_id(tp.0).ok_or(Error::UnknownTopicId)?;
    if !ctx.topic_allowed(Operation::Read, &t.record.name) {
        return Err(Error::TopicAuthorizationFailed(t.record.name.clone()));
    }
    Ok(t)
}

/// Reads and acquires one partition's records for the member.
fn fetch_partition(
    ctx: &Ctx<'_>,
    group: &str,
    member: &str,
    tp: Tp,
    max_bytes: usize,
    max_records: usize,
    mode: AcquireMode,
    waiter: &Arc<Notify>,
) -> Result<(Option<Bytes>, Vec<Acquired>)> {
    let shares = &ctx.broker.shares;
    let t = check_topic(ctx, tp)?;
    let p = t.get(tp.1)?;
    p.watch(waiter);
    let (log_start, leader) = p.with_state(|s| (s.log.log_start_offset(), s.replicas.is_leader()));
    if !leader {
        return Err(Error::NotLeaderOrFollower);
    }
    let read_committed = shares.share_config_for(group).read_committed;
    let Some(offset) = shares.fetch_offset(group, tp, log_start) else {
        return Ok((None, Vec::new()));
    };
    let data = p.fetch_slice(offset, max_bytes, true, -1, read_committed, false)?;
    let Some(slice) = data.slice else { return Ok((None, Vec::new())) };
    let bytes = slice.to_vec()?;
    let mut batches = Vec::new();
    let mut pos = 0;
    while bytes.len() - pos >= HEADER_LEN {
        let h = BatchHeader::parse(&bytes[pos..])?;
        let end = pos + h.total_len();
        if end > bytes.len() {
            break;
        }
        let b = LogBatch {
            first: h.base_offset,
            last: h.last_offset(),
            producer_id: h.producer_id,
            transactional: h.is_transactional(),
            control: h.is_control(),
        };
        batches.push((b, pos..end));
        pos = end;
    }
    let aborted: Vec<AbortedTxn> =
        data.aborted.iter().map(|a| AbortedTxn { producer_id: a.producer_id, first: a.first, last: a.last }).collect();
    let logs: Vec<LogBatch> = batches.iter().map(|(b, _)| *b).collect();
    let acquired = shares.acquire(group, member, tp, &logs, &aborted, max_records, mode, crate::clock::now_ms());
    if acquired.is_empty() {
        return Ok((None, acquired));
    }
    // Only the batches that hold acquired records go back.
    let mut out = Vec::new();
    for (b, range) in &batches {
        if acquired.iter().any(|a| a.first <= b.last && b.first <= a.last) {
            out.extend_from_slice(&bytes[range.clone()]);
        }
    }
    Ok((Some(Bytes::from(out)), acquired))
}

pub async fn share_fetch(ctx: &Ctx<'_>, req: ShareFetchRequest) -> ShareFetchResponse {
    let fail = |e: Error| ShareFetchResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())));
    let (group, member) = match ids(&req.group_id, &req.member_id).and_then(|ids| ctx.check_group(Operation::Read, &ids.0).map(|()| ids)) {
        Ok(ids) => ids,
        Err(e) => return fail(e),
    };
    let is_renew_ack = ctx.version >= 2 && req.is_renew_ack;
    if is_renew_ack {
        // Checked before the share session, as Kafka does: a refused request moves no epoch.
        if let Some(e) = renew_fetch_error(&req) {
            return fail(e);
        }
    }
    let lock_ms = lock_ms(ctx, &group);
    let shares = &ctx.broker.shares;
    let mut add = Vec::new();
    let mut acks: BTreeMap<Tp, Acks> = BTreeMap::new();
    for t in &req.topics {
        for p in &t.partitions {
            add.push((t.topic_id, p.partition_index));
            if !p.acknowledgement_batches.is_empty() {
                let batches = p.acknowledgement_batches.iter().map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()));
                acks.entry((t.topic_id, p.partition_index)).or_default().extend(batches);
            }
        }
    }
    let forget: Vec<Tp> = req.forgotten_topics_data.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p))).collect();
    let mut parts: BTreeMap<Tp, PartOut> = BTreeMap::new();
    if req.share_session_epoch == FINAL_EPOCH {
        // The last request of a session only acknowledges; then the session closes and
        // the member's remaining records go back.
        if !shares.has_session(&group, &member) {
            return fail(Error::ShareSessionNotFound);
        }
        for (tp, e) in acknowledge(ctx, &group, &member, &acks, is_renew_ack).await {
            parts.insert(tp, PartOut { ack_error: e, leader: leader_of(ctx, tp), ..Default::default() });
        }
        if let Err(e) = shares.session_step(&group, &member, FINAL_EPOCH, &[], &[]) {
            return fail(e);
        }
        return respond(parts, lock_ms);
    }
    if let Err(e) = shares.session_step(&group, &member, req.share_session_epoch, &add, &forget) {
        return fail(e);
    }
    for (tp, e) in acknowledge(ctx, &group, &member, &acks, is_renew_ack).await {
        parts.insert(tp, PartOut { ack_error: e, leader: leader_of(ctx, tp), ..Default::default() });
    }
    if is_renew_ack {
        return respond(parts, lock_ms);
    }
    let Some(mode) = AcquireMode::from_id(req.share_acquire_mode) else {
        // Kafka fails the fetch (after the session and the acknowledgements) when it has
        // partitions to read: its ShareAcquireMode.forId throws.
        if shares.session_partitions(&group, &member).is_empty() {
            return respond(parts, lock_ms);
        }
        return fail(Error::UnknownServerError(format!("Unknown share acquire mode id: {}", req.share_acquire_mode)));
    };
    // As Kafka's SharePartition.acquire: MaxRecords 0 or below acquires nothing (the fetch
    // waits out MaxWaitMs and answers empty); it is no "no limit".
    let max_records = usize::try_from(req.max_records).unwrap_or(0);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(req.max_wait_ms.max(0) as u64);
    let waiter = Arc::new(Notify::new());
    loop {
        let mut remaining = if req.max_bytes > 0 { req.max_bytes as usize } else { usize::MAX };
        let mut records_left = max_records;
        let mut found = false;
        for tp in shares.session_partitions(&group, &member) {
            if records_left == 0 || remaining == 0 {
                break;
            }
            let r = match ctx.broker.load_share_partition(&group, tp).await {
                Ok(loaded) => fetch_partition(ctx, &group, &member, tp, remaining.min(PARTITION_MAX_BYTES), records_left, mode, &waiter)
                    .map(|got| (loaded, got)),
                Err(e) => Err(e),
            };
            // Records go out only once their delivery counts are durable.
            let r = match r {
                Ok((loaded, got @ (Some(_), _))) => ctx.broker.flush_share_partition(&group, tp, loaded).await.map(|()| got),
                Ok((_, got)) => Ok(got),
                Err(e) => Err(e),
            };
            let out = parts.entry(tp).or_default();
            out.leader = leader_of(ctx, tp);
            match r {
                Ok((Some(bytes), acquired)) => {
                    found = true;
                    remaining = remaining.saturating_sub(bytes.len());
                    records_left = records_left.saturating_sub(acquired.iter().map(|a| (a.last - a.first + 1) as usize).sum());
                    out.records = Some(bytes);
                    out.acquired = acquired;
                }
                Ok((None, _)) => {}
                Err(e) => {
                    found = true;
                    out.error = Some(e);
                }
            }
        }
        let now = tokio::time::Instant::now();
        if found || now >= deadline || req.min_bytes <= 0 {
            break;
        }
        let wait = (deadline - now).min(std::time::Duration::from_millis(RECHECK_MS));
        let _ = tokio::time::timeout(wait, waiter.notified()).await;
    }
    // Partitions with nothing to say are left out, as Kafka's incremental answers do.
    parts.retain(|tp, p| p.error.is_some() || p.records.is_some() || acks.contains_key(tp));
    respond(parts, lock_ms)
}

/// The acquisition lock the group's members get, as responses report it.
fn lock_ms(ctx: &Ctx<'_>, group: &str) -> i32 {
    ctx.broker.shares.share_config_for(group).record_lock_duration_ms.clamp(0, i32::MAX as i64) as i32
}

/// A renew-only ShareFetch must ask for no records: Kafka's INVALID_REQUEST otherwise.
fn renew_fetch_error(req: &ShareFetchRequest) -> Option<Error> {
    let set = [("maxBytes", req.max_bytes), ("minBytes", req.min_bytes), ("maxRecords", req.max_records), ("maxWaitMs", req.max_wait_ms)];
    let wrong: Vec<String> = set.iter().filter(|(_, v)| *v != 0).map(|(n, _)| format!("{n} must be set to 0")).collect();
    (!wrong.is_empty()).then(|| Error::InvalidRequest(format!("{}, if isRenewAck is true.", wrong.join(", "))))
}

fn respond(parts: BTreeMap<Tp, PartOut>, lock_ms: i32) -> ShareFetchResponse {
    let mut topics: BTreeMap<uuid::Uuid, Vec<sfr::PartitionData>> = BTreeMap::new();
    for ((topic, index), p) in parts {
        let mut d = sfr::PartitionData::default()
            .with_partition_index(index)
            .with_current_leader(sfr::LeaderIdAndEpoch::default().with_leader_id(p.leader.0.into()).with_leader_epoch(p.leader.1))
            .with_records(Some(p.records.unwrap_or_default()))
            .with_acquired_records(
                p.acquired
                    .iter()
                    .map(|a| {
                        AcquiredRecords::default().with_first_offset(a.first).with_last_offset(a.last).with_delivery_count(a.delivery_count)
                    })
                    .collect(),
            );
        if let Some(e) = p.error {
            d = d.with_error_code(e.code()).with_error_message(Some(sb(e.message())));
        }
        if let Some(e) = p.ack_error {
            d = d.with_acknowledge_error_code(e.code()).with_acknowledge_error_message(Some(sb(e.message())));
        }
        topics.entry(topic).or_default().push(d);
    }
    ShareFetchResponse::default().with_acquisition_lock_timeout_ms(lock_ms).with_responses(
        topics.into_iter().map(|(t, ps)| ShareFetchableTopicResponse::default().with_topic_id(t).with_partitions(ps)).collect(),
    )
}

pub async fn share_acknowledge(ctx: &Ctx<'_>, req: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse {
    let fail = |e: Error| ShareAcknowledgeResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())));
    let (group, member) = match ids(&req.group_id, &req.member_id).and_then(|ids| ctx.check_group(Operation::Read, &ids.0).map(|()| ids)) {
        Ok(ids) => ids,
        Err(e) => return fail(e),
    };
    let shares = &ctx.broker.shares;
    let epoch = req.share_session_epoch;
    // Acknowledging opens no session: epoch 0 is never valid here.
    if epoch == INITIAL_EPOCH {
        return fail(Error::InvalidShareSessionEpoch { got: 0, expected: 1 });
    }
    if epoch == FINAL_EPOCH {
        if !shares.has_session(&group, &member) {
            return fail(Error::ShareSessionNotFound);
        }
    } else if let Err(e) = shares.session_step(&group, &member, epoch, &[], &[]) {
        return fail(e);
    }
    let mut acks: BTreeMap<Tp, Acks> = BTreeMap::new();
    for t in &req.topics {
        for p in &t.partitions {
            let batches = p.acknowledgement_batches.iter().map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.clone()));
            acks.entry((t.topic_id, p.partition_index)).or_default().extend(batches);
        }
    }
    let results = acknowledge(ctx, &group, &member, &acks, ctx.version >= 2 && req.is_renew_ack).await;
    if epoch == FINAL_EPOCH {
        if let Err(e) = shares.session_step(&group, &member, FINAL_EPOCH, &[], &[]) {
            return fail(e);
        }
    }
    let mut topics: BTreeMap<uuid::Uuid, Vec<sar::PartitionData>> = BTreeMap::new();
    for ((topic, index), e) in results {
        let (leader, leader_epoch) = leader_of(ctx, (topic, index));
        let mut d = sar::PartitionData::default()
            .with_partition_index(index)
            .with_current_leader(sar::LeaderIdAndEpoch::default().with_leader_id(leader.into()).with_leader_epoch(leader_epoch));
        if let Some(e) = e {
            d = d.with_error_code(e.code()).with_error_message(Some(sb(e.message())));
        }
        topics.entry(topic).or_default().push(d);
    }
    // v2 reports the lock a RENEW extended to (the field does not exist before).
    ShareAcknowledgeResponse::default().with_acquisition_lock_timeout_ms(lock_ms(ctx, &group)).with_responses(
        topics.into_iter().map(|(t, ps)| sar::ShareAcknowledgeTopicResponse::default().with_topic_id(t).with_partitions(ps)).collect(),
    )
}
