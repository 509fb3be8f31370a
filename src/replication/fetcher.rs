//! A replica fetcher: copies the partitions this broker follows from one leader, with
//! the ordinary Fetch API (replica id set), batched across partitions.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, RequestHeader, ResponseHeader, TopicName};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use crate::clock::now_ms;
use crate::cluster::login::{is_login_failure, Link};
use crate::cluster::Cluster;
use crate::error::Error;
use crate::partition::Partition;
use crate::transport::Stream;

/// The first wait after a refused login; it doubles up to [`MAX_LOGIN_BACKOFF`].
const LOGIN_BACKOFF: Duration = Duration::from_millis(500);
const MAX_LOGIN_BACKOFF: Duration = Duration::from_secs(10);

/// Fetch v12: the first with diverging epochs, the last that names topics.
const FETCH_VERSION: i16 = 12;

/// How a fetcher fetches.
#[derive(Debug, Clone)]
pub struct Settings {
    /// This broker's id, sent as the replica id.
    pub me: i32,
    pub wait_ms: i32,
    pub partition_max_bytes: i32,
}

/// Runs until the partition list becomes empty or the task is aborted.
pub async fn run(leader: i32, cluster: Arc<Cluster>, mut parts: watch::Receiver<Vec<Arc<Partition>>>, s: Settings) {
    let mut conn: Option<Link> = None;
    let mut correlation = 0i32;
    let mut login_backoff = LOGIN_BACKOFF;
    loop {
        let list = parts.borrow_and_update().clone();
        if list.is_empty() {
            if parts.changed().await.is_err() {
                return;
            }
            continue;
        }
        let addr = cluster.image().live_broker(leader).map(|b| b.address());
        let Some(addr) = addr else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        // An injected link fault (isolate, cut, drop) severs the link as a partition would.
        let link_fault = crate::fault::global().on_link(Some(leader), now_ms());
        if link_fault.drop {
            conn = None;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = parts.changed() => {}
            }
            continue;
        }
        if link_fault.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(link_fault.delay_ms)).await;
        }
        if conn.is_none() {
            let client_id = format!("sluice-replica-{}", s.me);
            match tokio::time::timeout(Duration::from_secs(5), cluster.links.open_inter_broker(&addr, &client_id)).await {
                Ok(Ok(c)) => {
                    conn = Some(c);
                    login_backoff = LOGIN_BACKOFF;
                }
                Ok(Err(e)) if is_login_failure(&e) => {
                    tracing::error!(leader, error = %e, retry_in_ms = login_backoff.as_millis() as u64, "replica fetcher: login to the leader failed");
                    tokio::time::sleep(login_backoff).await;
                    login_backoff = (login_backoff * 2).min(MAX_LOGIN_BACKOFF);
                    continue;
                }
                _ => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            }
        }
        correlation = correlation.wrapping_add(1);
        let (req, epochs) = build_request(&list, &s);
        let link = conn.as_mut().expect("connected");
        let wait = Duration::from_millis(s.wait_ms as u64) + Duration::from_secs(10);
        let fetch = async {
            link.refresh(&addr).await?;
            exchange(&mut link.stream, correlation, &req, s.me).await
        };
        let resp = match tokio::time::timeout(wait, fetch).await {
            // A link cut while the fetch waited loses its answer too.
            Ok(Ok(_)) if crate::fault::global().on_link(Some(leader), now_ms()).drop => {
                conn = None;
                continue;
            }
            Ok(Ok(r)) => r,
            _ => {
                conn = None;
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let mut backoff = resp.error_code != 0;
        for t in &resp.responses {
            for pd in &t.partitions {
                let Some(i) = list.iter().position(|p| p.topic == *t.topic.0 && p.index == pd.partition_index) else { continue };
                let p = &list[i];
                if let Err(e) = handle_partition(p, pd, epochs[i], now_ms()) {
                    backoff = true;
                    tracing::debug!(topic = %p.topic, partition = p.index, leader, error = %e, "replica fetch");
                }
            }
        }
        if backoff {
            // Wait for the metadata to move on (a new leader or epoch), not in a hot loop.
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                _ = parts.changed() => {}
            }
        }
    }
}

