//! The authorization checks handlers make: one per resource a request names, with the
//! operation Kafka's `KafkaApis` checks. Without `authorizer.class.name` every check
//! passes, as in Kafka without an authorizer. Principals come only from authentication:
//! other brokers are whoever their links logged in as (`User:ANONYMOUS` over PLAINTEXT).

use super::Ctx;
use crate::auth::acl::CLUSTER_NAME;
use crate::auth::{Authorizer, Operation, Requester, ResourceType};
use crate::error::Error;

impl Ctx<'_> {
    fn requester(&self) -> Requester<'_> {
        Requester { principal: &self.principal_id[..], host: &self.host }
    }

    /// Is authorization on?
    pub(super) fn authz_on(&self) -> bool {
        self.broker.settings().authorizer_enabled
    }

    fn with_authorizer<R>(&self, f: impl FnOnce(&Authorizer<'_>) -> R) -> R {
        let s = self.broker.settings();
        let img = self.broker.cluster.image();
        let a = Authorizer { acls: &img.acls, super_users: &s.super_users, allow_if_no_acl: s.allow_everyone_if_no_acl_found };
        f(&a)
    }

    /// May this request do `op` on the named resource?
    pub(super) fn allowed(&self, op: Operation, rtype: ResourceType, name: &str) -> bool {
        !self.authz_on() || self.with_authorizer(|a| a.authorize(&self.requester(), op, rtype, name))
    }

    /// May this request do `op` on some resource of the type (Kafka's `authorizeByResourceType`)?
    pub(super) fn allowed_any(&self, op: Operation, rtype: ResourceType) -> bool {
        !self.authz_on() || self.with_authorizer(|a| a.authorize_any(&self.requester(), op, rtype))
    }

    /// May this request do `op` on the cluster?
    pub(super) fn cluster_allowed(&self, op: Operation) -> bool {
        self.allowed(op, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// CLUSTER_AUTHORIZATION_FAILED unless `op` on the cluster is allowed.
    pub(super) fn check_cluster(&self, op: Operation) -> crate::error::Result<()> {
        if self.cluster_allowed(op) {
            Ok(())
        } else {
            Err(Error::ClusterAuthorizationFailed)
        }
    }

    pub(super) fn topic_allowed(&self, op: Operation, topic: &str) -> bool {
        self.allowed(op, ResourceType::Topic, topic)
    }

    pub(super) fn group_allowed(&self, op: Operation, group: &str) -> bool {
        self.allowed(op, ResourceType::Group, group)
    }

    /// TOPIC_AUTHORIZATION_FAILED unless `op` on the topic is allowed.
    pub(super) fn check_topic(&self, op: Operation, topic: &str) -> crate::error::Result<()> {
        if self.topic_allowed(op, topic) {
            Ok(())
        } else {
            Err(Error::TopicAuthorizationFailed(topic.to_string()))
        }
    }

    /// GROUP_AUTHORIZATION_FAILED unless `op` on the group is allowed.
    pub(super) fn check_group(&self, op: Operation, group: &str) -> crate::error::Result<()> {
        if self.group_allowed(op, group) {
            Ok(())
        } else {
            Err(Error::GroupAuthorizationFailed(group.to_string()))
        }
    }

    /// TRANSACTIONAL_ID_AUTHORIZATION_FAILED unless `op` on the transactional id is allowed.
    pub(super) fn check_txn_id(&self, op: Operation, id: &str) -> crate::error::Result<()> {
        if self.allowed(op, ResourceType::TransactionalId, id) {
            Ok(())
        } else {
            Err(Error::TransactionalIdAuthorizationFailed)
        }
    }

    /// May an idempotent producer without a transactional id write? Kafka 4 allows it with
    /// CLUSTER IDEMPOTENT_WRITE or WRITE on any topic.
    pub(super) fn idempotent_allowed(&self) -> bool {
        self.cluster_allowed(Operation::IdempotentWrite) || self.allowed_any(Operation::Write, ResourceType::Topic)
    }

    /// The `*_authorized_operations` bits for a resource: the operations the requester
    /// may do, or all that the resource type has when authorization is off (as Kafka).
    pub(super) fn authorized_operations(&self, rtype: ResourceType, name: &str) -> i32 {
        if !self.authz_on() {
            return Operation::for_resource(rtype).iter().fold(0, |bits, op| bits | (1 << op.code()));
        }
        self.with_authorizer(|a| a.authorized_operations(&self.requester(), rtype, name))
    }
}
