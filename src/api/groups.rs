//! The classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, plus
//! ListGroups, DescribeGroups and DeleteGroups.

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::*;

use super::{sb, Ctx};
use crate::auth::{Operation, ResourceType};
use crate::error::Error;
use crate::group::classic::JoinRequest;

fn code(e: &Option<Error>) -> i16 {
    e.as_ref().map_or(0, Error::code)
}

pub async fn join_group(ctx: &Ctx<'_>, req: JoinGroupRequest) -> JoinGroupResponse {
    let v = ctx.version;
    if req.group_id.0.is_empty() {
        return JoinGroupResponse::default()
            .with_error_code(Error::InvalidGroupId.code())
            .with_generation_id(-1)
            .with_member_id(req.member_id);
    }
    // A share group's id is taken: Kafka 4.4 refuses a classic member there as a protocol
    // that does not fit the group.
    if let Err(e) = ctx
        .check_group(Operation::Read, &req.group_id.0)
        .and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &req.group_id.0))
        .and_then(|()| if ctx.broker.shares.is_share_group(&req.group_id.0) { Err(Error::InconsistentGroupProtocol) } else { Ok(()) })
    {
        return JoinGroupResponse::default().with_error_code(e.code()).with_generation_id(-1).with_member_id(req.member_id);
    }
    let jr = JoinRequest {
        member_id: req.member_id.to_string(),
        instance_id: req.group_instance_id.as_ref().map(|s| s.to_string()),
        client_id: ctx.client_id.clone(),
        client_host: ctx.client_host.clone(),
        protocol_type: req.protocol_type.to_string(),
        protocols: req.protocols.iter().map(|p| (p.name.to_string(), p.metadata.clone())).collect(),
        session_timeout_ms: req.session_timeout_ms,
        // v0 has no rebalance timeout: it equals the session timeout.
        rebalance_timeout_ms: if v >= 1 { req.rebalance_timeout_ms } else { req.session_timeout_ms },
        require_known_member_id: v >= 4,
        version: v,
    };
    let r = ctx.broker.groups.join(&**ctx.broker, &req.group_id.0, jr).await;
    let members = r
        .members
        .into_iter()
        .map(|(id, inst, meta)| {
            let m = JoinGroupResponseMember::default().with_member_id(sb(id)).with_metadata(meta);
            if v >= 5 {
                m.with_group_instance_id(inst.map(sb))
            } else {
                m
            }
        })
        .collect();
    let resp = JoinGroupResponse::default()
        .with_error_code(code(&r.error))
        .with_generation_id(r.generation)
        .with_protocol_name(if v >= 7 { r.protocol.map(sb) } else { Some(sb(r.protocol.unwrap_or_default())) })
        .with_leader(sb(r.leader))
        .with_member_id(sb(r.member_id))
        .with_members(members);
    let resp = if v >= 7 { resp.with_protocol_type(r.protocol_type.map(sb)) } else { resp };
    if v >= 9 {
        resp.with_skip_assignment(r.skip_assignment)
    } else {
        resp
    }
}

pub async fn sync_group(ctx: &Ctx<'_>, req: SyncGroupRequest) -> SyncGroupResponse {
    let v = ctx.version;
    if let Err(e) =
        ctx.check_group(Operation::Read, &req.group_id.0).and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &req.group_id.0))
    {
        return SyncGroupResponse::default().with_error_code(e.code());
    }
    let assignments = req.assignments.iter().map(|a| (a.member_id.to_string(), a.assignment.clone())).collect();
    let r = ctx
        .broker
        .groups
        .sync(
            &**ctx.broker,
            &req.group_id.0,
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id,
            req.protocol_type.as_deref(),
            req.protocol_name.as_deref(),
            assignments,
        )
        .await;
    // The group's new assignment is stored before anyone is told it.
    let stored = ctx.broker.groups.wait_durable(&**ctx.broker, &req.group_id.0).await;
    let error = if r.error.is_none() { stored.err() } else { r.error };
    let resp = SyncGroupResponse::default().with_error_code(code(&error)).with_assignment(r.assignment);
    if v >= 5 {
        resp.with_protocol_type(r.protocol_type.map(sb)).with_protocol_name(r.protocol.map(sb))
    } else {
        resp
    }
}

pub async fn heartbeat(ctx: &Ctx<'_>, req: HeartbeatRequest) -> HeartbeatResponse {
    let r = ctx
        .check_group(Operation::Read, &req.group_id.0)
        .and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &req.group_id.0))
        .and_then(|_| ctx.broker.groups.heartbeat(&req.group_id.0, &req.member_id, req.group_instance_id.as_deref(), req.generation_id));
    HeartbeatResponse::default().with_error_code(r.err().map_or(0, |e| e.code()))
}

pub async fn leave_group(ctx: &Ctx<'_>, req: LeaveGroupRequest) -> LeaveGroupResponse {
    let groups = &ctx.broker.groups;
    if let Err(e) =
        ctx.check_group(Operation::Read, &req.group_id.0).and_then(|()| groups.check_coordinator(&**ctx.broker, &req.group_id.0))
    {
        return LeaveGroupResponse::default().with_error_code(e.code());
    }
    if ctx.version < 3 {
        let r = groups.leave(&**ctx.broker, &req.group_id.0, &req.member_id, None);
        return LeaveGroupResponse::default().with_error_code(r.err().map_or(0, |e| e.code()));
    }
    let members: Vec<MemberResponse> = req
        .members
        .iter()
        .map(|m| {
            let r = groups.leave(&**ctx.broker, &req.group_id.0, &m.member_id, m.group_instance_id.as_deref());
            MemberResponse::default()
                .with_member_id(m.member_id.clone())
                .with_group_instance_id(m.group_instance_id.clone())
                .with_error_code(r.err().map_or(0, |e| e.code()))
        })
        .collect();
    LeaveGroupResponse::default().with_members(members)
}

