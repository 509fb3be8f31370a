//! `/v1/faults`: this node's injected faults.
//!
//! - `GET /v1/faults`: the active faults, oldest first.
//! - `POST /v1/faults` with a JSON body (`{"kind": "inject", "api": "Produce", "error":
//!   "NOT_LEADER_OR_FOLLOWER", "count": 3}`; see [`crate::fault::Request`]): 201 with the
//!   fault, or 400 naming what is valid.
//! - `DELETE /v1/faults` clears every fault; `DELETE /v1/faults/{id}` one (404 if none).
//!
//! Every route answers 403 unless the node runs with `fault.injection.enable=true`.

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::error;
use crate::fault::{self, AddError};

/// 403 when fault injection is off.
fn refused() -> Option<Response> {
    (!fault::global().is_enabled()).then(|| error(StatusCode::FORBIDDEN, AddError::Disabled.to_string()))
}

fn listed(faults: &[fault::Fault]) -> Json<Value> {
    Json(json!({ "faults": faults.iter().map(fault::Fault::to_json).collect::<Vec<_>>() }))
}

pub(super) async fn list() -> Response {
    if let Some(r) = refused() {
        return r;
    }
    listed(&fault::global().list(crate::clock::now_ms())).into_response()
}

pub(super) async fn add(body: Bytes) -> Response {
    if let Some(r) = refused() {
        return r;
    }
    let req: fault::Request = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            let kinds = fault::spec::KINDS.join(", ");
            return error(StatusCode::BAD_REQUEST, format!("the body must be a JSON fault ({{\"kind\": one of {kinds}, ...}}): {e}"));
        }
    };
    let checked = match req.check() {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    match fault::global().add(checked, crate::clock::now_ms()) {
        Ok(f) => (StatusCode::CREATED, Json(f.to_json())).into_response(),
        Err(AddError::Disabled) => error(StatusCode::FORBIDDEN, AddError::Disabled.to_string()),
        Err(AddError::Invalid(e)) => error(StatusCode::BAD_REQUEST, e),
    }
}

pub(super) async fn clear_all() -> Response {
    if let Some(r) = refused() {
        return r;
    }
    listed(&fault::global().clear(None)).into_response()
}

pub(super) async fn clear_one(Path(id): Path<String>) -> Response {
    if let Some(r) = refused() {
        return r;
    }
    let Ok(id) = id.trim().parse::<u64>() else {
        return error(StatusCode::BAD_REQUEST, format!("a fault id is an unsigned integer, not '{id}'"));
    };
    let gone = fault::global().clear(Some(id));
    if gone.is_empty() {
        return error(StatusCode::NOT_FOUND, format!("no active fault {id}"));
    }
    listed(&gone).into_response()
}
