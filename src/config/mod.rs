//! Broker and topic configuration, keyed by Kafka's own property names.
//!
//! Every key Sluice knows is in [`KEYS`] (group configs' bounds in [`group::BROKER_KEYS`]). Topic keys name the broker key they fall
//! back to, so DescribeConfigs can report sources and synonyms the way Kafka does.

pub mod env;
pub mod listeners;
pub mod properties;
mod settings;

pub use settings::{Secret, Settings, STANDARD_AUTHORIZER};

use std::collections::BTreeMap;
use std::net::IpAddr;

/// The type of a config value, as DescribeConfigs reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Long = 5,
    Double = 6,
    List = 7,
}

/// One known configuration key.
#[derive(Debug)]
pub struct KeyDef {
    pub name: &'static str,
    pub default: Option<&'static str>,
    pub kind: ConfigType,
    /// For a topic key: the broker key that supplies its default.
    pub broker_synonym: Option<&'static str>,
    /// Is this a topic-level key?
    pub topic: bool,
    /// Can it be changed at run time (AlterConfigs on the broker)?
    pub dynamic: bool,
    pub doc: &'static str,
}

macro_rules! key {
    ($name:literal, $default:expr, $kind:ident, broker, $dynamic:literal, $doc:literal) => {
        KeyDef { name: $name, default: $default, kind: ConfigType::$kind, broker_synonym: None, topic: false, dynamic: $dynamic, doc: $doc }
    };
    ($name:literal, $kind:ident, topic($syn:literal), $doc:literal) => {
        KeyDef { name: $name, default: None, kind: ConfigType::$kind, broker_synonym: Some($syn), topic: true, dynamic: true, doc: $doc }
    };
    ($name:literal, $default:expr, $kind:ident, topic, $doc:literal) => {
        KeyDef { name: $name, default: $default, kind: ConfigType::$kind, broker_synonym: None, topic: true, dynamic: true, doc: $doc }
    };
}

pub mod group;

