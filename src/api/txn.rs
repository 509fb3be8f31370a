//! Transactions: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, and
//! the admin views ListTransactions, DescribeTransactions and DescribeProducers.

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult};
use kafka_protocol::messages::describe_producers_response::{PartitionResponse, ProducerState, TopicResponse};
use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::txn_offset_commit_response::{TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::error::Error;
use crate::group::{CommitItem, OFFSETS_TOPIC};

fn code(r: crate::error::Result<()>, fenced_supported: bool) -> i16 {
    r.err().map_or(0, |e| e.for_old_clients(fenced_supported).code())
}

/// (topic, partition) pairs.
type Parts = Vec<(String, i32)>;

/// The partitions named, and those of them that don't exist.
fn named(broker: &crate::broker::Broker, topics: &[AddPartitionsToTxnTopic]) -> (Parts, Parts) {
    let parts: Vec<(String, i32)> = topics.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.to_string(), *p))).collect();
    let unknown = parts.iter().filter(|(t, p)| broker.topic(t).is_none_or(|t| *p < 0 || *p >= t.record.partitions)).cloned().collect();
    (parts, unknown)
}

/// Per-partition results: `code` for each partition that exists.
fn partition_codes(
    topics: &[AddPartitionsToTxnTopic],
    unknown: &[(String, i32)],
    code: impl Fn(&str, i32) -> i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    topics
        .iter()
        .map(|t| {
            let results = t
                .partitions
                .iter()
                .map(|p| {
                    let c = if unknown.iter().any(|(n, q)| n == &*t.name.0 && q == p) {
                        Error::UnknownTopicOrPartition.code()
                    } else {
                        code(&t.name.0, *p)
                    };
                    AddPartitionsToTxnPartitionResult::default().with_partition_index(*p).with_partition_error_code(c)
                })
                .collect();
            AddPartitionsToTxnTopicResult::default().with_name(t.name.clone()).with_results_by_partition(results)
        })
        .collect()
}

/// Kafka's AddPartitionsToTxn checks: WRITE on the transactional id (else every partition
/// is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then WRITE on each topic (the
/// refused ones TOPIC_AUTHORIZATION_FAILED, the rest OPERATION_NOT_ATTEMPTED).
fn add_refused(ctx: &Ctx<'_>, id: &str, topics: &[AddPartitionsToTxnTopic]) -> Option<Vec<AddPartitionsToTxnTopicResult>> {
    if let Err(e) = ctx.check_txn_id(Operation::Write, id) {
        return Some(partition_codes(topics, &[], |_, _| e.code()));
    }
    let denied: Vec<&str> = topics.iter().map(|t| &*t.name.0).filter(|t| !ctx.topic_allowed(Operation::Write, t)).collect();
    if denied.is_empty() {
        return None;
    }
    let (taf, skipped) = (Error::TopicAuthorizationFailed(String::new()).code(), Error::OperationNotAttempted.code());
    Some(partition_codes(topics, &[], |t, _| if denied.contains(&t) { taf } else { skipped }))
}

/// Adds the partitions to the transaction (all or none), or says why not.
async fn add_all(
    broker: &crate::broker::Broker,
    id: &str,
    pid: i64,
    epoch: i16,
    topics: &[AddPartitionsToTxnTopic],
    fenced_ok: bool,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let (parts, unknown) = named(broker, topics);
    let r = if unknown.is_empty() {
        broker.txns.add_partitions(broker, id, pid, epoch, &parts).await
    } else {
        Err(Error::OperationNotAttempted)
    };
    let c = code(r, fenced_ok);
    partition_codes(topics, &unknown, |_, _| c)
}

pub async fn add_partitions(ctx: &Ctx<'_>, req: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse {
    let broker = &**ctx.broker;
    if ctx.version >= 4 {
        // The batched form brokers use: several transactions, each possibly verify-only.
        // Kafka lets only brokers (CLUSTER_ACTION) send it.
        if let Err(e) = ctx.check_cluster(Operation::ClusterAction) {
            return AddPartitionsToTxnResponse::default().with_error_code(e.code());
        }
        let mut results = Vec::with_capacity(req.transactions.len());
        for t in &req.transactions {
            let (id, pid, epoch) = (&t.transactional_id.0, t.producer_id.0, t.producer_epoch);
            let topic_results = if t.verify_only {
                let (_, unknown) = named(broker, &t.topics);
                partition_codes(&t.topics, &unknown, |tp, p| code(broker.txns.verify(broker, id, pid, epoch, tp, p), true))
            } else {
                add_all(broker, id, pid, epoch, &t.topics, true).await
            };
            results.push(
                add_partitions_to_txn_response::AddPartitionsToTxnResult::default()
                    .with_transactional_id(t.transactional_id.clone())
                    .with_topic_results(topic_results),
            );
        }
        return AddPartitionsToTxnResponse::default().with_results_by_transaction(results);
    }
    if let Some(refused) = add_refused(ctx, &req.v3_and_below_transactional_id.0, &req.v3_and_below_topics) {
        return AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(refused);
    }
    let topics = add_all(
        broker,
        &req.v3_and_below_transactional_id.0,
        req.v3_and_below_producer_id.0,
        req.v3_and_below_producer_epoch,
        &req.v3_and_below_topics,
        ctx.version >= 2,
    )
    .await;
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(topics)
}

