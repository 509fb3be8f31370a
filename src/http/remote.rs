//! Asking other nodes' HTTP listeners (registered with each broker) for what only they
//! know: a leader's followers' progress, a coordinator's groups. Each node answers its
//! own part with `?local=true`, so a question never travels further than one hop.

use std::collections::HashMap;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::broker::Broker;

/// How long a view waits for a peer: a dead or paused node leaves its part blank.
pub(super) const PEER_TIMEOUT: Duration = Duration::from_millis(1500);

/// Largest answer read from a peer.
const MAX_ANSWER: u64 = 32 << 20;

/// One HTTP/1.1 request to `path` at `addr`, the connection closed after it: the answer's
/// status and body.
pub(super) async fn request(addr: &str, method: &str, path: &str, body: &[u8]) -> std::io::Result<(StatusCode, Vec<u8>)> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await?;
    s.write_all(body).await?;
    let mut answer = Vec::new();
    s.take(MAX_ANSWER).read_to_end(&mut answer).await?;
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("bad HTTP answer: {what}"));
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| bad("no header end"))?;
    let head = String::from_utf8_lossy(&answer[..split]);
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        return Err(bad("chunked bodies are not read here"));
    }
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse::<u16>().ok()).ok_or_else(|| bad("no status"))?;
    let status = StatusCode::from_u16(code).map_err(|_| bad("status"))?;
    Ok((status, answer[split + 4..].to_vec()))
}

/// Asks `who` (a peer, at `addr`) `method path` and passes its answer on as it is, with
/// `content_type`; a 502 or 504 when it cannot be reached or does not answer within `wait`.
pub(super) async fn relay(who: &str, addr: &str, method: &str, path: &str, body: &[u8], wait: Duration, content_type: &'static str) -> Response {
    match tokio::time::timeout(wait, request(addr, method, path, body)).await {
        Ok(Ok((status, body))) => (status, [(axum::http::header::CONTENT_TYPE, content_type)], body).into_response(),
        Ok(Err(e)) => super::error(StatusCode::BAD_GATEWAY, format!("asking {who} at {addr} for {path}: {e}")),
        Err(_) => super::error(StatusCode::GATEWAY_TIMEOUT, format!("{who} at {addr} did not answer {path} within {} ms (is it paused?)", wait.as_millis())),
    }
}

/// The JSON a peer answers a GET of `path` with, or None if it answered anything but 200
/// within [`PEER_TIMEOUT`].
pub(super) async fn get_json(addr: &str, path: &str) -> Option<Value> {
    match tokio::time::timeout(PEER_TIMEOUT, request(addr, "GET", path, b"")).await {
        Ok(Ok((StatusCode::OK, body))) => serde_json::from_slice(&body).ok(),
        _ => None,
    }
}

/// The HTTP address of live broker `id`, if it is another node and has a listener.
pub(super) fn http_of(b: &Broker, id: i32) -> Option<String> {
    if id == b.identity.node_id {
        return None;
    }
    b.cluster.image().live_broker(id).and_then(|x| x.http.clone())
}

/// Whether a view was asked for this node's own part only.
pub(super) fn local_only(q: &HashMap<String, String>) -> bool {
    q.get("local").is_some_and(|v| !matches!(v.as_str(), "false" | "0" | "no"))
}

/// Percent-encodes a path segment (topic and group names may hold any character).
pub(super) fn segment(s: &str) -> String {
    s.bytes()
        .map(|c| match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (c as char).to_string(),
            _ => format!("%{c:02X}"),
        })
        .collect()
}

/// Progress fields (`high_watermark`, `log_end_offset`, `followers`) of `topic`'s
/// partitions led by other nodes (`leaders`: partition, leader), asked of each leader once.
pub(super) async fn leaders_progress(b: &Broker, topic: &str, leaders: &[(usize, i32)]) -> HashMap<usize, Value> {
    let mut by_node: HashMap<i32, (usize, usize)> = HashMap::new();
    for &(p, leader) in leaders {
        let r = by_node.entry(leader).or_insert((p, p));
        *r = (r.0.min(p), r.1.max(p));
    }
    let asks = by_node.into_iter().filter_map(|(node, (lo, hi))| {
        let addr = http_of(b, node)?;
        let path = format!("/v1/topics/{}?offset={lo}&limit={}&local=true", segment(topic), hi - lo + 1);
        Some(async move { (node, get_json(&addr, &path).await) })
    });
    let mut out = HashMap::new();
    for (node, answer) in futures_util::future::join_all(asks).await {
        let Some(parts) = answer.as_ref().and_then(|v| v["partitions"].as_array()) else { continue };
        for p in parts {
            // Only what the node answered as the leader: its view of its own followers.
            let (Some(i), Some(leader)) = (p["partition"].as_u64(), p["leader"].as_i64()) else { continue };
            if leader != node as i64 || p.get("high_watermark").is_none() {
                continue;
            }
            let mut v = serde_json::Map::new();
            for k in ["high_watermark", "log_end_offset", "followers"] {
                if let Some(x) = p.get(k) {
                    v.insert(k.into(), x.clone());
                }
            }
            out.insert(i as usize, Value::Object(v));
        }
    }
    out
}
