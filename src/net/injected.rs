//! Answers carrying an injected error: the request decoded, and a response built for its
//! version with the code wherever Kafka's own error response for that API puts one (the
//! `getErrorResponse` of each request class): per partition for Produce, ListOffsets and
//! OffsetCommit, per topic for Metadata, per key for FindCoordinator v4+, and top level
//! (and per partition) for Fetch and the rest. Only the APIs of [`fault::names::INJECTABLE`].

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::*;
use kafka_protocol::messages::{fetch_response, fetch_response::FetchableTopicResponse};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::api::{self, Chunk};

/// The answer to `frame` with error `code`: `Some(None)` for a request that wants none
/// (acks=0), `None` when the frame is not one this can answer (it is then served as usual,
/// which also deals with a malformed frame).
pub(super) fn answer(frame: &Bytes, code: i16) -> Option<Option<Vec<Chunk>>> {
    let Ok(Ok(mut p)) = api::parse_frame(frame.clone()) else { return None };
    let v = p.version;
    let b = &mut p.body;
    let body = match p.api {
        ApiKey::Produce => {
            let r = ProduceRequest::decode(b, v).ok()?;
            if r.acks == 0 {
                return Some(None);
            }
            encode(&produce(&r, code, v), v)?
        }
        ApiKey::Fetch => encode(&fetch(&FetchRequest::decode(b, v).ok()?, code, v), v)?,
        ApiKey::ListOffsets => encode(&list_offsets(&ListOffsetsRequest::decode(b, v).ok()?, code), v)?,
        ApiKey::Metadata => encode(&metadata(&MetadataRequest::decode(b, v).ok()?, code, v), v)?,
        ApiKey::OffsetCommit => encode(&offset_commit(&OffsetCommitRequest::decode(b, v).ok()?, code), v)?,
        ApiKey::FindCoordinator => encode(&find_coordinator(&FindCoordinatorRequest::decode(b, v).ok()?, code, v), v)?,
        ApiKey::JoinGroup => {
            JoinGroupRequest::decode(b, v).ok()?;
            let r = JoinGroupResponse::default()
                .with_error_code(code)
                .with_generation_id(-1)
                .with_member_id(StrBytes::default())
                .with_leader(StrBytes::default());
            encode(&r, v)?
        }
        ApiKey::Heartbeat => {
            HeartbeatRequest::decode(b, v).ok()?;
            encode(&HeartbeatResponse::default().with_error_code(code), v)?
        }
        ApiKey::SyncGroup => {
            SyncGroupRequest::decode(b, v).ok()?;
            encode(&SyncGroupResponse::default().with_error_code(code), v)?
        }
        ApiKey::InitProducerId => {
            InitProducerIdRequest::decode(b, v).ok()?;
            encode(&InitProducerIdResponse::default().with_error_code(code).with_producer_id((-1).into()).with_producer_epoch(-1), v)?
        }
        _ => return None,
    };
    Some(Some(vec![Chunk::Bytes(framed(p.correlation_id, p.api.response_header_version(v), &body))]))
}

fn encode<M: Encodable>(m: &M, version: i16) -> Option<BytesMut> {
    let mut out = BytesMut::new();
    match m.encode(&mut out, version) {
        Ok(()) => Some(out),
        Err(e) => {
            tracing::warn!(error = %e, "an injected error response did not encode; serving the request instead");
            None
        }
    }
}

/// A response frame: length prefix, response header, body.
fn framed(correlation_id: i32, header_version: i16, body: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(body.len() + 16);
    out.put_i32(0);
    // The header has only the correlation id (and an empty tag buffer): it cannot fail.
    let _ = ResponseHeader::default().with_correlation_id(correlation_id).encode(&mut out, header_version);
    out.extend_from_slice(body);
    let len = (out.len() - 4) as i32;
    out[0..4].copy_from_slice(&len.to_be_bytes());
    out.freeze()
}

