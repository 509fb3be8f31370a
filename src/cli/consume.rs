//! `sluice consume TOPIC`: fetches from each partition's leader and prints records with a
//! kcat-style template or as one JSON object per line.

use std::collections::BTreeMap;
use std::io::Write;

use clap::Args;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use serde_json::json;

use super::client::{broker, Client};
use super::member::Member;
use super::output::text;
use super::records::{decode_fetched, Incoming};
use super::template::Template;
use super::{group, offsets, props, CliError, Common};

/// Fetch v12: topics by name (v13+ addresses them by id).
const FETCH_VERSION: i16 = 12;
const MAX_WAIT_MS: i32 = 500;
const PARTITION_MAX_BYTES: i32 = 1 << 20;
const MAX_BYTES: i32 = 50 << 20;

/// `sluice consume ...`.
#[derive(Args, Debug)]
pub struct ConsumeArgs {
    #[command(flatten)]
    pub common: Common,
    pub topic: String,
    /// Exit after N records.
    #[arg(short = 'n', long = "num")]
    pub num: Option<u64>,
    /// Start at the earliest offset (default: the latest, or the group's committed offset).
    #[arg(long, conflicts_with = "offset")]
    pub from_beginning: bool,
    /// Start at offset N (in every partition read).
    #[arg(long)]
    pub offset: Option<i64>,
    /// Read only this partition.
    #[arg(short = 'p', long)]
    pub partition: Option<i32>,
    /// Output template, kcat-style: %t topic, %p partition, %o offset, %k key, %s value,
    /// %h headers (k=v,...), %T timestamp ms, %K key length, %S value length, %% a percent; \n \t escapes.
    #[arg(short = 'f', long = "template", default_value = "%s\\n")]
    pub template: String,
    /// Exit once every partition read is at its end (the high watermark).
    #[arg(short = 'e', long)]
    pub exit_at_end: bool,
    /// Join this consumer group (KIP-848): read the partitions it assigns, from its
    /// committed offsets, and commit what was read on exit.
    #[arg(short = 'g', long, conflicts_with_all = ["partition", "offset"])]
    pub group: Option<String>,
}

/// One partition being read.
struct Cursor {
    next: i64,
    high_watermark: i64,
}

