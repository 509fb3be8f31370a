//! ListOffsets: earliest, latest, by timestamp and max timestamp.
//!
//! Versions: v11 (KIP-1023) only adds the EARLIEST_PENDING_UPLOAD sentinel (-6). With no
//! remote tier nothing is pending upload, so it answers offset -1, as Kafka does for a
//! topic without tiered storage. Each sentinel is accepted only from the version that
//! introduced it; an older request naming it, or any other negative timestamp, gets
//! UNSUPPORTED_VERSION for that partition, as Kafka's ReplicaManager answers.

use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::*;

use super::Ctx;
use crate::auth::Operation;
use crate::error::Error;

/// Is `timestamp` a lookup that ListOffsets `version` can ask for?
fn timestamp_supported(timestamp: i64, version: i16) -> bool {
    let since = match timestamp {
        t if t >= 0 => return true,
        -1 | -2 => 0,
        -3 => 7,
        -4 => 8,
        -5 => 9,
        -6 => 11,
        _ => return false,
    };
    version >= since
}

pub async fn handle(ctx: &Ctx<'_>, req: ListOffsetsRequest) -> ListOffsetsResponse {
    let broker = ctx.broker;
    let read_committed = ctx.version >= 2 && req.isolation_level == 1;
    let topics = req
        .topics
        .into_iter()
        .map(|lt| {
            // Kafka: DESCRIBE on the topic, checked before whether it exists.
            let topic = ctx
                .check_topic(Operation::Describe, &lt.name.0)
                .and_then(|()| broker.topic(&lt.name.0).ok_or(Error::UnknownTopicOrPartition));
            let partitions = lt
                .partitions
                .into_iter()
                .map(|lp| {
                    let r = ListOffsetsPartitionResponse::default().with_partition_index(lp.partition_index);
                    let result = topic
                        .as_ref()
                        .map_err(Clone::clone)
                        .and_then(|t| t.get(lp.partition_index))
                        .and_then(|p| {
                            if timestamp_supported(lp.timestamp, ctx.version) {
                                Ok(p)
                            } else {
                                Err(Error::Unsupported(format!("timestamp {} in ListOffsets v{}", lp.timestamp, ctx.version)))
                            }
                        })
                        .and_then(|p| p.list_offset(lp.timestamp, lp.current_leader_epoch, read_committed));
                    match result {
                        Ok((ts, offset, epoch)) => {
                            let r = r.with_timestamp(ts).with_offset(offset);
                            if ctx.version >= 4 {
                                r.with_leader_epoch(epoch)
                            } else {
                                r
                            }
                        }
                        Err(e) => r.with_error_code(e.code()).with_timestamp(-1).with_offset(-1),
                    }
                })
                .collect();
            ListOffsetsTopicResponse::default().with_name(lt.name).with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

#[cfg(test)]
mod tests {
    use super::timestamp_supported;

    #[test]
    fn each_sentinel_needs_the_version_that_brought_it() {
        assert!(timestamp_supported(0, 1) && timestamp_supported(-1, 1) && timestamp_supported(-2, 1));
        assert!(!timestamp_supported(-3, 6) && timestamp_supported(-3, 7));
        assert!(!timestamp_supported(-5, 8) && timestamp_supported(-5, 9));
        assert!(!timestamp_supported(-6, 10) && timestamp_supported(-6, 11));
        assert!(!timestamp_supported(-7, 11));
    }
}
