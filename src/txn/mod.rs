//! Producer ids, idempotence and transactions.

pub mod coordinator;
pub mod markers;
pub mod pid;
pub mod verify;