/// Runs `consume`.
pub async fn run(a: ConsumeArgs) -> Result<i32, CliError> {
    let template = Template::parse(&a.template)?;
    let mut client = Client::connect(props::settings(&a.common)?).await?;
    let info = client.topic(&a.topic).await?;
    let parts: Vec<i32> = match a.partition {
        Some(p) if info.partitions.iter().any(|x| x.partition == p) => vec![p],
        Some(p) => return Err(CliError::Usage(format!("--partition {p}: topic {} has no such partition", a.topic))),
        None => info.partitions.iter().map(|p| p.partition).collect(),
    };
    let reset = if a.from_beginning { offsets::EARLIEST } else { offsets::LATEST };
    let mut cursors: BTreeMap<i32, Cursor> = BTreeMap::new();
    let mut member = None;
    match &a.group {
        Some(g) => {
            let id = uuid::Uuid::parse_str(&info.topic_id).map_err(|_| CliError::Protocol(format!("topic {} has no topic id", a.topic)))?;
            member = Some(Member::new(g, &a.topic, id));
        }
        None => {
            let start: BTreeMap<i32, i64> = match a.offset {
                Some(o) => parts.iter().map(|p| (*p, o)).collect(),
                None => offsets::list(&mut client, &a.topic, &parts, reset).await?,
            };
            let ends = offsets::list(&mut client, &a.topic, &parts, offsets::LATEST).await?;
            for p in &parts {
                let next = start.get(p).copied().unwrap_or(0);
                cursors.insert(*p, Cursor { next, high_watermark: ends.get(p).copied().unwrap_or(0) });
            }
        }
    }
    let json = a.common.json();
    let mut seen = 0u64;
    let stdout = std::io::stdout();
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut info = info;
    'outer: loop {
        if a.num.is_some_and(|n| seen >= n) {
            break;
        }
        if let Some(m) = member.as_mut() {
            if m.beat_if_due(&mut client).await? {
                let g = a.group.as_deref().unwrap_or_default();
                reassign(&mut client, g, &a.topic, m, &mut cursors, reset).await?;
            }
            if cursors.is_empty() {
                // Waiting for an assignment.
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => continue,
                    _ = &mut ctrl_c => break 'outer,
                }
            }
        }
        if a.exit_at_end && cursors.values().all(|c| c.next >= c.high_watermark) {
            break;
        }
        let mut by_leader: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for p in cursors.keys() {
            let leader = info.partitions.iter().find(|x| x.partition == *p).map_or(-1, |x| x.leader);
            by_leader.entry(leader).or_default().push(*p);
        }
        let mut refresh = false;
        for (leader, ps) in by_leader {
            if leader < 0 {
                refresh = true;
                continue;
            }
            let req = FetchRequest::default()
                .with_replica_id(broker(-1))
                .with_max_wait_ms(MAX_WAIT_MS)
                .with_min_bytes(1)
                .with_max_bytes(MAX_BYTES)
                .with_isolation_level(0)
                .with_session_id(0)
                .with_session_epoch(-1)
                .with_topics(vec![FetchTopic::default().with_topic(TopicName(StrBytes::from_string(a.topic.clone()))).with_partitions(
                    ps.iter()
                        .map(|p| {
                            FetchPartition::default()
                                .with_partition(*p)
                                .with_fetch_offset(cursors[p].next)
                                .with_partition_max_bytes(PARTITION_MAX_BYTES)
                        })
                        .collect(),
                )]);
            let r = tokio::select! {
                r = client.send_to(leader, &req, FETCH_VERSION) => r,
                _ = &mut ctrl_c => break 'outer,
            };
            let r = match r {
                Ok((r, _)) => r,
                Err(e) if e.retriable() => {
                    refresh = true;
                    continue;
                }
                Err(e) => return Err(e),
            };
            CliError::check(r.error_code, || format!("fetch from {}", a.topic), None)?;
            for t in r.responses {
                for pd in t.partitions {
                    let p = pd.partition_index;
                    if let Err(e) = CliError::check(pd.error_code, || format!("fetch {}/{p}", a.topic), None) {
                        if e.retriable() {
                            refresh = true;
                            continue;
                        }
                        return Err(e);
                    }
                    let Some(c) = cursors.get_mut(&p) else { continue };
                    c.high_watermark = pd.high_watermark;
                    let data = pd.records.unwrap_or_default();
                    let (recs, next) = decode_fetched(&data, c.next)?;
                    if let Some(n) = next {
                        c.next = c.next.max(n);
                    }
                    let mut out = stdout.lock();
                    for r in recs {
                        if a.num.is_some_and(|n| seen >= n) {
                            c.next = r.offset;
                            break;
                        }
                        print_record(&mut out, &a.topic, p, &r, json, &template)?;
                        seen += 1;
                        c.next = r.offset + 1;
                    }
                    out.flush()?;
                }
            }
        }
        if refresh {
            Client::backoff().await;
            info = client.topic(&a.topic).await?;
        }
    }
    if let (Some(g), Some(m)) = (&a.group, member.as_mut()) {
        let to: BTreeMap<(String, i32), i64> = cursors.iter().map(|(p, c)| ((a.topic.clone(), *p), c.next)).collect();
        group::commit(&mut client, g, &to, Some((m.epoch, m.member_id()))).await?;
        m.leave(&mut client).await?;
    }
    Ok(0)
}

/// Follows a new assignment: commits and drops revoked partitions, starts new ones at the
/// group's committed offset (else earliest or latest).
async fn reassign(
    client: &mut Client,
    group: &str,
    topic: &str,
    m: &Member,
    cursors: &mut BTreeMap<i32, Cursor>,
    reset: i64,
) -> Result<(), CliError> {
    let revoked: BTreeMap<(String, i32), i64> =
        cursors.iter().filter(|(p, _)| !m.assigned.contains(p)).map(|(p, c)| ((topic.to_string(), *p), c.next)).collect();
    if !revoked.is_empty() && m.epoch > 0 {
        group::commit(client, group, &revoked, Some((m.epoch, m.member_id()))).await?;
    }
    cursors.retain(|p, _| m.assigned.contains(p));
    let new: Vec<i32> = m.assigned.iter().copied().filter(|p| !cursors.contains_key(p)).collect();
    if new.is_empty() {
        return Ok(());
    }
    let committed = group::committed(client, group).await?;
    let start = offsets::list(client, topic, &new, reset).await?;
    let ends = offsets::list(client, topic, &new, offsets::LATEST).await?;
    for p in new {
        let next = committed.get(&(topic.to_string(), p)).copied().unwrap_or_else(|| start.get(&p).copied().unwrap_or(0));
        cursors.insert(p, Cursor { next, high_watermark: ends.get(&p).copied().unwrap_or(0) });
    }
    Ok(())
}

fn print_record(out: &mut impl Write, topic: &str, partition: i32, r: &Incoming, json: bool, t: &Template) -> Result<(), CliError> {
    if json {
        let headers: Vec<_> = r.headers.iter().map(|(k, v)| json!({"key": k, "value": text(v)})).collect();
        let line = json!({"topic": topic, "partition": partition, "offset": r.offset, "timestamp": r.timestamp,
                          "key": text(&r.key), "value": text(&r.value), "headers": headers});
        writeln!(out, "{line}")?;
    } else {
        out.write_all(&t.render(topic, partition, r))?;
    }
    Ok(())
}
