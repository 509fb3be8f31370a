//! `sluice produce TOPIC`: lines from stdin or a file, as records in v2 batches sent to
//! each partition's leader; keys split off with `--key-delimiter`, headers from `-H`.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;

use bytes::Bytes;
use clap::Args;
use kafka_protocol::messages::produce_request::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use serde_json::json;

use super::client::{Client, TopicInfo};
use super::output::{json_line, table};
use super::records::{encode_batch, partition_for_key, Outgoing};
use super::{props, CliError, Common};

/// Produce v12: topics by name (v13 addresses them by id).
const PRODUCE_VERSION: i16 = 12;
/// Records per chunk read before sending: each partition's share becomes one batch.
const CHUNK_RECORDS: usize = 5_000;
/// Bytes per chunk, so one request stays well under the broker's limits.
const CHUNK_BYTES: usize = 4 << 20;
/// Inputs this large get a progress bar (on a terminal).
const PROGRESS_BYTES: u64 = 1 << 20;

/// `sluice produce ...`.
#[derive(Args, Debug)]
pub struct ProduceArgs {
    #[command(flatten)]
    pub common: Common,
    pub topic: String,
    /// Read lines from FILE instead of stdin.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Split each line at the first D: the key before it, the value after.
    #[arg(short = 'K', long, value_name = "D")]
    pub key_delimiter: Option<String>,
    /// A header on every record, KEY=VALUE. Repeatable.
    #[arg(short = 'H', long = "header", value_name = "KEY=VALUE")]
    pub headers: Vec<String>,
    /// all (-1), 1 or 0.
    #[arg(long, default_value = "all")]
    pub acks: String,
    /// Send every record to this partition (default: by key hash, else round robin).
    #[arg(short = 'p', long)]
    pub partition: Option<i32>,
}

fn acks(s: &str) -> Result<i16, CliError> {
    match s {
        "all" | "-1" => Ok(-1),
        "1" => Ok(1),
        "0" => Ok(0),
        other => Err(CliError::Usage(format!("--acks {other}: use all, 1 or 0"))),
    }
}

/// What the partitions got.
#[derive(Default)]
struct Sent {
    records: u64,
    first: Option<i64>,
    last: Option<i64>,
}

/// Runs `produce`.
pub async fn run(a: ProduceArgs) -> Result<i32, CliError> {
    let acks = acks(&a.acks)?;
    let mut headers = Vec::new();
    for h in &a.headers {
        let (k, v) = h.split_once('=').ok_or_else(|| CliError::Usage(format!("-H wants KEY=VALUE, got '{h}'")))?;
        headers.push((k.to_string(), Some(Bytes::from(v.to_string()))));
    }
    let settings = props::settings(&a.common)?;
    let retries = settings.retries;
    let mut client = Client::connect(settings).await?;
    let mut info = client.topic(&a.topic).await?;
    let n = info.partitions.len() as i32;
    if let Some(p) = a.partition.filter(|p| *p < 0 || *p >= n) {
        return Err(CliError::Usage(format!("--partition {p}: topic {} has partitions 0-{}", a.topic, n - 1)));
    }
    let (reader, size): (Box<dyn BufRead>, Option<u64>) = match &a.file {
        Some(p) => {
            let f = std::fs::File::open(p).map_err(|e| CliError::Usage(format!("--file {}: {e}", p.display())))?;
            let size = f.metadata().ok().map(|m| m.len());
            (Box::new(std::io::BufReader::new(f)), size)
        }
        None => (Box::new(std::io::BufReader::new(std::io::stdin())), None),
    };
    let bar = progress(size);
    let mut sent: BTreeMap<i32, Sent> = BTreeMap::new();
    let mut chunk: BTreeMap<i32, Vec<Outgoing>> = BTreeMap::new();
    let (mut chunk_records, mut chunk_bytes) = (0usize, 0usize);
    let mut round_robin = 0i32;
    for line in reader.split(b'\n') {
        let mut line = line?;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if let Some(b) = &bar {
            b.inc(line.len() as u64 + 1);
        }
        let (key, value) = match &a.key_delimiter {
            Some(d) if !d.is_empty() => match find(&line, d.as_bytes()) {
                Some(i) => (Some(Bytes::copy_from_slice(&line[..i])), Bytes::copy_from_slice(&line[i + d.len()..])),
                None => (None, Bytes::from(line.clone())),
            },
            _ => (None, Bytes::from(line.clone())),
        };
        let partition = match (a.partition, &key) {
            (Some(p), _) => p,
            (None, Some(k)) => partition_for_key(k, n),
            (None, None) => round_robin,
        };
        chunk_bytes += line.len() + 32;
        chunk_records += 1;
        chunk.entry(partition).or_default().push(Outgoing { key, value: Some(value), headers: headers.clone() });
        if chunk_records >= CHUNK_RECORDS || chunk_bytes >= CHUNK_BYTES {
            send_chunk(&mut client, &mut info, &a.topic, acks, retries, std::mem::take(&mut chunk), &mut sent).await?;
            (chunk_records, chunk_bytes) = (0, 0);
            // Keyless records stick to one partition per chunk, as the sticky partitioner does.
            round_robin = (round_robin + 1) % n.max(1);
        }
    }
    if !chunk.is_empty() {
        send_chunk(&mut client, &mut info, &a.topic, acks, retries, chunk, &mut sent).await?;
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let total: u64 = sent.values().map(|s| s.records).sum();
    if a.common.json() {
        let parts: Vec<_> = sent
            .iter()
            .map(|(p, s)| json!({"partition": p, "records": s.records, "first_offset": s.first, "last_offset": s.last}))
            .collect();
        json_line(&json!({"topic": a.topic, "records": total, "partitions": parts}));
    } else {
        let opt = |o: Option<i64>| o.map_or("-".to_string(), |o| o.to_string());
        let rows = sent.iter().map(|(p, s)| vec![p.to_string(), s.records.to_string(), opt(s.first), opt(s.last)]).collect();
        eprintln!("produced {total} records to {}", a.topic);
        if total > 0 {
            eprint!("{}", table(&["PARTITION", "RECORDS", "FIRST-OFFSET", "LAST-OFFSET"], rows));
        }
    }
    Ok(0)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn progress(size: Option<u64>) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    let size = size.filter(|s| *s >= PROGRESS_BYTES)?;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(size);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}") {
        bar.set_style(style);
    }
    Some(bar)
}

