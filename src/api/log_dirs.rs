//! DescribeLogDirs and AlterReplicaLogDirs (KIP-113, KIP-827): the log dirs of this
//! broker, the replicas in each, and moving a replica between them.

use std::collections::HashMap;

use kafka_protocol::messages::alter_replica_log_dirs_response::{AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult};
use kafka_protocol::messages::describe_log_dirs_response::{DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::error::Error;

pub async fn describe(ctx: &Ctx<'_>, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse {
    // Kafka: DESCRIBE on the cluster; v3+ says so in the top-level error, older versions
    // get no dirs at all.
    if let Err(e) = ctx.check_cluster(Operation::Describe) {
        let resp = DescribeLogDirsResponse::default();
        return if ctx.version >= 3 { resp.with_error_code(e.code()) } else { resp };
    }
    let wanted: Option<HashMap<String, Vec<i32>>> =
        req.topics.map(|ts| ts.into_iter().map(|t| (t.topic.0.to_string(), t.partitions)).collect());
    let filter = |t: &str, p: i32| wanted.as_ref().is_none_or(|w| w.get(t).is_some_and(|ps| ps.contains(&p)));
    let dirs = ctx.broker.describe_log_dirs(Some(&filter));
    let results = dirs
        .into_iter()
        .map(|d| {
            let mut topics: Vec<DescribeLogDirsTopic> = Vec::new();
            for r in d.replicas {
                let part = DescribeLogDirsPartition::default()
                    .with_partition_index(r.partition)
                    .with_partition_size(r.size)
                    .with_offset_lag(r.offset_lag)
                    .with_is_future_key(r.is_future);
                match topics.iter_mut().find(|t| *t.name.0 == *r.topic) {
                    Some(t) => t.partitions.push(part),
                    None => topics.push(DescribeLogDirsTopic::default().with_name(sb(r.topic).into()).with_partitions(vec![part])),
                }
            }
            let res = DescribeLogDirsResult::default()
                .with_error_code(d.error.as_ref().map_or(0, Error::code))
                .with_log_dir(sb(d.path))
                .with_topics(topics);
            // v5's is_cordoned (KIP-1066) stays false: Sluice has no cordoned dirs.
            if ctx.version >= 4 {
                res.with_total_bytes(d.total_bytes).with_usable_bytes(d.usable_bytes)
            } else {
                res
            }
        })
        .collect();
    DescribeLogDirsResponse::default().with_results(results)
}

pub async fn alter(ctx: &Ctx<'_>, req: AlterReplicaLogDirsRequest) -> AlterReplicaLogDirsResponse {
    // Kafka: ALTER on the cluster, else every partition is refused.
    let allowed = ctx.check_cluster(Operation::Alter);
    let mut results: Vec<AlterReplicaLogDirTopicResult> = Vec::new();
    for dir in req.dirs {
        for t in dir.topics {
            let name = t.name.0.to_string();
            for p in t.partitions {
                let r = allowed.clone().and_then(|_| ctx.broker.alter_replica_log_dir(&dir.path, &name, p));
                let code = r.err().map_or(0, |e| e.code());
                let pr = AlterReplicaLogDirPartitionResult::default().with_partition_index(p).with_error_code(code);
                match results.iter_mut().find(|x| *x.topic_name.0 == *name) {
                    Some(x) => x.partitions.push(pr),
                    None => results.push(AlterReplicaLogDirTopicResult::default().with_topic_name(sb(name.clone()).into()).with_partitions(vec![pr])),
                }
            }
        }
    }
    AlterReplicaLogDirsResponse::default().with_results(results)
}