pub async fn list_groups(ctx: &Ctx<'_>, req: ListGroupsRequest) -> ListGroupsResponse {
    let v = ctx.version;
    let states: Vec<String> = req.states_filter.iter().map(|s| s.to_lowercase()).collect();
    let types: Vec<String> = req.types_filter.iter().map(|s| s.to_lowercase()).collect();
    // Kafka: CLUSTER DESCRIBE lists every group, otherwise those the client may DESCRIBE.
    let all = ctx.cluster_allowed(Operation::Describe);
    let groups = ctx
        .broker
        .groups
        .list()
        .into_iter()
        .chain(ctx.broker.shares.list().into_iter().map(|(id, st)| (id, "share".to_string(), st, "share")))
        .filter(|(_, _, st, _)| states.is_empty() || states.contains(&st.to_lowercase()))
        .filter(|(_, _, _, ty)| types.is_empty() || types.iter().any(|t| t == ty))
        .filter(|(id, _, _, _)| all || ctx.group_allowed(Operation::Describe, id))
        .map(|(id, pt, st, ty)| {
            let g = ListedGroup::default().with_group_id(sb(id).into()).with_protocol_type(sb(pt));
            let g = if v >= 4 { g.with_group_state(sb(st)) } else { g };
            if v >= 5 {
                g.with_group_type(sb(ty))
            } else {
                g
            }
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}

pub async fn describe_groups(ctx: &Ctx<'_>, req: DescribeGroupsRequest) -> DescribeGroupsResponse {
    let v = ctx.version;
    let groups = req
        .groups
        .into_iter()
        .map(|gid| {
            let g = DescribedGroup::default().with_group_id(gid.clone());
            if let Err(e) = ctx.check_group(Operation::Describe, &gid.0) {
                return g.with_error_code(e.code()).with_error_message((v >= 6).then(|| sb(e.message())));
            }
            let ops =
                if v >= 3 && req.include_authorized_operations { ctx.authorized_operations(ResourceType::Group, &gid.0) } else { i32::MIN };
            let g = if v >= 3 { g.with_authorized_operations(ops) } else { g };
            if let Err(e) = ctx.broker.groups.check_coordinator(&**ctx.broker, &gid.0) {
                return g.with_error_code(e.code()).with_group_state(sb("Dead"));
            }
            if ctx.broker.groups.consumer_describe(&gid.0).is_ok() || ctx.broker.shares.is_share_group(&gid.0) {
                let e = Error::GroupIdNotFound(format!("group {} is not a classic group", &*gid.0));
                return g.with_error_code(e.code()).with_error_message((v >= 6).then(|| sb(e.message()))).with_group_state(sb("Dead"));
            }
            match ctx.broker.groups.describe(&gid.0) {
                None if v >= 6 => {
                    let e = Error::GroupIdNotFound(gid.0.to_string());
                    g.with_error_code(e.code()).with_error_message(Some(sb(e.message()))).with_group_state(sb("Dead"))
                }
                None => g.with_group_state(sb("Dead")),
                Some(d) => {
                    g.with_group_state(sb(d.state)).with_protocol_type(sb(d.protocol_type)).with_protocol_data(sb(d.protocol)).with_members(
                        d.members
                            .into_iter()
                            .map(|(id, inst, client, host, meta, assign)| {
                                let m = DescribedGroupMember::default()
                                    .with_member_id(sb(id))
                                    .with_client_id(sb(client))
                                    .with_client_host(sb(host))
                                    .with_member_metadata(meta)
                                    .with_member_assignment(assign);
                                if v >= 4 {
                                    m.with_group_instance_id(inst.map(sb))
                                } else {
                                    m
                                }
                            })
                            .collect(),
                    )
                }
            }
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

pub async fn delete_groups(ctx: &Ctx<'_>, req: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let mut results = Vec::with_capacity(req.groups_names.len());
    for gid in req.groups_names {
        let r = ctx.check_group(Operation::Delete, &gid.0).and_then(|()| ctx.broker.groups.check_coordinator(&**ctx.broker, &gid.0));
        let r = match r {
            // A share group's durable state goes with it, on every share coordinator.
            Ok(_) if ctx.broker.shares.is_share_group(&gid.0) => ctx.broker.delete_share_group(&gid.0).await,
            Ok(_) => ctx.broker.groups.delete_group(&**ctx.broker, &gid.0),
            Err(e) => Err(e),
        };
        // v3 adds the cause of a failure next to its code.
        let message = r.as_ref().err().filter(|_| ctx.version >= 3).map(|e| sb(e.message()));
        results.push(
            delete_groups_response::DeletableGroupResult::default()
                .with_group_id(gid)
                .with_error_code(r.err().map_or(0, |e| e.code()))
                .with_error_message(message),
        );
    }
    DeleteGroupsResponse::default().with_results(results)
}
