//! `sluice group`: list, describe (members, assignment, committed offsets and lag), seek
//! (reset an inactive group's offsets, as `kafka-consumer-groups --reset-offsets` does)
//! and delete.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Buf;
use clap::{Args, Subcommand};
use kafka_protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
use kafka_protocol::messages::consumer_protocol_assignment::ConsumerProtocolAssignment;
use kafka_protocol::messages::delete_groups_request::DeleteGroupsRequest;
use kafka_protocol::messages::describe_groups_request::DescribeGroupsRequest;
use kafka_protocol::messages::list_groups_request::ListGroupsRequest;
use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequest;
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::{Decodable, StrBytes};
use serde_json::{json, Value};

use super::client::Client;
use super::output::{json_line, report_deleted, table};
use super::{offsets, props, CliError, Common};

/// `sluice group ...`.
#[derive(Args, Debug)]
pub struct GroupArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(subcommand)]
    pub cmd: GroupCmd,
}

/// The group commands.
#[derive(Subcommand, Debug)]
pub enum GroupCmd {
    /// List groups (from every broker).
    List,
    /// State, members and their assignment, committed offsets, log end offsets and lag.
    Describe { group: String },
    /// Reset an inactive group's committed offsets: --to earliest|latest|timestamp:MS|offset:N.
    Seek {
        group: String,
        #[arg(long)]
        to: String,
        /// Only this topic (default: every topic the group has offsets for).
        #[arg(long)]
        topic: Option<String>,
    },
    /// Delete groups.
    Delete {
        #[arg(required = true)]
        groups: Vec<String>,
    },
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// The group's committed offsets by (topic, partition).
pub async fn committed(client: &mut Client, group: &str) -> Result<BTreeMap<(String, i32), i64>, CliError> {
    let deadline = Client::retry_deadline();
    loop {
        let node = client.coordinator(group, 0).await?;
        let req = OffsetFetchRequest::default().with_group_id(GroupId(s(group))).with_topics(None);
        let r = client.send_to(node, &req, 7).await.and_then(|(r, _)| {
            CliError::check(r.error_code, || format!("fetch offsets of group {group}"), None)?;
            Ok(r)
        });
        match r {
            Ok(r) => {
                let mut out = BTreeMap::new();
                for t in r.topics {
                    for p in t.partitions {
                        if p.error_code == 0 && p.committed_offset >= 0 {
                            out.insert((t.name.0.to_string(), p.partition_index), p.committed_offset);
                        }
                    }
                }
                return Ok(out);
            }
            Err(e) if e.retriable() && std::time::Instant::now() < deadline => Client::backoff().await,
            Err(e) => return Err(e),
        }
    }
}

/// Commits `offsets` for `group`: as a member (its epoch and id), or with `None` as an
/// admin does (no generation, no member), which only an empty group takes.
pub async fn commit(
    client: &mut Client,
    group: &str,
    offsets: &BTreeMap<(String, i32), i64>,
    member: Option<(i32, &str)>,
) -> Result<(), CliError> {
    if offsets.is_empty() {
        return Ok(());
    }
    let mut by_topic: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
    for ((t, p), o) in offsets {
        by_topic.entry(t).or_default().push(OffsetCommitRequestPartition::default().with_partition_index(*p).with_committed_offset(*o));
    }
    let (epoch, member_id) = member.unwrap_or((-1, ""));
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(epoch)
        .with_member_id(s(member_id))
        .with_topics(
            by_topic
                .into_iter()
                .map(|(t, ps)| OffsetCommitRequestTopic::default().with_name(TopicName(s(t))).with_partitions(ps))
                .collect(),
        );
    let deadline = Client::retry_deadline();
    loop {
        let node = client.coordinator(group, 0).await?;
        // v9 carries a member epoch, which a KIP-848 group checks.
        let r = client.send_to(node, &req, 9).await.and_then(|(r, _)| {
            for t in &r.topics {
                for p in &t.partitions {
                    CliError::check(p.error_code, || format!("commit {}/{} for group {group}", t.name.0, p.partition_index), None)?;
                }
            }
            Ok(())
        });
        match r {
            Err(e) if e.retriable() && std::time::Instant::now() < deadline => Client::backoff().await,
            r => return r,
        }
    }
}

/// A group as either protocol describes it.
struct Described {
    state: String,
    protocol_type: String,
    protocol: String,
    members: Vec<MemberInfo>,
}

struct MemberInfo {
    member_id: String,
    instance_id: Option<String>,
    client_id: String,
    host: String,
    assignment: Vec<(String, Vec<i32>)>,
}

/// Kafka's GROUP_ID_NOT_FOUND, which DescribeGroups answers for a KIP-848 group.
const GROUP_ID_NOT_FOUND: i16 = 69;

async fn describe_group(client: &mut Client, group: &str) -> Result<(i32, Described), CliError> {
    let deadline = Client::retry_deadline();
    loop {
        let node = client.coordinator(group, 0).await?;
        let req = DescribeGroupsRequest::default().with_groups(vec![GroupId(s(group))]);
        // v6: a KIP-848 group answers GROUP_ID_NOT_FOUND there (Kafka says Dead to v5 and older).
        let r = client
            .send_to(node, &req, 6)
            .await
            .and_then(|(r, _)| r.groups.into_iter().next().ok_or_else(|| CliError::Protocol("DescribeGroups answered no group".into())));
        let kip848 = client.node(node).await?.supports::<ConsumerGroupDescribeRequest>();
        let r = match r {
            Ok(g) if g.error_code == GROUP_ID_NOT_FOUND && kip848 => consumer_group(client, node, group).await,
            Ok(g) => CliError::check(g.error_code, || format!("describe group {group}"), g.error_message.as_deref()).map(|_| {
                let consumer = g.protocol_type.as_str() == "consumer";
                Described {
                    state: g.group_state.to_string(),
                    protocol_type: g.protocol_type.to_string(),
                    protocol: g.protocol_data.to_string(),
                    members: g
                        .members
                        .iter()
                        .map(|m| MemberInfo {
                            member_id: m.member_id.to_string(),
                            instance_id: m.group_instance_id.as_ref().map(|i| i.to_string()),
                            client_id: m.client_id.to_string(),
                            host: m.client_host.to_string(),
                            assignment: if consumer { assignment(&m.member_assignment) } else { Vec::new() },
                        })
                        .collect(),
                }
            }),
            Err(e) => Err(e),
        };
        match r {
            Ok(g) => return Ok((node, g)),
            Err(e) if e.retriable() && std::time::Instant::now() < deadline => Client::backoff().await,
            Err(e) => return Err(e),
        }
    }
}

/// A KIP-848 group, by ConsumerGroupDescribe.
async fn consumer_group(client: &mut Client, node: i32, group: &str) -> Result<Described, CliError> {
    let req = ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(s(group))]);
    let (r, _) = client.send_to(node, &req, 1).await?;
    let g = r.groups.into_iter().next().ok_or_else(|| CliError::Protocol("ConsumerGroupDescribe answered no group".into()))?;
    CliError::check(g.error_code, || format!("describe group {group}"), g.error_message.as_deref())?;
    Ok(Described {
        state: g.group_state.to_string(),
        protocol_type: "consumer".into(),
        protocol: g.assignor_name.to_string(),
        members: g
            .members
            .iter()
            .map(|m| MemberInfo {
                member_id: m.member_id.to_string(),
                instance_id: m.instance_id.as_ref().map(|i| i.to_string()),
                client_id: m.client_id.to_string(),
                host: m.client_host.to_string(),
                assignment: m.assignment.topic_partitions.iter().map(|tp| (tp.topic_name.0.to_string(), tp.partitions.clone())).collect(),
            })
            .collect(),
    })
}

