//! The scenarios on a dev-cluster of their own: SASL_SSL, and a leader killed mid-load.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};

use crate::broker::Broker;
use crate::{config, ctx, produce, unique, Outcome};

pub const SASL_NOTE: &str = "SASL_SSL: SCRAM-SHA-512 over TLS (dev-cluster --security sasl_ssl); wrong password refused";
pub const KILL_NOTE: &str = "3-node dev-cluster, RF=3, min.insync.replicas=2, kill -9 the leader mid-load; acked all read once";

/// Runs a scenario on a dev-cluster, stopped afterwards (its log printed if the scenario failed).
async fn on_cluster<F: std::future::Future<Output = Outcome>>(n: u16, extra: &[&str], run: impl FnOnce(Broker) -> F) -> Outcome {
    let d = Broker::dev_cluster(n, extra).await?;
    run(d).await
}

fn secure(d: &Broker, password: &str) -> Vec<(&'static str, String)> {
    vec![
        ("security.protocol", "SASL_SSL".into()),
        ("ssl.ca.location", d.ca_file.display().to_string()),
        ("sasl.mechanism", "SCRAM-SHA-512".into()),
        ("sasl.username", "admin".into()),
        ("sasl.password", password.into()),
    ]
}

fn with(c: &mut ClientConfig, settings: &[(&'static str, String)]) {
    for (k, v) in settings {
        c.set(*k, v);
    }
}

async fn create(bootstrap: &str, settings: &[(&'static str, String)], topic: &str, rf: i32, cfg: &[(&str, &str)]) -> Outcome {
    let mut c = config(bootstrap, &[]);
    with(&mut c, settings);
    let adm: AdminClient<DefaultClientContext> = ctx(c.create(), "admin client")?;
    let mut t = NewTopic::new(topic, 1, TopicReplication::Fixed(rf));
    for (k, v) in cfg {
        t = t.set(k, v);
    }
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    if let Some(Err((_, code))) = ctx(adm.create_topics([&t], &opts).await, "create_topics")?.first() {
        return Err(format!("create {topic}: {code}"));
    }
    for _ in 0..100 {
        if let Ok(md) = adm.inner().fetch_metadata(Some(topic), Duration::from_secs(5)) {
            if md.topics().first().is_some_and(|t| t.partitions().first().is_some_and(|p| p.leader() >= 0 && p.isr().len() == rf as usize))
            {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(format!("{topic} not led with an ISR of {rf} within 20 s"))
}

pub async fn sasl_tls() -> Outcome {
    on_cluster(1, &["--security", "sasl_ssl"], |mut d| async move {
        let r = sasl_tls_on(&d).await;
        let _ = d.stop().await;
        r.map_err(|e| format!("{e}\ndev-cluster log:\n{}", d.log()))
    })
    .await
}

async fn sasl_tls_on(d: &Broker) -> Outcome {
    let password = d.admin_password.clone().ok_or("dev-cluster printed no admin password")?;
    let ok = secure(d, &password);
    let topic = unique("sasl-tls");
    create(&d.addr, &ok, &topic, 1, &[]).await?;
    let mut c = config(&d.addr, &[("acks", "all")]);
    with(&mut c, &ok);
    let p: FutureProducer = ctx(c.create(), "producer")?;
    for i in 0..5 {
        let v = format!("s{i}");
        p.send(FutureRecord::<(), _>::to(&topic).partition(0).payload(&v), Duration::from_secs(20))
            .await
            .map_err(|(e, _)| format!("produce: {e}"))?;
    }
    let got = produce::read_partition_with(&d.addr, &ok, &topic, 0, 5, "read_uncommitted").await?;
    let vals: Vec<String> = got.iter().map(|m| String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned()).collect();
    if vals != ["s0", "s1", "s2", "s3", "s4"] {
        return Err(format!("consumed {vals:?}"));
    }
    // A wrong password: the client's metadata request fails (librdkafka logs the
    // authentication failure and reports no brokers).
    let mut bad = config(&d.addr, &[]);
    with(&mut bad, &secure(d, &format!("wrong-{password}")));
    let adm: AdminClient<DefaultClientContext> = ctx(bad.create(), "admin client")?;
    if adm.inner().fetch_metadata(None, Duration::from_secs(5)).is_ok() {
        return Err("a wrong password fetched metadata".into());
    }
    Ok(())
}

pub async fn leader_kill() -> Outcome {
    on_cluster(3, &[], |mut d| async move {
        let r = leader_kill_on(&d).await;
        let _ = d.stop().await;
        r.map_err(|e| format!("{e}\ndev-cluster log:\n{}", d.log()))
    })
    .await
}

async fn leader_kill_on(d: &Broker) -> Outcome {
    let topic = unique("leader-kill");
    create(&d.addr, &[], &topic, 3, &[("min.insync.replicas", "2")]).await?;
    let adm: AdminClient<DefaultClientContext> = ctx(config(&d.addr, &[]).create(), "admin client")?;
    let leader = || {
        adm.inner()
            .fetch_metadata(Some(&topic), Duration::from_secs(5))
            .ok()
            .and_then(|md| md.topics().first().and_then(|t| t.partitions().first().map(|p| p.leader())))
            .unwrap_or(-1)
    };
    let p: FutureProducer = ctx(
        config(&d.addr, &[("acks", "all"), ("enable.idempotence", "true"), ("message.timeout.ms", "90000"), ("linger.ms", "5")]).create(),
        "producer",
    )?;
    const N: usize = 3000;
    const KILL_AT: usize = 1000;
    let mut pending = Vec::new();
    let (mut acked, mut failed, mut victim) = (HashSet::new(), 0, -1);
    // Paced, so that two thirds of the load is still to come when the leader dies; deliveries
    // are collected as they complete.
    for i in 0..N {
        let v = i.to_string();
        let f = p.send_result(FutureRecord::<(), _>::to(&topic).partition(0).payload(&v)).map_err(|(e, _)| format!("enqueue: {e}"))?;
        pending.push((v, f));
        if i == KILL_AT {
            // Wait for the first records' acks, then kill the leader with the rest to come.
            for (v, f) in pending.drain(..) {
                match f.await {
                    Ok(Ok(_)) => drop(acked.insert(v)),
                    _ => failed += 1,
                }
            }
            victim = leader();
            d.kill_node(victim)?;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for (v, f) in pending {
        match f.await {
            Ok(Ok(_)) => drop(acked.insert(v)),
            _ => failed += 1,
        }
    }
    if victim < 0 {
        return Err("no leader to kill".into());
    }
    let mut waited = 0;
    while leader() < 0 || leader() == victim {
        tokio::time::sleep(Duration::from_millis(200)).await;
        waited += 1;
        if waited > 150 {
            return Err(format!("no new leader after killing node {victim}"));
        }
    }
    let reader: StreamConsumer = ctx(config(&d.addr, &[("group.id", &unique("watermarks"))]).create(), "consumer")?;
    let (_, end) = ctx(reader.fetch_watermarks(&topic, 0, Duration::from_secs(10)), "log end")?;
    let got = produce::read_partition_with(&d.addr, &[], &topic, 0, end as usize, "read_uncommitted").await?;
    if got.len() != end as usize {
        return Err(format!("read {} records of the log's {end}", got.len()));
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    for m in &got {
        *seen.entry(String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned()).or_default() += 1;
    }
    let twice = seen.values().filter(|n| **n > 1).count();
    let lost = acked.iter().filter(|v| !seen.contains_key(*v)).count();
    if twice > 0 || lost > 0 {
        return Err(format!(
            "killed node {victim}: {} acked, {failed} failed; {lost} acked records lost, {twice} in the log twice",
            acked.len()
        ));
    }
    println!("leader-kill: killed node {victim} after {KILL_AT} records; {} acknowledged, {failed} failed", acked.len());
    Ok(())
}
