//! The error codes a response carries, for `sluice_request_errors_total` (Kafka's
//! RequestMetrics ErrorsPerSec). Top-level codes for every API; per topic for Metadata,
//! CreateTopics and DeleteTopics. Produce and Fetch count their per-partition codes where
//! they make them (`produce.rs`, `fetch.rs`), so their rows here are empty.

use kafka_protocol::messages::*;

/// A response whose error codes can be walked without allocating.
pub(super) trait ErrorCodes {
    /// Calls `f` with each error code in the response (0 included: the counter skips it).
    fn each_error(&self, _f: &mut dyn FnMut(i16)) {}
}

/// Counts the error codes of `r`, a response of API `key`.
pub(super) fn count(key: ApiKey, r: &impl ErrorCodes) {
    if let Some(s) = crate::stats::api(key as i16) {
        r.each_error(&mut |code| s.error(code));
    }
}

macro_rules! top_level {
    ($($t:ty),* $(,)?) => { $( impl ErrorCodes for $t { fn each_error(&self, f: &mut dyn FnMut(i16)) { f(self.error_code) } } )* };
}

macro_rules! not_walked {
    ($($t:ty),* $(,)?) => { $( impl ErrorCodes for $t {} )* };
}

top_level!(
    OffsetFetchResponse,
    FindCoordinatorResponse,
    JoinGroupResponse,
    HeartbeatResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
    ListGroupsResponse,
    ApiVersionsResponse,
    InitProducerIdResponse,
    AddPartitionsToTxnResponse,
    AddOffsetsToTxnResponse,
    EndTxnResponse,
    OffsetDeleteResponse,
    DescribeClusterResponse,
    ListTransactionsResponse,
    ConsumerGroupHeartbeatResponse,
    ElectLeadersResponse,
    DescribeQuorumResponse,
    UnregisterBrokerResponse,
    UnregisterControllerResponse,
    AddRaftVoterResponse,
    RemoveRaftVoterResponse,
    DescribeAclsResponse,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponse,
    SaslHandshakeResponse,
    SaslAuthenticateResponse,
    DescribeUserScramCredentialsResponse,
    DescribeClientQuotasResponse,
    CreateDelegationTokenResponse,
    RenewDelegationTokenResponse,
    ExpireDelegationTokenResponse,
    DescribeDelegationTokenResponse,
);

// No top-level code; their per-resource codes are not walked yet.
not_walked!(
    ProduceResponse,
    FetchResponse,
    ListOffsetsResponse,
    OffsetCommitResponse,
    DescribeGroupsResponse,
    DeleteRecordsResponse,
    WriteTxnMarkersResponse,
    TxnOffsetCommitResponse,
    DescribeConfigsResponse,
    AlterConfigsResponse,
    CreatePartitionsResponse,
    DeleteGroupsResponse,
    IncrementalAlterConfigsResponse,
    DescribeProducersResponse,
    DescribeTransactionsResponse,
    ConsumerGroupDescribeResponse,
    OffsetForLeaderEpochResponse,
    CreateAclsResponse,
    DeleteAclsResponse,
    AlterUserScramCredentialsResponse,
);

// Share groups (KIP-932): the top-level code; per-group and per-partition codes are not walked.
top_level!(ShareGroupHeartbeatResponse, ShareFetchResponse, ShareAcknowledgeResponse, ListConfigResourcesResponse);
// UpdateFeatures: the whole request fails with its top-level code; per-feature codes only echo it.
top_level!(UpdateFeaturesResponse, GetTelemetrySubscriptionsResponse, PushTelemetryResponse);
not_walked!(ShareGroupDescribeResponse);
// Share-group offsets: the top-level codes; per-topic and per-partition codes are not walked.
top_level!(AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsResponse);
not_walked!(DescribeShareGroupOffsetsResponse);

// Streams groups (KIP-1071): the top-level code; per-group codes of describe are not walked.
top_level!(StreamsGroupHeartbeatResponse, StreamsGroupTopologyDescriptionUpdateResponse);
not_walked!(StreamsGroupDescribeResponse);

impl ErrorCodes for MetadataResponse {
    fn each_error(&self, f: &mut dyn FnMut(i16)) {
        f(self.error_code);
        self.topics.iter().for_each(|t| f(t.error_code));
    }
}

impl ErrorCodes for CreateTopicsResponse {
    fn each_error(&self, f: &mut dyn FnMut(i16)) {
        self.topics.iter().for_each(|t| f(t.error_code));
    }
}

impl ErrorCodes for DeleteTopicsResponse {
    fn each_error(&self, f: &mut dyn FnMut(i16)) {
        self.responses.iter().for_each(|t| f(t.error_code));
    }
}

/// The share-coordinator state APIs answer per partition of each topic in `results`.
macro_rules! per_state_partition {
    ($($t:ty),*) => {$(
        impl ErrorCodes for $t {
            fn each_error(&self, f: &mut dyn FnMut(i16)) {
                self.results.iter().flat_map(|t| &t.partitions).for_each(|p| f(p.error_code));
            }
        }
    )*};
}
per_state_partition!(
    InitializeShareGroupStateResponse,
    ReadShareGroupStateResponse,
    WriteShareGroupStateResponse,
    DeleteShareGroupStateResponse,
    ReadShareGroupStateSummaryResponse,
    AlterReplicaLogDirsResponse
);
impl ErrorCodes for DescribeLogDirsResponse {
    fn each_error(&self, f: &mut dyn FnMut(i16)) {
        f(self.error_code);
        self.results.iter().for_each(|d| f(d.error_code));
    }
}
impl ErrorCodes for AlterClientQuotasResponse {
    fn each_error(&self, f: &mut dyn FnMut(i16)) {
        self.entries.iter().for_each(|e| f(e.error_code));
    }
}