fn produce(r: &ProduceRequest, code: i16, v: i16) -> ProduceResponse {
    let topics = r.topic_data.iter().map(|t| {
        // Produce v13 names topics by id only: a name there would not encode.
        let topic = if v >= 13 {
            TopicProduceResponse::default().with_topic_id(t.topic_id)
        } else {
            TopicProduceResponse::default().with_name(t.name.clone())
        };
        topic.with_partition_responses(
            t.partition_data
                .iter()
                .map(|p| PartitionProduceResponse::default().with_index(p.index).with_error_code(code).with_base_offset(-1))
                .collect(),
        )
    });
    ProduceResponse::default().with_responses(topics.collect())
}

fn fetch(r: &FetchRequest, code: i16, v: i16) -> FetchResponse {
    let topics = r.topics.iter().map(|t| {
        let topic = if v >= 13 {
            FetchableTopicResponse::default().with_topic_id(t.topic_id)
        } else {
            FetchableTopicResponse::default().with_topic(t.topic.clone())
        };
        topic.with_partitions(
            t.partitions
                .iter()
                .map(|p| {
                    fetch_response::PartitionData::default().with_partition_index(p.partition).with_error_code(code).with_high_watermark(-1)
                })
                .collect(),
        )
    });
    // The top-level code exists from v7 (with fetch sessions); the session is dropped.
    let top = if v >= 7 { code } else { 0 };
    FetchResponse::default().with_error_code(top).with_session_id(0).with_responses(topics.collect())
}

fn list_offsets(r: &ListOffsetsRequest, code: i16) -> ListOffsetsResponse {
    let topics = r.topics.iter().map(|t| {
        ListOffsetsTopicResponse::default().with_name(t.name.clone()).with_partitions(
            t.partitions
                .iter()
                .map(|p| ListOffsetsPartitionResponse::default().with_partition_index(p.partition_index).with_error_code(code))
                .collect(),
        )
    });
    ListOffsetsResponse::default().with_topics(topics.collect())
}

fn metadata(r: &MetadataRequest, code: i16, v: i16) -> MetadataResponse {
    let topics = r.topics.iter().flatten().map(|t| {
        let topic = MetadataResponseTopic::default().with_error_code(code).with_name(t.name.clone());
        if v >= 10 {
            topic.with_topic_id(t.topic_id)
        } else {
            topic
        }
    });
    MetadataResponse::default().with_controller_id((-1).into()).with_topics(topics.collect())
}

fn offset_commit(r: &OffsetCommitRequest, code: i16) -> OffsetCommitResponse {
    let topics = r.topics.iter().map(|t| {
        OffsetCommitResponseTopic::default().with_name(t.name.clone()).with_topic_id(t.topic_id).with_partitions(
            t.partitions
                .iter()
                .map(|p| OffsetCommitResponsePartition::default().with_partition_index(p.partition_index).with_error_code(code))
                .collect(),
        )
    });
    OffsetCommitResponse::default().with_topics(topics.collect())
}