/// Every key Sluice accepts (with [`group::BROKER_KEYS`]). Defaults are Kafka's.
pub static KEYS: &[KeyDef] = &[
    key!("node.id", Some("1"), Int, broker, false, "This broker's id."),
    key!("broker.id", Some("1"), Int, broker, false, "Alias of node.id."),
    key!("listeners", Some("PLAINTEXT://127.0.0.1:9092"), List, broker, false, "Where the broker listens."),
    key!("advertised.listeners", None, List, broker, false, "The address clients are told to use."),
    key!("log.dirs", Some("./data"), String, broker, false, "The log dirs, a comma list: new partitions go to the one holding the fewest; the first also holds the metadata log."),
    key!("log.dir", Some("./data"), String, broker, false, "The log dir when log.dirs is not set."),
    key!("process.roles", Some("broker,controller"), List, broker, false, "broker, controller, or both (combined mode)."),
    key!("controller.quorum.voters", Some(""), List, broker, false, "The quorum a new metadata log starts with: id@host:port of every voter (then the log's voter set, KIP-853). Empty: this node alone."),
    key!("controller.listener.names", Some("CONTROLLER"), List, broker, false, "The listener names (in listeners) controllers use."),
    key!(
        "listener.security.protocol.map",
        Some(listeners::DEFAULT_PROTOCOL_MAP),
        String,
        broker,
        false,
        "NAME:PROTOCOL for every listener name (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)."
    ),
    key!("inter.broker.listener.name", None, String, broker, false, "The listener brokers use to reach each other."),
    key!("security.inter.broker.protocol", Some("PLAINTEXT"), String, broker, false, "The inter-broker listener by protocol name."),
    key!("ssl.keystore.type", Some("JKS"), String, broker, false, "PEM or PKCS12 (JKS is refused; a PKCS12 file under JKS is read)."),
    key!("ssl.keystore.location", None, String, broker, false, "The keystore file: PKCS12, or PEM with key and chain."),
    key!("ssl.keystore.password", None, String, broker, false, "The PKCS12 keystore's password."),
    key!("ssl.key.password", None, String, broker, false, "The password of the private key (an encrypted PEM key, or in PKCS12)."),
    key!("ssl.keystore.key", None, String, broker, false, "Inline PEM private key (ssl.keystore.type=PEM)."),
    key!("ssl.keystore.certificate.chain", None, String, broker, false, "Inline PEM certificate chain (ssl.keystore.type=PEM)."),
    key!("ssl.truststore.type", Some("JKS"), String, broker, false, "PEM or PKCS12 (JKS is refused; a PKCS12 file under JKS is read)."),
    key!("ssl.truststore.location", None, String, broker, false, "The truststore file."),
    key!("ssl.truststore.password", None, String, broker, false, "The PKCS12 truststore's password."),
    key!("ssl.truststore.certificates", None, String, broker, false, "Inline PEM trusted certificates (ssl.truststore.type=PEM)."),
    key!("ssl.client.auth", Some("none"), String, broker, false, "none, requested or required: client certificates on SSL listeners."),
    key!(
        "ssl.principal.mapping.rules",
        Some("DEFAULT"),
        String,
        broker,
        false,
        "RULE:pattern/replacement/[LU] rules from certificate DN to user name."
    ),
    key!("ssl.enabled.protocols", Some("TLSv1.2,TLSv1.3"), List, broker, false, "TLS versions offered."),
    key!("ssl.protocol", Some("TLSv1.3"), String, broker, false, "The TLS protocol of the SSL context (TLSv1.2 or TLSv1.3)."),
    key!("ssl.cipher.suites", Some(""), List, broker, false, "Cipher suites offered (empty: rustls' defaults); IANA names."),
    key!(
        "ssl.endpoint.identification.algorithm",
        Some("https"),
        String,
        broker,
        false,
        "https: check the peer's certificate names the host dialled (inter-broker TLS); empty: do not."
    ),
    key!(
        "sasl.enabled.mechanisms",
        Some("GSSAPI"),
        List,
        broker,
        false,
        "SASL mechanisms a SASL listener offers (this build serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)."
    ),
    key!(
        "connections.max.reauth.ms",
        Some("0"),
        Long,
        broker,
        false,
        "A SASL session's lifetime before the client must re-authenticate (KIP-368); 0: never."
    ),
    key!(
        "sasl.mechanism.inter.broker.protocol",
        Some("GSSAPI"),
        String,
        broker,
        false,
        "The SASL mechanism brokers log in to each other with on a SASL inter-broker listener (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)."
    ),
    key!(
        "sasl.mechanism.controller.protocol",
        Some("GSSAPI"),
        String,
        broker,
        false,
        "The SASL mechanism nodes log in to a SASL controller listener with (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)."
    ),
    key!(
        "sasl.server.callback.handler.class",
        None,
        String,
        broker,
        false,
        "Set per listener and mechanism (listener.name.<l>.oauthbearer.sasl.server.callback.handler.class): unset for unsecured OAUTHBEARER tokens, org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler for signed ones."
    ),
    key!("sasl.oauthbearer.jwks.endpoint.url", None, String, broker, false, "The JWKS (https:, http: or file: URL) signed OAUTHBEARER tokens are checked against."),
    key!("sasl.oauthbearer.jwks.endpoint.refresh.ms", Some("3600000"), Long, broker, false, "How often an http(s) JWKS is fetched again."),
    key!("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Some("100"), Long, broker, false, "The first wait before retrying a failed JWKS fetch."),
    key!("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Some("10000"), Long, broker, false, "The longest wait between JWKS fetch retries."),
    key!("sasl.oauthbearer.expected.audience", None, List, broker, false, "Audiences a signed token's aud must name one of; unset: the token must have no aud."),
    key!("sasl.oauthbearer.expected.issuer", None, String, broker, false, "The iss a signed token must have; unset: any."),
    key!("sasl.oauthbearer.sub.claim.name", Some("sub"), String, broker, false, "The claim of a signed token that names its principal."),
    key!("sasl.oauthbearer.scope.claim.name", Some("scope"), String, broker, false, "The claim of a signed token that holds its scope."),
    key!("sasl.oauthbearer.clock.skew.seconds", Some("30"), Int, broker, false, "Clock difference allowed when checking a signed token's exp and nbf."),
    key!(
        "org.apache.kafka.sasl.oauthbearer.allowed.urls",
        Some(""),
        List,
        broker,
        false,
        "The JWKS URLs the broker may read (a JVM system property in Kafka); none by default."
    ),
    key!(
        "sasl.server.max.receive.size",
        Some("524288"),
        Int,
        broker,
        false,
        "The largest frame a connection may send before it is authenticated."
    ),
    key!(
        "sasl.kerberos.min.time.before.relogin",
        Some("60000"),
        Long,
        broker,
        true,
        "Kafka's GSSAPI login thread's sleep between refresh attempts; kept and described, as this build serves no GSSAPI."
    ),
    key!(
        "delegation.token.secret.key",
        None,
        String,
        broker,
        false,
        "The secret every node signs delegation tokens with (HmacSHA512); unset: tokens are off (DELEGATION_TOKEN_AUTH_DISABLED)."
    ),
    key!(
        "delegation.token.master.key",
        None,
        String,
        broker,
        false,
        "Deprecated alias of delegation.token.secret.key, read when that is unset (as Kafka reads it)."
    ),
    key!("delegation.token.max.lifetime.ms", Some("604800000"), Long, broker, false, "A token cannot be renewed past this age."),
    key!("delegation.token.expiry.time.ms", Some("86400000"), Long, broker, false, "How long a token lives unless renewed."),
    key!(
        "delegation.token.expiry.check.interval.ms",
        Some("3600000"),
        Long,
        broker,
        false,
        "How often the controller removes expired delegation tokens."
    ),
    key!("controller.quorum.request.timeout.ms", Some("30000"), Int, broker, false, "How long a metadata change may take."),
    key!("broker.heartbeat.interval.ms", Some("2000"), Int, broker, false, "How often a broker heartbeats to the controller."),
    key!("broker.session.timeout.ms", Some("9000"), Int, broker, false, "Silence after which the controller fences a broker."),
    key!(
        "metadata.max.idle.interval.ms",
        Some("500"),
        Int,
        broker,
        false,
        "How often the active controller writes a no-op batch to an otherwise idle metadata log (0: never)."
    ),
    key!("broker.rack", None, String, broker, false, "This broker's rack, for rack-aware placement."),
    key!(
        "replica.selector.class",
        None,
        String,
        broker,
        false,
        "org.apache.kafka.common.replica.RackAwareReplicaSelector: consumers read from a follower in their rack."
    ),
    key!("auto.leader.rebalance.enable", Some("true"), Boolean, broker, false, "Move leadership back to preferred replicas."),
    key!("leader.imbalance.per.broker.percentage", Some("10"), Int, broker, false, "Imbalance that triggers a preferred election."),
    key!("leader.imbalance.check.interval.seconds", Some("300"), Long, broker, false, "How often leader imbalance is checked."),
    key!("replica.lag.time.max.ms", Some("30000"), Long, broker, false, "Lag after which a follower leaves the ISR."),
    key!(
        "max.incremental.fetch.session.cache.slots",
        Some("1000"),
        Int,
        broker,
        false,
        "Most incremental fetch sessions (KIP-227) a broker keeps."
    ),
    key!(
        "min.incremental.fetch.session.eviction.ms",
        Some("120000"),
        Int,
        broker,
        false,
        "Least time before a fetch session may be evicted for a new one."
    ),
    key!("replica.fetch.wait.max.ms", Some("500"), Int, broker, false, "Longest wait of a follower's fetch."),
    key!("replica.fetch.max.bytes", Some("1048576"), Int, broker, false, "Bytes a follower fetches per partition."),
    key!("metrics.listener", Some(""), String, broker, false, "HOST:PORT serving metrics as text (Sluice's own key; empty: off)."),
    key!(
        "http.listener",
        None,
        String,
        broker,
        false,
        "HOST:PORT of the HTTP listener: /metrics and the JSON API under /v1/ (Sluice's own key; unset: metrics.listener, its older name)."
    ),
    key!(
        "fault.injection.enable",
        Some("false"),
        Boolean,
        broker,
        false,
        "Allow faults to be injected on this node through the HTTP listener's /v1/faults (Sluice's own key; faults never survive a restart)."
    ),
    key!(
        "dev.control.socket",
        Some(""),
        String,
        broker,
        false,
        "The control socket of the sluice dev-cluster that started this node (Sluice's own key, set by dev-cluster): with fault.injection.enable, /v1/nodes kills, pauses, resumes and restarts its nodes; empty: off."
    ),
    key!("log.format", Some("text"), String, broker, false, "Log lines as text for people, or json: one JSON object per line (Sluice's own key)."),
    key!("num.partitions", Some("1"), Int, broker, false, "Partitions of an auto-created topic."),
    key!("default.replication.factor", Some("1"), Int, broker, false, "Replication factor of an auto-created topic."),
    key!("auto.create.topics.enable", Some("true"), Boolean, broker, false, "Create unknown topics on Metadata or Produce."),
    key!("delete.topic.enable", Some("true"), Boolean, broker, false, "Allow DeleteTopics."),
    key!("socket.request.max.bytes", Some("104857600"), Int, broker, false, "Largest request frame accepted."),
    key!("socket.send.buffer.bytes", Some("102400"), Int, broker, false, "SO_SNDBUF of client connections; -1: the OS default."),
    key!("socket.receive.buffer.bytes", Some("102400"), Int, broker, false, "SO_RCVBUF of client connections; -1: the OS default."),
    key!("max.request.partition.size.limit", Some("2000"), Int, broker, false, "Most partitions in one DescribeTopicPartitions answer."),
    key!(
        "max.connections",
        Some("2147483647"),
        Int,
        broker,
        false,
        "Most client connections open at once; at the limit the broker accepts no more until one closes."
    ),
    key!(
        "max.connections.per.ip",
        Some("2147483647"),
        Int,
        broker,
        false,
        "Most connections from one address; more are closed right after accept. 0 only with overrides."
    ),
    key!(
        "max.connections.per.ip.overrides",
        Some(""),
        String,
        broker,
        false,
        "Per-address limits over max.connections.per.ip: host:count,host:count (e.g. 127.0.0.1:200)."
    ),
    key!("quota.window.num", Some("11"), Int, broker, false, "Samples a client quota's rate is measured over."),
    key!("quota.window.size.seconds", Some("1"), Int, broker, false, "Length of one client quota sample, in seconds."),
    key!("controller.quota.window.num", Some("11"), Int, broker, false, "Samples of the controller mutation quota (its burst is num - 1 windows)."),
    key!("controller.quota.window.size.seconds", Some("1"), Int, broker, false, "Length of one controller mutation quota sample, in seconds."),
    key!(
        "authorizer.class.name",
        Some(""),
        String,
        broker,
        false,
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer turns ACLs on; empty: every request is allowed."
    ),
    key!("super.users", Some(""), String, broker, false, "Principals allowed everything, separated by semicolons (User:admin;User:ops)."),
    key!("allow.everyone.if.no.acl.found", Some("false"), Boolean, broker, false, "Allow access to a resource that has no ACL at all."),
    key!("message.max.bytes", Some("1048588"), Int, broker, true, "Largest record batch accepted."),
    key!("log.segment.bytes", Some("1073741824"), Int, broker, true, "Segment size before a roll."),
    key!("log.roll.ms", None, Long, broker, true, "Segment age before a roll (log.roll.hours if unset)."),
    key!("log.roll.hours", Some("168"), Int, broker, false, "Segment age before a roll, in hours."),
    key!("log.retention.ms", None, Long, broker, true, "Age after which segments are deleted (log.retention.minutes/hours if unset)."),
    key!("log.retention.minutes", None, Int, broker, false, "Retention in minutes."),
    key!("log.retention.hours", Some("168"), Int, broker, false, "Retention in hours."),
    key!("log.retention.bytes", Some("-1"), Long, broker, true, "Size above which old segments are deleted."),
    key!("log.retention.check.interval.ms", Some("300000"), Long, broker, false, "How often retention runs."),
    key!("log.cleanup.policy", Some("delete"), List, broker, true, "delete, compact, or both."),
    key!("log.index.interval.bytes", Some("4096"), Int, broker, true, "Bytes between offset index entries."),
    key!("log.index.size.max.bytes", Some("10485760"), Int, broker, true, "Largest offset index."),
    key!("log.message.timestamp.type", Some("CreateTime"), String, broker, true, "CreateTime or LogAppendTime."),
    key!(
        "log.message.timestamp.before.max.ms",
        Some("9223372036854775807"),
        Long,
        broker,
        true,
        "How far in the past a CreateTime may be."
    ),
    key!("log.message.timestamp.after.max.ms", Some("3600000"), Long, broker, true, "How far in the future a CreateTime may be."),
    key!("log.flush.interval.messages", Some("9223372036854775807"), Long, broker, true, "Messages between fsyncs."),
    key!("log.flush.interval.ms", None, Long, broker, true, "Milliseconds between fsyncs."),
    key!("log.flush.scheduler.interval.ms", Some("9223372036854775807"), Long, broker, false, "How often the flusher checks."),
    key!("log.cleaner.delete.retention.ms", Some("86400000"), Long, broker, true, "How long tombstones are kept."),
    key!("log.cleaner.min.compaction.lag.ms", Some("0"), Long, broker, true, "Minimum age before compaction."),
    key!("log.cleaner.max.compaction.lag.ms", Some("9223372036854775807"), Long, broker, true, "Maximum age before compaction."),
    key!("log.cleaner.min.cleanable.ratio", Some("0.5"), Double, broker, true, "Dirty ratio that triggers compaction."),
    key!("log.cleaner.backoff.ms", Some("15000"), Long, broker, false, "Pause between compaction passes."),
    key!("log.segment.delete.delay.ms", Some("60000"), Long, broker, true, "Delay before a deleted segment's files go."),
    key!("log.preallocate", Some("false"), Boolean, broker, true, "Preallocate segment files."),
    key!("compression.type", Some("producer"), String, broker, true, "Compression of stored batches."),
    key!("min.insync.replicas", Some("1"), Int, broker, true, "ISR size needed for acks=all."),
    key!("unclean.leader.election.enable", Some("false"), Boolean, broker, true, "Allow out-of-sync leaders."),
    key!("offsets.topic.num.partitions", Some("50"), Int, broker, false, "Partitions of __consumer_offsets."),
    key!("offsets.topic.replication.factor", Some("3"), Int, broker, false, "Replication factor of __consumer_offsets."),
    key!("transaction.max.timeout.ms", Some("900000"), Int, broker, false, "Longest transaction.timeout.ms a producer may ask for."),
    key!("transaction.state.log.num.partitions", Some("50"), Int, broker, false, "Partitions of __transaction_state."),
    key!("transaction.state.log.replication.factor", Some("3"), Int, broker, false, "Replication factor of __transaction_state."),
    key!("transaction.state.log.min.isr", Some("2"), Int, broker, false, "min.insync.replicas of __transaction_state (at most its replication factor)."),
    key!("share.coordinator.state.topic.num.partitions", Some("50"), Int, broker, false, "Partitions of __share_group_state."),
    key!("share.coordinator.state.topic.replication.factor", Some("3"), Int, broker, false, "Replication factor of __share_group_state (at most the live brokers)."),
    key!("share.coordinator.state.topic.min.isr", Some("2"), Int, broker, false, "min.insync.replicas of __share_group_state (at most its replication factor)."),
    key!("share.coordinator.snapshot.update.records.per.snapshot", Some("500"), Int, broker, false, "ShareUpdate records of a share partition between two ShareSnapshots (0-500)."),
    key!("group.initial.rebalance.delay.ms", Some("3000"), Int, broker, false, "Delay of a new group's first rebalance."),
    key!("group.min.session.timeout.ms", Some("6000"), Int, broker, false, "Shortest session timeout a member may ask for."),
    key!("group.max.session.timeout.ms", Some("1800000"), Int, broker, false, "Longest session timeout a member may ask for."),
    key!("group.max.size", Some("2147483647"), Int, broker, false, "Most members a group may have."),
    key!("group.consumer.session.timeout.ms", Some("45000"), Int, broker, false, "Session timeout of consumer-protocol members."),
    key!(
        "group.consumer.heartbeat.interval.ms",
        Some("5000"),
        Int,
        broker,
        false,
        "Heartbeat interval given to consumer-protocol members."
    ),
    key!("group.consumer.assignors", Some("uniform,range"), List, broker, false, "Server-side assignors; the first is the default."),
    key!("group.consumer.max.size", Some("2147483647"), Int, broker, false, "Most members a consumer group may have."),
    key!("group.share.record.lock.duration.ms", Some("30000"), Int, broker, false, "How long a share-group member holds an acquired record."),
    key!("group.share.delivery.count.limit", Some("5"), Int, broker, false, "Deliveries of a record before it is archived."),
    key!("group.share.partition.max.record.locks", Some("2000"), Int, broker, false, "Most in-flight records of one share partition."),
    key!("group.share.heartbeat.interval.ms", Some("5000"), Int, broker, false, "Heartbeat interval given to share-group members."),
    key!("group.share.session.timeout.ms", Some("45000"), Int, broker, false, "Session timeout of share-group members."),
    key!("group.share.max.size", Some("200"), Int, broker, false, "Most members a share group may have."),
    key!("telemetry.max.bytes", Some("1048576"), Int, broker, false, "Largest client telemetry push accepted (KIP-714)."),
    key!("group.share.max.share.sessions", Some("2000"), Int, broker, false, "Most share sessions a broker keeps."),
    key!("offsets.retention.minutes", Some("10080"), Int, broker, false, "How long committed offsets of an empty group are kept."),
    key!("offsets.retention.check.interval.ms", Some("600000"), Long, broker, false, "How often expired offsets are removed."),
    key!("cleanup.policy", List, topic("log.cleanup.policy"), "delete, compact, or both."),
    key!("compression.type", String, topic("compression.type"), "Compression of stored batches."),
    key!("delete.retention.ms", Long, topic("log.cleaner.delete.retention.ms"), "How long tombstones are kept."),
    key!("file.delete.delay.ms", Long, topic("log.segment.delete.delay.ms"), "Delay before a deleted segment's files go."),
    key!("flush.messages", Long, topic("log.flush.interval.messages"), "Messages between fsyncs."),
    key!("flush.ms", Long, topic("log.flush.interval.ms"), "Milliseconds between fsyncs."),
    key!("index.interval.bytes", Int, topic("log.index.interval.bytes"), "Bytes between offset index entries."),
    key!("max.compaction.lag.ms", Long, topic("log.cleaner.max.compaction.lag.ms"), "Maximum age before compaction."),
    key!("max.message.bytes", Int, topic("message.max.bytes"), "Largest record batch accepted."),
    key!("message.timestamp.type", String, topic("log.message.timestamp.type"), "CreateTime or LogAppendTime."),
    key!("message.timestamp.before.max.ms", Long, topic("log.message.timestamp.before.max.ms"), "How far in the past a CreateTime may be."),
    key!("message.timestamp.after.max.ms", Long, topic("log.message.timestamp.after.max.ms"), "How far in the future a CreateTime may be."),
    key!("min.cleanable.dirty.ratio", Double, topic("log.cleaner.min.cleanable.ratio"), "Dirty ratio that triggers compaction."),
    key!("min.compaction.lag.ms", Long, topic("log.cleaner.min.compaction.lag.ms"), "Minimum age before compaction."),
    key!("min.insync.replicas", Int, topic("min.insync.replicas"), "ISR size needed for acks=all."),
    key!("preallocate", Boolean, topic("log.preallocate"), "Preallocate segment files."),
    key!("retention.bytes", Long, topic("log.retention.bytes"), "Size above which old segments are deleted."),
    key!("retention.ms", Long, topic("log.retention.ms"), "Age after which segments are deleted."),
    key!("segment.bytes", Int, topic("log.segment.bytes"), "Segment size before a roll."),
    key!("segment.index.bytes", Int, topic("log.index.size.max.bytes"), "Largest offset index."),
    key!("segment.ms", Long, topic("log.roll.ms"), "Segment age before a roll."),
    key!("unclean.leader.election.enable", Boolean, topic("unclean.leader.election.enable"), "Allow out-of-sync leaders."),
];

/// Looks up a broker-level key.
pub fn broker_key(name: &str) -> Option<&'static KeyDef> {
    all_keys().find(|k| !k.topic && k.name == name)
}

/// Every key: [`KEYS`], then the group configs' broker keys.
pub fn all_keys() -> impl Iterator<Item = &'static KeyDef> {
    KEYS.iter().chain(group::BROKER_KEYS)
}

