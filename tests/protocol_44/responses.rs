use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::round_trip;

#[test]
fn add_raft_voter_response_v1() {
    let value = add_raft_voter_response::AddRaftVoterResponse::default()
        .with_throttle_time_ms(2)
        .with_error_code(3)
        .with_error_message(Some(StrBytes::from_static_str("s3")));
    round_trip(value, 1);
}

#[test]
fn api_versions_response_v5() {
    let value = api_versions_response::ApiVersionsResponse::default()
        .with_error_code(2)
        .with_api_keys(vec![api_versions_response::ApiVersion::default().with_api_key(4).with_min_version(5).with_max_version(6)])
        .with_throttle_time_ms(7)
        .with_supported_features(vec![api_versions_response::SupportedFeatureKey::default()
            .with_name(StrBytes::from_static_str("s8"))
            .with_min_version(10)
            .with_max_version(11)])
        .with_finalized_features_epoch(12)
        .with_finalized_features(vec![api_versions_response::FinalizedFeatureKey::default()
            .with_name(StrBytes::from_static_str("s13"))
            .with_max_version_level(15)
            .with_min_version_level(16)])
        .with_zk_migration_ready(true);
    round_trip(value, 5);
}

#[test]
fn broker_heartbeat_response_v2() {
    let value = broker_heartbeat_response::BrokerHeartbeatResponse::default()
        .with_throttle_time_ms(2)
        .with_error_code(3)
        .with_is_caught_up(true)
        .with_is_fenced(false)
        .with_should_shut_down(true);
    round_trip(value, 2);
}

#[test]
fn delete_groups_response_v3() {
    let value = delete_groups_response::DeleteGroupsResponse::default().with_throttle_time_ms(2).with_results(vec![
        delete_groups_response::DeletableGroupResult::default()
            .with_group_id(StrBytes::from_static_str("s3").into())
            .with_error_code(5)
            .with_error_message(Some(StrBytes::from_static_str("s5"))),
    ]);
    round_trip(value, 3);
}

#[test]
fn describe_log_dirs_response_v5() {
    let value =
        describe_log_dirs_response::DescribeLogDirsResponse::default().with_throttle_time_ms(2).with_error_code(3).with_results(vec![
            describe_log_dirs_response::DescribeLogDirsResult::default()
                .with_error_code(5)
                .with_log_dir(StrBytes::from_static_str("s5"))
                .with_topics(vec![describe_log_dirs_response::DescribeLogDirsTopic::default()
                    .with_name(StrBytes::from_static_str("s7").into())
                    .with_partitions(vec![describe_log_dirs_response::DescribeLogDirsPartition::default()
                        .with_partition_index(10)
                        .with_partition_size(11)
                        .with_offset_lag(12)
                        .with_is_future_key(true)])])
                .with_total_bytes(14)
                .with_usable_bytes(15)
                .with_is_cordoned(true),
        ]);
    round_trip(value, 5);
}

#[test]
fn describe_share_group_offsets_response_v1() {
    let value =
        describe_share_group_offsets_response::DescribeShareGroupOffsetsResponse::default().with_throttle_time_ms(2).with_groups(vec![
            describe_share_group_offsets_response::DescribeShareGroupOffsetsResponseGroup::default()
                .with_group_id(StrBytes::from_static_str("s3").into())
                .with_topics(vec![describe_share_group_offsets_response::DescribeShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(StrBytes::from_static_str("s5").into())
                    .with_topic_id(Uuid::from_u128(6))
                    .with_partitions(vec![describe_share_group_offsets_response::DescribeShareGroupOffsetsResponsePartition::default()
                        .with_partition_index(9)
                        .with_start_offset(10)
                        .with_leader_epoch(11)
                        .with_lag(12)
                        .with_error_code(13)
                        .with_error_message(Some(StrBytes::from_static_str("s13")))])])
                .with_error_code(15)
                .with_error_message(Some(StrBytes::from_static_str("s15"))),
        ]);
    round_trip(value, 1);
}