pub async fn add_offsets(ctx: &Ctx<'_>, req: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse {
    let b = &**ctx.broker;
    let p = b.groups.offsets_partition(&req.group_id.0);
    // Kafka: WRITE on the transactional id, READ on the group.
    let allowed =
        ctx.check_txn_id(Operation::Write, &req.transactional_id.0).and_then(|()| ctx.check_group(Operation::Read, &req.group_id.0));
    let r = match allowed.and_then(|()| b.groups.ensure_offsets_topic(b)) {
        Ok(_) => {
            let part = [(OFFSETS_TOPIC.to_string(), p)];
            b.txns.add_partitions(b, &req.transactional_id.0, req.producer_id.0, req.producer_epoch, &part).await
        }
        Err(e) => Err(e),
    };
    AddOffsetsToTxnResponse::default().with_error_code(code(r, ctx.version >= 2))
}

/// WriteTxnMarkers: a transaction coordinator on another broker ends a transaction on
/// partitions this broker leads.
/// WriteTxnMarkers. v2 (KIP-1228) adds each marker's transaction version: a TV2 marker is
/// checked strictly against the producer's epoch at the partition (`Partition::write_marker`).
pub async fn write_txn_markers(ctx: &Ctx<'_>, req: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse {
    let broker = &**ctx.broker;
    // Kafka: only brokers (CLUSTER_ACTION) write markers.
    let allowed = ctx.check_cluster(Operation::ClusterAction);
    let mut markers = Vec::with_capacity(req.markers.len());
    for m in &req.markers {
        let mut topics = Vec::with_capacity(m.topics.len());
        for t in &m.topics {
            let mut partitions = Vec::with_capacity(t.partition_indexes.len());
            for &p in &t.partition_indexes {
                let r = match &allowed {
                    Err(e) => Err(e.clone()),
                    Ok(()) => {
                        let (pid, epoch, commit, tv) = (m.producer_id.0, m.producer_epoch, m.transaction_result, m.transaction_version);
                        crate::txn::markers::write_local(broker, &t.name.0, p, pid, epoch, commit, tv).await
                    }
                };
                partitions.push(WritableTxnMarkerPartitionResult::default().with_partition_index(p).with_error_code(code(r, true)));
            }
            topics.push(WritableTxnMarkerTopicResult::default().with_name(t.name.clone()).with_partitions(partitions));
        }
        markers.push(WritableTxnMarkerResult::default().with_producer_id(m.producer_id).with_topics(topics));
    }
    WriteTxnMarkersResponse::default().with_markers(markers)
}

pub async fn end_txn(ctx: &Ctx<'_>, req: EndTxnRequest) -> EndTxnResponse {
    // EndTxn v5 is how a client says it speaks transactions v2.
    let tv2 = ctx.version >= 5;
    let r = match ctx.check_txn_id(Operation::Write, &req.transactional_id.0) {
        Err(e) => Err(e),
        Ok(()) => {
            ctx.broker.txns.end(&**ctx.broker, &req.transactional_id.0, req.producer_id.0, req.producer_epoch, req.committed, tv2).await
        }
    };
    let resp = EndTxnResponse::default();
    match r {
        Ok((pid, epoch)) if tv2 => resp.with_producer_id(pid.into()).with_producer_epoch(epoch),
        Ok(_) => resp,
        Err(e) => {
            let resp = resp.with_error_code(e.for_old_clients(ctx.version >= 2).code());
            if tv2 {
                resp.with_producer_id((-1).into()).with_producer_epoch(-1)
            } else {
                resp
            }
        }
    }
}