fn find_coordinator(r: &FindCoordinatorRequest, code: i16, v: i16) -> FindCoordinatorResponse {
    let message = kafka_protocol::error::ResponseError::try_from_code(code).map(|e| StrBytes::from_string(e.to_string()));
    if v >= 4 {
        let each = r.coordinator_keys.iter().map(|k| {
            Coordinator::default()
                .with_key(k.clone())
                .with_node_id((-1).into())
                .with_port(-1)
                .with_error_code(code)
                .with_error_message(message.clone())
        });
        return FindCoordinatorResponse::default().with_coordinators(each.collect());
    }
    let resp = FindCoordinatorResponse::default().with_error_code(code).with_node_id((-1).into()).with_port(-1);
    if v >= 1 {
        resp.with_error_message(message)
    } else {
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::protocol::{HeaderVersion, Request};

    fn name(s: &str) -> StrBytes {
        StrBytes::from_string(s.to_string())
    }

    /// A request frame of `R` at `v`, with header.
    fn frame<R: Request + Encodable>(r: &R, v: i16) -> Bytes {
        let mut out = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(v)
            .with_correlation_id(77)
            .with_client_id(Some(name("test")))
            .encode(&mut out, R::header_version(v))
            .unwrap();
        r.encode(&mut out, v).unwrap();
        out.freeze()
    }

    /// The response in `chunks` decoded as `R::Response` at `v`, shown as Debug.
    fn decoded<R: Request>(chunks: Vec<Chunk>, v: i16) -> String
    where
        R::Response: std::fmt::Debug,
    {
        let Chunk::Bytes(b) = &chunks[0] else { panic!("a file chunk") };
        let mut b = b.slice(4..);
        let h = ResponseHeader::decode(&mut b, R::Response::header_version(v)).unwrap();
        assert_eq!(h.correlation_id, 77);
        let r = R::Response::decode(&mut b, v).unwrap();
        assert!(b.is_empty(), "trailing bytes");
        format!("{r:?}")
    }

    fn versions(key: ApiKey) -> std::ops::RangeInclusive<i16> {
        let (a, b) = api::supported(key as i16).expect("served");
        a..=b
    }

    /// Every version of `R` served: the injected answer decodes and carries `code` `times` times.
    fn check<R: Request + Encodable>(make: impl Fn(i16) -> R, times: usize)
    where
        R::Response: std::fmt::Debug,
    {
        for v in versions(R::KEY.try_into().unwrap()) {
            let ans = answer(&frame(&make(v), v), 6).expect("answered").expect("with a response");
            let shown = decoded::<R>(ans, v);
            let n = shown.matches("error_code: 6").count();
            assert!(n >= times, "{:?} v{v}: {n} codes in {shown}", R::KEY);
        }
    }

    #[test]
    fn every_injectable_api_answers_with_the_code_at_every_served_version() {
        check(
            |v| {
                let t = if v >= 13 {
                    TopicProduceData::default().with_topic_id(uuid::Uuid::from_u128(9))
                } else {
                    TopicProduceData::default().with_name(name("t").into())
                };
                ProduceRequest::default().with_acks(-1).with_topic_data(vec![t.with_partition_data(vec![
                    PartitionProduceData::default().with_index(0),
                    PartitionProduceData::default().with_index(1),
                ])])
            },
            2,
        );
        check(
            |v| {
                let t = if v >= 13 {
                    FetchTopic::default().with_topic_id(uuid::Uuid::from_u128(9))
                } else {
                    FetchTopic::default().with_topic(name("t").into())
                };
                FetchRequest::default().with_topics(vec![t.with_partitions(vec![FetchPartition::default()])])
            },
            1,
        );
        check(
            |_| {
                ListOffsetsRequest::default().with_topics(vec![ListOffsetsTopic::default()
                    .with_name(name("t").into())
                    .with_partitions(vec![ListOffsetsPartition::default()])])
            },
            1,
        );
        check(|_| MetadataRequest::default().with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(name("t").into()))])), 1);
        check(
            |_| {
                OffsetCommitRequest::default().with_topics(vec![OffsetCommitRequestTopic::default()
                    .with_name(name("t").into())
                    .with_partitions(vec![OffsetCommitRequestPartition::default()])])
            },
            1,
        );
        check(
            |v| {
                if v >= 4 {
                    FindCoordinatorRequest::default().with_coordinator_keys(vec![name("g")])
                } else {
                    FindCoordinatorRequest::default().with_key(name("g"))
                }
            },
            1,
        );
        check(|_| JoinGroupRequest::default().with_group_id(name("g").into()), 1);
        check(|_| HeartbeatRequest::default().with_group_id(name("g").into()), 1);
        check(|_| SyncGroupRequest::default().with_group_id(name("g").into()), 1);
        check(|_| InitProducerIdRequest::default(), 1);
    }

    #[test]
    fn every_injectable_api_has_a_builder_and_others_do_not() {
        for key in crate::fault::names::INJECTABLE {
            assert!(api::supported(*key as i16).is_some(), "{key:?} is not served");
        }
        let other = frame(&CreateTopicsRequest::default(), 7);
        assert!(answer(&other, 6).is_none());
    }

    #[test]
    fn acks_zero_produce_gets_no_answer_and_garbage_is_left_to_the_handler() {
        let r = ProduceRequest::default().with_acks(0);
        assert!(matches!(answer(&frame(&r, 9), 6), Some(None)));
        assert!(answer(&Bytes::from_static(&[0, 0, 0, 9, 0, 0, 0, 1, 0xff]), 6).is_none());
        assert!(answer(&Bytes::from_static(&[0, 0]), 6).is_none());
    }
}
