//! `sluice scenario list` and `sluice scenario run NAME`: the seed's failure stories as
//! commands. Each uses the dev-cluster at `--cluster DIR` (starting one there if none runs),
//! drives a load with Sluice's own client commands (`sluice topic`, `produce`, `consume`, as
//! child processes, so each step is the same command a person would type), injects its
//! faults through `sluice dev`, narrates the cluster's event journal as it goes, and exits 0
//! only if the outcome Kafka's design promises held.

pub mod controller_failover;
pub mod disk_failure;
pub mod election_storm;
pub mod harness;
pub mod leader_crash;
pub mod load;
pub mod min_isr;
pub mod network_partition;
pub mod slow_follower;
pub mod unclean_election;

use std::path::PathBuf;

use clap::{Args, Subcommand};

pub use harness::Harness;

/// `sluice scenario ...`.
#[derive(Args, Debug)]
pub struct ScenarioArgs {
    #[command(subcommand)]
    pub command: ScenarioCommand,
}

/// List the scenarios, or run one.
#[derive(Subcommand, Debug)]
pub enum ScenarioCommand {
    /// The scenarios and what each shows.
    List,
    /// Run one scenario; exit 0 if what it checks held.
    Run {
        /// A name from `sluice scenario list`.
        name: String,
        /// The dev-cluster's data dir; one is started there if none runs.
        #[arg(long, value_name = "DIR", default_value = "./dev-cluster")]
        cluster: PathBuf,
        /// Client port of node 1 of a dev-cluster this command starts.
        #[arg(long, default_value_t = 19092)]
        base_port: u16,
    },
}

/// A scenario: its name, what it shows, and its body (an error says what did not hold).
pub struct Scenario {
    pub name: &'static str,
    pub summary: &'static str,
    pub run: fn(&mut Harness) -> Result<(), String>,
}

/// Every scenario, in the order `list` prints them.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "leader-crash",
        summary: "SIGKILL a partition's leader under acks=all load: a new leader from the ISR, producers and consumers continue, nothing acknowledged is lost; the old leader rejoins the ISR",
        run: leader_crash::run,
    },
    Scenario {
        name: "min-isr",
        summary: "min.insync.replicas=2 with one replica left in sync: acks=all writes are refused with NOT_ENOUGH_REPLICAS, acks=1 still lands; the replica's return restores acks=all",
        run: min_isr::run,
    },
    Scenario {
        name: "slow-follower",
        summary: "a follower's link delayed past replica.lag.time.max.ms under acks=all load: the ISR shrinks, writes and the high watermark go on; healed, it catches up and the ISR expands",
        run: slow_follower::run,
    },
    Scenario {
        name: "unclean-election",
        summary: "the leader dies while its only other replica is out of the ISR: with unclean.leader.election.enable off the partition goes offline and loses nothing; on (per topic) it comes back at once, the records it lacked lost and counted",
        run: unclean_election::run,
    },
    Scenario {
        name: "controller-failover",
        summary: "SIGKILL the active controller: the quorum elects another, topic creation works, the other brokers stay unfenced, nothing acknowledged is lost",
        run: controller_failover::run,
    },
    Scenario {
        name: "network-partition",
        summary: "isolate a partition's leader under acks=all load: it acknowledges nothing after the cut, the other two elect a new leader; healed, it truncates its divergent tail and rejoins; nothing acknowledged is lost",
        run: network_partition::run,
    },
    Scenario {
        name: "election-storm",
        summary: "restart the loaded partition's leader again and again: the journal counts the elections, the load sees the latency, nothing acknowledged is lost",
        run: election_storm::run,
    },
    Scenario {
        name: "disk-failure",
        summary: "a leader's disk fails a write: KAFKA_STORAGE_ERROR, its log dir goes offline and it halts; leadership moves, nothing acknowledged is lost; restarted, it rejoins the ISR",
        run: disk_failure::run,
    },
];

/// Runs `sluice scenario ...`; the result is the exit code.
pub fn run(args: &ScenarioArgs) -> i32 {
    match &args.command {
        ScenarioCommand::List => {
            for s in SCENARIOS {
                println!("{:<20} {}", s.name, s.summary);
            }
            0
        }
        ScenarioCommand::Run { name, cluster, base_port } => {
            let Some(s) = SCENARIOS.iter().find(|s| s.name == name) else {
                let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
                eprintln!("error: unknown scenario '{name}'; valid: {}", names.join(", "));
                return 1;
            };
            let mut h = match Harness::open(cluster, *base_port) {
                Ok(h) => h,
                Err(e) => {
                    eprintln!("error: {e}");
                    return 1;
                }
            };
            h.say(&format!("scenario {}: {}", s.name, s.summary));
            let outcome = (s.run)(&mut h);
            h.narrate();
            h.close();
            match outcome {
                Ok(()) => {
                    println!("scenario {}: HELD", s.name);
                    0
                }
                Err(e) => {
                    println!("scenario {}: FAILED: {e}", s.name);
                    1
                }
            }
        }
    }
}
