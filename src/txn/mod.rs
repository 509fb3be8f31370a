//! Producer ids, idempotence and transactions.

pub mod coordinator;
pub mod machine;
pub mod markers;
pub mod pid;
pub mod record;

use crate::cluster::peer::Peers;
use crate::error::Result;
use crate::partition::{InternalPartitions, Topic};

/// The broker as the transaction coordinator sees it: its internal partitions, plus
/// producer ids and the other brokers, which markers and verification reach.
pub trait TxnHost: InternalPartitions {
    /// This broker's id.
    fn node_id(&self) -> i32;

    /// A producer id no other producer of the cluster has.
    fn allocate_producer_id(&self) -> Result<i64>;

    /// (node id, host, port) of the live leader of `topic`'s partition `p`.
    fn leader_endpoint(&self, topic: &Topic, p: i32) -> Result<(i32, String, i32)>;

    /// `host:port` of live broker `id`.
    fn broker_address(&self, id: i32) -> Option<String>;

    /// Connections to the other brokers.
    fn peers(&self) -> &Peers;

    /// A marker was written on a `__consumer_offsets` partition: the group coordinator
    /// makes the transaction's offsets visible (commit) or drops them (abort).
    fn offsets_marker_written(&self, pid: i64, commit: bool);
}