/// For `listener.name.<listener>.<key>` with a SASL key (`sasl.enabled.mechanisms`,
/// `connections.max.reauth.ms`, `<mechanism>.sasl.jaas.config`, or OAUTHBEARER's
/// `oauthbearer.sasl.oauthbearer.*` and `oauthbearer.sasl.server.callback.handler.class`):
/// the `<key>` part, without the `oauthbearer.` prefix so it can be checked as a known key.
pub fn listener_sasl_key(key: &str) -> Option<&str> {
    let (_listener, rest) = key.strip_prefix("listener.name.")?.split_once('.')?;
    let mechanisms = ["plain", "scram-sha-256", "scram-sha-512", "oauthbearer"];
    let jaas = rest.strip_suffix(".sasl.jaas.config").is_some_and(|m| mechanisms.contains(&m));
    // OAUTHBEARER's keys may carry the mechanism's prefix too, as Kafka reads them; the
    // server callback handler must.
    let oauth = rest.strip_prefix("oauthbearer.");
    if oauth.is_some_and(|k| (k == "sasl.server.callback.handler.class" || k.starts_with("sasl.oauthbearer.")) && broker_key(k).is_some()) {
        return oauth;
    }
    (jaas || rest == "sasl.enabled.mechanisms" || rest == "connections.max.reauth.ms").then_some(rest)
}