/// A member's assignment (ConsumerProtocolAssignment: a version, then the body).
fn assignment(bytes: &bytes::Bytes) -> Vec<(String, Vec<i32>)> {
    let mut b = bytes.clone();
    if b.remaining() < 2 {
        return Vec::new();
    }
    let version = b.get_i16().clamp(0, 3);
    match ConsumerProtocolAssignment::decode(&mut b, version) {
        Ok(a) => a.assigned_partitions.into_iter().map(|tp| (tp.topic.0.to_string(), tp.partitions)).collect(),
        Err(_) => Vec::new(),
    }
}

/// A group's description as JSON.
pub async fn describe(client: &mut Client, group: &str) -> Result<Value, CliError> {
    let (coordinator, g) = describe_group(client, group).await?;
    let committed = committed(client, group).await?;
    let topics: BTreeSet<String> = committed.keys().map(|(t, _)| t.clone()).collect();
    let mut ends = BTreeMap::new();
    for t in &topics {
        let ps: Vec<i32> = committed.keys().filter(|(x, _)| x == t).map(|(_, p)| *p).collect();
        for (p, o) in offsets::list(client, t, &ps, offsets::LATEST).await? {
            ends.insert((t.clone(), p), o);
        }
    }
    let mut owner = BTreeMap::new();
    let members: Vec<Value> = g
        .members
        .iter()
        .map(|m| {
            for (t, ps) in &m.assignment {
                for p in ps {
                    owner.insert((t.clone(), *p), m.member_id.clone());
                }
            }
            let a: Vec<Value> = m.assignment.iter().map(|(t, ps)| json!({"topic": t, "partitions": ps})).collect();
            json!({"member_id": m.member_id, "group_instance_id": m.instance_id, "client_id": m.client_id, "host": m.host, "assignment": a})
        })
        .collect();
    let offsets: Vec<Value> = committed
        .iter()
        .map(|((t, p), c)| {
            let end = ends.get(&(t.clone(), *p)).copied();
            json!({"topic": t, "partition": p, "committed_offset": c, "log_end_offset": end,
                   "lag": end.map(|e| (e - c).max(0)), "member_id": owner.get(&(t.clone(), *p))})
        })
        .collect();
    let lag: i64 = offsets.iter().filter_map(|o| o["lag"].as_i64()).sum();
    Ok(json!({"group": group, "state": g.state, "protocol_type": g.protocol_type,
              "protocol": g.protocol, "coordinator": coordinator, "members": members,
              "offsets": offsets, "total_lag": lag}))
}

