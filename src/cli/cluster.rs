//! `sluice cluster info` (brokers, controller, the KRaft quorum) and `cluster health`
//! (exit 0 when healthy, 1 otherwise, naming each reason, as `rpk cluster health`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use clap::{Args, Subcommand};
use kafka_protocol::messages::describe_cluster_request::DescribeClusterRequest;
use kafka_protocol::messages::describe_quorum_request::{DescribeQuorumRequest, PartitionData, TopicData};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use serde_json::{json, Value};

pub use crate::metadata::health::Health;
use crate::metadata::health::PartitionHealth;

use super::client::Client;
use super::output::{json_line, table};
use super::{props, topic, CliError, Common};

/// `sluice cluster ...`.
#[derive(Args, Debug)]
pub struct ClusterArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(subcommand)]
    pub cmd: ClusterCmd,
}

/// The cluster commands.
#[derive(Subcommand, Debug)]
pub enum ClusterCmd {
    /// Cluster id, brokers, controller and the metadata quorum.
    Info,
    /// Exit 0 when healthy, 1 otherwise, printing each reason.
    Health {
        /// Check every second and print each change (until Ctrl-C).
        #[arg(short = 'w', long)]
        watch: bool,
        /// Wait until the cluster is healthy, then exit 0.
        #[arg(short = 'e', long)]
        exit_when_healthy: bool,
    },
}

/// Runs a cluster command.
pub async fn run(a: ClusterArgs) -> Result<i32, CliError> {
    let settings = props::settings(&a.common)?;
    let json = a.common.json();
    match a.cmd {
        ClusterCmd::Info => {
            let mut client = Client::connect(settings).await?;
            let v = info(&mut client).await?;
            if json {
                json_line(&v);
            } else {
                print_info(&v);
            }
            Ok(0)
        }
        ClusterCmd::Health { watch, exit_when_healthy } => {
            if !watch && !exit_when_healthy {
                let h = health(settings).await?;
                print_health(&h, json);
                return Ok(if h.healthy() { 0 } else { 1 });
            }
            let mut last: Option<String> = None;
            loop {
                let shown = match health(settings.clone()).await {
                    Ok(h) => {
                        let text = serde_json::to_string(&h.to_json()).unwrap_or_default();
                        if last.as_deref() != Some(text.as_str()) && (watch || h.healthy()) {
                            print_health(&h, json);
                        }
                        if exit_when_healthy && h.healthy() {
                            return Ok(0);
                        }
                        text
                    }
                    Err(e) => {
                        let text = e.to_string();
                        if watch && last.as_deref() != Some(text.as_str()) {
                            eprintln!("health check failed: {e}");
                        }
                        text
                    }
                };
                last = Some(shown);
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = tokio::signal::ctrl_c() => return Ok(1),
                }
            }
        }
    }
}

