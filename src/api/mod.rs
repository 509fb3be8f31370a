//! Request dispatch: header parsing, version checks, decoding, and the table of
//! handlers from which ApiVersions is built.

mod acls;
mod admin;
mod api_versions;
mod authz;
mod brokers;
mod configs;
mod consumer_groups;
mod coordinator;
mod describe_topic_partitions;
mod features;
mod fetch;
mod groups;
mod leaders;
mod list_config_resources;
mod list_offsets;
mod log_dirs;
mod metadata;
mod offsets;
mod produce;
mod quorum;
mod quotas;
mod raft_voters;
mod reassign;
mod request_quota;
pub use request_quota::{timed, SentTime};
mod response_errors;
mod sasl;
mod scram;
mod share_fetch;
mod share_groups;
mod share_offsets;
mod share_state;
mod telemetry;
mod streams_groups;
mod tokens;
mod txn;

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable};

pub use crate::auth::Principal;
use crate::broker::Broker;
use crate::config::listeners::SecurityProtocol;

/// Why a connection has to close instead of answering.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("malformed request: {0}")]
    Malformed(String),
    #[error("unsupported api key {key} version {version}")]
    Unsupported { key: i16, version: i16 },
    #[error("could not encode the response: {0}")]
    Encode(String),
}

/// A piece of a response frame: encoded bytes, or a range of a segment file that the
/// connection sends without copying it.
pub enum Chunk {
    Bytes(Bytes),
    File(crate::log::FileSlice),
}

impl Chunk {
    pub fn len(&self) -> usize {
        match self {
            Chunk::Bytes(b) => b.len(),
            Chunk::File(f) => f.len,
        }
    }
}

/// What a connection is: the listener it came in on, how it is secured, and who is on it.
/// One per connection (shared by a listener's plain connections), fixed once the
/// connection's handshake is over.
#[derive(Debug, Clone)]
pub struct Session {
    /// Upper case, as in `listeners`: Metadata answers with the brokers' addresses on it.
    pub listener: Arc<str>,
    pub security_protocol: SecurityProtocol,
    /// `User:<name>`: from the client certificate on SSL, else `User:ANONYMOUS`.
    pub principal: Arc<str>,
    /// Logged in with a delegation token: such a connection may not manage tokens.
    pub token_authenticated: bool,
    /// The client software's name and version, as its ApiVersions v3+ request named them.
    pub client_software: Option<(Arc<str>, Arc<str>)>,
}

impl Session {
    /// An unauthenticated connection on `listener`.
    pub fn anonymous(listener: &str, security_protocol: SecurityProtocol) -> Session {
        Session {
            listener: listener.into(),
            security_protocol,
            principal: crate::transport::principal::ANONYMOUS.into(),
            token_authenticated: false,
            client_software: None,
        }
    }
}

/// The client software name and version an ApiVersions v3+ frame names (KIP-511).
pub fn client_software(frame: &Bytes) -> Option<(Arc<str>, Arc<str>)> {
    if frame.len() < 4 || i16::from_be_bytes([frame[0], frame[1]]) != ApiKey::ApiVersions as i16 {
        return None;
    }
    let mut p = parse_frame(frame.clone()).ok()?.ok()?;
    if p.version < 3 {
        return None;
    }
    let req = ApiVersionsRequest::decode(&mut p.body, p.version).ok()?;
    Some((Arc::from(&*req.client_software_name), Arc::from(&*req.client_software_version)))
}

/// What every handler gets besides its request.
pub struct Ctx<'a> {
    pub broker: &'a Arc<Broker>,
    pub version: i16,
    pub client_id: String,
    /// The peer, as `/ip` the way Kafka shows client hosts.
    pub client_host: String,
    /// Who the connection authenticated as (`User:ANONYMOUS` without authentication);
    /// ACLs are checked against it, other brokers' links included.
    pub principal: Principal,
    /// `principal` as `Type:name`, the form ACLs and `super.users` name it in.
    principal_id: Arc<str>,
    /// The peer's bare IP address, as ACL hosts name it.
    pub host: String,
    /// The listener the request came in on.
    pub listener: Arc<str>,
    pub security_protocol: SecurityProtocol,
    /// The connection logged in with a delegation token.
    pub token_authenticated: bool,
    /// The client software's name and version (KIP-511), once it said.
    pub client_software: Option<(Arc<str>, Arc<str>)>,
    /// How long the client is to be throttled for this request (client quotas), in ms.
    throttle_ms: std::sync::atomic::AtomicI32,
    /// The request quota the handling time was recorded against, if one governs the client.
    request_quota: std::sync::OnceLock<crate::quota::resolve::Governing>,
}