/// Looks up a topic-level key.
pub fn topic_key(name: &str) -> Option<&'static KeyDef> {
    KEYS.iter().find(|k| k.topic && k.name == name)
}

/// Checks that `value` parses as the key's type (and is in range where Kafka checks).
pub fn validate(def: &KeyDef, value: &str) -> Result<(), String> {
    let bad = || format!("invalid value '{value}' for {}", def.name);
    match def.kind {
        ConfigType::Boolean => value.parse::<bool>().map(|_| ()).map_err(|_| bad()),
        ConfigType::Int => value.trim().parse::<i32>().map(|_| ()).map_err(|_| bad()),
        ConfigType::Long => value.trim().parse::<i64>().map(|_| ()).map_err(|_| bad()),
        ConfigType::Double => value.trim().parse::<f64>().map(|_| ()).map_err(|_| bad()),
        ConfigType::String | ConfigType::List => Ok(()),
    }?;
    match def.name {
        "cleanup.policy" | "log.cleanup.policy" => {
            for p in value.split(',').map(str::trim) {
                if p != "delete" && p != "compact" {
                    return Err(bad());
                }
            }
        }
        "message.timestamp.type" | "log.message.timestamp.type" => {
            if value != "CreateTime" && value != "LogAppendTime" {
                return Err(bad());
            }
        }
        "log.format" => {
            if value != "text" && value != "json" {
                return Err(bad());
            }
        }
        "compression.type" => {
            if !["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"].contains(&value) {
                return Err(bad());
            }
        }
        "segment.bytes" | "log.segment.bytes" => {
            if value.trim().parse::<i64>().unwrap_or(0) < 14 {
                return Err(bad());
            }
        }
        "max.connections" | "max.connections.per.ip" => {
            if value.trim().parse::<i32>().map_or(true, |n| n < 0) {
                return Err(format!("{}: must be at least 0", bad()));
            }
        }
        "max.connections.per.ip.overrides" => {
            parse_ip_overrides(value)?;
        }
        "quota.window.num" | "quota.window.size.seconds" | "controller.quota.window.num" | "controller.quota.window.size.seconds" => {
            if value.trim().parse::<i32>().map_or(true, |n| n < 1) {
                return Err(format!("{}: must be at least 1", bad()));
            }
        }
        "min.insync.replicas" | "num.partitions" | "max.message.bytes" | "message.max.bytes" => {
            if value.trim().parse::<i64>().unwrap_or(0) < if def.name.starts_with("m") { 0 } else { 1 } {
                return Err(bad());
            }
        }
        _ => {}
    }
    Ok(())
}

