//! ListOffsets: earliest, latest, by timestamp and max timestamp.

use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::*;

use super::Ctx;
use crate::auth::Operation;
use crate::error::Error;

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
