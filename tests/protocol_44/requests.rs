use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::round_trip;

#[test]
fn add_raft_voter_request_v1() {
    let value = add_raft_voter_request::AddRaftVoterRequest::default()
        .with_cluster_id(Some(StrBytes::from_static_str("s1")))
        .with_timeout_ms(3)
        .with_voter_id(4)
        .with_voter_directory_id(Uuid::from_u128(4))
        .with_listeners(vec![add_raft_voter_request::Listener::default()
            .with_name(StrBytes::from_static_str("s6"))
            .with_host(StrBytes::from_static_str("s7"))
            .with_port(9)])
        .with_ack_when_committed(false);
    round_trip(value, 1);
}

#[test]
fn api_versions_request_v5() {
    let value = api_versions_request::ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("s1"))
        .with_client_software_version(StrBytes::from_static_str("s2"))
        .with_cluster_id(Some(StrBytes::from_static_str("s3")))
        .with_node_id(5);
    round_trip(value, 5);
}

#[test]
fn broker_heartbeat_request_v2() {
    let value = broker_heartbeat_request::BrokerHeartbeatRequest::default()
        .with_broker_id((2).into())
        .with_broker_epoch(3)
        .with_current_metadata_offset(4)
        .with_want_fence(true)
        .with_want_shut_down(true)
        .with_offline_log_dirs(vec![Uuid::from_u128(6)])
        .with_cordoned_log_dirs(Some(vec![Uuid::from_u128(7)]));
    round_trip(value, 2);
}

#[test]
fn delete_groups_request_v3() {
    let value = delete_groups_request::DeleteGroupsRequest::default().with_groups_names(vec![StrBytes::from_static_str("s1").into()]);
    round_trip(value, 3);
}

#[test]
fn describe_log_dirs_request_v5() {
    let value = describe_log_dirs_request::DescribeLogDirsRequest::default().with_topics(Some(vec![
        describe_log_dirs_request::DescribableLogDirTopic::default()
            .with_topic(StrBytes::from_static_str("s2").into())
            .with_partitions(vec![4]),
    ]));
    round_trip(value, 5);
}

#[test]
fn describe_share_group_offsets_request_v1() {
    let value = describe_share_group_offsets_request::DescribeShareGroupOffsetsRequest::default().with_groups(vec![
        describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup::default()
            .with_group_id(StrBytes::from_static_str("s2").into())
            .with_topics(Some(vec![describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestTopic::default()
                .with_topic_name(StrBytes::from_static_str("s4").into())
                .with_partitions(vec![6])])),
    ]);
    round_trip(value, 1);
}

#[test]
fn list_offsets_request_v11() {
    let value = list_offsets_request::ListOffsetsRequest::default()
        .with_replica_id((2).into())
        .with_isolation_level(3)
        .with_topics(vec![list_offsets_request::ListOffsetsTopic::default()
            .with_name(StrBytes::from_static_str("s4").into())
            .with_partitions(vec![list_offsets_request::ListOffsetsPartition::default()
                .with_partition_index(7)
                .with_current_leader_epoch(8)
                .with_timestamp(9)])])
        .with_timeout_ms(10);
    round_trip(value, 11);
}

#[test]
fn offset_commit_request_v10() {
    let value = offset_commit_request::OffsetCommitRequest::default()
        .with_group_id(StrBytes::from_static_str("s1").into())
        .with_generation_id_or_member_epoch(3)
        .with_member_id(StrBytes::from_static_str("s3"))
        .with_group_instance_id(Some(StrBytes::from_static_str("s4")))
        .with_topics(vec![offset_commit_request::OffsetCommitRequestTopic::default().with_topic_id(Uuid::from_u128(6)).with_partitions(
            vec![offset_commit_request::OffsetCommitRequestPartition::default()
                .with_partition_index(9)
                .with_committed_offset(10)
                .with_committed_leader_epoch(11)
                .with_committed_metadata(Some(StrBytes::from_static_str("s11")))],
        )]);
    round_trip(value, 10);
}

