//! `sluice topic`: create, list, describe, delete, alter-config, add-partitions.

use clap::{Args, Subcommand};
use kafka_protocol::messages::create_partitions_request::{CreatePartitionsRequest, CreatePartitionsTopic};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig, CreateTopicsRequest};
use kafka_protocol::messages::delete_topics_request::{DeleteTopicState, DeleteTopicsRequest};
use kafka_protocol::messages::describe_configs_request::{DescribeConfigsRequest, DescribeConfigsResource};
use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use serde_json::{json, Value};

use super::client::Client;
use super::output::{ids, json_line, report_deleted, table};
use super::{offsets, props, CliError, Common};

/// DescribeConfigs' resource type of a topic.
pub const TOPIC_RESOURCE: i8 = 2;
/// DescribeConfigs' resource type for a broker.
const BROKER_RESOURCE: i8 = 4;
/// DescribeConfigs' source of a value set on the topic itself.
const DYNAMIC_TOPIC_CONFIG: i8 = 1;
const ADMIN_TIMEOUT_MS: i32 = 30_000;

/// `sluice topic ...`.
#[derive(Args, Debug)]
pub struct TopicArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(subcommand)]
    pub cmd: TopicCmd,
}

/// The topic commands.
#[derive(Subcommand, Debug)]
pub enum TopicCmd {
    /// Create a topic.
    Create {
        name: String,
        /// Partitions (-1: the broker's num.partitions).
        #[arg(short = 'p', long, default_value_t = -1)]
        partitions: i32,
        /// Replication factor (-1: the broker's default.replication.factor).
        #[arg(short = 'r', long, default_value_t = -1)]
        replicas: i16,
        /// A topic config, e.g. -c cleanup.policy=compact. Repeatable.
        #[arg(short = 'c', long = "topic-config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
    },
    /// List topics.
    List {
        /// Include internal topics (__consumer_offsets, ...).
        #[arg(short = 'i', long)]
        internal: bool,
    },
    /// Partitions (leader, replicas, ISR, offline replicas, high watermark) and the topic's own configs.
    Describe { name: String },
    /// Delete topics.
    Delete {
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Set or delete topic configs (IncrementalAlterConfigs).
    AlterConfig {
        name: String,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        #[arg(long = "delete", value_name = "KEY")]
        delete: Vec<String>,
    },
    /// Raise the partition count to TOTAL.
    AddPartitions {
        name: String,
        #[arg(short = 'n', long = "num", value_name = "TOTAL")]
        total: i32,
    },
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn split_kv(kv: &str, flag: &str) -> Result<(String, String), CliError> {
    let (k, v) = kv.split_once('=').ok_or_else(|| CliError::Usage(format!("{flag} wants KEY=VALUE, got '{kv}'")))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

/// Runs a topic command.
pub async fn run(a: TopicArgs) -> Result<i32, CliError> {
    let mut client = Client::connect(props::settings(&a.common)?).await?;
    let json = a.common.json();
    match a.cmd {
        TopicCmd::Create { name, partitions, replicas, configs } => {
            let mut cs = Vec::new();
            for kv in &configs {
                let (k, v) = split_kv(kv, "-c")?;
                cs.push(CreatableTopicConfig::default().with_name(s(&k)).with_value(Some(s(&v))));
            }
            let req = CreateTopicsRequest::default().with_timeout_ms(ADMIN_TIMEOUT_MS).with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(s(&name)))
                .with_num_partitions(partitions)
                .with_replication_factor(replicas)
                .with_configs(cs)]);
            let (r, _) = send_controller_bound(&mut client, &req, 7).await?;
            let t = r.topics.first().ok_or_else(|| CliError::Protocol("CreateTopics answered no topic".into()))?;
            CliError::check(t.error_code, || format!("create topic {name}"), t.error_message.as_deref())?;
            if json {
                json_line(&json!({"topic": name, "topic_id": t.topic_id.to_string(), "error": null}));
            } else {
                println!("created topic {name}");
            }
        }
        TopicCmd::List { internal } => {
            let v = client.metadata(None).await?;
            let mut topics: Vec<_> = v.topics.iter().filter(|t| internal || !t.is_internal).collect();
            topics.sort_by(|x, y| x.name.cmp(&y.name));
            if json {
                let list: Vec<Value> = topics
                    .iter()
                    .map(|t| {
                        json!({"topic": t.name, "topic_id": t.topic_id, "partitions": t.partitions.len(),
                               "replicas": t.partitions.first().map_or(0, |p| p.replicas.len()), "is_internal": t.is_internal})
                    })
                    .collect();
                json_line(&Value::Array(list));
            } else {
                let rows = topics
                    .iter()
                    .map(|t| {
                        vec![
                            t.name.clone(),
                            t.partitions.len().to_string(),
                            t.partitions.first().map_or(0, |p| p.replicas.len()).to_string(),
                        ]
                    })
                    .collect();
                print!("{}", table(&["NAME", "PARTITIONS", "REPLICAS"], rows));
            }
        }
        TopicCmd::Describe { name } => {
            let d = describe(&mut client, &name).await?;
            if json {
                json_line(&d);
            } else {
                print_describe(&d);
            }
        }
        TopicCmd::Delete { names } => {
            let version = client.any().await?.version::<DeleteTopicsRequest>(6)?;
            let mut req = DeleteTopicsRequest::default().with_timeout_ms(ADMIN_TIMEOUT_MS);
            if version >= 6 {
                req = req.with_topics(names.iter().map(|n| DeleteTopicState::default().with_name(Some(TopicName(s(n))))).collect());
            } else {
                req = req.with_topic_names(names.iter().map(|n| TopicName(s(n))).collect());
            }
            let (r, _) = send_controller_bound(&mut client, &req, 6).await?;
            let results = r
                .responses
                .iter()
                .map(|t| {
                    let n = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
                    let e = CliError::check(t.error_code, || format!("delete topic {n}"), t.error_message.as_deref()).err();
                    (n, e)
                })
                .collect();
            report_deleted("topic", results, json)?;
        }
        TopicCmd::AlterConfig { name, set, delete } => {
            let mut configs = Vec::new();
            for kv in &set {
                let (k, v) = split_kv(kv, "--set")?;
                configs.push(AlterableConfig::default().with_name(s(&k)).with_config_operation(0).with_value(Some(s(&v))));
            }
            for k in &delete {
                configs.push(AlterableConfig::default().with_name(s(k)).with_config_operation(1).with_value(None));
            }
            if configs.is_empty() {
                return Err(CliError::Usage("alter-config needs --set KEY=VALUE or --delete KEY".into()));
            }
            let req = IncrementalAlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
                .with_resource_type(TOPIC_RESOURCE)
                .with_resource_name(s(&name))
                .with_configs(configs)]);
            let (r, _) = client.send_any(&req, 1).await?;
            for x in &r.responses {
                CliError::check(x.error_code, || format!("alter configs of topic {name}"), x.error_message.as_deref())?;
            }
            if json {
                json_line(&json!({"topic": name, "error": null}));
            } else {
                println!("altered configs of topic {name}");
            }
        }
        TopicCmd::AddPartitions { name, total } => {
            let req =
                CreatePartitionsRequest::default().with_timeout_ms(ADMIN_TIMEOUT_MS).with_topics(vec![CreatePartitionsTopic::default()
                    .with_name(TopicName(s(&name)))
                    .with_count(total)
                    .with_assignments(None)]);
            let (r, _) = send_controller_bound(&mut client, &req, 3).await?;
            for x in &r.results {
                CliError::check(x.error_code, || format!("add partitions to {name}"), x.error_message.as_deref())?;
            }
            if json {
                json_line(&json!({"topic": name, "partitions": total, "error": null}));
            } else {
                println!("topic {name} now has {total} partitions");
            }
        }
    }
    Ok(0)
}

