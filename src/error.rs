//! Typed broker errors and their one mapping to Kafka error codes.

use kafka_protocol::error::ResponseError;

/// A failure that a client sees as a Kafka error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum Error {
    #[error("offset {0} is out of range")]
    OffsetOutOfRange(i64),
    #[error("record batch is corrupt: {0}")]
    CorruptMessage(String),
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    #[error("unknown topic id")]
    UnknownTopicId,
    #[error("this node is not the cluster or node the client expected: rebootstrap")]
    RebootstrapRequired,
    #[error("batch of {size} bytes is larger than max.message.bytes {max}")]
    MessageTooLarge { size: usize, max: usize },
    #[error("invalid topic: {0}")]
    InvalidTopic(String),
    #[error("topic already exists: {0}")]
    TopicAlreadyExists(String),
    #[error("invalid partitions: {0}")]
    InvalidPartitions(String),
    #[error("invalid replication factor: {0}")]
    InvalidReplicationFactor(String),
    #[error("invalid replica assignment: {0}")]
    InvalidReplicaAssignment(String),
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    #[error("{message}")]
    InvalidRecords { indexes: Vec<i32>, message: String },
    #[error("invalid required acks {0}")]
    InvalidRequiredAcks(i16),
    #[error("not enough in-sync replicas")]
    NotEnoughReplicas,
    #[error("sequence {got} is out of order, expected {expected}")]
    OutOfOrderSequence { got: i32, expected: i32 },
    #[error("producer epoch {got} is older than {current}")]
    InvalidProducerEpoch { got: i16, current: i16 },
    #[error("invalid timestamp: {0}")]
    InvalidTimestamp(String),
    #[error("leader epoch {0} is older than the current one")]
    FencedLeaderEpoch(i32),
    #[error("leader epoch {0} is newer than the current one")]
    UnknownLeaderEpoch(i32),
    #[error("fetch session {0} not found")]
    FetchSessionIdNotFound(i32),
    #[error("fetch session epoch {got} is not the expected {expected}")]
    InvalidFetchSessionEpoch { got: i32, expected: i32 },
    #[error("fetch session {0} was opened with the other kind of topic reference (ids on v13+, names before)")]
    FetchSessionTopicIdError(i32),
    #[error("unsupported endpoint type {0}")]
    UnsupportedEndpointType(i8),
    #[error("endpoint type {0} is not served on this listener")]
    MismatchedEndpointType(i8),
    #[error("illegal generation {0}")]
    IllegalGeneration(i32),
    #[error("inconsistent group protocol")]
    InconsistentGroupProtocol,
    #[error("invalid group id")]
    InvalidGroupId,
    #[error("unknown member id {0}")]
    UnknownMemberId(String),
    #[error("session timeout {0} ms is outside the broker's allowed range")]
    InvalidSessionTimeout(i32),
    #[error("the group is rebalancing")]
    RebalanceInProgress,
    #[error("a member id is required; rejoin with the one given")]
    MemberIdRequired,
    #[error("static member {0} was fenced by a newer instance")]
    FencedInstanceId(String),
    #[error("group {0} does not exist")]
    GroupIdNotFound(String),
    #[error("group {0} is not empty")]
    NonEmptyGroup(String),
    #[error("the group is subscribed to the topic")]
    GroupSubscribedToTopic,
    #[error("offset metadata is too large")]
    OffsetMetadataTooLarge,
    #[error("the group has reached its maximum size")]
    GroupMaxSizeReached,
    #[error("member epoch {got} is fenced: the coordinator has {current}")]
    FencedMemberEpoch { got: i32, current: i32 },
    #[error("member epoch {0} is stale")]
    StaleMemberEpoch(i32),
    #[error("instance id {0} is still owned by another member")]
    UnreleasedInstanceId(String),
    #[error("unsupported assignor {0}")]
    UnsupportedAssignor(String),
    #[error("invalid regular expression: {0}")]
    InvalidRegularExpression(String),
    #[error("{0}")]
    StreamsInvalidTopology(String),
    #[error("{0}")]
    StreamsInvalidTopologyEpoch(String),

    #[error("invalid transaction state: {0}")]
    InvalidTxnState(String),
    #[error("the producer id is not the one mapped to this transactional id")]
    InvalidProducerIdMapping,
    #[error("transaction timeout {0} ms is larger than transaction.max.timeout.ms")]
    InvalidTransactionTimeout(i32),
    #[error("another transaction operation is in progress")]
    ConcurrentTransactions,
    #[error("producer epoch {0} has been fenced by a newer producer")]
    ProducerFenced(i16),
    #[error("transactional id {0} not found")]
    TransactionalIdNotFound(String),
    #[error("offsets are pending in an open transaction")]
    UnstableOffsetCommit,
    #[error("not attempted because another part of the request failed")]
    OperationNotAttempted,
    #[error("coordinator not available")]
    CoordinatorNotAvailable,
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("{0}")]
    TelemetryTooLarge(String),
    #[error("{0}")]
    UnknownSubscriptionId(String),
    #[error("{0}")]
    ThrottlingQuotaExceeded(String),
    #[error("{0}")]
    UnsupportedCompressionType(String),
    #[error("{0}")]
    ResourceNotFound(String),
    #[error("storage error: {0}")]
    Storage(String),
    #[error("{0}")]
    LogDirNotFound(String),
    #[error("the replica is not on this broker")]
    ReplicaNotAvailable,
    #[error("policy violation: {0}")]
    PolicyViolation(String),
    #[error("this node is not the active controller")]
    NotController,
    #[error("timed out: {0}")]
    RequestTimedOut(String),
    #[error("{0}")]
    DuplicateVoter(String),
    #[error("{0}")]
    VoterNotFound(String),
    #[error("this broker is not the leader of the partition")]
    NotLeaderOrFollower,
    #[error("the partition has no leader right now")]
    LeaderNotAvailable,
    #[error("the leader has no endpoint on listener {0}")]
    ListenerNotFound(String),
    #[error("the record was written but the ISR shrank below min.insync.replicas")]
    NotEnoughReplicasAfterAppend,
    #[error("broker not available: {0}")]
    BrokerNotAvailable(String),
    #[error("stale broker epoch")]
    StaleBrokerEpoch,
    #[error("broker {0} is not registered")]
    BrokerIdNotRegistered(i32),
    /// Kafka 4.4's CONTROLLER_ID_NOT_REGISTERED (136, KIP-1312), which the crate lacks.
    #[error("{0}")]
    ControllerIdNotRegistered(String),
    #[error("stale partition epoch: the partition changed meanwhile")]
    InvalidUpdateVersion,
    /// UpdateFeatures refused, with Kafka's message.
    #[error("{0}")]
    FeatureUpdateRefused(String),
    #[error("ineligible replica: {0}")]
    IneligibleReplica(String),
    #[error("the preferred leader already leads")]
    ElectionNotNeeded,
    #[error("the preferred leader is not available")]
    PreferredLeaderNotAvailable,
    #[error("no eligible leader is available")]
    EligibleLeadersNotAvailable,
    #[error("this broker is not the coordinator")]
    NotCoordinator,
    #[error("no reassignment in progress")]
    NoReassignmentInProgress,
    #[error("not authorized to access topics: [{0}]")]
    TopicAuthorizationFailed(String),
    #[error("not authorized to access group: {0}")]
    GroupAuthorizationFailed(String),
    #[error("cluster authorization failed")]
    ClusterAuthorizationFailed,
    #[error("transactional id authorization failed")]
    TransactionalIdAuthorizationFailed,
    #[error("no Authorizer is configured")]
    SecurityDisabled,
    #[error("{0}")]
    UnacceptableCredential(String),
    #[error("{0}")]
    UnsupportedSaslMechanism(String),
    #[error("{0}")]
    DuplicateResource(String),
    #[error("{0}")]
    IllegalSaslState(String),
    #[error("{0}")]
    SaslAuthenticationFailed(String),
    #[error("delegation tokens are off: delegation.token.secret.key is not set")]
    DelegationTokenAuthDisabled,
    #[error("no delegation token has that HMAC")]
    DelegationTokenNotFound,
    #[error("only the token's owner and renewers may do that")]
    DelegationTokenOwnerMismatch,
    #[error("delegation token requests are not allowed on PLAINTEXT, one-way SSL or token-authenticated connections")]
    DelegationTokenRequestNotAllowed,
    #[error("not allowed to create tokens for that owner")]
    DelegationTokenAuthorizationFailed,
    #[error("the delegation token has expired")]
    DelegationTokenExpired,
    #[error("token renewers must be User principals")]
    InvalidPrincipalType,
    #[error("invalid record state: {0}")]
    InvalidRecordState(String),
    #[error("fenced state epoch: {0}")]
    FencedStateEpoch(String),
    #[error("the coordinator is loading its state")]
    CoordinatorLoadInProgress,
    #[error("share session not found")]
    ShareSessionNotFound,
    #[error("share session epoch {got} is not the expected {expected}")]
    InvalidShareSessionEpoch { got: i32, expected: i32 },
    #[error("the limit of share sessions has been reached")]
    ShareSessionLimitReached,
    /// A request Kafka fails with an unexpected exception (e.g. an unknown ShareAcquireMode).
    #[error("{0}")]
    UnknownServerError(String),
    #[error("another broker answered error code {0}")]
    Remote(i16),
}