/// Parses `host:count,host:count` (the count after the last colon, so IPv6 literals work);
/// an empty string is no overrides.
pub fn parse_ip_overrides(value: &str) -> Result<Vec<(String, u32)>, String> {
    let bad = |why: &str| format!("invalid value '{value}' for max.connections.per.ip.overrides: {why} (want host:count,host:count)");
    let mut out = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (host, n) = entry.rsplit_once(':').ok_or_else(|| bad(&format!("'{entry}' has no count")))?;
        let host = host.trim().trim_start_matches('[').trim_end_matches(']');
        let valid_name = !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_');
        if !valid_name && host.parse::<IpAddr>().is_err() {
            return Err(bad(&format!("'{host}' is not a host name or an IP address")));
        }
        let n = n
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| *n <= i32::MAX as u32)
            .ok_or_else(|| bad(&format!("'{entry}': the count must be 0..=2147483647")))?;
        out.push((host.to_string(), n));
    }
    Ok(out)
}

/// Keys whose values Kafka never shows (its PASSWORD type): passwords and inline keys.
pub fn is_sensitive(name: &str) -> bool {
    name.ends_with(".password")
        || name.ends_with("ssl.keystore.key")
        || name.ends_with("sasl.jaas.config")
        || name == "delegation.token.secret.key"
        || name == "delegation.token.master.key"
}