impl<'a> Ctx<'a> {
    /// The context of one request from `peer` on a connection of `session`.
    pub fn new(broker: &'a Arc<Broker>, session: &Session, version: i16, client_id: String, peer: std::net::IpAddr) -> Ctx<'a> {
        // Session principals are made by this broker (TLS mapping, SASL) as `Type:name`, so
        // the session's string is already the form ACLs name it in.
        let (principal, principal_id) = match Principal::parse(&session.principal) {
            Ok(p) => (p, session.principal.clone()),
            Err(_) => (Principal::anonymous(), Arc::from(crate::transport::principal::ANONYMOUS)),
        };
        Ctx {
            broker,
            version,
            client_id,
            client_host: format!("/{peer}"),
            principal,
            principal_id,
            host: peer.to_string(),
            listener: session.listener.clone(),
            security_protocol: session.security_protocol,
            token_authenticated: session.token_authenticated,
            client_software: session.client_software.clone(),
            throttle_ms: std::sync::atomic::AtomicI32::new(0),
            request_quota: std::sync::OnceLock::new(),
        }
    }

    /// Throttles the client for at least `ms` after this request (KIP-219).
    pub fn throttle(&self, ms: i32) {
        self.throttle_ms.fetch_max(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// The throttle time this request earned so far, in ms.
    pub fn throttle_ms(&self) -> i32 {
        self.throttle_ms.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The answer to this request: `frame`, and the throttle the handler decided on.
    fn reply(&self, api: ApiKey, frame: Option<Vec<Chunk>>) -> Reply {
        let throttle_ms = self.throttle_ms();
        // Clients before KIP-219 (Produce v6, Fetch v8) do not wait by themselves: Kafka
        // holds their response for the throttle time instead.
        let kip219 = match api {
            ApiKey::Produce => self.version >= 6,
            ApiKey::Fetch => self.version >= 8,
            _ => true,
        };
        Reply { frame, throttle_ms, delay_response: throttle_ms > 0 && !kip219, request_quota: self.request_quota() }
    }
}

/// A request's answer as the connection sends it.
pub struct Reply {
    /// The response frame; None when the request wants no answer (acks=0).
    pub frame: Option<Vec<Chunk>>,
    /// How long the connection reads no further request (the client's quota throttle).
    pub throttle_ms: i32,
    /// The response itself waits out the throttle (clients that predate KIP-219).
    pub delay_response: bool,
    /// The client's request quota, which the time spent sending the answer counts against.
    pub request_quota: Option<SentTime>,
}

impl Reply {
    /// An answer with no throttle.
    pub fn now(frame: Option<Vec<Chunk>>) -> Reply {
        Reply { frame, throttle_ms: 0, delay_response: false, request_quota: None }
    }
}

macro_rules! apis {
    ($( $key:ident : $req:ty => $handler:path [$min:literal, $max:literal] $mode:ident; )*) => {
        /// Every API this broker serves, with the versions it fully honours.
        pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[ $( (ApiKey::$key, $min, $max), )* ];

        async fn dispatch(ctx: &Ctx<'_>, key: ApiKey, buf: &mut Bytes) -> Result<Option<(BytesMut, i16)>, ConnError> {
            let version = ctx.version;
            match key {
                $( ApiKey::$key => {
                    let decoding = std::time::Instant::now();
                    let req = <$req>::decode(buf, version).map_err(|e| ConnError::Malformed(format!("{key:?} v{version}: {e}")))?;
                    let decode_ns = decoding.elapsed().as_nanos() as u64;
                    let (resp, handle_ns) = request_quota::timed(async { apis!(@call $mode $handler, ctx, req) }).await;
                    ctx.record_request_time(key, decode_ns + handle_ns);
                    match resp {
                        None => Ok(None),
                        Some(mut r) => {
                            request_quota::Throttled::throttle_at_least(&mut r, ctx.throttle_ms());
                            response_errors::count(key, &r);
                            let mut out = BytesMut::new();
                            r.encode(&mut out, version).map_err(|e| ConnError::Encode(format!("{key:?} v{version}: {e}")))?;
                            Ok(Some((out, key.response_header_version(version))))
                        }
                    }
                } )*
                _ => Err(ConnError::Unsupported { key: key as i16, version }),
            }
        }

        /// Decodes a request body without acting on it (for fuzzing the decoders).
        pub fn decode_body(key: ApiKey, version: i16, buf: &mut Bytes) -> Result<(), ConnError> {
            match key {
                $( ApiKey::$key => <$req>::decode(buf, version).map(|_| ()).map_err(|e| ConnError::Malformed(e.to_string())), )*
                _ => Err(ConnError::Unsupported { key: key as i16, version }),
            }
        }
    };
    (@call always $handler:path, $ctx:expr, $req:expr) => { Some($handler($ctx, $req).await) };
    (@call maybe $handler:path, $ctx:expr, $req:expr) => { $handler($ctx, $req).await };
}

apis! {
    Produce: ProduceRequest => produce::handle [3, 13] maybe;
    Fetch: FetchRequest => fetch::handle [4, 18] always;
    ListOffsets: ListOffsetsRequest => list_offsets::handle [1, 11] always;
    Metadata: MetadataRequest => metadata::handle [0, 13] always;
    OffsetCommit: OffsetCommitRequest => offsets::offset_commit [2, 10] always;
    OffsetFetch: OffsetFetchRequest => offsets::offset_fetch [1, 10] always;
    FindCoordinator: FindCoordinatorRequest => coordinator::find_coordinator [0, 6] always;
    JoinGroup: JoinGroupRequest => groups::join_group [0, 9] always;
    Heartbeat: HeartbeatRequest => groups::heartbeat [0, 4] always;
    LeaveGroup: LeaveGroupRequest => groups::leave_group [0, 5] always;
    SyncGroup: SyncGroupRequest => groups::sync_group [0, 5] always;
    DescribeGroups: DescribeGroupsRequest => groups::describe_groups [0, 6] always;
    ListGroups: ListGroupsRequest => groups::list_groups [0, 5] always;
    ApiVersions: ApiVersionsRequest => api_versions::handle [0, 5] always;
    CreateTopics: CreateTopicsRequest => admin::create_topics [2, 7] always;
    DeleteTopics: DeleteTopicsRequest => admin::delete_topics [1, 6] always;
    DeleteRecords: DeleteRecordsRequest => admin::delete_records [0, 2] always;
    InitProducerId: InitProducerIdRequest => coordinator::init_producer_id [0, 5] always;
    AddPartitionsToTxn: AddPartitionsToTxnRequest => txn::add_partitions [0, 5] always;
    AddOffsetsToTxn: AddOffsetsToTxnRequest => txn::add_offsets [0, 4] always;
    EndTxn: EndTxnRequest => txn::end_txn [0, 5] always;
    WriteTxnMarkers: WriteTxnMarkersRequest => txn::write_txn_markers [1, 2] always;
    TxnOffsetCommit: TxnOffsetCommitRequest => txn::txn_offset_commit [0, 6] always;
    DescribeConfigs: DescribeConfigsRequest => configs::describe_configs [1, 4] always;
    AlterConfigs: AlterConfigsRequest => configs::alter_configs [0, 2] always;
    CreatePartitions: CreatePartitionsRequest => admin::create_partitions [0, 3] always;
    DeleteGroups: DeleteGroupsRequest => groups::delete_groups [0, 3] always;
    IncrementalAlterConfigs: IncrementalAlterConfigsRequest => configs::incremental_alter_configs [0, 1] always;
    OffsetDelete: OffsetDeleteRequest => offsets::offset_delete [0, 0] always;
    DescribeCluster: DescribeClusterRequest => metadata::describe_cluster [0, 2] always;
    DescribeProducers: DescribeProducersRequest => txn::describe_producers [0, 0] always;
    DescribeTransactions: DescribeTransactionsRequest => txn::describe_transactions [0, 0] always;
    ListTransactions: ListTransactionsRequest => txn::list_transactions [0, 2] always;
    ConsumerGroupHeartbeat: ConsumerGroupHeartbeatRequest => consumer_groups::heartbeat [0, 1] always;
    ConsumerGroupDescribe: ConsumerGroupDescribeRequest => consumer_groups::describe [0, 1] always;
    OffsetForLeaderEpoch: OffsetForLeaderEpochRequest => leaders::offset_for_leader_epoch [2, 4] always;
    ElectLeaders: ElectLeadersRequest => leaders::elect_leaders [0, 2] always;
    DescribeQuorum: DescribeQuorumRequest => quorum::describe_quorum [0, 2] always;
    UnregisterBroker: UnregisterBrokerRequest => brokers::unregister_broker [0, 0] always;
    UnregisterController: UnregisterControllerRequest => brokers::unregister_controller [0, 0] always;
    AddRaftVoter: AddRaftVoterRequest => raft_voters::add_raft_voter [0, 1] always;
    RemoveRaftVoter: RemoveRaftVoterRequest => raft_voters::remove_raft_voter [0, 0] always;
    DescribeAcls: DescribeAclsRequest => acls::describe [1, 3] always;
    CreateAcls: CreateAclsRequest => acls::create [1, 3] always;
    DeleteAcls: DeleteAclsRequest => acls::delete [1, 3] always;
    AlterPartitionReassignments: AlterPartitionReassignmentsRequest => reassign::alter [0, 1] always;
    ListPartitionReassignments: ListPartitionReassignmentsRequest => reassign::list [0, 0] always;
    SaslHandshake: SaslHandshakeRequest => sasl::handshake [0, 1] always;
    SaslAuthenticate: SaslAuthenticateRequest => sasl::authenticate [0, 2] always;
    DescribeUserScramCredentials: DescribeUserScramCredentialsRequest => scram::describe [0, 0] always;
    AlterUserScramCredentials: AlterUserScramCredentialsRequest => scram::alter [0, 0] always;
    DescribeClientQuotas: DescribeClientQuotasRequest => quotas::describe [0, 1] always;
    AlterClientQuotas: AlterClientQuotasRequest => quotas::alter [0, 1] always;
    CreateDelegationToken: CreateDelegationTokenRequest => tokens::create [1, 3] always;
    RenewDelegationToken: RenewDelegationTokenRequest => tokens::renew [1, 2] always;
    ExpireDelegationToken: ExpireDelegationTokenRequest => tokens::expire [1, 2] always;
    DescribeDelegationToken: DescribeDelegationTokenRequest => tokens::describe [1, 3] always;
    UpdateFeatures: UpdateFeaturesRequest => features::update_features [0, 2] always;
    AlterReplicaLogDirs: AlterReplicaLogDirsRequest => log_dirs::alter [1, 2] always;
    DescribeLogDirs: DescribeLogDirsRequest => log_dirs::describe [1, 5] always;
    DescribeTopicPartitions: DescribeTopicPartitionsRequest => describe_topic_partitions::handle [0, 0] always;
    ListConfigResources: ListConfigResourcesRequest => list_config_resources::handle [0, 1] always;
    GetTelemetrySubscriptions: GetTelemetrySubscriptionsRequest => telemetry::get_subscriptions [0, 0] always;
    PushTelemetry: PushTelemetryRequest => telemetry::push [0, 0] always;
    ShareGroupHeartbeat: ShareGroupHeartbeatRequest => share_groups::heartbeat [1, 1] always;
    ShareGroupDescribe: ShareGroupDescribeRequest => share_groups::describe [1, 1] always;
    ShareFetch: ShareFetchRequest => share_fetch::share_fetch [1, 2] always;
    ShareAcknowledge: ShareAcknowledgeRequest => share_fetch::share_acknowledge [1, 2] always;
    InitializeShareGroupState: InitializeShareGroupStateRequest => share_state::initialize [0, 0] always;
    ReadShareGroupState: ReadShareGroupStateRequest => share_state::read_state [0, 0] always;
    WriteShareGroupState: WriteShareGroupStateRequest => share_state::write_state [0, 1] always;
    DeleteShareGroupState: DeleteShareGroupStateRequest => share_state::delete_state [0, 0] always;
    ReadShareGroupStateSummary: ReadShareGroupStateSummaryRequest => share_state::read_summary [0, 1] always;
    DescribeShareGroupOffsets: DescribeShareGroupOffsetsRequest => share_offsets::describe [0, 1] always;
    AlterShareGroupOffsets: AlterShareGroupOffsetsRequest => share_offsets::alter [0, 0] always;
    DeleteShareGroupOffsets: DeleteShareGroupOffsetsRequest => share_offsets::delete [0, 0] always;
    StreamsGroupHeartbeat: StreamsGroupHeartbeatRequest => streams_groups::heartbeat [0, 1] always;
    StreamsGroupDescribe: StreamsGroupDescribeRequest => streams_groups::describe [0, 1] always;
    StreamsGroupTopologyDescriptionUpdate: StreamsGroupTopologyDescriptionUpdateRequest => streams_groups::topology_description_update [0, 0] always;
}

/// The versions of `key` this broker serves.
pub fn supported(key: i16) -> Option<(i16, i16)> {
    SUPPORTED.iter().find(|(k, _, _)| *k as i16 == key).map(|&(_, a, b)| (a, b))
}

/// The parts of a request frame once its header has been read.
pub struct Parsed {
    pub api: ApiKey,
    pub version: i16,
    pub correlation_id: i32,
    pub client_id: String,
    /// The body, after the header.
    pub body: Bytes,
}

/// Reads and checks a request header. `Ok(Err(frame))` is a ready answer: ApiVersions
/// at a version we don't know gets v0 with UNSUPPORTED_VERSION.
pub fn parse_frame(mut frame: Bytes) -> Result<Result<Parsed, BytesMut>, ConnError> {
    // The crate's header decoder panics on short input, so the fixed part is read here.
    if frame.len() < 8 {
        return Err(ConnError::Malformed(format!("request of {} bytes has no room for a header", frame.len())));
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let Some((min, max)) = supported(key) else {
        return Err(ConnError::Unsupported { key, version });
    };
    if version < min || version > max {
        if key == ApiKey::ApiVersions as i16 {
            // Answer in v0 so any client can read which versions exist.
            return Ok(Err(api_versions::unsupported_version_frame(correlation_id)));
        }
        return Err(ConnError::Unsupported { key, version });
    }
    let api = ApiKey::try_from(key).map_err(|_| ConnError::Unsupported { key, version })?;
    let header =
        RequestHeader::decode(&mut frame, api.request_header_version(version)).map_err(|e| ConnError::Malformed(format!("header: {e}")))?;
    let client_id = header.client_id.map(|c| c.to_string()).unwrap_or_default();
    Ok(Ok(Parsed { api, version, correlation_id, client_id, body: frame }))
}

/// Handles one request frame (without its length prefix). Returns the response frame
/// (with its length prefix; none when the request wants no answer, acks=0) and the
/// client's quota throttle.
pub async fn handle(broker: &Arc<Broker>, session: &Session, peer: std::net::IpAddr, frame: Bytes) -> Result<Reply, ConnError> {
    let mut req = match parse_frame(frame)? {
        Ok(p) => p,
        Err(ready) => return Ok(Reply::now(Some(vec![Chunk::Bytes(ready.freeze())]))),
    };
    let ctx = Ctx::new(broker, session, req.version, std::mem::take(&mut req.client_id), peer);
    if req.api == ApiKey::Fetch {
        // Fetch has its own encoder so records go from file to socket untouched.
        let fetch =
            FetchRequest::decode(&mut req.body, req.version).map_err(|e| ConnError::Malformed(format!("Fetch v{}: {e}", req.version)))?;
        let frame = fetch::handle_frame(&ctx, fetch, req.correlation_id).await;
        return Ok(ctx.reply(ApiKey::Fetch, Some(frame)));
    }
    let frame = match dispatch(&ctx, req.api, &mut req.body).await? {
        Some((body, resp_header_version)) => framed(req.correlation_id, resp_header_version, &body)?,
        None => None,
    };
    Ok(ctx.reply(req.api, frame))
}

/// A response frame: length prefix, response header, body.
fn framed(correlation_id: i32, resp_header_version: i16, body: &[u8]) -> Result<Option<Vec<Chunk>>, ConnError> {
    let mut out = BytesMut::with_capacity(body.len() + 16);
    out.put_i32(0);
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    header.encode(&mut out, resp_header_version).map_err(|e| ConnError::Encode(e.to_string()))?;
    out.extend_from_slice(body);
    let len = (out.len() - 4) as i32;
    out[0..4].copy_from_slice(&len.to_be_bytes());
    Ok(Some(vec![Chunk::Bytes(out.freeze())]))
}

/// The partitions a Produce request writes, named by topic id (Produce v13+) or name.
#[derive(Debug, PartialEq, Eq)]
pub struct ProduceTargets {
    pub(crate) by_id: bool,
    pub(crate) partitions: Vec<(String, i32)>,
}

impl ProduceTargets {
    /// True when the two requests write no partition in common (requests that name topics
    /// differently are not compared: they count as overlapping).
    pub fn disjoint(&self, other: &ProduceTargets) -> bool {
        self.by_id == other.by_id && !self.partitions.iter().any(|p| other.partitions.contains(p))
    }
}

/// A Produce request decoded ahead of its turn (see [`decode_produce`]).
pub struct DecodedProduce {
    parsed: Parsed,
    req: ProduceRequest,
    /// The frame's size, which a producer's byte-rate quota counts (as Kafka counts it).
    size: usize,
    /// The time decoding it took, in ns (counted against the request quota).
    decode_ns: u64,
}

/// A Produce frame decoded, with the partitions it writes; None for any other frame, or
/// one that does not decode ([`handle`] deals with those, and with their errors).
pub fn decode_produce(frame: &Bytes) -> Option<(ProduceTargets, DecodedProduce)> {
    if frame.len() < 2 || i16::from_be_bytes([frame[0], frame[1]]) != ApiKey::Produce as i16 {
        return None;
    }
    let decoding = std::time::Instant::now();
    let mut parsed = parse_frame(frame.clone()).ok()?.ok()?;
    let req = ProduceRequest::decode(&mut parsed.body, parsed.version).ok()?;
    let decode_ns = decoding.elapsed().as_nanos() as u64;
    let by_id = parsed.version >= 13;
    let partitions = req
        .topic_data
        .iter()
        .flat_map(|t| {
            let topic = if by_id { t.topic_id.to_string() } else { t.name.0.to_string() };
            t.partition_data.iter().map(move |pd| (topic.clone(), pd.index))
        })
        .collect();
    Some((ProduceTargets { by_id, partitions }, DecodedProduce { parsed, req, size: frame.len(), decode_ns }))
}

/// [`handle`] for a Produce request already decoded.
pub async fn handle_produce(
    broker: &Arc<Broker>,
    session: &Session,
    peer: std::net::IpAddr,
    d: DecodedProduce,
) -> Result<Reply, ConnError> {
    let DecodedProduce { parsed, req, size, decode_ns } = d;
    let version = parsed.version;
    let ctx = Ctx::new(broker, session, version, parsed.client_id, peer);
    let (resp, handle_ns) = request_quota::timed(produce::handle(&ctx, req)).await;
    // As Kafka: the request quota's throttle and the byte rate's, whichever is longer.
    ctx.record_request_time(ApiKey::Produce, decode_ns + handle_ns);
    // Kafka records a produce against the quota once it is appended, acks=0 included.
    if let Some(gov) = ctx.quota(crate::quota::ThrottleKind::Produce) {
        ctx.record_quota(crate::quota::ThrottleKind::Produce, &gov, size);
    }
    let Some(mut resp) = resp else {
        return Ok(ctx.reply(ApiKey::Produce, None));
    };
    resp.throttle_time_ms = ctx.throttle_ms();
    let mut body = BytesMut::new();
    resp.encode(&mut body, version).map_err(|e| ConnError::Encode(format!("Produce v{version}: {e}")))?;
    let frame = framed(parsed.correlation_id, ApiKey::Produce.response_header_version(version), &body)?;
    Ok(ctx.reply(ApiKey::Produce, frame))
}

/// Decodes a whole frame the way [`handle`] would, without acting on it.
pub fn decode_frame(frame: Bytes) -> Result<(), ConnError> {
    match parse_frame(frame)? {
        Ok(mut p) => decode_body(p.api, p.version, &mut p.body),
        Err(_) => Ok(()),
    }
}

/// Kafka's string type in the crate, from a Rust string.
pub(crate) fn sb(s: impl Into<String>) -> kafka_protocol::protocol::StrBytes {
    kafka_protocol::protocol::StrBytes::from_string(s.into())
}