/// Admin requests any broker forwards to the controller; a busy controller answers
/// NOT_CONTROLLER or a timeout, which another try fixes.
async fn send_controller_bound<R: kafka_protocol::protocol::Request>(
    client: &mut Client,
    req: &R,
    cap: i16,
) -> Result<(R::Response, i16), CliError> {
    client.send_any(req, cap).await
}

/// The topic's own configs (set on the topic, not inherited), or the `keys` asked for.
pub async fn topic_configs(
    client: &mut Client,
    names: &[String],
    keys: Option<&[&str]>,
) -> Result<Vec<(String, Vec<(String, Option<String>)>)>, CliError> {
    describe_configs(client, TOPIC_RESOURCE, names, keys).await
}

/// Broker `id`'s values of `keys`, wherever they are set (DescribeConfigs of a BROKER resource).
pub async fn broker_configs(client: &mut Client, id: &str, keys: &[&str]) -> Result<Vec<(String, Option<String>)>, CliError> {
    let mut all = describe_configs(client, BROKER_RESOURCE, &[id.to_string()], Some(keys)).await?;
    Ok(all.pop().map(|(_, cs)| cs).unwrap_or_default())
}

/// DescribeConfigs of `names` (of `resource_type`): the `keys` asked for, else those set on
/// the resource itself.
async fn describe_configs(
    client: &mut Client,
    resource_type: i8,
    names: &[String],
    keys: Option<&[&str]>,
) -> Result<Vec<(String, Vec<(String, Option<String>)>)>, CliError> {
    let req = DescribeConfigsRequest::default().with_resources(
        names
            .iter()
            .map(|n| {
                DescribeConfigsResource::default()
                    .with_resource_type(resource_type)
                    .with_resource_name(s(n))
                    .with_configuration_keys(keys.map(|ks| ks.iter().map(|k| s(k)).collect()))
            })
            .collect(),
    );
    let (r, _) = client.send_any(&req, 4).await?;
    let mut out = Vec::new();
    for res in r.results {
        let name = res.resource_name.to_string();
        CliError::check(
            res.error_code,
            || format!("describe configs of {} {name}", if resource_type == BROKER_RESOURCE { "broker" } else { "topic" }),
            res.error_message.as_deref(),
        )?;
        let own = keys.is_some();
        out.push((
            name,
            res.configs
                .into_iter()
                .filter(|c| own || c.config_source == DYNAMIC_TOPIC_CONFIG)
                .map(|c| (c.name.to_string(), if c.is_sensitive { None } else { c.value.map(|v| v.to_string()) }))
                .collect(),
        ));
    }
    Ok(out)
}

