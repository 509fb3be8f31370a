//! Produce: validate each partition's batch, append it, and answer per partition.

use kafka_protocol::messages::produce_response::{BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::broker::now_ms;
use crate::error::Error;

pub async fn handle(ctx: &Ctx<'_>, req: ProduceRequest) -> Option<ProduceResponse> {
    let broker = ctx.broker;
    let acks = req.acks;
    let now = now_ms();
    let mut appended = false;
    let mut responses = Vec::with_capacity(req.topic_data.len());
    // acks=all: (topic index, partition index, partition, last offset) to wait for.
    let mut waits = Vec::new();
    for (ti, td) in req.topic_data.into_iter().enumerate() {
        let topic =
            if ctx.version >= 13 { broker.topic_by_id(td.topic_id).ok_or(Error::UnknownTopicId) } else { broker.auto_create(&td.name.0) };
        let partition_responses = td
            .partition_data
            .into_iter()
            .enumerate()
            .map(|(pi, pd)| {
                let result = if !matches!(acks, -1 | 0 | 1) {
                    Err(Error::InvalidRequiredAcks(acks))
                } else {
                    topic.as_ref().map_err(Clone::clone).and_then(|t| {
                        let p = t.get(pd.index)?;
                        let records = pd.records.as_deref().unwrap_or(&[]);
                        if let Ok(h) = crate::log::batch::BatchHeader::parse(records) {
                            if h.is_transactional() && !h.is_control() {
                                if ctx.version >= 12 {
                                    // Produce v12+ comes from transactions-v2 clients: add implicitly.
                                    broker.txns.add_implicitly(broker, h.producer_id, h.producer_epoch, &p.topic, p.index)?;
                                } else {
                                    broker.txns.verify(h.producer_id, h.producer_epoch, &p.topic, p.index)?;
                                }
                            }
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
                    Ok(info) => {
                        appended = true;
                        r.with_base_offset(info.base_offset)
                            .with_log_append_time_ms(info.log_append_time)
                            .with_log_start_offset(info.log_start_offset)
                    }
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
    if appended {
        broker.appended.notify_waiters();
    }
    // The delayed part of acks=all: every wait shares the request's deadline.
    let timeout = std::time::Duration::from_millis(req.timeout_ms.max(0) as u64);
    let deadline = tokio::time::Instant::now() + timeout;
    for (ti, pi, p, last) in waits {
        let min_isr = p.with_state(|s| s.append_config.min_insync_replicas).max(1) as usize;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if let Err(e) = p.wait_replicated(last, min_isr, left).await {
            let r = &mut responses[ti].partition_responses[pi];
            r.error_code = e.code();
            r.base_offset = -1;
            if ctx.version >= 8 {
                r.error_message = Some(sb(e.message()));
            }
        }
    }
    if acks == 0 {
        return None;
    }
    Some(ProduceResponse::default().with_responses(responses))
}