/// Broker-level settings: what was set (file, flags or AlterConfigs) over Kafka's defaults.
#[derive(Debug, Clone, Default)]
pub struct BrokerConfig {
    /// Keys set statically: config file and command line.
    pub static_set: BTreeMap<String, String>,
    /// Keys set at run time through AlterConfigs; these win over static ones.
    pub dynamic_set: BTreeMap<String, String>,
}

/// Where a config value came from, with DescribeConfigs' numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    DynamicTopic = 1,
    DynamicBroker = 2,
    StaticBroker = 4,
    Default = 5,
    /// A `client-metrics` resource's own value (Kafka's CLIENT_METRICS_CONFIG).
    ClientMetrics = 7,
    /// A group's own override (Kafka's GROUP_CONFIG).
    Group = 8,
}

impl BrokerConfig {
    /// Sets a static key, refusing unknown keys and bad values.
    pub fn set_static(&mut self, key: &str, value: &str) -> Result<(), String> {
        if let Some(rest) = listener_sasl_key(key) {
            // A listener's own SASL settings, in Kafka's listener.name.<listener>.<key> form.
            if let Some(def) = broker_key(rest) {
                validate(def, value)?;
            }
            self.static_set.insert(key.to_string(), value.to_string());
            return Ok(());
        }
        // `listener.name.<name>.<key>`: a per-listener value of a known key.
        let inner = listeners::split_listener_key(key).map_or(key, |(_, k)| k);
        let def = broker_key(inner).ok_or_else(|| {
            if topic_key(key).is_some() {
                format!("'{key}' is a topic config; set its broker default instead (e.g. log.{key})")
            } else {
                format!("unknown config key '{key}'")
            }
        })?;
        validate(def, value)?;
        self.static_set.insert(key.to_string(), value.to_string());
        Ok(())
    }

