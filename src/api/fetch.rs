//! Fetch for consumers, with long poll: a request that finds too little data waits
//! until an append wakes it or `max_wait_ms` runs out. No fetch sessions are kept
//! (session id 0), so every request is a full fetch; clients handle that.

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{AbortedTransaction, FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::*;

use super::Ctx;
use crate::error::Error;

const READ_COMMITTED: i8 = 1;

/// One pass over the requested partitions. Returns the response and the bytes found.
fn read_all(ctx: &Ctx<'_>, req: &FetchRequest) -> (FetchResponse, usize, bool) {
    let broker = ctx.broker;
    let mut remaining = req.max_bytes.max(0) as usize;
    let mut min_one = true;
    let mut total = 0usize;
    let mut any_error = false;
    let mut topics = Vec::with_capacity(req.topics.len());
    for ft in &req.topics {
        let topic = if ctx.version >= 13 {
            broker.topic_by_id(ft.topic_id).ok_or(Error::UnknownTopicId)
        } else {
            broker.topic(&ft.topic.0).ok_or(Error::UnknownTopicOrPartition)
        };
        let mut partitions = Vec::with_capacity(ft.partitions.len());
        for fp in &ft.partitions {
            let result = topic.as_ref().map_err(Clone::clone).and_then(|t| {
                let p = t.partitions.get(fp.partition as usize).filter(|_| fp.partition >= 0).ok_or(Error::UnknownTopicOrPartition)?;
                let max = (fp.partition_max_bytes.max(0) as usize).min(remaining);
                p.fetch_isolated(fp.fetch_offset, max, min_one, fp.current_leader_epoch, req.isolation_level == READ_COMMITTED)
            });
            let pd = PartitionData::default().with_partition_index(fp.partition);
            let mut aborted = (req.isolation_level == READ_COMMITTED).then(Vec::new);
            let pd = match result {
                Ok(d) => {
                    if let Some(a) = aborted.as_mut() {
                        a.extend(d.aborted.iter().map(|x| AbortedTransaction::default().with_producer_id(x.producer_id.into()).with_first_offset(x.first)));
                    }
                    if !d.records.is_empty() {
                        min_one = false;
                        remaining = remaining.saturating_sub(d.records.len());
                        total += d.records.len();
                    }
                    pd.with_high_watermark(d.high_watermark)
                        .with_last_stable_offset(d.last_stable_offset)
                        .with_log_start_offset(d.log_start_offset)
                        .with_records(Some(Bytes::from(d.records)))
                }
                Err(e) => {
                    any_error = true;
                    pd.with_error_code(e.code())
                        .with_high_watermark(-1)
                        .with_last_stable_offset(-1)
                        .with_log_start_offset(-1)
                        .with_records(Some(Bytes::new()))
                }
            };
            partitions.push(pd.with_aborted_transactions(aborted));
        }
        topics.push(
            FetchableTopicResponse::default()
                .with_topic(ft.topic.clone())
                .with_topic_id(ft.topic_id)
                .with_partitions(partitions),
        );
    }
    (FetchResponse::default().with_responses(topics), total, any_error)
}

pub async fn handle(ctx: &Ctx<'_>, req: FetchRequest) -> FetchResponse {
    if ctx.version >= 7 && req.session_id != 0 {
        return FetchResponse::default().with_error_code(Error::FetchSessionIdNotFound(req.session_id).code());
    }
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(req.max_wait_ms.max(0) as u64);
    loop {
        // Register for wake-ups before reading, so an append in between is not missed.
        let notified = ctx.broker.appended.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let (resp, bytes, any_error) = read_all(ctx, &req);
        if bytes >= req.min_bytes.max(0) as usize || any_error || tokio::time::Instant::now() >= deadline {
            return resp;
        }
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}
