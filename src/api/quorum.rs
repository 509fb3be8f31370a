//! DescribeQuorum: the metadata quorum as the active controller sees it.

use kafka_protocol::messages::describe_quorum_response::{Node, PartitionData, ReplicaState, TopicData};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::controller::rpc::{Request, Response};
use crate::error::Error;

/// The metadata log's name, as Kafka's tools ask for it.
const METADATA_TOPIC: &str = "__cluster_metadata";

pub async fn describe_quorum(ctx: &Ctx<'_>, req: DescribeQuorumRequest) -> DescribeQuorumResponse {
    let asks_for_it = req.topics.len() == 1
        && *req.topics[0].topic_name.0 == *METADATA_TOPIC
        && req.topics[0].partitions.len() == 1
        && req.topics[0].partitions[0].partition_index == 0;
    // Kafka: DESCRIBE on the cluster.
    if let Err(e) = ctx.check_cluster(Operation::Describe) {
        let r = DescribeQuorumResponse::default().with_error_code(e.code());
        return if ctx.version >= 2 { r.with_error_message(Some(sb(e.message()))) } else { r };
    }
    if !asks_for_it {
        return DescribeQuorumResponse::default().with_error_code(Error::InvalidRequest(String::new()).code());
    }
    let timeout = std::time::Duration::from_secs(10);
    let info = match ctx.broker.cluster.call(Request::DescribeQuorum, timeout).await {
        Ok(Response::Quorum(q)) => q,
        // `call` follows NOT_CONTROLLER answers itself: any other answer is a bug, not a redirect.
        Ok(other) => {
            let e = Error::InvalidRequest(format!("unexpected controller answer {other:?}"));
            let r = DescribeQuorumResponse::default().with_error_code(e.code());
            return if ctx.version >= 2 { r.with_error_message(Some(sb(e.message()))) } else { r };
        }
        Err(e) => {
            let r = DescribeQuorumResponse::default().with_error_code(e.code());
            return if ctx.version >= 2 { r.with_error_message(Some(sb(e.message()))) } else { r };
        }
    };
    let now = crate::clock::now_ms();
    let dir = |id: i32| info.directory_ids.iter().find(|(v, _)| *v == id).map_or(uuid::Uuid::nil(), |(_, d)| *d);
    let replica = |(id, leo): &(i32, u64)| {
        // The leader itself is current; the others as of their last message to it.
        let heard = info.heard.iter().find(|(v, _)| v == id).map(|(_, t)| *t);
        let seen = if *id == info.leader { now } else { heard.unwrap_or(-1) };
        ReplicaState::default()
            .with_replica_id((*id).into())
            .with_replica_directory_id(dir(*id))
            .with_log_end_offset(*leo as i64)
            .with_last_fetch_timestamp(seen)
            .with_last_caught_up_timestamp(if *leo >= info.high_watermark { seen } else { -1 })
    };
    let partition = PartitionData::default()
        .with_partition_index(0)
        .with_leader_id(info.leader.into())
        .with_leader_epoch(info.term as i32)
        .with_high_watermark(info.high_watermark as i64)
        .with_current_voters(info.voters.iter().map(replica).collect())
        .with_observers(info.observers.iter().map(replica).collect());
    let mut resp = DescribeQuorumResponse::default()
        .with_topics(vec![TopicData::default().with_topic_name(sb(METADATA_TOPIC.to_string()).into()).with_partitions(vec![partition])]);
    if ctx.version >= 2 {
        let listener = |name: &str, host: &str, port: u16| {
            describe_quorum_response::Listener::default().with_name(sb(name.to_string())).with_host(sb(host.to_string())).with_port(port)
        };
        // The endpoints the log recorded for added voters; the configured ones for the others.
        let mut nodes: std::collections::BTreeMap<i32, Vec<describe_quorum_response::Listener>> = ctx
            .broker
            .cluster
            .voters
            .iter()
            .map(|(id, addr)| (*id, vec![listener("CONTROLLER", &addr.host, addr.port)]))
            .collect();
        for (id, endpoints) in &info.endpoints {
            nodes.insert(*id, endpoints.iter().map(|e| listener(&e.name, &e.host, e.port)).collect());
        }
        resp = resp.with_nodes(
            nodes.into_iter().map(|(id, listeners)| Node::default().with_node_id(id.into()).with_listeners(listeners)).collect(),
        );
    }
    resp
}