#[test]
fn offset_fetch_request_v10() {
    let value = offset_fetch_request::OffsetFetchRequest::default()
        .with_groups(vec![offset_fetch_request::OffsetFetchRequestGroup::default()
            .with_group_id(StrBytes::from_static_str("s2").into())
            .with_member_id(Some(StrBytes::from_static_str("s3")))
            .with_member_epoch(5)
            .with_topics(Some(vec![offset_fetch_request::OffsetFetchRequestTopics::default()
                .with_topic_id(Uuid::from_u128(6))
                .with_partition_indexes(vec![8])]))])
        .with_require_stable(true);
    round_trip(value, 10);
}

#[test]
fn read_share_group_state_summary_request_v1() {
    let value = read_share_group_state_summary_request::ReadShareGroupStateSummaryRequest::default()
        .with_group_id(StrBytes::from_static_str("s1"))
        .with_topics(vec![read_share_group_state_summary_request::ReadStateSummaryData::default()
            .with_topic_id(Uuid::from_u128(3))
            .with_partitions(vec![read_share_group_state_summary_request::PartitionData::default()
                .with_partition(6)
                .with_leader_epoch(7)])]);
    round_trip(value, 1);
}

#[test]
fn share_acknowledge_request_v2() {
    let value = share_acknowledge_request::ShareAcknowledgeRequest::default()
        .with_group_id(Some(StrBytes::from_static_str("s1").into()))
        .with_member_id(Some(StrBytes::from_static_str("s2")))
        .with_share_session_epoch(4)
        .with_is_renew_ack(true)
        .with_topics(vec![share_acknowledge_request::AcknowledgeTopic::default().with_topic_id(Uuid::from_u128(6)).with_partitions(vec![
            share_acknowledge_request::AcknowledgePartition::default().with_partition_index(9).with_acknowledgement_batches(vec![
                share_acknowledge_request::AcknowledgementBatch::default()
                    .with_first_offset(11)
                    .with_last_offset(12)
                    .with_acknowledge_types(vec![13]),
            ]),
        ])]);
    round_trip(value, 2);
}

#[test]
fn share_fetch_request_v2() {
    let value = share_fetch_request::ShareFetchRequest::default()
        .with_group_id(Some(StrBytes::from_static_str("s1").into()))
        .with_member_id(Some(StrBytes::from_static_str("s2")))
        .with_share_session_epoch(4)
        .with_max_wait_ms(5)
        .with_min_bytes(6)
        .with_max_bytes(7)
        .with_max_records(8)
        .with_batch_size(9)
        .with_share_acquire_mode(10)
        .with_is_renew_ack(true)
        .with_topics(vec![share_fetch_request::FetchTopic::default().with_topic_id(Uuid::from_u128(12)).with_partitions(vec![
            share_fetch_request::FetchPartition::default().with_partition_index(15).with_acknowledgement_batches(vec![
                share_fetch_request::AcknowledgementBatch::default()
                    .with_first_offset(17)
                    .with_last_offset(18)
                    .with_acknowledge_types(vec![19]),
            ]),
        ])])
        .with_forgotten_topics_data(vec![share_fetch_request::ForgottenTopic::default()
            .with_topic_id(Uuid::from_u128(20))
            .with_partitions(vec![22])]);
    round_trip(value, 2);
}

#[test]
fn txn_offset_commit_request_v6() {
    let value = txn_offset_commit_request::TxnOffsetCommitRequest::default()
        .with_transactional_id(StrBytes::from_static_str("s1").into())
        .with_group_id(StrBytes::from_static_str("s2").into())
        .with_producer_id((4).into())
        .with_producer_epoch(5)
        .with_generation_id_or_member_epoch(6)
        .with_member_id(StrBytes::from_static_str("s6"))
        .with_group_instance_id(Some(StrBytes::from_static_str("s7")))
        .with_topics(vec![txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
            .with_topic_id(Uuid::from_u128(9))
            .with_partitions(vec![txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                .with_partition_index(12)
                .with_committed_offset(13)
                .with_committed_leader_epoch(14)
                .with_committed_metadata(Some(StrBytes::from_static_str("s14")))])]);
    round_trip(value, 6);
}

