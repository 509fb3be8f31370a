//! ListOffsets to each partition's leader: the earliest (-2) or latest (-1, the high
//! watermark) offset, or the first at a timestamp.

use std::collections::BTreeMap;

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;

use super::client::{broker, Client};
use super::CliError;

/// ListOffsets' timestamp for the earliest offset.
pub const EARLIEST: i64 = -2;
/// ListOffsets' timestamp for the latest offset (the high watermark).
pub const LATEST: i64 = -1;

/// ListOffsets v8 (v9+ adds only tiered-storage and timeout fields).
const VERSION: i16 = 8;

/// The offset at `spec` (EARLIEST, LATEST or a timestamp in ms) of each partition in
/// `partitions` of `topic`; -1 where a timestamp is past the last record.
pub async fn list(client: &mut Client, topic: &str, partitions: &[i32], spec: i64) -> Result<BTreeMap<i32, i64>, CliError> {
    let mut out = BTreeMap::new();
    let mut todo: Vec<i32> = partitions.to_vec();
    let deadline = Client::retry_deadline();
    while !todo.is_empty() {
        let info = client.topic(topic).await?;
        let mut by_leader: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for p in &todo {
            let leader = info.partitions.iter().find(|x| x.partition == *p).map_or(-1, |x| x.leader);
            by_leader.entry(leader).or_default().push(*p);
        }
        let mut again = Vec::new();
        let mut last_err = None;
        for (leader, ps) in by_leader {
            if leader < 0 {
                last_err = Some(CliError::Kafka { code: 5, context: format!("{topic} partitions {ps:?}"), message: None });
                again.extend(ps);
                continue;
            }
            let req = ListOffsetsRequest::default().with_replica_id(broker(-1)).with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(
                    ps.iter().map(|p| ListOffsetsPartition::default().with_partition_index(*p).with_timestamp(spec)).collect(),
                )]);
            match client.send_to(leader, &req, VERSION).await {
                Ok((r, _)) => {
                    for t in r.topics {
                        for p in t.partitions {
                            match CliError::check(p.error_code, || format!("ListOffsets {topic}/{}", p.partition_index), None) {
                                Ok(()) => {
                                    out.insert(p.partition_index, p.offset);
                                }
                                Err(e) if e.retriable() => {
                                    again.push(p.partition_index);
                                    last_err = Some(e);
                                }
                                Err(e) => return Err(e),
                            }
                        }
                    }
                }
                Err(e) if e.retriable() => {
                    again.extend(ps);
                    last_err = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        if !again.is_empty() {
            if std::time::Instant::now() > deadline {
                return Err(last_err.unwrap_or_else(|| CliError::Timeout(format!("ListOffsets {topic}: no leader answered"))));
            }
            Client::backoff().await;
        }
        todo = again;
    }
    Ok(out)
}
