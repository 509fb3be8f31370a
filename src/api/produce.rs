//! Produce: validate each partition's batch, append it, and answer per partition.

use kafka_protocol::messages::produce_response::{BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::*;

use std::collections::HashMap;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::clock::now_ms;
use crate::error::Error;
use crate::partition::ReplicaManager;

pub async fn handle(ctx: &Ctx<'_>, req: ProduceRequest) -> Option<ProduceResponse> {
    let broker = ctx.broker;
    let acks = req.acks;
    let now = now_ms();
    let mut responses = Vec::with_capacity(req.topic_data.len());
    // acks=all: (topic index, partition index, partition, last offset) to wait for.
    let mut waits = Vec::new();
    // Kafka: a transactional producer needs WRITE on its transactional id, else every
    // partition is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
    let txn_refused = req.transactional_id.as_ref().and_then(|id| ctx.check_txn_id(Operation::Write, id).err());
    let verified = if txn_refused.is_some() { HashMap::new() } else { verify_transactional(ctx, &req).await };
    for (ti, td) in req.topic_data.into_iter().enumerate() {
        let topic = if let Some(e) = &txn_refused {
            Err(e.clone())
        } else if ctx.version >= 13 {
            broker
                .topic_by_id(td.topic_id)
                .ok_or(Error::UnknownTopicId)
                .and_then(|t| ctx.check_topic(Operation::Write, &t.record.name).map(|()| t))
        } else {
            ctx.check_topic(Operation::Write, &td.name.0).and_then(|()| match broker.topic(&td.name.0) {
                Some(t) => Ok(t),
                None if super::metadata::may_create(ctx, &td.name.0) => broker.auto_create(&td.name.0),
                None => Err(Error::UnknownTopicOrPartition),
            })
        };
        let partition_responses = td
            .partition_data
            .into_iter()
            .enumerate()
            .map(|(pi, pd)| {
                let result = if !(-1..=1).contains(&acks) {
                    Err(Error::InvalidRequiredAcks(acks))
                } else {
                    topic.as_ref().map_err(Clone::clone).and_then(|t| {
                        let p = t.get(pd.index)?;
                        let records = pd.records.as_deref().unwrap_or(&[]);
                        if let Some(Err(e)) = verified.get(&(p.topic.clone(), p.index)) {
                            return Err(e.clone());
                        }
                        let info = p.append(records, acks, now)?;
                        if acks == -1 {
                            waits.push((ti, pi, p.clone(), info.last_offset));
                        }
                        Ok(info)
                    })
                };
                let r = PartitionProduceResponse::default().with_index(pd.index);
                match result {
                    Ok(info) => r
                        .with_base_offset(info.base_offset)
                        .with_log_append_time_ms(info.log_append_time)
                        .with_log_start_offset(info.log_start_offset),
                    Err(e) => {
                        tracing::debug!(error = %e, "produce refused");
                        let r = r.with_error_code(e.code()).with_base_offset(-1).with_log_append_time_ms(-1).with_log_start_offset(-1);
                        if ctx.version < 8 {
                            return r;
                        }
                        // Name the offending records, so clients fail only those (KIP-467).
                        let record_errors = match &e {
                            Error::InvalidRecords { indexes, message } => indexes
                                .iter()
                                .map(|&i| {
                                    BatchIndexAndErrorMessage::default()
                                        .with_batch_index(i)
                                        .with_batch_index_error_message(Some(sb(message.clone())))
                                })
                                .collect(),
                            _ => vec![],
                        };
                        let message = match &e {
                            Error::InvalidRecords { indexes, .. } => {
                                format!("One or more records have been rejected due to {} record errors in total.", indexes.len())
                            }
                            other => other.message(),
                        };
                        r.with_error_message(Some(sb(message))).with_record_errors(record_errors)
                    }
                }
            })
            .collect();
        responses.push(
            TopicProduceResponse::default().with_name(td.name).with_topic_id(td.topic_id).with_partition_responses(partition_responses),
        );
    }
    // The delayed part of acks=all: every wait shares the request's deadline.
    let timeout = std::time::Duration::from_millis(req.timeout_ms.max(0) as u64);
    let pending: Vec<_> = waits.iter().map(|(_, _, p, last)| (p.clone(), *last)).collect();
    let results = ReplicaManager::await_replication(&pending, timeout).await;
    for ((ti, pi, _, _), result) in waits.into_iter().zip(results) {
        if let Err(e) = result {
            let r = &mut responses[ti].partition_responses[pi];
            r.error_code = e.code();
            r.base_offset = -1;
            if ctx.version >= 8 {
                r.error_message = Some(sb(e.message()));
            }
        }
    }
    if let Some(s) = crate::stats::api(ApiKey::Produce as i16) {
        responses.iter().flat_map(|t| &t.partition_responses).for_each(|p| s.error(p.error_code));
    }
    if acks == 0 {
        return None;
    }
    Some(ProduceResponse::default().with_responses(responses))
}

/// Asks the transaction coordinator about each partition that gets a producer's first
/// transactional batch (KIP-890): whether it is in the transaction, or, for Produce v12+
/// (transactions v2 clients), to add it. Later batches of the same transaction find it
/// open on the partition and need no question.
async fn verify_transactional(ctx: &Ctx<'_>, req: &ProduceRequest) -> HashMap<(String, i32), crate::error::Result<()>> {
    let broker = &**ctx.broker;
    let txn_id = req.transactional_id.as_ref().map(|t| &*t.0);
    let mut out = HashMap::new();
    for td in &req.topic_data {
        let topic = if ctx.version >= 13 { broker.topic_by_id(td.topic_id) } else { broker.topic(&td.name.0) };
        let Some(topic) = topic else { continue };
        for pd in &td.partition_data {
            let Ok(h) = crate::log::batch::BatchHeader::parse(pd.records.as_deref().unwrap_or(&[])) else { continue };
            if !h.is_transactional() || h.is_control() {
                continue;
            }
            let Some(p) = topic.partition(pd.index) else { continue };
            if p.in_txn(h.producer_id, h.producer_epoch) {
                continue;
            }
            let add = ctx.version >= 12;
            let r = crate::broker::txn_verify::verify(broker, txn_id, h.producer_id, h.producer_epoch, &p.topic, p.index, add).await;
            out.insert((p.topic.clone(), p.index), r);
        }
    }
    out
}