/// Kafka 4.4's code for an UnregisterController naming no registered controller.
pub const CONTROLLER_ID_NOT_REGISTERED: i16 = 136;

impl Error {
    /// The Kafka error code a client sees. This is the only place that mapping is made.
    pub fn code(&self) -> i16 {
        match self {
            Error::Remote(code) => *code,
            other => other.kind().code(),
        }
    }

    /// The error for a code another broker answered (None for 0).
    pub fn from_code(code: i16) -> Option<Error> {
        (code != 0).then_some(Error::Remote(code))
    }

    fn kind(&self) -> ResponseError {
        use Error::*;
        match self {
            OffsetOutOfRange(_) => ResponseError::OffsetOutOfRange,
            CorruptMessage(_) => ResponseError::CorruptMessage,
            UnknownTopicOrPartition => ResponseError::UnknownTopicOrPartition,
            UnknownTopicId => ResponseError::UnknownTopicId,
            RebootstrapRequired => ResponseError::RebootstrapRequired,
            MessageTooLarge { .. } => ResponseError::MessageTooLarge,
            InvalidTopic(_) => ResponseError::InvalidTopicException,
            TopicAlreadyExists(_) => ResponseError::TopicAlreadyExists,
            InvalidPartitions(_) => ResponseError::InvalidPartitions,
            InvalidReplicationFactor(_) => ResponseError::InvalidReplicationFactor,
            InvalidReplicaAssignment(_) => ResponseError::InvalidReplicaAssignment,
            InvalidConfig(_) => ResponseError::InvalidConfig,
            InvalidRequest(_) => ResponseError::InvalidRequest,
            InvalidRecord(_) | InvalidRecords { .. } => ResponseError::InvalidRecord,
            InvalidRequiredAcks(_) => ResponseError::InvalidRequiredAcks,
            NotEnoughReplicas => ResponseError::NotEnoughReplicas,
            OutOfOrderSequence { .. } => ResponseError::OutOfOrderSequenceNumber,
            InvalidProducerEpoch { .. } => ResponseError::InvalidProducerEpoch,
            InvalidTimestamp(_) => ResponseError::InvalidTimestamp,
            FencedLeaderEpoch(_) => ResponseError::FencedLeaderEpoch,
            UnknownLeaderEpoch(_) => ResponseError::UnknownLeaderEpoch,
            FetchSessionIdNotFound(_) => ResponseError::FetchSessionIdNotFound,
            InvalidFetchSessionEpoch { .. } => ResponseError::InvalidFetchSessionEpoch,
            FetchSessionTopicIdError(_) => ResponseError::FetchSessionTopicIdError,
            UnsupportedEndpointType(_) => ResponseError::UnsupportedEndpointType,
            MismatchedEndpointType(_) => ResponseError::MismatchedEndpointType,
            IllegalGeneration(_) => ResponseError::IllegalGeneration,
            InconsistentGroupProtocol => ResponseError::InconsistentGroupProtocol,
            InvalidGroupId => ResponseError::InvalidGroupId,
            UnknownMemberId(_) => ResponseError::UnknownMemberId,
            InvalidSessionTimeout(_) => ResponseError::InvalidSessionTimeout,
            RebalanceInProgress => ResponseError::RebalanceInProgress,
            MemberIdRequired => ResponseError::MemberIdRequired,
            FencedInstanceId(_) => ResponseError::FencedInstanceId,
            GroupIdNotFound(_) => ResponseError::GroupIdNotFound,
            NonEmptyGroup(_) => ResponseError::NonEmptyGroup,
            GroupSubscribedToTopic => ResponseError::GroupSubscribedToTopic,
            OffsetMetadataTooLarge => ResponseError::OffsetMetadataTooLarge,
            GroupMaxSizeReached => ResponseError::GroupMaxSizeReached,
            FencedMemberEpoch { .. } => ResponseError::FencedMemberEpoch,
            StaleMemberEpoch(_) => ResponseError::StaleMemberEpoch,
            UnreleasedInstanceId(_) => ResponseError::UnreleasedInstanceId,
            UnsupportedAssignor(_) => ResponseError::UnsupportedAssignor,
            InvalidRegularExpression(_) => ResponseError::InvalidRegularExpression,
            StreamsInvalidTopology(_) => ResponseError::StreamsInvalidTopology,
            StreamsInvalidTopologyEpoch(_) => ResponseError::StreamsInvalidTopologyEpoch,
            InvalidTxnState(_) => ResponseError::InvalidTxnState,
            InvalidProducerIdMapping => ResponseError::InvalidProducerIdMapping,
            InvalidTransactionTimeout(_) => ResponseError::InvalidTransactionTimeout,
            ConcurrentTransactions => ResponseError::ConcurrentTransactions,
            ProducerFenced(_) => ResponseError::ProducerFenced,
            TransactionalIdNotFound(_) => ResponseError::TransactionalIdNotFound,
            UnstableOffsetCommit => ResponseError::UnstableOffsetCommit,
            OperationNotAttempted => ResponseError::OperationNotAttempted,
            CoordinatorNotAvailable => ResponseError::CoordinatorNotAvailable,
            Unsupported(_) => ResponseError::UnsupportedVersion,
            TelemetryTooLarge(_) => ResponseError::TelemetryTooLarge,
            UnknownSubscriptionId(_) => ResponseError::UnknownSubscriptionId,
            ThrottlingQuotaExceeded(_) => ResponseError::ThrottlingQuotaExceeded,
            UnsupportedCompressionType(_) => ResponseError::UnsupportedCompressionType,
            ResourceNotFound(_) => ResponseError::ResourceNotFound,
            Storage(_) => ResponseError::KafkaStorageError,
            LogDirNotFound(_) => ResponseError::LogDirNotFound,
            ReplicaNotAvailable => ResponseError::ReplicaNotAvailable,
            PolicyViolation(_) => ResponseError::PolicyViolation,
            NotController => ResponseError::NotController,
            RequestTimedOut(_) => ResponseError::RequestTimedOut,
            DuplicateVoter(_) => ResponseError::DuplicateVoter,
            VoterNotFound(_) => ResponseError::VoterNotFound,
            NotLeaderOrFollower => ResponseError::NotLeaderOrFollower,
            LeaderNotAvailable => ResponseError::LeaderNotAvailable,
            ListenerNotFound(_) => ResponseError::ListenerNotFound,
            NotEnoughReplicasAfterAppend => ResponseError::NotEnoughReplicasAfterAppend,
            BrokerNotAvailable(_) => ResponseError::BrokerNotAvailable,
            StaleBrokerEpoch => ResponseError::StaleBrokerEpoch,
            BrokerIdNotRegistered(_) => ResponseError::BrokerIdNotRegistered,
            ControllerIdNotRegistered(_) => ResponseError::Unknown(CONTROLLER_ID_NOT_REGISTERED),
            InvalidUpdateVersion | FeatureUpdateRefused(_) => ResponseError::InvalidUpdateVersion,
            IneligibleReplica(_) => ResponseError::IneligibleReplica,
            ElectionNotNeeded => ResponseError::ElectionNotNeeded,
            PreferredLeaderNotAvailable => ResponseError::PreferredLeaderNotAvailable,
            EligibleLeadersNotAvailable => ResponseError::EligibleLeadersNotAvailable,
            NotCoordinator => ResponseError::NotCoordinator,
            NoReassignmentInProgress => ResponseError::NoReassignmentInProgress,
            TopicAuthorizationFailed(_) => ResponseError::TopicAuthorizationFailed,
            GroupAuthorizationFailed(_) => ResponseError::GroupAuthorizationFailed,
            ClusterAuthorizationFailed => ResponseError::ClusterAuthorizationFailed,
            TransactionalIdAuthorizationFailed => ResponseError::TransactionalIdAuthorizationFailed,
            SecurityDisabled => ResponseError::SecurityDisabled,
            UnacceptableCredential(_) => ResponseError::UnacceptableCredential,
            UnsupportedSaslMechanism(_) => ResponseError::UnsupportedSaslMechanism,
            DuplicateResource(_) => ResponseError::DuplicateResource,
            IllegalSaslState(_) => ResponseError::IllegalSaslState,
            SaslAuthenticationFailed(_) => ResponseError::SaslAuthenticationFailed,
            DelegationTokenAuthDisabled => ResponseError::DelegationTokenAuthDisabled,
            DelegationTokenNotFound => ResponseError::DelegationTokenNotFound,
            DelegationTokenOwnerMismatch => ResponseError::DelegationTokenOwnerMismatch,
            DelegationTokenRequestNotAllowed => ResponseError::DelegationTokenRequestNotAllowed,
            DelegationTokenAuthorizationFailed => ResponseError::DelegationTokenAuthorizationFailed,
            DelegationTokenExpired => ResponseError::DelegationTokenExpired,
            InvalidPrincipalType => ResponseError::InvalidPrincipalType,
            InvalidRecordState(_) => ResponseError::InvalidRecordState,
            FencedStateEpoch(_) => ResponseError::FencedStateEpoch,
            CoordinatorLoadInProgress => ResponseError::CoordinatorLoadInProgress,
            ShareSessionNotFound => ResponseError::ShareSessionNotFound,
            InvalidShareSessionEpoch { .. } => ResponseError::InvalidShareSessionEpoch,
            ShareSessionLimitReached => ResponseError::ShareSessionLimitReached,
            UnknownServerError(_) => ResponseError::UnknownServerError,
            Remote(c) => ResponseError::try_from_code(*c).unwrap_or(ResponseError::UnknownServerError),
        }
    }

