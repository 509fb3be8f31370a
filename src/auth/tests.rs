use uuid::Uuid;

use super::acl::*;
use super::authorizer::*;

fn acl(rtype: ResourceType, name: &str, pattern: PatternType, principal: &str, host: &str, op: Operation, perm: Permission) -> AclBinding {
    AclBinding {
        resource_type: rtype,
        resource_name: name.into(),
        pattern_type: pattern,
        principal: principal.into(),
        host: host.into(),
        operation: op,
        permission: perm,
    }
}

fn topic(name: &str, pattern: PatternType, op: Operation, perm: Permission) -> AclBinding {
    acl(ResourceType::Topic, name, pattern, "User:alice", "*", op, perm)
}

fn set(list: Vec<AclBinding>) -> Acls {
    let mut a = Acls::default();
    for (i, b) in list.into_iter().enumerate() {
        a.insert(Uuid::from_u128(i as u128 + 1), b);
    }
    a
}

const ALICE: Requester<'static> = Requester { principal: "User:alice", host: "10.0.0.1" };
const BOB: Requester<'static> = Requester { principal: "User:bob", host: "10.0.0.2" };

fn authz(acls: &Acls) -> Authorizer<'_> {
    Authorizer { acls, super_users: &[], allow_if_no_acl: false }
}

use Operation::*;
use PatternType::*;
use Permission::*;

#[test]
fn deny_beats_allow() {
    let acls = set(vec![topic("orders", Literal, Read, Allow), topic("ord", Prefixed, Read, Deny)]);
    assert!(!authz(&acls).authorize(&ALICE, Read, ResourceType::Topic, "orders"));
    let acls = set(vec![topic("orders", Literal, All, Allow), topic("*", Literal, All, Deny)]);
    assert!(!authz(&acls).authorize(&ALICE, Write, ResourceType::Topic, "orders"));
}

#[test]
fn read_write_delete_alter_imply_describe_but_deny_does_not_imply() {
    for op in [Read, Write, Delete, Alter] {
        let acls = set(vec![topic("t", Literal, op, Allow)]);
        assert!(authz(&acls).authorize(&ALICE, Describe, ResourceType::Topic, "t"), "{op:?}");
        assert!(!authz(&acls).authorize(&ALICE, Create, ResourceType::Topic, "t"), "{op:?}");
    }
    let acls = set(vec![topic("t", Literal, AlterConfigs, Allow)]);
    assert!(authz(&acls).authorize(&ALICE, DescribeConfigs, ResourceType::Topic, "t"));
    assert!(!authz(&acls).authorize(&ALICE, Describe, ResourceType::Topic, "t"));
    // A DENY of READ refuses READ only; DESCRIBE still follows the ALLOW.
    let acls = set(vec![topic("t", Literal, All, Allow), topic("t", Literal, Read, Deny)]);
    assert!(authz(&acls).authorize(&ALICE, Describe, ResourceType::Topic, "t"));
    assert!(!authz(&acls).authorize(&ALICE, Read, ResourceType::Topic, "t"));
}

#[test]
fn prefixed_patterns_apply_to_names_that_start_with_them() {
    let acls = set(vec![topic("pay.", Prefixed, Write, Allow), topic("pay.eu", Literal, Write, Deny)]);
    let a = authz(&acls);
    assert!(a.authorize(&ALICE, Write, ResourceType::Topic, "pay.us"));
    assert!(a.authorize(&ALICE, Write, ResourceType::Topic, "pay."));
    assert!(!a.authorize(&ALICE, Write, ResourceType::Topic, "pay.eu"));
    assert!(!a.authorize(&ALICE, Write, ResourceType::Topic, "pay"));
    assert!(!a.authorize(&ALICE, Write, ResourceType::Topic, "other"));
    assert!(!a.authorize(&ALICE, Write, ResourceType::Group, "pay.us"), "the type must match too");
    // A prefix on a multi-byte character boundary that does not fall inside the name.
    let acls = set(vec![topic("é", Prefixed, Write, Allow)]);
    assert!(!authz(&acls).authorize(&ALICE, Write, ResourceType::Topic, "a"));
}

#[test]
fn wildcards_for_resource_principal_and_host() {
    let acls = set(vec![acl(ResourceType::Topic, "*", Literal, "User:*", "*", Read, Allow)]);
    assert!(authz(&acls).authorize(&BOB, Read, ResourceType::Topic, "anything"));
    let acls = set(vec![acl(ResourceType::Topic, "t", Literal, "User:alice", "10.0.0.1", Read, Allow)]);
    assert!(authz(&acls).authorize(&ALICE, Read, ResourceType::Topic, "t"));
    let elsewhere = Requester { principal: "User:alice", host: "10.0.0.9" };
    assert!(!authz(&acls).authorize(&elsewhere, Read, ResourceType::Topic, "t"));
    assert!(!authz(&acls).authorize(&BOB, Read, ResourceType::Topic, "t"));
}

