//! The node's HTTP listener (`http.listener`, or its older name `metrics.listener`):
//! `/metrics` in the Prometheus text format, a JSON API under `/v1/` (cluster, brokers,
//! topics, groups, health, events), the fault endpoints (`/v1/faults`, and for a node of a
//! dev-cluster `/v1/nodes` and `/v1/scenarios`), a partition's records
//! (`/v1/topics/{name}/partitions/{p}/records`) and the web console at `/` (`console.rs`),
//! axum on hyper.
//!
//! [`router`] is the merge point for more pages: merge a `Router` into it before [`serve`].
//! Every route reads the broker's shared services; none changes them, except `/v1/faults`
//! (the node's fault registry), `/v1/nodes` and `/v1/scenarios` (which ask the dev-cluster
//! to act), and a produced record, which goes through the leader's produce path.

mod console;
mod events;
mod faults;
mod group_view;
mod messages;
mod nodes;
mod remote;
mod scenarios;
mod views;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use tokio::sync::watch;

use crate::broker::Broker;

/// What the handlers share.
#[derive(Clone)]
pub struct Ctx {
    pub broker: Arc<Broker>,
    /// Becomes true on shutdown: open event streams end then.
    pub shutdown: watch::Receiver<bool>,
    /// The dev-cluster's control socket (`dev.control.socket`), if a dev-cluster started this node.
    pub control: Option<std::path::PathBuf>,
}

/// Every route of the listener.
pub fn router(broker: Arc<Broker>, shutdown: watch::Receiver<bool>) -> Router {
    let socket = broker.config().get("dev.control.socket");
    let control = (!socket.trim().is_empty()).then(|| std::path::PathBuf::from(socket.trim()));
    let ctx = Ctx { broker, shutdown, control };
    Router::new()
        .route("/metrics", get(metrics))
        .route("/v1/cluster", get(views::cluster))
        .route("/v1/brokers", get(views::brokers))
        .route("/v1/brokers/{id}/metrics", get(broker_metrics))
        .route("/v1/topics", get(views::topics))
        .route("/v1/topics/{name}", get(views::topic))
        .route("/v1/health", get(views::health))
        .route("/v1/groups", get(views::groups))
        .route("/v1/groups/{id}", get(views::group))
        .route("/v1/events", get(events::events))
        .route("/v1/faults", get(faults::list).post(faults::add).delete(faults::clear_all))
        .route("/v1/faults/{id}", axum::routing::delete(faults::clear_one))
        .route("/v1/topics/{name}/partitions/{p}/records", get(messages::browse).post(messages::produce))
        .route("/v1/nodes", get(nodes::list))
        .route("/v1/nodes/{id}/faults", get(nodes::faults).post(nodes::faults).delete(nodes::faults))
        .route("/v1/nodes/{id}/{command}", axum::routing::post(nodes::act))
        .route("/v1/scenarios", get(scenarios::list))
        .route("/v1/scenarios/{name}", axum::routing::post(scenarios::run))
        .merge(console::routes())
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such path".into()) })
        .with_state(ctx)
}

/// Binds `addr` and serves `app` on it until `shutdown`; returns the bound address and the
/// server's task, which ends once every connection (event streams too) has closed.
pub async fn start(
    addr: SocketAddr,
    app: Router,
    shutdown: watch::Receiver<bool>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<std::io::Result<()>>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    Ok((bound, tokio::spawn(serve(listener, app, shutdown))))
}

/// Serves `app` on `listener` until `shutdown` turns true.
pub async fn serve(listener: tokio::net::TcpListener, app: Router, shutdown: watch::Receiver<bool>) -> std::io::Result<()> {
    axum::serve(listener, app).with_graceful_shutdown(stopped(shutdown)).await
}

/// Resolves once `rx` is true (or its sender is gone).
pub(crate) async fn stopped(mut rx: watch::Receiver<bool>) {
    loop {
        if *rx.borrow_and_update() {
            return;
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}

async fn metrics(axum::extract::State(ctx): axum::extract::State<Ctx>) -> Response {
    let body = crate::metrics::render(&ctx.broker);
    ([(header::CONTENT_TYPE, METRICS_TYPE)], body).into_response()
}

/// Another broker's `/metrics`, asked of it over HTTP and passed on (this node's own for its
/// id), so the console's charts can add up every broker's counters from one page.
async fn broker_metrics(axum::extract::State(ctx): axum::extract::State<Ctx>, axum::extract::Path(id): axum::extract::Path<String>) -> Response {
    let Ok(id) = id.trim().parse::<i32>() else { return error(StatusCode::BAD_REQUEST, format!("a broker id is an integer, not '{id}'")) };
    if id == ctx.broker.identity.node_id {
        return metrics(axum::extract::State(ctx)).await;
    }
    if ctx.broker.cluster.image().live_broker(id).is_none() {
        return error(StatusCode::NOT_FOUND, format!("broker {id} is not a live broker"));
    }
    let Some(addr) = remote::http_of(&ctx.broker, id) else {
        return error(StatusCode::NOT_FOUND, format!("broker {id} registered no HTTP listener"));
    };
    remote::relay(&format!("broker {id}"), &addr, "GET", "/metrics", b"", remote::PEER_TIMEOUT, METRICS_TYPE).await
}

/// The content type of `/metrics`.
const METRICS_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A JSON error: `{"error": message}`.
pub(crate) fn error(status: StatusCode, message: String) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}
