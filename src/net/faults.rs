//! The request path's fault hooks: before a request is served, the node's fault registry
//! decides whether it is held (latency), answered with an injected error, or ends the
//! connection. Requests from other brokers of the cluster (follower fetches, transaction
//! markers) are link traffic instead: link faults drop or delay them, request faults
//! leave them alone, so a client-facing fault does not also break replication.

use std::time::Duration;

use bytes::Bytes;

use super::injected;
use crate::api::Chunk;
use crate::fault::{self, Outcome};

/// What the connection does with a request.
pub(super) enum Verdict {
    /// Serve it as usual.
    Serve,
    /// Send this answer instead (None: the request wants no answer).
    Answer(Option<Vec<Chunk>>),
    /// Close the connection without answering.
    Close,
}

/// Client ids this broker's own links use (`cluster::peer`, `replication::fetcher`),
/// followed by the sender's node id.
const PEER_CLIENT_IDS: &[&str] = &["sluice-replica-", "sluice-broker-"];

/// The node id of the broker that sent `frame`, if it came from one: read from the
/// client id of the request header (v1+: key, version, correlation id, then the id).
pub(super) fn peer_of(frame: &[u8]) -> Option<i32> {
    let len = i16::from_be_bytes([*frame.get(8)?, *frame.get(9)?]);
    let id = frame.get(10..10 + usize::try_from(len).ok()?)?;
    let id = std::str::from_utf8(id).ok()?;
    PEER_CLIENT_IDS.iter().find_map(|p| id.strip_prefix(p)?.parse().ok())
}

/// Whether the answer to a request from broker `peer` is to be lost: the link was cut while
/// the request ran (a follower's long-poll fetch, say), so it ends as a cut link ends it.
pub(super) fn cut_meanwhile(peer: Option<i32>) -> bool {
    peer.is_some_and(|p| fault::global().has_link_faults() && fault::global().on_link(Some(p), crate::clock::now_ms()).drop)
}

/// Consults the registry for one request frame of API `key`; costs two atomic loads when
/// no fault is active.
pub(super) async fn consult(frame: &Bytes, key: i16) -> Verdict {
    let reg = fault::global();
    if !reg.has_link_faults() && !reg.has_request_faults() {
        return Verdict::Serve;
    }
    let now = crate::clock::now_ms();
    if let Some(peer) = peer_of(frame) {
        let link = reg.on_link(Some(peer), now);
        if link.drop {
            // The peer sees the link fail, as it would under a real partition, and retries.
            return Verdict::Close;
        }
        if link.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(link.delay_ms)).await;
        }
        return Verdict::Serve;
    }
    let action = reg.on_request(key, now);
    if action.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(action.latency_ms)).await;
    }
    match action.outcome {
        Outcome::Serve => Verdict::Serve,
        Outcome::Disconnect => {
            tracing::info!(api = %fault::names::api_name(key), "injected fault: closing the connection instead of answering");
            Verdict::Close
        }
        Outcome::Error(code) => match injected::answer(frame, code) {
            Some(a) => Verdict::Answer(a),
            None => Verdict::Serve,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(client_id: &str) -> Vec<u8> {
        let mut f = vec![0, 1, 0, 12, 0, 0, 0, 5];
        f.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
        f.extend_from_slice(client_id.as_bytes());
        f.extend_from_slice(&[0, 0, 0]);
        f
    }

    #[test]
    fn brokers_are_told_from_clients_by_their_client_id() {
        assert_eq!(peer_of(&header("sluice-replica-3")), Some(3));
        assert_eq!(peer_of(&header("sluice-broker-12")), Some(12));
        assert_eq!(peer_of(&header("rdkafka")), None);
        assert_eq!(peer_of(&header("sluice-replica-x")), None);
        assert_eq!(peer_of(&[0, 1, 0, 12, 0, 0, 0, 5, 0xff, 0xff]), None, "a null client id");
        assert_eq!(peer_of(&[0, 1, 0, 12, 0, 0, 0, 5, 0, 50, b's']), None, "a client id longer than the frame");
        assert_eq!(peer_of(&[0, 1]), None);
    }
}