    /// A broker key's value and where it came from.
    pub fn lookup(&self, key: &str) -> Option<(String, Source)> {
        if let Some(v) = self.dynamic_set.get(key) {
            return Some((v.clone(), Source::DynamicBroker));
        }
        if let Some(v) = self.static_set.get(key) {
            return Some((v.clone(), Source::StaticBroker));
        }
        self.derived(key).map(|v| (v, Source::Default))
    }

    /// Kafka's defaults, some of which are computed from coarser keys.
    fn derived(&self, key: &str) -> Option<String> {
        let get = |k: &str| self.lookup(k).map(|(v, _)| v);
        let num = |k: &str| get(k).and_then(|v| v.trim().parse::<i64>().ok());
        match key {
            "log.retention.ms" => num("log.retention.minutes")
                .map(|m| m * 60_000)
                .or_else(|| num("log.retention.hours").map(|h| h * 3_600_000))
                .map(|v| v.to_string()),
            "log.roll.ms" => num("log.roll.hours").map(|h| (h * 3_600_000).to_string()),
            "advertised.listeners" => get("listeners"),
            "http.listener" => get("metrics.listener"),
            "log.dirs" => self.static_set.get("log.dir").cloned().or(Some("./data".into())),
            _ => broker_key(key).and_then(|d| d.default.map(str::to_string)),
        }
    }

    /// A broker key's value (or empty when it has none).
    pub fn get(&self, key: &str) -> String {
        self.lookup(key).map(|(v, _)| v).unwrap_or_default()
    }

    /// A numeric broker key. Values are validated when set (a bad one is a startup error
    /// or INVALID_CONFIG), so only a key this build does not know as a number can fail
    /// here: that is a bug (`tests/config_keys.rs` checks every key the code reads), and
    /// the key's own default is used.
    pub fn get_i64(&self, key: &str) -> i64 {
        let v = self.get(key);
        v.trim().parse().unwrap_or_else(|_| {
            let fallback = broker_key(key).and_then(|d| d.default).and_then(|d| d.trim().parse().ok());
            crate::invariant!(false, "config key '{key}' read as a number but is '{v}'; using {fallback:?}");
            fallback.unwrap_or(i64::MAX)
        })
    }