#[test]
fn write_share_group_state_request_v1() {
    let value = write_share_group_state_request::WriteShareGroupStateRequest::default()
        .with_group_id(StrBytes::from_static_str("s1"))
        .with_topics(vec![write_share_group_state_request::WriteStateData::default().with_topic_id(Uuid::from_u128(3)).with_partitions(
            vec![write_share_group_state_request::PartitionData::default()
                .with_partition(6)
                .with_state_epoch(7)
                .with_leader_epoch(8)
                .with_start_offset(9)
                .with_delivery_complete_count(10)
                .with_state_batches(vec![write_share_group_state_request::StateBatch::default()
                    .with_first_offset(12)
                    .with_last_offset(13)
                    .with_delivery_state(14)
                    .with_delivery_count(15)])],
        )]);
    round_trip(value, 1);
}

#[test]
fn write_txn_markers_request_v2() {
    let value = write_txn_markers_request::WriteTxnMarkersRequest::default().with_markers(vec![
        write_txn_markers_request::WritableTxnMarker::default()
            .with_producer_id((3).into())
            .with_producer_epoch(4)
            .with_transaction_result(true)
            .with_topics(vec![write_txn_markers_request::WritableTxnMarkerTopic::default()
                .with_name(StrBytes::from_static_str("s6").into())
                .with_partition_indexes(vec![8])])
            .with_coordinator_epoch(9)
            .with_transaction_version(10),
    ]);
    round_trip(value, 2);
}

#[test]
fn streams_group_heartbeat_request_v0() {
    let value = streams_group_heartbeat_request::StreamsGroupHeartbeatRequest::default()
        .with_group_id(StrBytes::from_static_str("s1").into())
        .with_member_id(StrBytes::from_static_str("s2"))
        .with_member_epoch(4)
        .with_endpoint_information_epoch(5)
        .with_instance_id(Some(StrBytes::from_static_str("s5")))
        .with_rack_id(Some(StrBytes::from_static_str("s6")))
        .with_rebalance_timeout_ms(8)
        .with_topology(Some(streams_group_heartbeat_request::Topology::default().with_epoch(10).with_subtopologies(
            vec![streams_group_heartbeat_request::Subtopology::default()
        .with_subtopology_id(StrBytes::from_static_str("s11"))
        .with_source_topics(vec![StrBytes::from_static_str("s12").into()])
        .with_source_topic_regex(vec![StrBytes::from_static_str("s13")])
        .with_state_changelog_topics(vec![streams_group_heartbeat_request::TopicInfo::default()
        .with_name(StrBytes::from_static_str("s15").into())
        .with_partitions(17)
        .with_replication_factor(18)
        .with_topic_configs(vec![streams_group_heartbeat_request::KeyValue::default()
        .with_key(StrBytes::from_static_str("s19"))
        .with_value(StrBytes::from_static_str("s20"))])])
        .with_repartition_sink_topics(vec![StrBytes::from_static_str("s21").into()])
        .with_repartition_source_topics(vec![streams_group_heartbeat_request::TopicInfo::default()
        .with_name(StrBytes::from_static_str("s23").into())
        .with_partitions(25)
        .with_replication_factor(26)
        .with_topic_configs(vec![streams_group_heartbeat_request::KeyValue::default()
        .with_key(StrBytes::from_static_str("s27"))
        .with_value(StrBytes::from_static_str("s28"))])])
        .with_copartition_groups(vec![streams_group_heartbeat_request::CopartitionGroup::default()
        .with_source_topics(vec![31])
        .with_source_topic_regex(vec![32])
        .with_repartition_source_topics(vec![33])])],
        )))
        .with_active_tasks(Some(vec![streams_group_heartbeat_request::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s34"))
            .with_partitions(vec![36])]))
        .with_standby_tasks(Some(vec![streams_group_heartbeat_request::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s37"))
            .with_partitions(vec![39])]))
        .with_warmup_tasks(Some(vec![streams_group_heartbeat_request::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s40"))
            .with_partitions(vec![42])]))
        .with_process_id(Some(StrBytes::from_static_str("s42")))
        .with_user_endpoint(Some(
            streams_group_heartbeat_request::Endpoint::default().with_host(StrBytes::from_static_str("s44")).with_port(46),
        ))
        .with_client_tags(Some(vec![streams_group_heartbeat_request::KeyValue::default()
            .with_key(StrBytes::from_static_str("s47"))
            .with_value(StrBytes::from_static_str("s48"))]))
        .with_task_offsets(Some(vec![streams_group_heartbeat_request::TaskOffset::default()
            .with_subtopology_id(StrBytes::from_static_str("s50"))
            .with_partition(52)
            .with_offset(53)]))
        .with_task_end_offsets(Some(vec![streams_group_heartbeat_request::TaskOffset::default()
            .with_subtopology_id(StrBytes::from_static_str("s54"))
            .with_partition(56)
            .with_offset(57)]))
        .with_shutdown_application(true);
    round_trip(value, 0);
}

