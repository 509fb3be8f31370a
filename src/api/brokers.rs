//! UnregisterBroker: removes a broker's registration, as `kafka-cluster unregister` and the
//! admin's `unregisterBroker` ask after a broker is decommissioned.

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