#[test]
fn list_offsets_response_v11() {
    let value = list_offsets_response::ListOffsetsResponse::default().with_throttle_time_ms(2).with_topics(vec![
        list_offsets_response::ListOffsetsTopicResponse::default().with_name(StrBytes::from_static_str("s3").into()).with_partitions(vec![
            list_offsets_response::ListOffsetsPartitionResponse::default()
                .with_partition_index(6)
                .with_error_code(7)
                .with_timestamp(8)
                .with_offset(9)
                .with_leader_epoch(10),
        ]),
    ]);
    round_trip(value, 11);
}

#[test]
fn offset_commit_response_v10() {
    let value = offset_commit_response::OffsetCommitResponse::default().with_throttle_time_ms(2).with_topics(vec![
        offset_commit_response::OffsetCommitResponseTopic::default().with_topic_id(Uuid::from_u128(3)).with_partitions(vec![
            offset_commit_response::OffsetCommitResponsePartition::default().with_partition_index(6).with_error_code(7),
        ]),
    ]);
    round_trip(value, 10);
}

#[test]
fn offset_fetch_response_v10() {
    let value = offset_fetch_response::OffsetFetchResponse::default().with_throttle_time_ms(2).with_groups(vec![
        offset_fetch_response::OffsetFetchResponseGroup::default()
            .with_group_id(StrBytes::from_static_str("s3").into())
            .with_topics(vec![offset_fetch_response::OffsetFetchResponseTopics::default()
                .with_topic_id(Uuid::from_u128(5))
                .with_partitions(vec![offset_fetch_response::OffsetFetchResponsePartitions::default()
                    .with_partition_index(8)
                    .with_committed_offset(9)
                    .with_committed_leader_epoch(10)
                    .with_metadata(Some(StrBytes::from_static_str("s10")))
                    .with_error_code(12)])])
            .with_error_code(13),
    ]);
    round_trip(value, 10);
}

#[test]
fn read_share_group_state_summary_response_v1() {
    let value = read_share_group_state_summary_response::ReadShareGroupStateSummaryResponse::default().with_results(vec![
        read_share_group_state_summary_response::ReadStateSummaryResult::default().with_topic_id(Uuid::from_u128(2)).with_partitions(vec![
            read_share_group_state_summary_response::PartitionResult::default()
                .with_partition(5)
                .with_error_code(6)
                .with_error_message(Some(StrBytes::from_static_str("s6")))
                .with_state_epoch(8)
                .with_leader_epoch(9)
                .with_start_offset(10)
                .with_delivery_complete_count(11),
        ]),
    ]);
    round_trip(value, 1);
}

#[test]
fn share_acknowledge_response_v2() {
    let value = share_acknowledge_response::ShareAcknowledgeResponse::default()
        .with_throttle_time_ms(2)
        .with_error_code(3)
        .with_error_message(Some(StrBytes::from_static_str("s3")))
        .with_acquisition_lock_timeout_ms(5)
        .with_responses(vec![share_acknowledge_response::ShareAcknowledgeTopicResponse::default()
            .with_topic_id(Uuid::from_u128(6))
            .with_partitions(vec![share_acknowledge_response::PartitionData::default()
                .with_partition_index(9)
                .with_error_code(10)
                .with_error_message(Some(StrBytes::from_static_str("s10")))
                .with_current_leader(share_acknowledge_response::LeaderIdAndEpoch::default().with_leader_id(13).with_leader_epoch(14))])])
        .with_node_endpoints(vec![share_acknowledge_response::NodeEndpoint::default()
            .with_node_id((16).into())
            .with_host(StrBytes::from_static_str("s16"))
            .with_port(18)
            .with_rack(Some(StrBytes::from_static_str("s18")))]);
    round_trip(value, 2);
}

