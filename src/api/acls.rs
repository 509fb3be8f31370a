//! CreateAcls, DescribeAcls and DeleteAcls. Creates and deletes go to the controller as
//! metadata records; describes read the published image. Without an authorizer Kafka
//! answers SECURITY_DISABLED, and so does this.

use std::collections::BTreeMap;

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{DeleteAclsFilterResult, DeleteAclsMatchingAcl};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::{sb, Ctx};
use crate::auth::{AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType};
use crate::error::Error;

/// Why these APIs are refused before any ACL is looked at, if they are.
fn refused(ctx: &Ctx<'_>, op: Operation) -> Option<Error> {
    if !ctx.authz_on() {
        return Some(Error::SecurityDisabled);
    }
    ctx.check_cluster(op).err()
}

fn opt(s: &Option<StrBytes>) -> Option<String> {
    s.as_ref().map(|s| s.to_string())
}

pub async fn create(ctx: &Ctx<'_>, req: CreateAclsRequest) -> CreateAclsResponse {
    let result = |e: Option<&Error>| match e {
        None => AclCreationResult::default(),
        Some(e) => AclCreationResult::default().with_error_code(e.code()).with_error_message(Some(sb(e.message()))),
    };
    if let Some(e) = refused(ctx, Operation::Alter) {
        return CreateAclsResponse::default().with_results(req.creations.iter().map(|_| result(Some(&e))).collect());
    }
    let acls: Vec<AclBinding> = req
        .creations
        .iter()
        .map(|c| AclBinding {
            resource_type: ResourceType::from_code(c.resource_type),
            resource_name: c.resource_name.to_string(),
            pattern_type: PatternType::from_code(c.resource_pattern_type),
            principal: c.principal.to_string(),
            host: c.host.to_string(),
            operation: Operation::from_code(c.operation),
            permission: Permission::from_code(c.permission_type),
        })
        .collect();
    // Bad entries are answered here; only valid ones go to the controller.
    let checked: Vec<Result<(), Error>> = acls.iter().map(|a| a.validate().map_err(Error::InvalidRequest)).collect();
    let valid: Vec<AclBinding> = acls.iter().zip(&checked).filter(|(_, c)| c.is_ok()).map(|(a, _)| a.clone()).collect();
    let mut created = if valid.is_empty() { Vec::new() } else { ctx.broker.create_acls(valid).await }.into_iter();
    let results = checked
        .into_iter()
        .map(|c| {
            let r = c.and_then(|()| created.next().unwrap_or(Err(Error::OperationNotAttempted)));
            result(r.err().as_ref())
        })
        .collect();
    CreateAclsResponse::default().with_results(results)
}

fn filter_of(
    rtype: i8,
    name: &Option<StrBytes>,
    pattern: i8,
    principal: &Option<StrBytes>,
    host: &Option<StrBytes>,
    op: i8,
    perm: i8,
) -> AclFilter {
    AclFilter {
        resource_type: ResourceType::from_code(rtype),
        resource_name: opt(name),
        pattern_type: PatternType::from_code(pattern),
        principal: opt(principal),
        host: opt(host),
        operation: Operation::from_code(op),
        permission: Permission::from_code(perm),
    }
}

pub async fn describe(ctx: &Ctx<'_>, req: DescribeAclsRequest) -> DescribeAclsResponse {
    let fail = |e: Error| DescribeAclsResponse::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())));
    if let Some(e) = refused(ctx, Operation::Describe) {
        return fail(e);
    }
    let f = filter_of(
        req.resource_type_filter,
        &req.resource_name_filter,
        req.pattern_type_filter,
        &req.principal_filter,
        &req.host_filter,
        req.operation,
        req.permission_type,
    );
    if f.is_unknown() {
        return fail(Error::InvalidRequest("the filter names an UNKNOWN resource type, pattern type, operation or permission".into()));
    }
    let img = ctx.broker.cluster.image();
    let mut by_resource: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    for (_, a) in img.acls.matching(&f) {
        by_resource.entry((a.resource_type.code(), a.resource_name.clone(), a.pattern_type.code())).or_default().push(
            AclDescription::default()
                .with_principal(sb(a.principal))
                .with_host(sb(a.host))
                .with_operation(a.operation.code())
                .with_permission_type(a.permission.code()),
        );
    }
    let resources = by_resource
        .into_iter()
        .map(|((t, name, p), acls)| {
            DescribeAclsResource::default().with_resource_type(t).with_resource_name(sb(name)).with_pattern_type(p).with_acls(acls)
        })
        .collect();
    DescribeAclsResponse::default().with_resources(resources)
}

pub async fn delete(ctx: &Ctx<'_>, req: DeleteAclsRequest) -> DeleteAclsResponse {
    let failed = |e: &Error| DeleteAclsFilterResult::default().with_error_code(e.code()).with_error_message(Some(sb(e.message())));
    if let Some(e) = refused(ctx, Operation::Alter) {
        return DeleteAclsResponse::default().with_filter_results(req.filters.iter().map(|_| failed(&e)).collect());
    }
    let filters: Vec<AclFilter> = req
        .filters
        .iter()
        .map(|f| {
            filter_of(
                f.resource_type_filter,
                &f.resource_name_filter,
                f.pattern_type_filter,
                &f.principal_filter,
                &f.host_filter,
                f.operation,
                f.permission_type,
            )
        })
        .collect();
    let results = ctx.broker.delete_acls(filters).await;
    let filter_results = results
        .into_iter()
        .map(|r| match r {
            Err(e) => failed(&e),
            Ok(acls) => DeleteAclsFilterResult::default().with_matching_acls(
                acls.into_iter()
                    .map(|a| {
                        DeleteAclsMatchingAcl::default()
                            .with_resource_type(a.resource_type.code())
                            .with_resource_name(sb(a.resource_name))
                            .with_pattern_type(a.pattern_type.code())
                            .with_principal(sb(a.principal))
                            .with_host(sb(a.host))
                            .with_operation(a.operation.code())
                            .with_permission_type(a.permission.code())
                    })
                    .collect(),
            ),
        })
        .collect();
    DeleteAclsResponse::default().with_filter_results(filter_results)
}
