//! The request quota (`request_percentage`, KIP-124): the time a client's requests take to
//! handle, as a percentage of one thread's time, held to the quota that governs the client.
//!
//! Kafka measures a request handler thread's time on the request, and the network thread's
//! time on it. Sluice's handlers are futures on tokio's workers, so what is measured is the
//! time spent inside the handler's polls: decoding and handling, but not the waits (the
//! disk, replication, a long-poll fetch), during which the worker serves others. That is
//! recorded when the answer is ready and decides the throttle; the time spent encoding and
//! writing the answer is recorded once it is out, with no throttle of its own (as Kafka
//! records network thread time), and counts in the client's next decision.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use kafka_protocol::messages::*;

use super::Ctx;
use crate::broker::Broker;
use crate::quota::resolve::Governing;
use crate::quota::ThrottleKind;

/// Runs `fut`, and tells how long it spent inside its polls, in ns.
pub async fn timed<F: Future>(fut: F) -> (F::Output, u64) {
    let mut fut = std::pin::pin!(fut);
    let mut nanos = 0u64;
    let out = std::future::poll_fn(|cx| {
        let t = Instant::now();
        let r = fut.as_mut().poll(cx);
        nanos += t.elapsed().as_nanos() as u64;
        r
    })
    .await;
    (out, nanos)
}

/// Requests that only brokers send, exempt from the request quota as Kafka exempts its
/// cluster actions (they are answered with `sendResponseExemptThrottle`). A follower's
/// Fetch is exempt too; the fetch path checks that itself.
fn exempt(api: ApiKey) -> bool {
    matches!(
        api,
        ApiKey::WriteTxnMarkers
            | ApiKey::InitializeShareGroupState
            | ApiKey::ReadShareGroupState
            | ApiKey::WriteShareGroupState
            | ApiKey::DeleteShareGroupState
            | ApiKey::ReadShareGroupStateSummary
    )
}

impl Ctx<'_> {
    /// Records `nanos` of handling of an `api` request against the client's
    /// `request_percentage`, if one governs it, and throttles the client if that took it
    /// over; the throttle time in ms.
    pub(super) fn record_request_time(&self, api: ApiKey, nanos: u64) -> i32 {
        if exempt(api) {
            return 0;
        }
        let Some(gov) = self.quota(ThrottleKind::Request) else { return 0 };
        let ms = self.broker.record_request_time(&gov, nanos);
        self.throttle(ms);
        let _ = self.request_quota.set(gov);
        ms
    }

    /// The request quota this request was recorded against, for the time spent sending it.
    pub(super) fn request_quota(&self) -> Option<SentTime> {
        self.request_quota.get().map(|gov| SentTime { broker: self.broker.clone(), gov: gov.clone() })
    }
}

/// Where the time spent sending a response is counted: its client's request quota.
pub struct SentTime {
    broker: Arc<Broker>,
    gov: Governing,
}

impl SentTime {
    /// Counts `nanos` spent sending, with no throttle decision (it shows in the next one).
    pub fn record_sent(self, nanos: u64) {
        self.broker.record_request_time_sent(&self.gov, nanos);
    }
}

/// A response that can tell its client how long it is throttled for.
pub trait Throttled {
    /// Sets the response's `throttle_time_ms` to at least `ms` (versions without the field
    /// leave it out when encoding).
    fn throttle_at_least(&mut self, ms: i32);
}

macro_rules! throttled {
    ($($t:ty),* $(,)?) => {
        $(impl Throttled for $t {
            fn throttle_at_least(&mut self, ms: i32) {
                self.throttle_time_ms = self.throttle_time_ms.max(ms);
            }
        })*
    };
}

macro_rules! no_throttle_field {
    ($($t:ty),* $(,)?) => {
        // These responses have no throttle_time_ms in any version: the mute alone holds the client.
        $(impl Throttled for $t {
            fn throttle_at_least(&mut self, _ms: i32) {}
        })*
    };
}

throttled!(
    ProduceResponse,
    FetchResponse,
    ListOffsetsResponse,
    MetadataResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    FindCoordinatorResponse,
    JoinGroupResponse,
    HeartbeatResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
    DescribeGroupsResponse,
    ListGroupsResponse,
    ApiVersionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    DeleteRecordsResponse,
    InitProducerIdResponse,
    AddPartitionsToTxnResponse,
    AddOffsetsToTxnResponse,
    EndTxnResponse,
    TxnOffsetCommitResponse,
    DescribeConfigsResponse,
    AlterConfigsResponse,
    CreatePartitionsResponse,
    DeleteGroupsResponse,
    IncrementalAlterConfigsResponse,
    OffsetDeleteResponse,
    DescribeClusterResponse,
    DescribeProducersResponse,
    DescribeTransactionsResponse,
    ListTransactionsResponse,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupDescribeResponse,
    OffsetForLeaderEpochResponse,
    ElectLeadersResponse,
    UnregisterBrokerResponse,
    UnregisterControllerResponse,
    AddRaftVoterResponse,
    RemoveRaftVoterResponse,
    DescribeAclsResponse,
    CreateAclsResponse,
    DeleteAclsResponse,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponse,
    DescribeUserScramCredentialsResponse,
    AlterUserScramCredentialsResponse,
    DescribeClientQuotasResponse,
    AlterClientQuotasResponse,
    CreateDelegationTokenResponse,
    RenewDelegationTokenResponse,
    ExpireDelegationTokenResponse,
    DescribeDelegationTokenResponse,
    UpdateFeaturesResponse,
    AlterReplicaLogDirsResponse,
    DescribeLogDirsResponse,
    DescribeTopicPartitionsResponse,
    ListConfigResourcesResponse,
    GetTelemetrySubscriptionsResponse,
    PushTelemetryResponse,
    ShareGroupHeartbeatResponse,
    ShareGroupDescribeResponse,
    ShareFetchResponse,
    ShareAcknowledgeResponse,
    DescribeShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponse,
    StreamsGroupHeartbeatResponse,
    StreamsGroupDescribeResponse,
    StreamsGroupTopologyDescriptionUpdateResponse,
);

no_throttle_field!(
    WriteTxnMarkersResponse,
    DescribeQuorumResponse,
    SaslHandshakeResponse,
    SaslAuthenticateResponse,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateResponse,
    WriteShareGroupStateResponse,
    DeleteShareGroupStateResponse,
    ReadShareGroupStateSummaryResponse,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_time_inside_polls_is_counted() {
        let (v, nanos) = timed(async {
            // Waiting is not handling: the worker is free meanwhile.
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            let t = Instant::now();
            while t.elapsed() < std::time::Duration::from_millis(20) {
                std::hint::spin_loop();
            }
            7
        })
        .await;
        assert_eq!(v, 7);
        assert!((20_000_000..150_000_000).contains(&nanos), "{nanos} ns");
    }

    #[test]
    fn broker_only_requests_are_exempt() {
        assert!(exempt(ApiKey::WriteTxnMarkers));
        assert!(!exempt(ApiKey::Metadata) && !exempt(ApiKey::Produce) && !exempt(ApiKey::ApiVersions));
    }
}