#[test]
fn streams_group_heartbeat_request_v1() {
    let value = streams_group_heartbeat_request::StreamsGroupHeartbeatRequest::default()
        .with_group_id(StrBytes::from_static_str("s1").into())
        .with_member_id(StrBytes::from_static_str("s2"))
        .with_member_epoch(4)
        .with_endpoint_information_epoch(5)
        .with_instance_id(Some(StrBytes::from_static_str("s5")))
        .with_rack_id(Some(StrBytes::from_static_str("s6")))
        .with_rebalance_timeout_ms(8)
        .with_topology(Some(streams_group_heartbeat_request::Topology::default().with_epoch(10).with_subtopologies(
            vec![streams_group_heartbeat_request::Subtopology::default()
        .with_subtopology_id(StrBytes::from_static_str("s11"))
        .with_source_topics(vec![StrBytes::from_static_str("s12").into()])
        .with_source_topic_regex(vec![StrBytes::from_static_str("s13")])
        .with_state_changelog_topics(vec![streams_group_heartbeat_request::TopicInfo::default()
        .with_name(StrBytes::from_static_str("s15").into())
        .with_partitions(17)
        .with_replication_factor(18)
        .with_topic_configs(vec![streams_group_heartbeat_request::KeyValue::default()
        .with_key(StrBytes::from_static_str("s19"))
        .with_value(StrBytes::from_static_str("s20"))])])
        .with_repartition_sink_topics(vec![StrBytes::from_static_str("s21").into()])
        .with_repartition_source_topics(vec![streams_group_heartbeat_request::TopicInfo::default()
        .with_name(StrBytes::from_static_str("s23").into())
        .with_partitions(25)
        .with_replication_factor(26)
        .with_topic_configs(vec![streams_group_heartbeat_request::KeyValue::default()
        .with_key(StrBytes::from_static_str("s27"))
        .with_value(StrBytes::from_static_str("s28"))])])
        .with_copartition_groups(vec![streams_group_heartbeat_request::CopartitionGroup::default()
        .with_source_topics(vec![31])
        .with_source_topic_regex(vec![32])
        .with_repartition_source_topics(vec![33])])],
        )))
        .with_active_tasks(Some(vec![streams_group_heartbeat_request::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s34"))
            .with_partitions(vec![36])]))
        .with_standby_tasks(Some(vec![streams_group_heartbeat_request::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s37"))
            .with_partitions(vec![39])]))
        .with_warmup_tasks(Some(vec![streams_group_heartbeat_request::TaskIds::default()
            .with_subtopology_id(StrBytes::from_static_str("s40"))
            .with_partitions(vec![42])]))
        .with_process_id(Some(StrBytes::from_static_str("s42")))
        .with_user_endpoint(Some(
            streams_group_heartbeat_request::Endpoint::default().with_host(StrBytes::from_static_str("s44")).with_port(46),
        ))
        .with_client_tags(Some(vec![streams_group_heartbeat_request::KeyValue::default()
            .with_key(StrBytes::from_static_str("s47"))
            .with_value(StrBytes::from_static_str("s48"))]))
        .with_task_offsets(Some(vec![streams_group_heartbeat_request::TaskOffset::default()
            .with_subtopology_id(StrBytes::from_static_str("s50"))
            .with_partition(52)
            .with_offset(53)]))
        .with_task_end_offsets(Some(vec![streams_group_heartbeat_request::TaskOffset::default()
            .with_subtopology_id(StrBytes::from_static_str("s54"))
            .with_partition(56)
            .with_offset(57)]))
        .with_shutdown_application(true);
    round_trip(value, 1);
}