    /// Clients older than KIP-588 know no PRODUCER_FENCED: they get INVALID_PRODUCER_EPOCH.
    pub fn for_old_clients(self, fenced_supported: bool) -> Error {
        match self {
            Error::ProducerFenced(e) if !fenced_supported => Error::InvalidProducerEpoch { got: e, current: e },
            other => other,
        }
    }

    /// A transaction coordinator's answer to a partition leader's verification, as the
    /// producer gets it: a coordinator that is moving or busy becomes NOT_ENOUGH_REPLICAS,
    /// a retriable error every producer knows, as in Kafka.
    pub fn for_produce_verification(self) -> Error {
        let busy = [
            ResponseError::CoordinatorLoadInProgress,
            ResponseError::CoordinatorNotAvailable,
            ResponseError::NotCoordinator,
            ResponseError::ConcurrentTransactions,
        ];
        if busy.iter().any(|r| r.code() == self.code()) {
            Error::NotEnoughReplicas
        } else {
            self
        }
    }

    /// The message to put in a response's error_message field.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Storage(e.to_string())
    }
}

/// Shorthand for results whose error is a Kafka error.
pub type Result<T> = std::result::Result<T, Error>;

/// The code of a result: 0 on success.
pub fn code_of<T>(r: &Result<T>) -> i16 {
    match r {
        Ok(_) => 0,
        Err(e) => e.code(),
    }
}

