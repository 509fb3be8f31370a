//! Metadata and DescribeCluster: the live brokers, the topics, and whom to send
//! controller-bound requests to.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::{Operation, ResourceType};
use crate::broker::{Broker, Topic};
use crate::error::Error;
use crate::metadata::names;

/// The Metadata entry for an existing topic, for a client on `listener`.
pub(crate) fn topic_entry(broker: &Broker, t: &Topic, listener: &str, version: i16) -> MetadataResponseTopic {
    let img = broker.cluster.image();
    let ids = |v: &[i32]| v.iter().map(|b| (*b).into()).collect::<Vec<_>>();
    let partitions = t
        .states
        .iter()
        .enumerate()
        .map(|(i, st)| {
            let offline: Vec<i32> = st.replicas.iter().copied().filter(|b| !img.is_live(*b)).collect();
            // As Kafka: a live leader with no endpoint on this listener is LISTENER_NOT_FOUND
            // (v6+; LEADER_NOT_AVAILABLE before), so a misconfigured listener shows.
            let unreachable = img.live_broker(st.leader).is_some_and(|b| b.endpoint(listener).is_none());
            let error = match (st.leader < 0, unreachable) {
                (true, _) => Error::LeaderNotAvailable.code(),
                (false, true) if version >= 6 => Error::ListenerNotFound(listener.to_string()).code(),
                (false, true) => Error::LeaderNotAvailable.code(),
                _ => 0,
            };
            MetadataResponsePartition::default()
                .with_error_code(error)
                .with_partition_index(i as i32)
                .with_leader_id(st.leader.into())
                .with_leader_epoch(st.leader_epoch)
                .with_replica_nodes(ids(&st.replicas))
                .with_isr_nodes(ids(&st.isr))
                .with_offline_replicas(ids(&offline))
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(sb(t.record.name.clone()).into()))
        .with_topic_id(t.record.id)
        .with_is_internal(names::is_internal(&t.record.name))
        .with_partitions(partitions)
}

/// A live broker as (id, host, port, rack).
type LiveBroker = (i32, String, i32, Option<String>);

/// Live brokers with an endpoint on `listener`, as (id, host, port, rack) there, and the id
/// clients are told is the controller.
fn live_brokers(broker: &Broker, listener: &str) -> (Vec<LiveBroker>, i32) {
    let img = broker.cluster.image();
    let live: Vec<_> =
        img.live_brokers().iter().filter_map(|b| b.endpoint(listener).map(|(h, p)| (b.id, h.to_string(), p, b.rack.clone()))).collect();
    let controller = controller_id(broker.identity.node_id, img.is_live(broker.identity.node_id), &live);
    (live, controller)
}

/// The broker named as `controller_id` in Metadata and DescribeCluster.
///
/// Kafka in KRaft mode never shows clients the quorum leader (KIP-590): it names a random
/// live broker, and that broker forwards controller-bound requests to the active
/// controller, as `Cluster::call` does here. The quorum leader is the wrong answer while
/// it is being replaced: a client that asks during the election caches the dead node and
/// sends its admin requests there until they time out. So Sluice is stricter than Kafka:
/// the answering broker names itself when it is registered and unfenced (the client just
/// reached it); otherwise, like Kafka, a random live broker; -1 if there is none.
fn controller_id(me: i32, me_live: bool, live: &[LiveBroker]) -> i32 {
    if me_live {
        return me;
    }
    if live.is_empty() {
        return -1;
    }
    live[(uuid::Uuid::new_v4().as_u128() % live.len() as u128) as usize].0
}

fn error_entry(name: Option<String>, id: uuid::Uuid, e: &Error) -> MetadataResponseTopic {
    MetadataResponseTopic::default().with_error_code(e.code()).with_name(name.map(|n| sb(n).into())).with_topic_id(id)
}

/// May this request create `topic` (auto-creation): CREATE on the cluster or the topic.
pub(super) fn may_create(ctx: &Ctx<'_>, topic: &str) -> bool {
    ctx.cluster_allowed(Operation::Create) || ctx.topic_allowed(Operation::Create, topic)
}

/// Kafka's Metadata rules: topics the client may not DESCRIBE are left out of "all
/// topics" and answer TOPIC_AUTHORIZATION_FAILED when named; an unknown topic that would
/// be auto-created needs CREATE, or it too answers TOPIC_AUTHORIZATION_FAILED.
fn named_topic(ctx: &Ctx<'_>, name: String, allow_auto: bool) -> MetadataResponseTopic {
    let broker = ctx.broker;
    if let Err(e) = names::validate(&name) {
        return error_entry(Some(name), uuid::Uuid::nil(), &Error::InvalidTopic(e));
    }
    if !ctx.topic_allowed(Operation::Describe, &name) {
        return error_entry(Some(name.clone()), uuid::Uuid::nil(), &Error::TopicAuthorizationFailed(name));
    }
    let found = match broker.topic(&name) {
        Some(t) => Ok(t),
        None if allow_auto && broker.settings().auto_create_topics_enable && !may_create(ctx, &name) => {
            Err(Error::TopicAuthorizationFailed(name.clone()))
        }
        None if allow_auto => broker.auto_create(&name),
        None => Err(Error::UnknownTopicOrPartition),
    };
    match found {
        Ok(t) => topic_entry(broker, &t, &ctx.listener, ctx.version),
        Err(e) => error_entry(Some(name), uuid::Uuid::nil(), &e),
    }
}

pub async fn handle(ctx: &Ctx<'_>, req: MetadataRequest) -> MetadataResponse {
    let broker = ctx.broker;
    let all = match &req.topics {
        None => true,
        Some(t) => t.is_empty() && ctx.version == 0,
    };
    let allow_auto = ctx.version < 4 || req.allow_auto_topic_creation;
    let topics: Vec<MetadataResponseTopic> = if all {
        broker
            .all_topics()
            .iter()
            .filter(|t| ctx.topic_allowed(Operation::Describe, &t.record.name))
            .map(|t| topic_entry(broker, t, &ctx.listener, ctx.version))
            .collect()
    } else {
        let wanted = req.topics.unwrap_or_default();
        // A request that names any topic by id (v12+) is answered by id alone, as Kafka does:
        // the Java client sends ids with its default name "", which is no topic's name.
        let by_id = wanted.iter().any(|t| !t.topic_id.is_nil());
        wanted
            .into_iter()
            .filter(|rt| !by_id || !rt.topic_id.is_nil())
            .map(|rt| match rt.name.filter(|_| !by_id) {
                Some(name) => named_topic(ctx, name.0.to_string(), allow_auto),
                None => match broker.topic_by_id(rt.topic_id) {
                    Some(t) if !ctx.topic_allowed(Operation::Describe, &t.record.name) => {
                        error_entry(None, rt.topic_id, &Error::TopicAuthorizationFailed(String::new()))
                    }
                    Some(t) => topic_entry(broker, &t, &ctx.listener, ctx.version),
                    None => error_entry(None, rt.topic_id, &Error::UnknownTopicId),
                },
            })
            .collect()
    };
    let topics = if ctx.version >= 8 && req.include_topic_authorized_operations {
        topics
            .into_iter()
            .map(|t| match t.name.as_ref().filter(|_| t.error_code == 0) {
                Some(n) => {
                    let ops = ctx.authorized_operations(ResourceType::Topic, &n.0);
                    t.with_topic_authorized_operations(ops)
                }
                None => t,
            })
            .collect()
    } else {
        topics
    };
    let (live, controller) = live_brokers(broker, &ctx.listener);
    let brokers = live
        .into_iter()
        .map(|(id, host, port, rack)| {
            MetadataResponseBroker::default().with_node_id(id.into()).with_host(sb(host)).with_port(port).with_rack(rack.map(sb))
        })
        .collect();
    let cluster_ops = if (8..=10).contains(&ctx.version) && req.include_cluster_authorized_operations {
        ctx.authorized_operations(ResourceType::Cluster, crate::auth::acl::CLUSTER_NAME)
    } else {
        i32::MIN
    };
    MetadataResponse::default()
        .with_cluster_authorized_operations(cluster_ops)
        .with_brokers(brokers)
        .with_cluster_id(Some(sb(broker.cluster_id.clone())))
        .with_controller_id(controller.into())
        .with_topics(topics)
}

pub async fn describe_cluster(ctx: &Ctx<'_>, req: DescribeClusterRequest) -> DescribeClusterResponse {
    let resp = DescribeClusterResponse::default().with_cluster_id(sb(ctx.broker.cluster_id.clone()));
    // Kafka: DescribeCluster needs DESCRIBE on the cluster.
    if let Err(e) = ctx.check_cluster(Operation::Describe) {
        return resp.with_error_code(e.code()).with_error_message(Some(sb(e.message()))).with_controller_id((-1).into());
    }
    let resp = if req.include_cluster_authorized_operations {
        resp.with_cluster_authorized_operations(ctx.authorized_operations(ResourceType::Cluster, crate::auth::acl::CLUSTER_NAME))
    } else {
        resp
    };
    // Endpoint type 1 is brokers. Kafka describes controllers (2, KIP-919) only on a
    // controller listener, and a broker answers MISMATCHED_ENDPOINT_TYPE; Sluice's
    // controller listener is not a Kafka listener, so this is the only answer for 2.
    if ctx.version >= 1 && req.endpoint_type != 1 {
        let e = match req.endpoint_type {
            2 => Error::MismatchedEndpointType(2),
            t => Error::UnsupportedEndpointType(t),
        };
        return resp
            .with_error_code(e.code())
            .with_error_message(Some(sb("this listener only describes brokers")))
            .with_endpoint_type(req.endpoint_type)
            .with_controller_id((-1).into());
    }
    let (live, controller) = live_brokers(ctx.broker, &ctx.listener);
    let entry = |(id, host, port, rack): LiveBroker| {
        DescribeClusterBroker::default().with_broker_id(id.into()).with_host(sb(host)).with_port(port).with_rack(rack.map(sb))
    };
    // v2 (KIP-1073): fenced brokers too when asked, each marked, so an operator can see
    // registrations that are not serving (and unregister them).
    let brokers = if ctx.version >= 2 && req.include_fenced_brokers {
        let img = ctx.broker.cluster.image();
        img.brokers
            .values()
            .filter_map(|b| {
                b.endpoint(&ctx.listener).map(|(h, p)| entry((b.id, h.to_string(), p, b.rack.clone())).with_is_fenced(b.fenced))
            })
            .collect()
    } else {
        live.into_iter().map(entry).collect()
    };
    resp.with_endpoint_type(1).with_controller_id(controller.into()).with_brokers(brokers)
}
