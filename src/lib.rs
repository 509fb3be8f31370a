//! Sluice: a Kafka wire-protocol compatible broker.
//!
//! A request travels net → api → partition → log; see `../shared/design.md`.

pub mod api;
pub mod broker;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod controller;
pub mod dev_cluster;
pub mod error;
pub mod group;
pub mod log;
pub mod metadata;
pub mod metrics;
pub mod net;
pub mod partition;
pub mod replication;
pub mod txn;

#[cfg(test)]
mod testing;
