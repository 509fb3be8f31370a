//! `/v1/nodes`: node faults of the dev-cluster that started this node, for the console's
//! Faults pane. Only when the node runs with `fault.injection.enable=true` and was started
//! by `sluice dev-cluster` (which sets `dev.control.socket`); 403 otherwise.
//!
//! - `GET /v1/nodes`: the dev-cluster's nodes (`node`, `pid`, `state`, `listening`, `http`).
//! - `POST /v1/nodes/{id}/{kill|pause|resume|restart}`: asks the dev-cluster, which owns
//!   the processes, to act; 200 with its message, 404 for an unknown node, 409 if refused
//!   (a dead node cannot be paused).
//! - `GET|POST|DELETE /v1/nodes/{id}/faults`: node `id`'s `/v1/faults`, forwarded to its
//!   HTTP listener, so one console injects faults (isolate, delay, inject) on any node.

use std::path::PathBuf;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{error, Ctx};
use crate::fault::nodes::{self, DevError, Request};

/// The control socket, or why node control is refused here.
pub(super) fn control(ctx: &Ctx) -> Result<PathBuf, Response> {
    if !crate::fault::global().is_enabled() {
        return Err(error(StatusCode::FORBIDDEN, crate::fault::AddError::Disabled.to_string()));
    }
    ctx.control.clone().ok_or_else(|| {
        error(
            StatusCode::FORBIDDEN,
            "node control is off: this node was not started by `sluice dev-cluster` (dev.control.socket is empty)".into(),
        )
    })
}

/// Sends one command to the dev-cluster without blocking the runtime.
async fn ask(socket: PathBuf, req: Request) -> Result<Value, DevError> {
    tokio::task::spawn_blocking(move || nodes::send_to(&socket, &req))
        .await
        .unwrap_or_else(|e| Err(DevError::Io(String::new(), e.to_string())))
}

fn unavailable(e: DevError) -> Response {
    match e {
        DevError::Refused(m) => error(StatusCode::CONFLICT, m),
        other => error(StatusCode::SERVICE_UNAVAILABLE, other.to_string()),
    }
}

/// The dev-cluster's node list.
async fn status(socket: PathBuf) -> Result<Vec<Value>, Response> {
    let v = ask(socket, Request { command: "status".into(), node: None }).await.map_err(unavailable)?;
    Ok(v["nodes"].as_array().cloned().unwrap_or_default())
}

/// Node `id` of the list, or a 400/404 naming the valid ones.
fn find(list: &[Value], id: &str) -> Result<Value, Response> {
    let known: Vec<String> = list.iter().map(|n| n["node"].to_string()).collect();
    let n: u16 =
        id.trim().parse().map_err(|_| error(StatusCode::BAD_REQUEST, format!("a node id is a small unsigned integer, not '{id}'")))?;
    list.iter()
        .find(|x| x["node"].as_u64() == Some(n as u64))
        .cloned()
        .ok_or_else(|| error(StatusCode::NOT_FOUND, format!("unknown node {n}; this cluster has nodes {}", known.join(","))))
}

pub(super) async fn list(State(ctx): State<Ctx>) -> Response {
    let socket = match control(&ctx) {
        Ok(s) => s,
        Err(r) => return r,
    };
    match status(socket).await {
        Ok(list) => Json(json!({ "this_node": ctx.broker.identity.node_id, "nodes": list })).into_response(),
        Err(r) => r,
    }
}

pub(super) async fn act(State(ctx): State<Ctx>, Path((id, command)): Path<(String, String)>) -> Response {
    let socket = match control(&ctx) {
        Ok(s) => s,
        Err(r) => return r,
    };
    if !nodes::COMMANDS.contains(&command.as_str()) {
        return error(StatusCode::BAD_REQUEST, format!("unknown node command '{command}'; valid: {}", nodes::COMMANDS.join(", ")));
    }
    let node = match status(socket.clone()).await.and_then(|list| find(&list, &id)) {
        Ok(n) => n["node"].as_u64().unwrap_or_default() as u16,
        Err(r) => return r,
    };
    tracing::info!(node, command, "node fault asked over HTTP");
    match ask(socket, Request { command: command.clone(), node: Some(node) }).await {
        Ok(v) => Json(json!({ "node": node, "command": command, "message": v["message"] })).into_response(),
        Err(e) => unavailable(e),
    }
}

/// `/v1/nodes/{id}/faults`: forwarded to node `id`'s own `/v1/faults`.
pub(super) async fn faults(State(ctx): State<Ctx>, method: Method, Path(id): Path<String>, body: Bytes) -> Response {
    let socket = match control(&ctx) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let node = match status(socket).await.and_then(|list| find(&list, &id)) {
        Ok(n) => n,
        Err(r) => return r,
    };
    let Some(addr) = node["http"].as_str().filter(|a| !a.is_empty()) else {
        return error(StatusCode::CONFLICT, format!("node {id} has no HTTP listener"));
    };
    super::remote::relay(&format!("node {id}"), addr, method.as_str(), "/v1/faults", &body, Duration::from_secs(10), "application/json").await
}