#[test]
fn share_fetch_response_v2() {
    let value = share_fetch_response::ShareFetchResponse::default()
        .with_throttle_time_ms(2)
        .with_error_code(3)
        .with_error_message(Some(StrBytes::from_static_str("s3")))
        .with_acquisition_lock_timeout_ms(5)
        .with_responses(vec![share_fetch_response::ShareFetchableTopicResponse::default()
            .with_topic_id(Uuid::from_u128(6))
            .with_partitions(vec![share_fetch_response::PartitionData::default()
                .with_partition_index(9)
                .with_error_code(10)
                .with_error_message(Some(StrBytes::from_static_str("s10")))
                .with_acknowledge_error_code(12)
                .with_acknowledge_error_message(Some(StrBytes::from_static_str("s12")))
                .with_current_leader(share_fetch_response::LeaderIdAndEpoch::default().with_leader_id(15).with_leader_epoch(16))
                .with_records(Some(Bytes::from_static(b"b16")))
                .with_acquired_records(vec![share_fetch_response::AcquiredRecords::default()
                    .with_first_offset(19)
                    .with_last_offset(20)
                    .with_delivery_count(21)])])])
        .with_node_endpoints(vec![share_fetch_response::NodeEndpoint::default()
            .with_node_id((23).into())
            .with_host(StrBytes::from_static_str("s23"))
            .with_port(25)
            .with_rack(Some(StrBytes::from_static_str("s25")))]);
    round_trip(value, 2);
}

#[test]
fn txn_offset_commit_response_v6() {
    let value = txn_offset_commit_response::TxnOffsetCommitResponse::default().with_throttle_time_ms(2).with_topics(vec![
        txn_offset_commit_response::TxnOffsetCommitResponseTopic::default().with_topic_id(Uuid::from_u128(3)).with_partitions(vec![
            txn_offset_commit_response::TxnOffsetCommitResponsePartition::default().with_partition_index(6).with_error_code(7),
        ]),
    ]);
    round_trip(value, 6);
}

#[test]
fn write_share_group_state_response_v1() {
    let value = write_share_group_state_response::WriteShareGroupStateResponse::default().with_results(vec![
        write_share_group_state_response::WriteStateResult::default().with_topic_id(Uuid::from_u128(2)).with_partitions(vec![
            write_share_group_state_response::PartitionResult::default()
                .with_partition(5)
                .with_error_code(6)
                .with_error_message(Some(StrBytes::from_static_str("s6"))),
        ]),
    ]);
    round_trip(value, 1);
}

#[test]
fn write_txn_markers_response_v2() {
    let value = write_txn_markers_response::WriteTxnMarkersResponse::default().with_markers(vec![
        write_txn_markers_response::WritableTxnMarkerResult::default().with_producer_id((3).into()).with_topics(vec![
            write_txn_markers_response::WritableTxnMarkerTopicResult::default()
                .with_name(StrBytes::from_static_str("s4").into())
                .with_partitions(vec![write_txn_markers_response::WritableTxnMarkerPartitionResult::default()
                    .with_partition_index(7)
                    .with_error_code(8)]),
        ]),
    ]);
    round_trip(value, 2);
}

#[test]
fn streams_group_heartbeat_response_v0() {
    let value = streams_group_heartbeat_response::StreamsGroupHeartbeatResponse::default()
        .with_throttle_time_ms(2)
        .with_error_code(3)
        .with_error_message(Some(StrBytes::from_static_str("s3")))
        .with_member_id(StrBytes::from_static_str("s4"))
        .with_member_epoch(6)
        .with_heartbeat_interval_ms(7)
        .with_acceptable_recovery_lag_legacy(8)
        .with_task_offset_interval_ms(9)
        .with_status(Some(vec![streams_group_heartbeat_response::Status::default()
            .with_status_code(11)
            .with_status_detail(StrBytes::from_static_str("s11"))]))
        .with_active_tasks(Some(vec![streams_group_heartbeat_response::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s13"))
            .with_partitions(vec![15])]))
        .with_standby_tasks(Some(vec![streams_group_heartbeat_response::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s16"))
            .with_partitions(vec![18])]))
        .with_warmup_tasks(Some(vec![streams_group_heartbeat_response::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s19"))
            .with_partitions(vec![21])]))
        .with_endpoint_information_epoch(22)
        .with_partitions_by_user_endpoint(Some(vec![streams_group_heartbeat_response::EndpointToPartitions::default()
            .with_user_endpoint(
                streams_group_heartbeat_response::Endpoint::default().with_host(StrBytes::from_static_str("s24")).with_port(26),
            )
            .with_active_partitions(vec![streams_group_heartbeat_response::TopicPartition::default()
                .with_topic(StrBytes::from_static_str("s27").into())
                .with_partitions(vec![29])])
            .with_standby_partitions(vec![streams_group_heartbeat_response::TopicPartition::default()
                .with_topic(StrBytes::from_static_str("s30").into())
                .with_partitions(vec![32])])]));
    round_trip(value, 0);
}

