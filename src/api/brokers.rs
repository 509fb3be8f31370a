//! UnregisterBroker and UnregisterController: remove a broker's or a controller's
//! registration, as `kafka-cluster unregister` and the admin's `unregisterBroker` and
//! `unregisterController` ask after a node is decommissioned.

use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::controller::rpc::Request;
use crate::error::Error;

pub async fn unregister_broker(ctx: &Ctx<'_>, req: UnregisterBrokerRequest) -> UnregisterBrokerResponse {
    // Kafka: ALTER on the cluster.
    let r = match ctx.check_cluster(Operation::Alter) {
        Ok(()) => ctx.broker.submit(Request::UnregisterBroker { id: req.broker_id.0 }, None).await.map(|_| ()),
        Err(e) => Err(e),
    };
    match r {
        Ok(()) => UnregisterBrokerResponse::default(),
        Err(e) => failed(e),
    }
}

fn failed(e: Error) -> UnregisterBrokerResponse {
    UnregisterBrokerResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())))
}

/// UnregisterController (KIP-1312), forwarded to the active controller as Kafka's broker does.
pub async fn unregister_controller(ctx: &Ctx<'_>, req: UnregisterControllerRequest) -> UnregisterControllerResponse {
    // Kafka: ALTER on the cluster.
    let r = match ctx.check_cluster(Operation::Alter) {
        Ok(()) => ctx.broker.submit(Request::UnregisterController { id: req.controller_id }, None).await.map(|_| ()),
        Err(e) => Err(e),
    };
    match r {
        Ok(()) => UnregisterControllerResponse::default(),
        Err(e) => UnregisterControllerResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
    }
}