/// TxnOffsetCommit. v6 (KIP-1319) names topics by id, in the request and the response: ids
/// are resolved to names on arrival (offsets are stored by name), an id no topic has
/// answers UNKNOWN_TOPIC_ID for its partitions, and answers carry the topic's id.
pub async fn txn_offset_commit(ctx: &Ctx<'_>, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse {
    let by_id = ctx.version >= 6;
    let mut unknown_ids: Vec<TxnOffsetCommitResponseTopic> = Vec::new();
    let mut items: Vec<CommitItem> = Vec::new();
    for t in &req.topics {
        if let Err(unknown) = super::offsets::add_commits(ctx, by_id, t.topic_id, &t.name.0, &t.partitions, &mut items) {
            let parts = unknown
                .into_iter()
                .map(|i| TxnOffsetCommitResponsePartition::default().with_partition_index(i).with_error_code(Error::UnknownTopicId.code()));
            unknown_ids.push(TxnOffsetCommitResponseTopic::default().with_topic_id(t.topic_id).with_partitions(parts.collect()));
        }
    }
    let generation = if ctx.version >= 3 { req.generation_id } else { -1 };
    // Kafka: WRITE on the transactional id, READ on the group, then READ per topic.
    let allowed =
        ctx.check_txn_id(Operation::Write, &req.transactional_id.0).and_then(|()| ctx.check_group(Operation::Read, &req.group_id.0));
    let (items, denied): (Vec<CommitItem>, Vec<CommitItem>) = match &allowed {
        Ok(()) => items.into_iter().partition(|it| ctx.topic_allowed(Operation::Read, &it.topic)),
        Err(_) => (items, Vec::new()),
    };
    if ctx.version >= 5 && allowed.is_ok() {
        // Transactions v2: the group's offsets partition joins the transaction here.
        let b = &**ctx.broker;
        let p = b.groups.offsets_partition(&req.group_id.0);
        let added = match b.groups.ensure_offsets_topic(b) {
            Ok(_) => {
                let id = Some(&*req.transactional_id.0);
                crate::broker::txn_verify::verify(b, id, req.producer_id.0, req.producer_epoch, OFFSETS_TOPIC, p, true).await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = added {
            let c = e.code();
            let topics = req
                .topics
                .iter()
                .map(|t| {
                    TxnOffsetCommitResponseTopic::default().with_name(t.name.clone()).with_topic_id(t.topic_id).with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| TxnOffsetCommitResponsePartition::default().with_partition_index(p.partition_index).with_error_code(c))
                            .collect(),
                    )
                })
                .collect();
            return TxnOffsetCommitResponse::default().with_topics(topics);
        }
    }
    let result = allowed.and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &req.group_id.0)).and_then(|_| {
        ctx.broker.groups.txn_commit(
            &**ctx.broker,
            &req.group_id.0,
            req.producer_id.0,
            req.producer_epoch,
            &req.member_id,
            req.group_instance_id.as_deref(),
            generation,
            items.clone(),
        )
    });
    let results: Vec<(CommitItem, i16)> = match result {
        Ok(rs) => rs.into_iter().map(|(it, r)| (it, r.err().map_or(0, |e| e.code()))).collect(),
        Err(e) => {
            let c = e.for_old_clients(ctx.version >= 3).code();
            items.into_iter().map(|it| (it, c)).collect()
        }
    };
    let durable = ctx.broker.groups.wait_durable(&**ctx.broker, &req.group_id.0).await;
    let results: Vec<(CommitItem, i16)> = match durable {
        Ok(()) => results,
        Err(e) => results.into_iter().map(|(it, code)| (it, if code == 0 { e.code() } else { code })).collect(),
    };
    let refused = Error::TopicAuthorizationFailed(String::new()).code();
    let mut topics: Vec<TxnOffsetCommitResponseTopic> = Vec::new();
    for (it, c) in results.into_iter().chain(denied.into_iter().map(|it| (it, refused))) {
        let part = TxnOffsetCommitResponsePartition::default().with_partition_index(it.partition).with_error_code(c);
        match topics.iter_mut().find(|t| *t.name.0 == *it.topic) {
            Some(t) => t.partitions.push(part),
            None => {
                let id = if by_id { super::offsets::topic_id(ctx, &it.topic) } else { uuid::Uuid::nil() };
                topics.push(
                    TxnOffsetCommitResponseTopic::default().with_name(sb(it.topic).into()).with_topic_id(id).with_partitions(vec![part]),
                )
            }
        }
    }
    topics.extend(unknown_ids);
    TxnOffsetCommitResponse::default().with_topics(topics)
}