/// A topic's description as JSON (the shape `--format json` prints).
pub async fn describe(client: &mut Client, name: &str) -> Result<Value, CliError> {
    let t = client.topic(name).await?;
    // An offline partition (no leader) has no high watermark to ask for: it shows null, as
    // kafka-topics shows "Leader: none", rather than failing the whole description.
    let parts: Vec<i32> = t.partitions.iter().filter(|p| p.leader >= 0).map(|p| p.partition).collect();
    let hw = offsets::list(client, name, &parts, offsets::LATEST).await?;
    let configs = topic_configs(client, &[name.to_string()], None).await?;
    let configs: serde_json::Map<String, Value> =
        configs.into_iter().flat_map(|(_, cs)| cs).map(|(k, v)| (k, v.map_or(Value::Null, Value::String))).collect();
    let partitions: Vec<Value> = t
        .partitions
        .iter()
        .map(|p| {
            json!({"partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch, "replicas": p.replicas,
                   "isr": p.isr, "offline_replicas": p.offline_replicas, "high_watermark": hw.get(&p.partition)})
        })
        .collect();
    Ok(json!({"topic": t.name, "topic_id": t.topic_id, "is_internal": t.is_internal, "partition_count": t.partitions.len(),
              "replication_factor": t.partitions.first().map_or(0, |p| p.replicas.len()), "configs": configs, "partitions": partitions}))
}

fn print_describe(d: &Value) {
    println!("NAME        {}", d["topic"].as_str().unwrap_or(""));
    println!("TOPIC ID    {}", d["topic_id"].as_str().unwrap_or(""));
    println!("PARTITIONS  {}", d["partition_count"]);
    println!("REPLICAS    {}", d["replication_factor"]);
    if let Some(cs) = d["configs"].as_object().filter(|c| !c.is_empty()) {
        println!(
            "CONFIGS     {}",
            cs.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("(sensitive)"))).collect::<Vec<_>>().join(" ")
        );
    }
    println!();
    let num =
        |v: &Value| v.as_array().map(|a| a.iter().filter_map(|x| x.as_i64()).map(|x| x as i32).collect::<Vec<_>>()).unwrap_or_default();
    let rows = d["partitions"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    vec![
                        p["partition"].to_string(),
                        p["leader"].to_string(),
                        p["leader_epoch"].to_string(),
                        ids(&num(&p["replicas"])),
                        ids(&num(&p["isr"])),
                        ids(&num(&p["offline_replicas"])),
                        p["high_watermark"].to_string(),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    print!("{}", table(&["PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "HIGH-WATERMARK"], rows));
}