/// The cluster as `cluster info` shows it.
pub async fn info(client: &mut Client) -> Result<Value, CliError> {
    let v = client.metadata(Some(super::client::NO_TOPICS)).await?;
    let mut controller = v.controller_id;
    let mut fenced = BTreeSet::new();
    if client.any().await?.supports::<DescribeClusterRequest>() {
        let version = client.any().await?.version::<DescribeClusterRequest>(2)?;
        let req = DescribeClusterRequest::default().with_include_fenced_brokers(version >= 2);
        let (r, _) = client.send_any(&req, 2).await?;
        CliError::check(r.error_code, || "DescribeCluster".into(), r.error_message.as_deref())?;
        controller = r.controller_id.0;
        fenced = r.brokers.iter().filter(|b| b.is_fenced).map(|b| b.broker_id.0).collect();
    }
    let mut brokers: Vec<Value> = v
        .brokers
        .iter()
        .map(|b| json!({"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack, "is_fenced": fenced.contains(&b.node_id)}))
        .collect();
    brokers.sort_by_key(|b| b["node_id"].as_i64());
    let quorum = quorum(client).await;
    Ok(json!({"cluster_id": v.cluster_id, "controller_id": controller, "brokers": brokers, "quorum": quorum}))
}

/// The metadata quorum, where a broker answers DescribeQuorum (Null otherwise).
async fn quorum(client: &mut Client) -> Value {
    let supported = match client.any().await {
        Ok(c) => c.supports::<DescribeQuorumRequest>(),
        Err(_) => false,
    };
    if !supported {
        return Value::Null;
    }
    let req = DescribeQuorumRequest::default().with_topics(vec![TopicData::default()
        .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
        .with_partitions(vec![PartitionData::default().with_partition_index(0)])]);
    let Ok((r, _)) = client.send_any(&req, 2).await else { return Value::Null };
    if r.error_code != 0 {
        return json!({"error": crate::error::code_name(r.error_code)});
    }
    let Some(p) = r.topics.first().and_then(|t| t.partitions.first()) else { return Value::Null };
    if p.error_code != 0 {
        return json!({"error": crate::error::code_name(p.error_code)});
    }
    let replica = |s: &kafka_protocol::messages::describe_quorum_response::ReplicaState| json!({"replica_id": s.replica_id.0, "log_end_offset": s.log_end_offset, "lag": (p.high_watermark - s.log_end_offset).max(0)});
    json!({"leader_id": p.leader_id.0, "leader_epoch": p.leader_epoch, "high_watermark": p.high_watermark,
           "voters": p.current_voters.iter().map(replica).collect::<Vec<_>>(),
           "observers": p.observers.iter().map(replica).collect::<Vec<_>>()})
}

fn print_info(v: &Value) {
    println!("CLUSTER     {}", v["cluster_id"].as_str().unwrap_or("-"));
    println!("CONTROLLER  {}", v["controller_id"]);
    println!();
    let rows = v["brokers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            let mut id = b["node_id"].to_string();
            if b["node_id"] == v["controller_id"] {
                id.push('*');
            }
            vec![id, format!("{}:{}", b["host"].as_str().unwrap_or(""), b["port"]), b["rack"].as_str().unwrap_or("-").to_string()]
        })
        .collect();
    print!("{}", table(&["ID", "ADDRESS", "RACK"], rows));
    let q = &v["quorum"];
    if q.get("leader_id").is_some() {
        println!();
        println!("QUORUM LEADER {} (epoch {}, high watermark {})", q["leader_id"], q["leader_epoch"], q["high_watermark"]);
        let mut rows = Vec::new();
        for (role, key) in [("voter", "voters"), ("observer", "observers")] {
            for r in q[key].as_array().into_iter().flatten() {
                rows.push(vec![r["replica_id"].to_string(), role.to_string(), r["log_end_offset"].to_string(), r["lag"].to_string()]);
            }
        }
        print!("{}", table(&["NODE", "ROLE", "LOG-END-OFFSET", "LAG"], rows));
    }
}

/// One health check over a fresh connection.
pub async fn health(settings: props::Settings) -> Result<Health, CliError> {
    let mut client = Client::connect(settings).await?;
    let v = client.metadata(None).await?;
    let live: BTreeSet<i32> = v.brokers.iter().map(|b| b.node_id).collect();
    let names: Vec<String> = v.topics.iter().filter(|t| t.error_code == 0).map(|t| t.name.clone()).collect();
    let mut min_isr: BTreeMap<String, usize> = BTreeMap::new();
    if !names.is_empty() {
        for (t, cs) in topic::topic_configs(&mut client, &names, Some(&["min.insync.replicas"][..])).await? {
            if let Some(n) =
                cs.iter().find(|(k, _)| k == "min.insync.replicas").and_then(|(_, v)| v.as_deref()).and_then(|v| v.parse().ok())
            {
                min_isr.insert(t, n);
            }
        }
    }
    let partitions = v.topics.iter().flat_map(|t| {
        let min_isr = min_isr.get(&t.name).copied();
        t.partitions.iter().map(move |p| PartitionHealth {
            topic: &t.name,
            partition: p.partition,
            leader: p.leader,
            replicas: &p.replicas,
            isr: &p.isr,
            min_isr,
        })
    });
    Ok(Health::check(v.controller_id, &live, partitions))
}

fn print_health(h: &Health, json: bool) {
    if json {
        json_line(&h.to_json());
        return;
    }
    let list = |v: &[String]| format!("[{}]", v.join(" "));
    let nums = |v: &[i32]| format!("[{}]", v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(" "));
    println!("Healthy:                     {}", h.healthy());
    println!("Unhealthy reasons:           [{}]", h.reasons().join(" "));
    println!("Controller ID:               {}", h.controller_id);
    println!("All nodes:                   {}", nums(&h.all_nodes));
    println!("Nodes down:                  {}", nums(&h.nodes_down));
    println!("Leaderless partitions:       {}", list(&h.leaderless));
    println!("Under-replicated partitions: {}", list(&h.under_replicated));
    println!("Under-min-ISR partitions:    {}", list(&h.under_min_isr));
}