#[test]
fn streams_group_heartbeat_response_v1() {
    let value = streams_group_heartbeat_response::StreamsGroupHeartbeatResponse::default()
        .with_throttle_time_ms(2)
        .with_error_code(3)
        .with_error_message(Some(StrBytes::from_static_str("s3")))
        .with_member_id(StrBytes::from_static_str("s4"))
        .with_member_epoch(6)
        .with_heartbeat_interval_ms(7)
        .with_task_offset_interval_ms(8)
        .with_acceptable_recovery_lag(9)
        .with_status(Some(vec![streams_group_heartbeat_response::Status::default()
            .with_status_code(11)
            .with_status_detail(StrBytes::from_static_str("s11"))]))
        .with_active_tasks(Some(vec![streams_group_heartbeat_response::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s13"))
            .with_partitions(vec![15])]))
        .with_standby_tasks(Some(vec![streams_group_heartbeat_response::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s16"))
            .with_partitions(vec![18])]))
        .with_warmup_tasks(Some(vec![streams_group_heartbeat_response::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s19"))
            .with_partitions(vec![21])]))
        .with_topology_description_required(true)
        .with_endpoint_information_epoch(23)
        .with_partitions_by_user_endpoint(Some(vec![streams_group_heartbeat_response::EndpointToPartitions::default()
            .with_user_endpoint(
                streams_group_heartbeat_response::Endpoint::default().with_host(StrBytes::from_static_str("s25")).with_port(27),
            )
            .with_active_partitions(vec![streams_group_heartbeat_response::TopicPartition::default()
                .with_topic(StrBytes::from_static_str("s28").into())
                .with_partitions(vec![30])])
            .with_standby_partitions(vec![streams_group_heartbeat_response::TopicPartition::default()
                .with_topic(StrBytes::from_static_str("s31").into())
                .with_partitions(vec![33])])]));
    round_trip(value, 1);
}

#[test]
fn streams_group_describe_response_v0() {
    let value = streams_group_describe_response::StreamsGroupDescribeResponse::default().with_throttle_time_ms(2).with_groups(vec![
        streams_group_describe_response::DescribedGroup::default()
            .with_error_code(4)
            .with_error_message(Some(StrBytes::from_static_str("s4")))
            .with_group_id(StrBytes::from_static_str("s5").into())
            .with_group_state(StrBytes::from_static_str("s6"))
            .with_group_epoch(8)
            .with_assignment_epoch(9)
            .with_topology(Some(streams_group_describe_response::Topology::default().with_epoch(11).with_subtopologies(Some(
                vec![streams_group_describe_response::Subtopology::default()
        .with_subtopology_id(StrBytes::from_static_str("s12"))
        .with_source_topics(vec![StrBytes::from_static_str("s13").into()])
        .with_repartition_sink_topics(vec![StrBytes::from_static_str("s14").into()])
        .with_state_changelog_topics(vec![streams_group_describe_response::TopicInfo::default()
        .with_name(StrBytes::from_static_str("s16").into())
        .with_partitions(18)
        .with_replication_factor(19)
        .with_topic_configs(vec![streams_group_describe_response::KeyValue::default()
        .with_key(StrBytes::from_static_str("s20"))
        .with_value(StrBytes::from_static_str("s21"))])])
        .with_repartition_source_topics(vec![streams_group_describe_response::TopicInfo::default()
        .with_name(StrBytes::from_static_str("s23").into())
        .with_partitions(25)
        .with_replication_factor(26)
        .with_topic_configs(vec![streams_group_describe_response::KeyValue::default()
        .with_key(StrBytes::from_static_str("s27"))
        .with_value(StrBytes::from_static_str("s28"))])])],
            ))))
            .with_members(vec![streams_group_describe_response::Member::default()
                .with_member_id(StrBytes::from_static_str("s30"))
                .with_member_epoch(32)
                .with_instance_id(Some(StrBytes::from_static_str("s32")))
                .with_rack_id(Some(StrBytes::from_static_str("s33")))
                .with_client_id(StrBytes::from_static_str("s34"))
                .with_client_host(StrBytes::from_static_str("s35"))
                .with_topology_epoch(37)
                .with_process_id(StrBytes::from_static_str("s37"))
                .with_user_endpoint(Some(
                    streams_group_describe_response::Endpoint::default().with_host(StrBytes::from_static_str("s39")).with_port(41),
                ))
                .with_client_tags(vec![streams_group_describe_response::KeyValue::default()
                    .with_key(StrBytes::from_static_str("s42"))
                    .with_value(StrBytes::from_static_str("s43"))])
                .with_task_offsets(vec![streams_group_describe_response::TaskOffset::default()
                    .with_subtopology_id(StrBytes::from_static_str("s45"))
                    .with_partition(47)
                    .with_offset(48)])
                .with_task_end_offsets(vec![streams_group_describe_response::TaskOffset::default()
                    .with_subtopology_id(StrBytes::from_static_str("s49"))
                    .with_partition(51)
                    .with_offset(52)])
                .with_assignment(
                    streams_group_describe_response::Assignment::default()
                        .with_active_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s54"))
                            .with_partitions(vec![56])])
                        .with_standby_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s57"))
                            .with_partitions(vec![59])])
                        .with_warmup_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s60"))
                            .with_partitions(vec![62])]),
                )
                .with_target_assignment(
                    streams_group_describe_response::Assignment::default()
                        .with_active_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s64"))
                            .with_partitions(vec![66])])
                        .with_standby_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s67"))
                            .with_partitions(vec![69])])
                        .with_warmup_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s70"))
                            .with_partitions(vec![72])]),
                )
                .with_is_classic(true)])
            .with_authorized_operations(74),
    ]);
    round_trip(value, 0);
}

