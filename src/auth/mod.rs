//! Authorization with Kafka's semantics: the ACL vocabulary, the index the metadata
//! image keeps, and the `StandardAuthorizer` decision. Pure data: no I/O, no clock.

pub mod acl;
pub mod authorizer;
#[cfg(test)]
mod tests;

pub use acl::{AclBinding, AclFilter, Operation, PatternType, Permission, Principal, ResourceType};
pub use authorizer::{Acls, Authorizer, Requester};