/// Sends one batch per partition, grouped by leader; partitions whose leader moved are
/// sent again after a metadata refresh.
async fn send_chunk(
    client: &mut Client,
    info: &mut TopicInfo,
    topic: &str,
    acks: i16,
    retries: Option<u32>,
    chunk: BTreeMap<i32, Vec<Outgoing>>,
    sent: &mut BTreeMap<i32, Sent>,
) -> Result<(), CliError> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let mut todo: BTreeMap<i32, (Bytes, u64)> = BTreeMap::new();
    for (p, recs) in &chunk {
        todo.insert(*p, (encode_batch(recs, now)?, recs.len() as u64));
    }
    let deadline = Client::retry_deadline();
    let mut tries = 0u32;
    loop {
        let mut by_leader: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for p in todo.keys() {
            let leader = info.partitions.iter().find(|x| x.partition == *p).map_or(-1, |x| x.leader);
            by_leader.entry(leader).or_default().push(*p);
        }
        let mut last_err = None;
        for (leader, ps) in by_leader {
            if leader < 0 {
                last_err = Some(CliError::Kafka { code: 5, context: format!("produce to {topic} partitions {ps:?}"), message: None });
                continue;
            }
            let req = ProduceRequest::default().with_acks(acks).with_timeout_ms(30_000).with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partition_data(
                    ps.iter().map(|p| PartitionProduceData::default().with_index(*p).with_records(Some(todo[p].0.clone()))).collect(),
                )]);
            if acks == 0 {
                match client.node(leader).await?.send_oneway(&req, PRODUCE_VERSION).await {
                    Ok(_) => {
                        for p in &ps {
                            let n = todo.remove(p).map_or(0, |t| t.1);
                            sent.entry(*p).or_default().records += n;
                        }
                    }
                    Err(e) => last_err = Some(e),
                }
                continue;
            }
            match client.send_to(leader, &req, PRODUCE_VERSION).await {
                Ok((r, _)) => {
                    for t in r.responses {
                        for pr in t.partition_responses {
                            let p = pr.index;
                            match CliError::check(pr.error_code, || format!("produce to {topic}/{p}"), pr.error_message.as_deref()) {
                                Ok(()) => {
                                    let n = todo.remove(&p).map_or(0, |t| t.1);
                                    let s = sent.entry(p).or_default();
                                    s.records += n;
                                    s.first = s.first.or(Some(pr.base_offset));
                                    s.last = Some(pr.base_offset + n as i64 - 1);
                                }
                                Err(e) if e.retriable() => last_err = Some(e),
                                Err(e) => return Err(e),
                            }
                        }
                    }
                }
                Err(e) if e.retriable() => last_err = Some(e),
                Err(e) => return Err(e),
            }
        }
        if todo.is_empty() {
            return Ok(());
        }
        let out_of_tries = retries.is_some_and(|r| tries >= r);
        tries += 1;
        if std::time::Instant::now() > deadline || out_of_tries {
            return Err(last_err.unwrap_or_else(|| CliError::Timeout(format!("produce to {topic}: no leader took the records"))));
        }
        Client::backoff().await;
        *info = client.topic(topic).await?;
    }
}