    /// A boolean broker key.
    pub fn get_bool(&self, key: &str) -> bool {
        self.get(key) == "true"
    }
}

/// Parses a TOML config file into flat Kafka keys. Nested tables join with dots,
/// so `[log] retention.ms = 1` and `"log.retention.ms" = 1` mean the same.
pub fn parse_toml(text: &str) -> Result<Vec<(String, String)>, String> {
    let table: toml::Table = text.parse().map_err(|e| format!("config file: {e}"))?;
    let mut out = Vec::new();
    flatten("", &toml::Value::Table(table), &mut out)?;
    Ok(out)
}

fn flatten(prefix: &str, v: &toml::Value, out: &mut Vec<(String, String)>) -> Result<(), String> {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&key, v, out)?;
            }
        }
        toml::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        toml::Value::Integer(i) => out.push((prefix.to_string(), i.to_string())),
        toml::Value::Float(f) => out.push((prefix.to_string(), f.to_string())),
        toml::Value::Boolean(b) => out.push((prefix.to_string(), b.to_string())),
        toml::Value::Array(a) => {
            let parts: Result<Vec<String>, String> = a
                .iter()
                .map(|x| match x {
                    toml::Value::String(s) => Ok(s.clone()),
                    toml::Value::Integer(i) => Ok(i.to_string()),
                    toml::Value::Float(f) => Ok(f.to_string()),
                    toml::Value::Boolean(b) => Ok(b.to_string()),
                    _ => Err(format!("{prefix}: lists may hold only plain values")),
                })
                .collect();
            out.push((prefix.to_string(), parts?.join(",")));
        }
        toml::Value::Datetime(_) => return Err(format!("{prefix}: dates are not config values")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_falls_back_to_hours() {
        let c = BrokerConfig::default();
        assert_eq!(c.get("log.retention.ms"), "604800000");
        let mut c = BrokerConfig::default();
        c.set_static("log.retention.hours", "1").unwrap();
        assert_eq!(c.get("log.retention.ms"), "3600000");
    }

    #[test]
    fn unknown_and_bad_keys_are_refused() {
        let mut c = BrokerConfig::default();
        assert!(c.set_static("no.such.key", "1").is_err());
        assert!(c.set_static("num.partitions", "x").is_err());
        assert!(c.set_static("retention.ms", "1").unwrap_err().contains("topic config"));
    }

    #[test]
    fn connection_limits_take_kafkas_defaults_and_refuse_bad_values() {
        let c = BrokerConfig::default();
        assert_eq!(c.get("max.connections"), "2147483647");
        assert_eq!(c.get("max.connections.per.ip"), "2147483647");
        assert_eq!(c.get("max.connections.per.ip.overrides"), "");
        let mut c = BrokerConfig::default();
        for (k, v) in [("max.connections", "-1"), ("max.connections.per.ip", "x"), ("max.connections.per.ip.overrides", "h")] {
            assert!(c.set_static(k, v).unwrap_err().contains(k), "{k}={v} was accepted");
        }
        c.set_static("max.connections.per.ip.overrides", "127.0.0.1:7,broker-a:2").unwrap();
        c.set_static("max.connections", "0").unwrap();
    }

    #[test]
    fn bad_override_lists_are_refused() {
        assert_eq!(parse_ip_overrides("").unwrap(), vec![]);
        assert_eq!(parse_ip_overrides("a.example:1,10.0.0.1:0").unwrap(), vec![("a.example".into(), 1), ("10.0.0.1".into(), 0)]);
        for bad in ["127.0.0.1", "127.0.0.1:", "127.0.0.1:-1", "127.0.0.1:x", ":5", "bad host:5", "h:2147483648"] {
            assert!(parse_ip_overrides(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn kerberos_relogin_is_a_dynamic_broker_key_with_kafkas_default() {
        // Kafka lets AlterConfigs change it on a broker (librdkafka's 0081_admin does).
        let def = broker_key("sasl.kerberos.min.time.before.relogin").unwrap();
        assert!(def.dynamic);
        assert_eq!(BrokerConfig::default().get("sasl.kerberos.min.time.before.relogin"), "60000");
        assert!(validate(def, "58000").is_ok());
        assert!(validate(def, "soon").is_err());
    }

    #[test]
    fn toml_tables_flatten_to_dotted_keys() {
        let kv = parse_toml("num.partitions = 3\n[log]\n\"retention.ms\" = 5\n").unwrap();
        assert!(kv.contains(&("num.partitions".into(), "3".into())));
        assert!(kv.contains(&("log.retention.ms".into(), "5".into())));
    }
}
