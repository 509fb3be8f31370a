//! Transaction verification on a partition leader (KIP-890): before the first
//! transactional batch of a producer lands on a partition, the leader asks the
//! transaction coordinator, which may be another broker, whether the partition is in the
//! transaction (v1 clients) or adds it (transactions v2 clients).

use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::{AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction};
use kafka_protocol::messages::AddPartitionsToTxnRequest;
use kafka_protocol::protocol::StrBytes;

use super::Broker;
use crate::error::{Error, Result};

/// AddPartitionsToTxn v5, the broker-to-broker form Kafka 4 uses.
const ADD_PARTITIONS_VERSION: i16 = 5;

/// Checks (`add` false) or adds (`add` true) `topic-partition` in the transaction of
/// `pid`/`epoch`, named `txn_id` when the client said so.
pub async fn verify(broker: &Broker, txn_id: Option<&str>, pid: i64, epoch: i16, topic: &str, partition: i32, add: bool) -> Result<()> {
    ask(broker, txn_id, pid, epoch, topic, partition, add).await.map_err(Error::for_produce_verification)
}

async fn ask(broker: &Broker, txn_id: Option<&str>, pid: i64, epoch: i16, topic: &str, partition: i32, add: bool) -> Result<()> {
    let id = match txn_id.filter(|s| !s.is_empty()) {
        Some(id) => id.to_string(),
        // A client that did not name its transaction: only a local coordinator can know it.
        None => broker.txns.id_of(pid).ok_or(Error::InvalidProducerIdMapping)?,
    };
    let (node, host, port) = broker.txns.coordinator_of(broker, &id)?;
    if node == broker.identity.node_id {
        return if add {
            broker.txns.add_partitions(broker, &id, pid, epoch, &[(topic.to_string(), partition)]).await
        } else {
            broker.txns.verify(broker, &id, pid, epoch, topic, partition)
        };
    }
    let tx = AddPartitionsToTxnTransaction::default()
        .with_transactional_id(StrBytes::from_string(id).into())
        .with_producer_id(pid.into())
        .with_producer_epoch(epoch)
        .with_verify_only(!add)
        .with_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(StrBytes::from_string(topic.to_string()).into())
            .with_partitions(vec![partition])]);
    let req = AddPartitionsToTxnRequest::default().with_transactions(vec![tx]);
    let addr = format!("{host}:{port}");
    let resp = broker
        .peers
        .call(node, &addr, broker.identity.node_id, ADD_PARTITIONS_VERSION, &req, Duration::from_secs(15))
        .await
        .map_err(|_| Error::CoordinatorNotAvailable)?;
    if let Some(e) = Error::from_code(resp.error_code) {
        return Err(e);
    }
    let code = resp
        .results_by_transaction
        .iter()
        .flat_map(|t| t.topic_results.iter())
        .flat_map(|t| t.results_by_partition.iter())
        .find(|p| p.partition_index == partition)
        .map_or(-1, |p| p.partition_error_code);
    match Error::from_code(code) {
        None => Ok(()),
        Some(e) => Err(e),
    }
}
