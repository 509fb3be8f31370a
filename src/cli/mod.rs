//! `sluice` as a Kafka client tool (rpk-class): topics, produce/consume, groups, cluster
//! health, the event journal and fault injection. Everything speaks the Kafka protocol, so it works
//! against Apache Kafka too; it uses only client-side pieces (transport, `auth::client`,
//! config, the `kafka-protocol` crate), never broker internals.

pub mod client;
pub mod cluster;
pub mod conn;
pub mod consume;
pub mod error;
pub mod events;
pub mod fault;
pub mod group;
pub mod member;
pub mod offsets;
pub mod output;
pub mod produce;
pub mod props;
pub mod records;
pub mod template;
pub mod topic;

use clap::{Args, Subcommand};

pub use error::CliError;

/// Options every client command takes.
#[derive(Args, Clone, Debug)]
pub struct Common {
    /// Bootstrap brokers, HOST:PORT[,HOST:PORT...]. Default: env SLUICE_BROKERS, else 127.0.0.1:9092.
    #[arg(short = 'b', long = "brokers", global = true, env = "SLUICE_BROKERS", default_value = "127.0.0.1:9092")]
    pub brokers: String,
    /// Output: text (tables for people) or json (one document, or one object per line for streams).
    #[arg(long, global = true, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// A Kafka client setting, e.g. -X security.protocol=SASL_SSL. Repeatable; wins over --config.
    #[arg(short = 'X', value_name = "KEY=VALUE", global = true)]
    pub client_set: Vec<String>,
    /// A Java client .properties file (security.protocol, sasl.*, ssl.*; bootstrap.servers if -b is not given).
    #[arg(long = "config", value_name = "FILE", global = true)]
    pub config: Option<std::path::PathBuf>,
}

impl Common {
    /// Whether the output is JSON.
    pub fn json(&self) -> bool {
        self.format == "json"
    }
}

/// The client commands.
#[derive(Subcommand, Debug)]
pub enum Tool {
    /// Create, list, describe, delete and configure topics.
    Topic(topic::TopicArgs),
    /// Produce lines from stdin or a file as records.
    Produce(produce::ProduceArgs),
    /// Consume records and print them.
    Consume(consume::ConsumeArgs),
    /// Cluster info and health.
    Cluster(cluster::ClusterArgs),
    /// Consumer groups: list, describe (lag), seek, delete.
    Group(group::GroupArgs),
    /// Read the cluster event journal over a node's HTTP listener.
    Events(events::EventsArgs),
    /// Inject, list and clear faults on a node over its HTTP listener.
    Fault(fault::FaultArgs),
}

/// Runs a client command; the result is the process exit code.
pub fn run(tool: Tool) -> Result<i32, CliError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| CliError::Io(e.to_string()))?;
    rt.block_on(async move {
        match tool {
            Tool::Topic(a) => topic::run(a).await,
            Tool::Produce(a) => produce::run(a).await,
            Tool::Consume(a) => consume::run(a).await,
            Tool::Cluster(a) => cluster::run(a).await,
            Tool::Group(a) => group::run(a).await,
            // Plain blocking HTTP on this thread: nothing else runs meanwhile.
            Tool::Events(a) => events::run(&a),
            Tool::Fault(a) => fault::run(&a),
        }
    })
}