/// Kafka's name of an error code, as its tools print it (`NOT_LEADER_OR_FOLLOWER`);
/// `NONE` for 0 and `UNKNOWN_ERROR_CODE_<n>` for a code this build does not know.
pub fn code_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".to_string(),
        Some(ResponseError::Unknown(CONTROLLER_ID_NOT_REGISTERED)) => "CONTROLLER_ID_NOT_REGISTERED".to_string(),
        Some(ResponseError::Unknown(c)) => format!("UNKNOWN_ERROR_CODE_{c}"),
        Some(e) => {
            let camel = e.to_string();
            let mut out = String::with_capacity(camel.len() + 8);
            for (i, ch) in camel.chars().enumerate() {
                if ch.is_ascii_uppercase() && i > 0 {
                    out.push('_');
                }
                out.push(ch.to_ascii_uppercase());
            }
            out
        }
    }
}

#[cfg(test)]
mod code_name_tests {
    use super::code_name;

    #[test]
    fn names_are_kafkas() {
        assert_eq!(code_name(0), "NONE");
        assert_eq!(code_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(code_name(6), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(code_name(17), "INVALID_TOPIC_EXCEPTION");
        assert_eq!(code_name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(code_name(9999), "UNKNOWN_ERROR_CODE_9999");
    }
}

/// Checks one of the design's invariants (HW ≤ LEO, HW never back on a leader, leader
/// epochs only grow). Unit tests panic on a violation. A running broker logs it at
/// error level with the words "invariant violated", which the process-level test
/// harnesses look for in every node's log and fail on. The broker keeps serving, since
/// a panic would take the partition's other clients down with it.
#[macro_export]
macro_rules! invariant {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            if cfg!(test) {
                panic!("invariant violated: {}", format!($($msg)+));
            } else {
                tracing::error!("invariant violated: {}", format!($($msg)+));
            }
        }
    };
}

#[cfg(test)]
mod invariant_tests {
    #[test]
    #[should_panic(expected = "invariant violated: 2 > 3")]
    fn a_broken_invariant_fails_a_unit_test() {
        let (a, b) = (2, 3);
        crate::invariant!(a > b, "{a} > {b}");
    }

    #[test]
    fn a_kept_invariant_is_silent() {
        crate::invariant!(1 < 2, "never");
    }
}