/// The offsets `--to` asks for, per (topic, partition).
async fn seek_targets(
    client: &mut Client,
    partitions: &BTreeMap<String, Vec<i32>>,
    to: &str,
) -> Result<BTreeMap<(String, i32), i64>, CliError> {
    let spec = match to {
        "earliest" => Some(offsets::EARLIEST),
        "latest" => Some(offsets::LATEST),
        other => match other.split_once(':') {
            Some(("timestamp", ms)) => Some(ms.parse::<i64>().map_err(|_| CliError::Usage(format!("--to {other}: bad timestamp")))?),
            Some(("offset", _)) => None,
            _ => return Err(CliError::Usage(format!("--to {other}: use earliest, latest, timestamp:MS or offset:N"))),
        },
    };
    let mut out = BTreeMap::new();
    for (t, ps) in partitions {
        match spec {
            Some(spec) => {
                let found = offsets::list(client, t, ps, spec).await?;
                // A timestamp past the last record: the end, as Kafka's tool resets to.
                let ends =
                    if found.values().any(|o| *o < 0) { offsets::list(client, t, ps, offsets::LATEST).await? } else { BTreeMap::new() };
                for (p, o) in found {
                    out.insert((t.clone(), p), if o < 0 { ends.get(&p).copied().unwrap_or(0) } else { o });
                }
            }
            None => {
                let n: i64 = to[7..].parse().map_err(|_| CliError::Usage(format!("--to {to}: bad offset")))?;
                for p in ps {
                    out.insert((t.clone(), *p), n);
                }
            }
        }
    }
    Ok(out)
}

