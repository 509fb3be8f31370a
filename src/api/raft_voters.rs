//! AddRaftVoter and RemoveRaftVoter (KIP-853): `kafka-metadata-quorum add-controller` and
//! `remove-controller`. A broker forwards them to the active controller, which changes
//! the voter set through the metadata log (`controller::voters`).

use std::time::Duration;

use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::Operation;
use crate::controller::rpc::Request;
use crate::error::{Error, Result};
use crate::metadata::voters::VoterEndpoint;

/// A request naming another cluster is refused, as Kafka's `RaftUtil` checks it.
fn check_cluster_id(ctx: &Ctx<'_>, id: &Option<kafka_protocol::protocol::StrBytes>) -> Result<()> {
    match (id, ctx.broker.cluster.image().cluster_id.as_deref()) {
        (Some(asked), Some(ours)) if asked.as_str() != ours => Err(Error::Remote(kafka_protocol::ResponseError::InconsistentClusterId.code())),
        _ => Ok(()),
    }
}

/// Sends the change to the active controller; the caller waits up to `timeout`.
async fn submit(ctx: &Ctx<'_>, req: Request, timeout: Duration) -> Result<()> {
    ctx.check_cluster(Operation::Alter)?;
    ctx.broker.submit(req, Some(timeout)).await.map(|_| ())
}

pub async fn add_raft_voter(ctx: &Ctx<'_>, req: AddRaftVoterRequest) -> AddRaftVoterResponse {
    let endpoints = req
        .listeners
        .iter()
        .map(|l| VoterEndpoint { name: l.name.to_string(), host: l.host.to_string(), port: l.port })
        .collect();
    let timeout_ms = if req.timeout_ms > 0 { req.timeout_ms } else { 30_000 };
    let change = Request::AddVoter { id: req.voter_id, directory_id: req.voter_directory_id, endpoints, timeout_ms };
    // The controller's own wait for the new voter, plus room for its answer to come back.
    let r = match check_cluster_id(ctx, &req.cluster_id) {
        Ok(()) => submit(ctx, change, Duration::from_millis(timeout_ms as u64 + 5_000)).await,
        Err(e) => Err(e),
    };
    match r {
        Ok(()) => AddRaftVoterResponse::default(),
        Err(e) => AddRaftVoterResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
    }
}

pub async fn remove_raft_voter(ctx: &Ctx<'_>, req: RemoveRaftVoterRequest) -> RemoveRaftVoterResponse {
    let change = Request::RemoveVoter { id: req.voter_id, directory_id: req.voter_directory_id };
    let r = match check_cluster_id(ctx, &req.cluster_id) {
        Ok(()) => submit(ctx, change, Duration::from_secs(30)).await,
        Err(e) => Err(e),
    };
    match r {
        Ok(()) => RemoveRaftVoterResponse::default(),
        Err(e) => RemoveRaftVoterResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
    }
}
