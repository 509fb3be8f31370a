//! FindCoordinator and InitProducerId.
//!
//! A group's coordinator is the leader of its `__consumer_offsets` partition, and a
//! transactional id's the leader of its `__transaction_state` partition, and a share
//! partition's ("group:topicId:partition", key type SHARE, asked by brokers) the leader
//! of its `__share_group_state` partition, as in Kafka.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::broker::Broker;
use crate::error::{Error, Result};

const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;
const SHARE: i8 = 2;

/// (node id, host, port) of the coordinator for `key`, on `listener`; a coordinator with
/// no endpoint there is not available, as in Kafka.
fn coordinator_for(broker: &Broker, key_type: i8, key: &str, listener: &str) -> Result<(i32, String, i32)> {
    let (id, _, _) = coordinator_node(broker, key_type, key)?;
    let img = broker.cluster.image();
    let b = img.live_broker(id).ok_or(Error::CoordinatorNotAvailable)?;
    let (host, port) = b.endpoint(listener).ok_or(Error::CoordinatorNotAvailable)?;
    Ok((id, host.to_string(), port))
}

fn coordinator_node(broker: &Broker, key_type: i8, key: &str) -> Result<(i32, String, i32)> {
    match key_type {
        GROUP => {
            let topic = broker.groups.ensure_offsets_topic(broker)?;
            broker.leader_endpoint(&topic, broker.groups.offsets_partition(key)).map_err(|_| Error::CoordinatorNotAvailable)
        }
        TRANSACTION => broker.txns.coordinator_of(broker, key),
        SHARE => {
            check_share_key(key)?;
            broker.share_state.coordinator_of(broker, key)
        }
        other => Err(Error::InvalidRequest(format!("coordinator key type {other} is not supported"))),
    }
}

/// A share coordinator key is "group:topicId:partition", as Kafka's SharePartitionKey
/// parses it; anything else is INVALID_REQUEST.
fn check_share_key(key: &str) -> Result<()> {
    let mut parts = key.rsplitn(3, ':');
    let (p, t, g) = (parts.next(), parts.next(), parts.next());
    let ok = matches!((g, t, p), (Some(g), Some(t), Some(p)) if !g.is_empty() && t.len() == 22 && p.parse::<i32>().is_ok_and(|p| p >= 0));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidRequest(format!("share coordinator key '{key}' is not groupId:topicId:partition")))
    }
}

/// Kafka: DESCRIBE on the group or the transactional id the coordinator is asked for.
fn authorized(ctx: &Ctx<'_>, key_type: i8, key: &str) -> Result<()> {
    match key_type {
        GROUP => ctx.check_group(Operation::Describe, key),
        TRANSACTION => ctx.check_txn_id(Operation::Describe, key),
        // Brokers ask for share coordinators, and only from v6 on, as in Kafka.
        SHARE if ctx.version < 6 => Err(Error::InvalidRequest("share coordinator keys need FindCoordinator v6".into())),
        SHARE => ctx.check_cluster(Operation::ClusterAction),
        _ => Ok(()),
    }
}

pub async fn find_coordinator(ctx: &Ctx<'_>, req: FindCoordinatorRequest) -> FindCoordinatorResponse {
    if ctx.version >= 4 {
        let coordinators = req
            .coordinator_keys
            .into_iter()
            .map(|key| {
                let result =
                    authorized(ctx, req.key_type, &key).and_then(|()| coordinator_for(ctx.broker, req.key_type, &key, &ctx.listener));
                let c = Coordinator::default().with_key(key);
                match result {
                    Ok((id, host, port)) => c.with_node_id(id.into()).with_host(sb(host)).with_port(port),
                    Err(e) => c.with_error_code(e.code()).with_error_message(Some(sb(e.message()))).with_node_id((-1).into()).with_port(-1),
                }
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let r = FindCoordinatorResponse::default();
    match authorized(ctx, req.key_type, &req.key).and_then(|()| coordinator_for(ctx.broker, req.key_type, &req.key, &ctx.listener)) {
        Ok((id, host, port)) => r.with_node_id(id.into()).with_host(sb(host)).with_port(port),
        Err(e) => {
            let r = r.with_error_code(e.code()).with_node_id((-1).into()).with_port(-1);
            if ctx.version >= 1 {
                r.with_error_message(Some(sb(e.message())))
            } else {
                r
            }
        }
    }
}

pub async fn init_producer_id(ctx: &Ctx<'_>, req: InitProducerIdRequest) -> InitProducerIdResponse {
    let r = InitProducerIdResponse::default();
    let refused = |e: Error| r.clone().with_error_code(e.code()).with_producer_id((-1).into()).with_producer_epoch(-1);
    if let Some(id) = req.transactional_id.as_ref().filter(|t| !t.0.is_empty()) {
        if let Err(e) = ctx.check_txn_id(Operation::Write, &id.0) {
            return refused(e);
        }
        let expected = (ctx.version >= 3 && req.producer_id.0 >= 0).then_some((req.producer_id.0, req.producer_epoch));
        return match ctx.broker.txns.init_producer(&**ctx.broker, &id.0, req.transaction_timeout_ms, expected).await {
            Ok((pid, epoch)) => r.with_producer_id(pid.into()).with_producer_epoch(epoch),
            Err(e) => r.with_error_code(e.for_old_clients(ctx.version >= 4).code()).with_producer_id((-1).into()).with_producer_epoch(-1),
        };
    }
    if !ctx.idempotent_allowed() {
        return refused(Error::ClusterAuthorizationFailed);
    }
    // An idempotent producer always gets a fresh id, even when it names its old one.
    match ctx.broker.producer_ids.allocate() {
        Ok(pid) => r.with_producer_id(pid.into()).with_producer_epoch(0),
        Err(e) => r.with_error_code(Error::from(e).code()).with_producer_id((-1).into()).with_producer_epoch(-1),
    }
}
