//! Sluice: a Kafka wire-protocol compatible broker.
//!
//! A request travels net → api → partition → log; see `../shared/design.md`.
//!
//! # Layers
//! Each top-level module imports only from modules below it ([`LAYERS`] lists them
//! bottom up; `tests/layers.rs` fails on an import that points up or sideways):
//!
//! | layer | modules | holds |
//! |---|---|---|
//! | 1 | `clock`, `error`, `config`, `stats`, `fault` | time as an input, the one error-to-code mapping, every key with Kafka's defaults and the typed `Settings`; the process's counters and histograms; the injected faults and their decisions |
//! | 2 | `log`, `auth`, `transport`, `quota` | segments, indexes, cleaner; byte formats (batches, records, control batches, producer state); the ACL index and Kafka's authorizer decision, the SCRAM credential, the SASL session and its mechanisms (pure state machines); TCP or TLS streams, TLS contexts, principals, dialing peers; client quota entities, their resolution and the windowed rates that throttle clients |
//! | 3 | `metadata` | metadata records, the image, its published snapshots, name rules |
//! | 4 | `partition`, `journal` | one partition's replica state and ISR bookkeeping, the replica manager, fetch watchers, the coordinators' interface; metadata records read back as cluster events |
//! | 5 | `controller` | the Raft metadata quorum and the active controller |
//! | 6 | `cluster` | a broker's registration, heartbeats, controller calls, peer connections |
//! | 7 | `replication` | follower fetchers and the leader's ISR change requests |
//! | 8 | `group`, `txn`, `share`, `telemetry` | the coordinators, through `partition::InternalPartitions` / `txn::TxnHost`; share groups' membership, share partitions and sessions; client telemetry subscriptions and pushed metrics (KIP-714) |
//! | 9 | `broker` | wiring: builds the services and implements the coordinators' interfaces |
//! | 10 | `api`, `metrics` | one handler per API family; the metrics page |
//! | 11 | `net`, `http` | listener and connection loop; the HTTP listener (metrics, JSON API, events) |
//! | 12 | `dev_cluster`, `cli` | the local multi-node cluster command and `sluice dev` node control; the Kafka client tool (`sluice topic`, `produce`, `consume`, `group`, `cluster`, `events`) |
//! | 13 | `scenario` | the seed's failure stories as commands (`sluice scenario run leader-crash`), driving a dev-cluster and the client tool |

pub mod api;
pub mod auth;
pub mod broker;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod controller;
pub mod dev_cluster;
pub mod error;
pub mod fault;
pub mod group;
pub mod http;
pub mod journal;
pub mod log;
pub mod metadata;
pub mod metrics;
pub mod net;
pub mod partition;
pub mod quota;
pub mod replication;
pub mod scenario;
pub mod share;
pub mod stats;
pub mod telemetry;
pub mod transport;
pub mod txn;

#[cfg(test)]
mod testing;

/// The top-level modules, bottom layer first; modules in one layer may not import each other.
pub const LAYERS: &[&[&str]] = &[
    &["clock", "error", "config", "stats", "fault", "testing"],
    &["log", "auth", "transport", "quota"],
    &["metadata"],
    &["partition", "journal"],
    &["controller"],
    &["cluster"],
    &["replication"],
    &["group", "txn", "share", "telemetry"],
    &["broker"],
    &["api", "metrics"],
    &["net", "http"],
    &["dev_cluster", "cli"],
    &["scenario"],
];