pub async fn list_transactions(ctx: &Ctx<'_>, req: ListTransactionsRequest) -> ListTransactionsResponse {
    let now = crate::clock::now_ms();
    let states: Vec<String> = req.state_filters.iter().map(|s| s.to_string()).collect();
    let pattern = req.transactional_id_pattern.as_ref().and_then(|p| regex::Regex::new(&format!("^(?:{})$", &**p)).ok());
    let txns = ctx
        .broker
        .txns
        .all()
        .into_iter()
        .filter(|m| states.is_empty() || states.iter().any(|s| s == m.state.name()))
        .filter(|m| req.producer_id_filters.is_empty() || req.producer_id_filters.iter().any(|p| p.0 == m.producer_id))
        .filter(|m| ctx.version < 1 || req.duration_filter < 0 || (m.start_ms >= 0 && now - m.start_ms >= req.duration_filter))
        .filter(|m| pattern.as_ref().is_none_or(|re| re.is_match(&m.id)))
        .filter(|m| ctx.allowed(Operation::Describe, crate::auth::ResourceType::TransactionalId, &m.id))
        .map(|m| {
            list_transactions_response::TransactionState::default()
                .with_transactional_id(sb(m.id).into())
                .with_producer_id(m.producer_id.into())
                .with_transaction_state(sb(m.state.name()))
        })
        .collect();
    let known = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"];
    let unknown = states.iter().filter(|s| !known.contains(&s.as_str())).map(|s| sb(s.clone())).collect();
    ListTransactionsResponse::default().with_transaction_states(txns).with_unknown_state_filters(unknown)
}

pub async fn describe_transactions(ctx: &Ctx<'_>, req: DescribeTransactionsRequest) -> DescribeTransactionsResponse {
    let all = ctx.broker.txns.all();
    let states = req
        .transactional_ids
        .into_iter()
        .map(|id| {
            let s = TransactionState::default().with_transactional_id(id.clone());
            if let Err(e) = ctx.check_txn_id(Operation::Describe, &id.0).and_then(|()| ctx.broker.txns.check(&**ctx.broker, &id.0)) {
                return s.with_error_code(e.code()).with_transaction_state(sb(""));
            }
            match all.iter().find(|m| m.id == *id.0) {
                None => s.with_error_code(Error::TransactionalIdNotFound(id.0.to_string()).code()).with_transaction_state(sb("")),
                Some(m) => {
                    let mut topics: Vec<TopicData> = Vec::new();
                    for (t, p) in &m.partitions {
                        match topics.iter_mut().find(|x| *x.topic.0 == **t) {
                            Some(x) => x.partitions.push(*p),
                            None => topics.push(TopicData::default().with_topic(sb(t.clone()).into()).with_partitions(vec![*p])),
                        }
                    }
                    s.with_transaction_state(sb(m.state.name()))
                        .with_transaction_timeout_ms(m.timeout_ms)
                        .with_transaction_start_time_ms(m.start_ms)
                        .with_producer_id(m.producer_id.into())
                        .with_producer_epoch(m.epoch)
                        .with_topics(topics)
                }
            }
        })
        .collect();
    DescribeTransactionsResponse::default().with_transaction_states(states)
}

pub async fn describe_producers(ctx: &Ctx<'_>, req: DescribeProducersRequest) -> DescribeProducersResponse {
    let topics = req
        .topics
        .into_iter()
        .map(|t| {
            // Kafka: READ on the topic.
            let allowed = ctx.topic_allowed(Operation::Read, &t.name.0);
            let partitions = t
                .partition_indexes
                .iter()
                .map(|&i| {
                    let r = PartitionResponse::default().with_partition_index(i);
                    if !allowed {
                        return r.with_error_code(Error::TopicAuthorizationFailed(String::new()).code());
                    }
                    match ctx.broker.replicas.partition(&t.name.0, i) {
                        None => r.with_error_code(Error::UnknownTopicOrPartition.code()),
                        Some(p) => r.with_active_producers(p.with_state(|s| {
                            s.producers
                                .producers
                                .iter()
                                .map(|(pid, e)| {
                                    let last = e.batches.back();
                                    ProducerState::default()
                                        .with_producer_id((*pid).into())
                                        .with_producer_epoch(e.epoch as i32)
                                        .with_last_sequence(last.map_or(-1, |b| b.last_seq))
                                        .with_last_timestamp(last.map_or(-1, |b| b.timestamp))
                                        .with_coordinator_epoch(-1)
                                        .with_current_txn_start_offset(e.txn_first_offset.unwrap_or(-1))
                                })
                                .collect()
                        })),
                    }
                })
                .collect();
            TopicResponse::default().with_name(t.name).with_partitions(partitions)
        })
        .collect();
    DescribeProducersResponse::default().with_topics(topics)
}
