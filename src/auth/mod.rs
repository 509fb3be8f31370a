//! Authentication: the SASL session a connection runs before its first ordinary request,
//! and the mechanisms it offers (PLAIN against the listener's JAAS users, SCRAM against
//! the credentials in the metadata image). Pure state machines: the connection loop feeds
//! them frames and sends what they return.

pub mod jaas;
pub mod plain;
pub mod sasl;
pub mod scram;

#[cfg(test)]
mod sasl_tests;

/// One step of a mechanism's exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send these bytes to the client and wait for its next message.
    Continue(Vec<u8>),
    /// Authenticated as `user`; send `response` (possibly empty) to the client.
    Done { response: Vec<u8>, user: String },
}
