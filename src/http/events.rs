//! `GET /v1/events`: the journal as JSON, or followed as server-sent events.
//!
//! - `?since=SEQ`: events with a larger seq, oldest first; `?limit=N` keeps the first N.
//!   Without `since`, `limit` keeps the newest N.
//! - `?follow` (or `follow=true`): a `text/event-stream`, each event as `id: <seq>` and
//!   `data: <one-line JSON>`, from `Last-Event-ID` (a reconnecting client's), else from
//!   `since`, else from the oldest event kept; keep-alive comments every few seconds.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tokio::sync::watch;

use super::{error, Ctx};
use crate::journal::{Event, Journal};

/// Events read from the ring per wake-up of a stream.
const BATCH: usize = 1000;

pub(super) async fn events(State(ctx): State<Ctx>, Query(q): Query<HashMap<String, String>>, headers: HeaderMap) -> Response {
    let number =
        |key: &str| q.get(key).map(|v| v.trim().parse::<u64>().map_err(|_| format!("{key} must be an unsigned integer, not '{v}'")));
    let since = match number("since").transpose() {
        Ok(v) => v,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let limit = match number("limit").transpose() {
        Ok(v) => v.map_or(usize::MAX, |n| n as usize),
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let follow = q.get("follow").is_some_and(|v| !matches!(v.as_str(), "false" | "0" | "no"));
    let journal = ctx.broker.cluster.journal();
    if !follow {
        let list = match since {
            Some(s) => journal.since(s, limit),
            None => journal.newest(limit),
        };
        return Json(list).into_response();
    }
    let resume = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    follow_from(journal, resume.or(since).unwrap_or(0), ctx.shutdown.clone()).into_response()
}

/// A stream's position.
struct Follow {
    journal: Arc<Journal>,
    cursor: u64,
    ready: VecDeque<Event>,
    news: watch::Receiver<u64>,
    shutdown: watch::Receiver<bool>,
}

/// Events after `cursor`, then each new one as it is pushed, until shutdown.
fn follow_from(journal: Arc<Journal>, cursor: u64, shutdown: watch::Receiver<bool>) -> impl IntoResponse {
    let news = journal.subscribe();
    let start = Follow { journal, cursor, ready: VecDeque::new(), news, shutdown };
    let stream = futures_util::stream::unfold(start, |mut st| async move {
        loop {
            if *st.shutdown.borrow() {
                return None;
            }
            if let Some(e) = st.ready.pop_front() {
                st.cursor = e.seq;
                let data = serde_json::to_string(&e).expect("events serialize");
                return Some((Ok::<_, Infallible>(SseEvent::default().id(e.seq.to_string()).data(data)), st));
            }
            // Seen before reading, so an event pushed in between still wakes the wait below.
            st.news.borrow_and_update();
            st.ready.extend(st.journal.since(st.cursor, BATCH));
            if !st.ready.is_empty() {
                continue;
            }
            tokio::select! {
                r = st.news.changed() => if r.is_err() { return None },
                r = st.shutdown.changed() => if r.is_err() { return None },
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(5)).text("keep-alive"))
}
