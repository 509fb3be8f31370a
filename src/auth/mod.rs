//! Security: authentication (the SASL session a connection runs before its first
//! ordinary request, and its mechanisms: PLAIN against the listener's JAAS users, SCRAM
//! against the credentials in the metadata image or a delegation token, OAUTHBEARER
//! against the listener's token validator; the client side a broker logs in to other
//! brokers with) and authorization (the ACL vocabulary,
//! the index the metadata image keeps, and the `StandardAuthorizer` decision). Pure state
//! machines and data: the connection loop feeds them frames and sends what they return.

pub mod acl;
pub mod authorizer;
pub mod client;
pub mod credential;
pub mod jaas;
pub mod oauth;
pub mod plain;
pub mod sasl;
pub mod scram;
pub mod token;

#[cfg(test)]
mod sasl_tests;
#[cfg(test)]
mod tests;

pub use acl::{AclBinding, AclFilter, Operation, PatternType, Permission, Principal, ResourceType};
pub use authorizer::{Acls, Authorizer, Requester};

/// One step of a mechanism's exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send these bytes to the client and wait for its next message.
    Continue(Vec<u8>),
    /// Authenticated as `user`; send `response` (possibly empty) to the client.
    Done { response: Vec<u8>, user: String },
}
