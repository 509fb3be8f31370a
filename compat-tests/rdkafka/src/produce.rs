//! Producing: every codec at acks=all, the idempotent producer, transactions with a group's
//! offsets; each read back with a StreamConsumer.

use std::time::Duration;

use futures_util::StreamExt;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Headers, Message, OwnedHeaders, OwnedMessage};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};

use crate::{admin, config, ctx, unique, Outcome};

pub const CODECS_NOTE: &str = "FutureProducer acks=all; none, gzip, snappy, lz4, zstd";
pub const IDEMPOTENT_NOTE: &str = "enable.idempotence, 5 in flight, 3 partitions, each record once in order";
pub const TXN_NOTE: &str = "commit, abort, commit with a group offset in each txn; read_committed sees only committed";

/// Sends the records (key, value, header) to one partition and waits for every delivery.
async fn send_all(p: &FutureProducer, topic: &str, partition: i32, recs: &[(String, String)]) -> Outcome {
    let sends = recs.iter().enumerate().map(|(i, (k, v))| {
        let headers = OwnedHeaders::new().insert(Header { key: "h", value: Some(&i.to_string()) });
        p.send(FutureRecord::to(topic).partition(partition).key(k).payload(v).headers(headers), Duration::from_secs(30))
    });
    for (i, r) in futures_util::future::join_all(sends).await.into_iter().enumerate() {
        r.map_err(|(e, _)| format!("record {i} to {topic}/{partition}: {e}"))?;
    }
    Ok(())
}

/// Reads a partition from its start until n records arrived (and half a second more) or 30 s
/// passed.
pub async fn read_partition(bootstrap: &str, topic: &str, partition: i32, n: usize, isolation: &str) -> Result<Vec<OwnedMessage>, String> {
    read_partition_with(bootstrap, &[], topic, partition, n, isolation).await
}

/// read_partition with more client settings (security).
pub async fn read_partition_with(
    bootstrap: &str,
    settings: &[(&'static str, String)],
    topic: &str,
    partition: i32,
    n: usize,
    isolation: &str,
) -> Result<Vec<OwnedMessage>, String> {
    let mut cfg = config(bootstrap, &[("group.id", &unique("reader")), ("isolation.level", isolation), ("enable.auto.commit", "false")]);
    for (k, v) in settings {
        cfg.set(*k, v);
    }
    let c: StreamConsumer = ctx(cfg.create(), "consumer")?;
    let mut tpl = TopicPartitionList::new();
    ctx(tpl.add_partition_offset(topic, partition, Offset::Beginning), "offset")?;
    ctx(c.assign(&tpl), "assign")?;
    let mut got = Vec::new();
    let mut stream = c.stream();
    let mut deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    // Up to n records, then half a second more: a record beyond them shows up too.
    loop {
        if got.len() == n {
            deadline = deadline.min(tokio::time::Instant::now() + Duration::from_millis(500));
        }
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(m))) => got.push(m.detach()),
            // A dead broker still in metadata (a killed dev-cluster node): librdkafka reports its
            // connection failures through the consumer too, and goes on with the others.
            Ok(Some(Err(KafkaError::MessageConsumption(RDKafkaErrorCode::BrokerTransportFailure)))) => continue,
            Ok(Some(Err(e))) => return Err(format!("consume {topic}/{partition}: {e}")),
            Ok(None) | Err(_) => break,
        }
    }
    Ok(got)
}

fn value(m: &OwnedMessage) -> String {
    String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned()
}

pub async fn codecs(bootstrap: String) -> Outcome {
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = unique(&format!("codec-{codec}"));
        admin::create_topic(&bootstrap, &topic, 1, &[]).await?;
        let p: FutureProducer = ctx(
            config(&bootstrap, &[("acks", "all"), ("enable.idempotence", "false"), ("compression.codec", codec), ("linger.ms", "20")])
                .create(),
            "producer",
        )?;
        // Compressible values, so each codec really shrinks something.
        let recs: Vec<(String, String)> = (0..100).map(|i| (format!("k{i}"), format!("{codec}-{i:04}-{}", "x".repeat(200)))).collect();
        send_all(&p, &topic, 0, &recs).await?;
        let got = read_partition(&bootstrap, &topic, 0, recs.len(), "read_uncommitted").await?;
        if got.len() != recs.len() {
            return Err(format!("{codec}: read back {} of {} records", got.len(), recs.len()));
        }
        for (i, m) in got.iter().enumerate() {
            let header = m.headers().and_then(|h| h.iter().next()).map(|h| (h.key.to_string(), h.value.map(|v| v.to_vec())));
            if m.offset() != i as i64
                || m.key() != Some(recs[i].0.as_bytes())
                || value(m) != recs[i].1
                || header != Some(("h".into(), Some(i.to_string().into_bytes())))
            {
                return Err(format!("{codec}: record {i} at offset {} is {:?} / {:.20} / {header:?}", m.offset(), m.key(), value(m)));
            }
        }
    }
    Ok(())
}