#[test]
fn streams_group_describe_response_v1() {
    let value = streams_group_describe_response::StreamsGroupDescribeResponse::default().with_throttle_time_ms(2).with_groups(vec![
        streams_group_describe_response::DescribedGroup::default()
            .with_error_code(4)
            .with_error_message(Some(StrBytes::from_static_str("s4")))
            .with_group_id(StrBytes::from_static_str("s5").into())
            .with_group_state(StrBytes::from_static_str("s6"))
            .with_group_epoch(8)
            .with_assignment_epoch(9)
            .with_topology(Some(streams_group_describe_response::Topology::default().with_epoch(11).with_subtopologies(Some(
                vec![streams_group_describe_response::Subtopology::default()
        .with_subtopology_id(StrBytes::from_static_str("s12"))
        .with_source_topics(vec![StrBytes::from_static_str("s13").into()])
        .with_repartition_sink_topics(vec![StrBytes::from_static_str("s14").into()])
        .with_state_changelog_topics(vec![streams_group_describe_response::TopicInfo::default()
        .with_name(StrBytes::from_static_str("s16").into())
        .with_partitions(18)
        .with_replication_factor(19)
        .with_topic_configs(vec![streams_group_describe_response::KeyValue::default()
        .with_key(StrBytes::from_static_str("s20"))
        .with_value(StrBytes::from_static_str("s21"))])])
        .with_repartition_source_topics(vec![streams_group_describe_response::TopicInfo::default()
        .with_name(StrBytes::from_static_str("s23").into())
        .with_partitions(25)
        .with_replication_factor(26)
        .with_topic_configs(vec![streams_group_describe_response::KeyValue::default()
        .with_key(StrBytes::from_static_str("s27"))
        .with_value(StrBytes::from_static_str("s28"))])])],
            ))))
            .with_members(vec![streams_group_describe_response::Member::default()
                .with_member_id(StrBytes::from_static_str("s30"))
                .with_member_epoch(32)
                .with_instance_id(Some(StrBytes::from_static_str("s32")))
                .with_rack_id(Some(StrBytes::from_static_str("s33")))
                .with_client_id(StrBytes::from_static_str("s34"))
                .with_client_host(StrBytes::from_static_str("s35"))
                .with_topology_epoch(37)
                .with_process_id(StrBytes::from_static_str("s37"))
                .with_user_endpoint(Some(
                    streams_group_describe_response::Endpoint::default().with_host(StrBytes::from_static_str("s39")).with_port(41),
                ))
                .with_client_tags(vec![streams_group_describe_response::KeyValue::default()
                    .with_key(StrBytes::from_static_str("s42"))
                    .with_value(StrBytes::from_static_str("s43"))])
                .with_task_offsets(vec![streams_group_describe_response::TaskOffset::default()
                    .with_subtopology_id(StrBytes::from_static_str("s45"))
                    .with_partition(47)
                    .with_offset(48)])
                .with_task_end_offsets(vec![streams_group_describe_response::TaskOffset::default()
                    .with_subtopology_id(StrBytes::from_static_str("s49"))
                    .with_partition(51)
                    .with_offset(52)])
                .with_assignment(
                    streams_group_describe_response::Assignment::default()
                        .with_active_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s54"))
                            .with_partitions(vec![56])])
                        .with_standby_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s57"))
                            .with_partitions(vec![59])])
                        .with_warmup_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s60"))
                            .with_partitions(vec![62])]),
                )
                .with_target_assignment(
                    streams_group_describe_response::Assignment::default()
                        .with_active_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s64"))
                            .with_partitions(vec![66])])
                        .with_standby_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s67"))
                            .with_partitions(vec![69])])
                        .with_warmup_tasks(vec![streams_group_describe_response::TaskIds::default()
                            .with_subtopology_id(StrBytes::from_static_str("s70"))
                            .with_partitions(vec![72])]),
                )
                .with_is_classic(true)])
            .with_authorized_operations(74)
            .with_topology_description(Some(
                streams_group_describe_response::TopologyDescription::default()
                    .with_subtopologies(vec![streams_group_describe_response::TopologyDescriptionSubtopology::default()
                        .with_subtopology_id(StrBytes::from_static_str("s76"))
                        .with_nodes(vec![streams_group_describe_response::TopologyDescriptionNode::default()
                            .with_name(StrBytes::from_static_str("s78"))
                            .with_node_type(80)
                            .with_source_topics(vec![StrBytes::from_static_str("s80").into()])
                            .with_sink_topic(Some(StrBytes::from_static_str("s81").into()))
                            .with_stores(vec![StrBytes::from_static_str("s82")])
                            .with_successors(vec![StrBytes::from_static_str("s83")])])])
                    .with_global_stores(vec![streams_group_describe_response::TopologyDescriptionGlobalStore::default()
                        .with_source(
                            streams_group_describe_response::TopologyDescriptionNode::default()
                                .with_name(StrBytes::from_static_str("s86"))
                                .with_node_type(88)
                                .with_source_topics(vec![StrBytes::from_static_str("s88").into()])
                                .with_sink_topic(Some(StrBytes::from_static_str("s89").into()))
                                .with_stores(vec![StrBytes::from_static_str("s90")])
                                .with_successors(vec![StrBytes::from_static_str("s91")]),
                        )
                        .with_processor(
                            streams_group_describe_response::TopologyDescriptionNode::default()
                                .with_name(StrBytes::from_static_str("s93"))
                                .with_node_type(95)
                                .with_source_topics(vec![StrBytes::from_static_str("s95").into()])
                                .with_sink_topic(Some(StrBytes::from_static_str("s96").into()))
                                .with_stores(vec![StrBytes::from_static_str("s97")])
                                .with_successors(vec![StrBytes::from_static_str("s98")]),
                        )]),
            ))
            .with_topology_description_status(100)
            .with_assignor_name(Some(StrBytes::from_static_str("s100"))),
    ]);
    round_trip(value, 1);
}

#[test]
fn streams_group_topology_description_update_response_v0() {
    let value = streams_group_topology_description_update_response::StreamsGroupTopologyDescriptionUpdateResponse::default()
        .with_throttle_time_ms(2)
        .with_error_code(3)
        .with_error_message(Some(StrBytes::from_static_str("s3")));
    round_trip(value, 0);
}

#[test]
fn unregister_controller_response_v0() {
    let value = unregister_controller_response::UnregisterControllerResponse::default()
        .with_throttle_time_ms(2)
        .with_error_code(3)
        .with_error_message(Some(StrBytes::from_static_str("s3")));
    round_trip(value, 0);
}
