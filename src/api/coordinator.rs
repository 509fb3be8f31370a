//! FindCoordinator and InitProducerId.
//!
//! This broker coordinates every group and every transactional id.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::error::{Error, Result};

const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;

fn coordinator_for(key_type: i8) -> Result<()> {
    match key_type {
        GROUP | TRANSACTION => Ok(()),
        other => Err(Error::InvalidRequest(format!("coordinator key type {other} is not supported"))),
    }
}

pub async fn find_coordinator(ctx: &Ctx<'_>, req: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let id = &ctx.broker.identity;
    let result = coordinator_for(req.key_type);
    if ctx.version >= 4 {
        let coordinators = req
            .coordinator_keys
            .into_iter()
            .map(|key| {
                let c = Coordinator::default().with_key(key);
                match &result {
                    Ok(()) => c.with_node_id(id.node_id.into()).with_host(sb(id.host.clone())).with_port(id.port),
                    Err(e) => c.with_error_code(e.code()).with_error_message(Some(sb(e.message()))).with_node_id((-1).into()).with_port(-1),
                }
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let r = FindCoordinatorResponse::default();
    match result {
        Ok(()) => r.with_node_id(id.node_id.into()).with_host(sb(id.host.clone())).with_port(id.port),
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
    if let Some(id) = req.transactional_id.as_ref().filter(|t| !t.0.is_empty()) {
        let expected = (ctx.version >= 3 && req.producer_id.0 >= 0).then_some((req.producer_id.0, req.producer_epoch));
        return match ctx.broker.txns.init_producer(ctx.broker, &id.0, req.transaction_timeout_ms, expected) {
            Ok((pid, epoch)) => r.with_producer_id(pid.into()).with_producer_epoch(epoch),
            Err(e) => r.with_error_code(e.for_old_clients(ctx.version >= 4).code()).with_producer_id((-1).into()).with_producer_epoch(-1),
        };
    }
    // An idempotent producer always gets a fresh id, even when it names its old one.
    match ctx.broker.producer_ids.allocate() {
        Ok(pid) => r.with_producer_id(pid.into()).with_producer_epoch(0),
        Err(e) => r.with_error_code(Error::from(e).code()).with_producer_id((-1).into()).with_producer_epoch(-1),
    }
}