#[test]
fn streams_group_describe_request_v0() {
    let value = streams_group_describe_request::StreamsGroupDescribeRequest::default()
        .with_group_ids(vec![StrBytes::from_static_str("s1").into()])
        .with_include_authorized_operations(true);
    round_trip(value, 0);
}

#[test]
fn streams_group_describe_request_v1() {
    let value = streams_group_describe_request::StreamsGroupDescribeRequest::default()
        .with_group_ids(vec![StrBytes::from_static_str("s1").into()])
        .with_include_authorized_operations(true)
        .with_include_topology_description(true);
    round_trip(value, 1);
}

#[test]
fn streams_group_topology_description_update_request_v0() {
    let value = streams_group_topology_description_update_request::StreamsGroupTopologyDescriptionUpdateRequest::default()
        .with_group_id(StrBytes::from_static_str("s1").into())
        .with_member_id(StrBytes::from_static_str("s2"))
        .with_topology_epoch(4)
        .with_topology_description(
            streams_group_topology_description_update_request::TopologyDescription::default()
                .with_subtopologies(vec![streams_group_topology_description_update_request::TopologyDescriptionSubtopology::default()
                    .with_subtopology_id(StrBytes::from_static_str("s6"))
                    .with_nodes(vec![streams_group_topology_description_update_request::TopologyDescriptionNode::default()
                        .with_name(StrBytes::from_static_str("s8"))
                        .with_node_type(10)
                        .with_source_topics(vec![StrBytes::from_static_str("s10").into()])
                        .with_sink_topic(Some(StrBytes::from_static_str("s11").into()))
                        .with_stores(vec![StrBytes::from_static_str("s12")])
                        .with_successors(vec![StrBytes::from_static_str("s13")])])])
                .with_global_stores(vec![streams_group_topology_description_update_request::TopologyDescriptionGlobalStore::default()
                    .with_source(
                        streams_group_topology_description_update_request::TopologyDescriptionNode::default()
                            .with_name(StrBytes::from_static_str("s16"))
                            .with_node_type(18)
                            .with_source_topics(vec![StrBytes::from_static_str("s18").into()])
                            .with_sink_topic(Some(StrBytes::from_static_str("s19").into()))
                            .with_stores(vec![StrBytes::from_static_str("s20")])
                            .with_successors(vec![StrBytes::from_static_str("s21")]),
                    )
                    .with_processor(
                        streams_group_topology_description_update_request::TopologyDescriptionNode::default()
                            .with_name(StrBytes::from_static_str("s23"))
                            .with_node_type(25)
                            .with_source_topics(vec![StrBytes::from_static_str("s25").into()])
                            .with_sink_topic(Some(StrBytes::from_static_str("s26").into()))
                            .with_stores(vec![StrBytes::from_static_str("s27")])
                            .with_successors(vec![StrBytes::from_static_str("s28")]),
                    )]),
        );
    round_trip(value, 0);
}

#[test]
fn unregister_controller_request_v0() {
    let value = unregister_controller_request::UnregisterControllerRequest::default().with_controller_id(2);
    round_trip(value, 0);
}