pub async fn idempotent(bootstrap: String) -> Outcome {
    let topic = unique("idempotent");
    admin::create_topic(&bootstrap, &topic, 3, &[]).await?;
    let p: FutureProducer = ctx(
        config(&bootstrap, &[("enable.idempotence", "true"), ("max.in.flight.requests.per.connection", "5"), ("linger.ms", "1")]).create(),
        "producer",
    )?;
    const N: usize = 3000;
    let sends = (0..N).map(|i| {
        let v = i.to_string();
        let p = &p;
        let topic = &topic;
        async move { p.send(FutureRecord::<(), _>::to(topic).partition((i % 3) as i32).payload(&v), Duration::from_secs(60)).await }
    });
    for (i, r) in futures_util::future::join_all(sends).await.into_iter().enumerate() {
        r.map_err(|(e, _)| format!("record {i}: {e}"))?;
    }
    for partition in 0..3 {
        let got = read_partition(&bootstrap, &topic, partition, N / 3, "read_uncommitted").await?;
        let want: Vec<String> = (0..N / 3).map(|i| (partition as usize + 3 * i).to_string()).collect();
        let vals: Vec<String> = got.iter().map(value).collect();
        if vals != want {
            return Err(format!("partition {partition}: read {} records, want {} once each in order", vals.len(), want.len()));
        }
    }
    Ok(())
}

/// Commit, abort, commit: each transaction writes ten records and a group offset
/// (send_offsets_to_transaction, with the metadata of a consumer in that group).
pub async fn transactions(bootstrap: String) -> Outcome {
    let topic = unique("txn");
    let group = unique("txn-group");
    admin::create_topic(&bootstrap, &topic, 1, &[]).await?;
    let p: FutureProducer = ctx(config(&bootstrap, &[("transactional.id", &unique("rdkafka-txn"))]).create(), "producer")?;
    ctx(p.init_transactions(Duration::from_secs(30)), "init_transactions")?;
    let member: StreamConsumer = ctx(
        config(&bootstrap, &[("group.id", &group), ("enable.auto.commit", "false"), ("auto.offset.reset", "earliest")]).create(),
        "group consumer",
    )?;
    ctx(member.subscribe(&[&topic]), "subscribe")?;
    // The group metadata must come from a member that has joined (its generation and id).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while member.assignment().map(|a| a.count()).unwrap_or(0) == 0 {
        let _ = tokio::time::timeout(Duration::from_millis(200), member.recv()).await;
        if tokio::time::Instant::now() > deadline {
            return Err("the group member got no assignment within 30 s".into());
        }
    }
    let (mut committed, mut all) = (Vec::new(), Vec::new());
    for (name, commit, offset) in [("first", true, 5), ("aborted", false, 15), ("second", true, 25)] {
        ctx(p.begin_transaction(), "begin_transaction")?;
        let recs: Vec<(String, String)> = (0..10).map(|i| (String::new(), format!("{name}-{i}"))).collect();
        send_all(&p, &topic, 0, &recs).await?;
        let mut offsets = TopicPartitionList::new();
        ctx(offsets.add_partition_offset(&topic, 0, Offset::Offset(offset)), "offset")?;
        let meta = member.group_metadata().ok_or("no group metadata")?;
        ctx(p.send_offsets_to_transaction(&offsets, &meta, Duration::from_secs(30)), "send_offsets_to_transaction")?;
        all.extend(recs.iter().map(|r| r.1.clone()));
        if commit {
            committed.extend(recs.iter().map(|r| r.1.clone()));
            ctx(p.commit_transaction(Duration::from_secs(30)), "commit_transaction")?;
        } else {
            ctx(p.abort_transaction(Duration::from_secs(30)), "abort_transaction")?;
        }
    }
    let rc: Vec<String> = read_partition(&bootstrap, &topic, 0, committed.len(), "read_committed").await?.iter().map(value).collect();
    if rc != committed {
        return Err(format!("read_committed read {rc:?}, want {committed:?}"));
    }
    let ru: Vec<String> = read_partition(&bootstrap, &topic, 0, all.len(), "read_uncommitted").await?.iter().map(value).collect();
    if ru != all {
        return Err(format!("read_uncommitted read {ru:?}, want {all:?}"));
    }
    let mut tpl = TopicPartitionList::new();
    ctx(tpl.add_partition(&topic, 0).set_offset(Offset::Invalid), "tpl")?;
    let got = ctx(member.committed_offsets(tpl, Duration::from_secs(10)), "committed offsets")?;
    let at = got.find_partition(&topic, 0).map(|e| e.offset());
    if at != Some(Offset::Offset(25)) {
        return Err(format!("group {group} committed {at:?}, want 25 (the last committed transaction's)"));
    }
    Ok(())
}