/// Runs a group command.
pub async fn run(a: GroupArgs) -> Result<i32, CliError> {
    let mut client = Client::connect(props::settings(&a.common)?).await?;
    let json = a.common.json();
    match a.cmd {
        GroupCmd::List => {
            let v = client.metadata(Some(super::client::NO_TOPICS)).await?;
            let mut groups = BTreeMap::new();
            for b in &v.brokers {
                let (r, _) = client.send_to(b.node_id, &ListGroupsRequest::default(), 5).await?;
                CliError::check(r.error_code, || format!("list groups on broker {}", b.node_id), None)?;
                for g in r.groups {
                    let t = if g.group_type.is_empty() { "classic".to_string() } else { g.group_type.to_string() };
                    groups.insert(g.group_id.0.to_string(), (g.group_state.to_string(), t, g.protocol_type.to_string(), b.node_id));
                }
            }
            if json {
                let list: Vec<Value> = groups
                    .iter()
                    .map(|(g, (st, ty, pt, n))| json!({"group": g, "state": st, "type": ty, "protocol_type": pt, "coordinator": n}))
                    .collect();
                json_line(&Value::Array(list));
            } else {
                let rows =
                    groups.iter().map(|(g, (st, ty, pt, n))| vec![g.clone(), st.clone(), ty.clone(), pt.clone(), n.to_string()]).collect();
                print!("{}", table(&["GROUP", "STATE", "TYPE", "PROTOCOL-TYPE", "COORDINATOR"], rows));
            }
        }
        GroupCmd::Describe { group } => {
            let d = describe(&mut client, &group).await?;
            if json {
                json_line(&d);
            } else {
                print_describe(&d);
            }
        }
        GroupCmd::Seek { group, to, topic } => {
            let (_, g) = describe_group(&mut client, &group).await?;
            let state = g.state.clone();
            if !matches!(state.as_str(), "Empty" | "Dead") {
                // What kafka-consumer-groups refuses with, under Kafka's error name.
                return Err(CliError::Kafka {
                    code: 68,
                    context: format!("seek group {group}"),
                    message: Some(format!(
                        "offsets can only be reset if the group '{group}' is inactive, but the current state is {state}"
                    )),
                });
            }
            let mut partitions: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            match &topic {
                Some(t) => {
                    let info = client.topic(t).await?;
                    partitions.insert(t.clone(), info.partitions.iter().map(|p| p.partition).collect());
                }
                None => {
                    for (t, p) in committed(&mut client, &group).await?.into_keys() {
                        partitions.entry(t).or_default().push(p);
                    }
                }
            }
            if partitions.is_empty() {
                return Err(CliError::Usage(format!("group {group} has no committed offsets: name the topic with --topic")));
            }
            let targets = seek_targets(&mut client, &partitions, &to).await?;
            commit(&mut client, &group, &targets, None).await?;
            if json {
                let list: Vec<Value> = targets.iter().map(|((t, p), o)| json!({"topic": t, "partition": p, "offset": o})).collect();
                json_line(&json!({"group": group, "offsets": list}));
            } else {
                let rows = targets.iter().map(|((t, p), o)| vec![t.clone(), p.to_string(), o.to_string()]).collect();
                print!("{}", table(&["TOPIC", "PARTITION", "NEW-OFFSET"], rows));
            }
        }
        GroupCmd::Delete { groups } => {
            let mut results = Vec::new();
            for g in &groups {
                let node = client.coordinator(g, 0).await?;
                let (r, _) = client.send_to(node, &DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s(g))]), 2).await?;
                for x in r.results {
                    results.push((g.clone(), CliError::check(x.error_code, || format!("delete group {g}"), None).err()));
                }
            }
            report_deleted("group", results, json)?;
        }
    }
    Ok(0)
}

fn print_describe(d: &Value) {
    println!("GROUP        {}", d["group"].as_str().unwrap_or(""));
    println!("COORDINATOR  {}", d["coordinator"]);
    println!("STATE        {}", d["state"].as_str().unwrap_or(""));
    println!("PROTOCOL     {}", d["protocol"].as_str().unwrap_or(""));
    println!("MEMBERS      {}", d["members"].as_array().map_or(0, |m| m.len()));
    println!("TOTAL-LAG    {}", d["total_lag"]);
    println!();
    let members: BTreeMap<String, (String, String)> = d["members"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                m["member_id"].as_str().unwrap_or("").to_string(),
                (m["client_id"].as_str().unwrap_or("").to_string(), m["host"].as_str().unwrap_or("").to_string()),
            )
        })
        .collect();
    let opt = |v: &Value| if v.is_null() { "-".to_string() } else { v.to_string() };
    let rows = d["offsets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            let m = o["member_id"].as_str().unwrap_or("");
            let (client, host) = members.get(m).cloned().unwrap_or_default();
            vec![
                o["topic"].as_str().unwrap_or("").to_string(),
                o["partition"].to_string(),
                o["committed_offset"].to_string(),
                opt(&o["log_end_offset"]),
                opt(&o["lag"]),
                if m.is_empty() { "-".into() } else { m.to_string() },
                if host.is_empty() { "-".into() } else { host },
                if client.is_empty() { "-".into() } else { client },
            ]
        })
        .collect();
    print!("{}", table(&["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "HOST", "CLIENT-ID"], rows));
}