#[test]
fn super_users_and_allow_everyone_if_no_acl_found() {
    let acls = set(vec![topic("t", Literal, Read, Deny)]);
    let supers = ["User:bob".to_string()];
    let a = Authorizer { acls: &acls, super_users: &supers, allow_if_no_acl: false };
    assert!(a.authorize(&BOB, Read, ResourceType::Topic, "t"), "super users pass even a DENY");
    assert!(!a.authorize(&ALICE, Read, ResourceType::Topic, "u"), "no ACL: denied by default");
    let a = Authorizer { acls: &acls, super_users: &[], allow_if_no_acl: true };
    assert!(a.authorize(&ALICE, Read, ResourceType::Topic, "u"), "no ACL at all on u");
    assert!(!a.authorize(&BOB, Write, ResourceType::Topic, "t"), "t has an ACL, even if not bob's");
}

#[test]
fn removal_keeps_the_index_consistent() {
    let mut acls = set(vec![topic("a.", Prefixed, Read, Allow), topic("a.", Prefixed, Write, Allow), topic("x", Literal, Read, Allow)]);
    assert!(authz(&acls).authorize(&ALICE, Read, ResourceType::Topic, "a.b"));
    acls.remove(Uuid::from_u128(1));
    assert!(!authz(&acls).authorize(&ALICE, Read, ResourceType::Topic, "a.b"));
    assert!(authz(&acls).authorize(&ALICE, Write, ResourceType::Topic, "a.b"));
    acls.remove(Uuid::from_u128(2));
    assert!(!authz(&acls).authorize(&ALICE, Write, ResourceType::Topic, "a.b"));
    assert_eq!(acls.len(), 1);
    let back: Acls = serde_json::from_slice(&serde_json::to_vec(&acls).unwrap()).unwrap();
    assert_eq!(back, acls);
    assert!(authz(&back).authorize(&ALICE, Read, ResourceType::Topic, "x"));
}

#[test]
fn thousands_of_acls_do_not_change_the_answer() {
    let mut list: Vec<AclBinding> = (0..5000).map(|i| topic(&format!("t{i}"), Literal, Read, Allow)).collect();
    list.extend((0..500).map(|i| topic(&format!("p{i}."), Prefixed, Write, Allow)));
    let acls = set(list);
    let a = authz(&acls);
    assert!(a.authorize(&ALICE, Read, ResourceType::Topic, "t4999"));
    assert!(a.authorize(&ALICE, Write, ResourceType::Topic, "p499.x"));
    assert!(!a.authorize(&ALICE, Write, ResourceType::Topic, "t1"));
}

#[test]
fn authorize_any_finds_an_allow_not_covered_by_a_deny() {
    let acls = set(vec![topic("t", Literal, Write, Allow)]);
    assert!(authz(&acls).authorize_any(&ALICE, Write, ResourceType::Topic));
    assert!(!authz(&acls).authorize_any(&BOB, Write, ResourceType::Topic));
    let acls = set(vec![topic("t", Literal, Write, Allow), topic("*", Literal, Write, Deny)]);
    assert!(!authz(&acls).authorize_any(&ALICE, Write, ResourceType::Topic));
}

#[test]
fn filters_match_as_kafka_does() {
    let lit = topic("orders", Literal, Read, Allow);
    let pre = topic("ord", Prefixed, Read, Allow);
    let wild = topic("*", Literal, Read, Allow);
    let f = |pattern, name: Option<&str>| AclFilter {
        resource_type: ResourceType::Any,
        resource_name: name.map(String::from),
        pattern_type: pattern,
        principal: None,
        host: None,
        operation: Operation::Any,
        permission: Permission::Any,
    };
    let m = f(Match, Some("orders"));
    assert!(m.matches(&lit) && m.matches(&pre) && m.matches(&wild));
    assert!(!f(Match, Some("other")).matches(&pre));
    assert!(f(PatternType::Any, Some("ord")).matches(&pre) && !f(PatternType::Any, Some("ord")).matches(&lit));
    assert!(f(Literal, None).matches(&lit) && !f(Literal, None).matches(&pre));
    assert!(!f(Prefixed, Some("orders")).matches(&pre));
    assert!(f(PatternType::Unknown, None).is_unknown());
}

#[test]
fn bindings_are_validated_as_kafka_does() {
    assert!(topic("t", Literal, Read, Allow).validate().is_ok());
    assert!(topic("t", Match, Read, Allow).validate().is_err());
    assert!(topic("t", Literal, Operation::Any, Allow).validate().is_err());
    assert!(acl(ResourceType::Any, "t", Literal, "User:a", "*", Read, Allow).validate().is_err());
    assert!(acl(ResourceType::Cluster, "c", Literal, "User:a", "*", Alter, Allow).validate().is_err());
    assert!(acl(ResourceType::Topic, "t", Literal, "alice", "*", Read, Allow).validate().is_err());
    assert_eq!(Principal::parse("User:CN=a,O=b").unwrap().name, "CN=a,O=b");
    assert_eq!(ResourceType::from_code(42), ResourceType::Unknown);
}