/// The request, and the leader epoch each partition of `list` was fetched in.
fn build_request(list: &[Arc<Partition>], s: &Settings) -> (FetchRequest, Vec<i32>) {
    let mut topics: Vec<FetchTopic> = Vec::new();
    let mut epochs = Vec::with_capacity(list.len());
    for p in list {
        let (offset, last_epoch, log_start) = p.fetch_position();
        let epoch = p.leader_epoch();
        epochs.push(epoch);
        let fp = FetchPartition::default()
            .with_partition(p.index)
            .with_current_leader_epoch(epoch)
            .with_fetch_offset(offset)
            .with_last_fetched_epoch(last_epoch)
            .with_log_start_offset(log_start)
            .with_partition_max_bytes(s.partition_max_bytes);
        match topics.iter_mut().find(|t| *t.topic.0 == *p.topic) {
            Some(t) => t.partitions.push(fp),
            None => {
                topics.push(FetchTopic::default().with_topic(TopicName(StrBytes::from_string(p.topic.clone()))).with_partitions(vec![fp]))
            }
        }
    }
    let req = FetchRequest::default()
        .with_replica_id(BrokerId(s.me))
        .with_max_wait_ms(s.wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(i32::MAX)
        .with_isolation_level(0)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(topics);
    (req, epochs)
}

/// Sends one request and reads its response.
async fn exchange(sock: &mut Stream, correlation: i32, req: &FetchRequest, me: i32) -> anyhow::Result<FetchResponse> {
    let mut body = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(1)
        .with_request_api_version(FETCH_VERSION)
        .with_correlation_id(correlation)
        .with_client_id(Some(StrBytes::from_string(format!("sluice-replica-{me}"))))
        .encode(&mut body, 2)?;
    req.encode(&mut body, FETCH_VERSION)?;
    let mut frame = BytesMut::with_capacity(body.len() + 4);
    frame.put_i32(body.len() as i32);
    frame.extend_from_slice(&body);
    sock.write_all(&frame).await?;
    let len = sock.read_i32().await?;
    anyhow::ensure!((0..=256 << 20).contains(&len), "bad response length {len}");
    let mut buf = vec![0u8; len as usize];
    sock.read_exact(&mut buf).await?;
    let mut b = bytes::Bytes::from(buf);
    let header = ResponseHeader::decode(&mut b, 1)?;
    anyhow::ensure!(header.correlation_id == correlation, "response out of order");
    let resp = FetchResponse::decode(&mut b, FETCH_VERSION)?;
    anyhow::ensure!(!b.has_remaining(), "trailing bytes in fetch response");
    Ok(resp)
}

/// Applies one partition's part of a fetch response (to a fetch made in leader epoch
/// `fetched_in`): truncation, records, high watermark. Time comes in, so the replication
/// simulation drives the same code.
pub(super) fn handle_partition(
    p: &Partition,
    pd: &kafka_protocol::messages::fetch_response::PartitionData,
    fetched_in: i32,
    now: i64,
) -> crate::error::Result<()> {
    match pd.error_code {
        0 => {}
        1 => {
            // OFFSET_OUT_OF_RANGE: behind the leader's log start, or ahead of its end.
            let (offset, _, _) = p.fetch_position();
            if offset < pd.log_start_offset {
                p.reset_to(pd.log_start_offset, fetched_in, now)?;
            } else {
                p.truncate_to(pd.high_watermark.max(0), fetched_in, now)?;
            }
            return Ok(());
        }
        code => return Err(Error::InvalidRequest(format!("leader answered error {code}"))),
    }
    if pd.diverging_epoch.end_offset >= 0 {
        // Back to where both logs agree: the leader's end of that epoch, or this log's own end
        // of it if sooner (as Kafka). Batches of a later epoch the leader never had may sit
        // between the two, and a truncation to the leader's end alone would keep them (and
        // the same answer would come back at every fetch).
        let theirs = pd.diverging_epoch.end_offset;
        let (_, ours) = p.end_offset_for_epoch(pd.diverging_epoch.epoch);
        p.truncate_to(if ours >= 0 { ours.min(theirs) } else { theirs }, fetched_in, now)?;
        return Ok(());
    }
    if let Some(records) = pd.records.as_ref().filter(|r| !r.is_empty()) {
        p.append_replicated(records, fetched_in, now)?;
    }
    p.set_follower_hw(pd.high_watermark, fetched_in);
    Ok(())
}
