//! rust-rdkafka, unchanged, against a real `sluice serve` process: each scenario of the client
//! matrix the suite covers runs in turn against one shared broker, prints `PASS:`/`FAIL:`, and
//! writes its row to target/test-logs/matrix-rdkafka.tsv; the last line is
//! `rdkafka: N passed, M failed`.

mod admin;
mod broker;
mod cluster;
mod group;
mod produce;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use rdkafka::config::ClientConfig;

/// One scenario's outcome: Err says what went wrong.
pub type Outcome = Result<(), String>;

/// A scenario to run: its future.
type Scenario = std::pin::Pin<Box<dyn std::future::Future<Output = Outcome>>>;

/// Turns any displayable error into the scenario's failure message, with what was being done.
pub fn ctx<T, E: std::fmt::Display>(r: Result<T, E>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// A fresh topic (or group) name.
pub fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    format!("{prefix}-{nanos}")
}

/// A client configuration on the broker, with the settings given.
pub fn config(bootstrap: &str, settings: &[(&str, &str)]) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    for (k, v) in settings {
        c.set(*k, *v);
    }
    c
}

/// The suite's matrix file: one `client<TAB>scenario<TAB>pass|fail|n/a<TAB>note` row each.
struct Matrix {
    client: String,
    path: PathBuf,
}

impl Matrix {
    fn open(client: String) -> std::io::Result<Matrix> {
        let dir = std::env::var("SLUICE_MATRIX_DIR").unwrap_or_else(|_| "../../target/test-logs".into());
        std::fs::create_dir_all(&dir)?;
        let path = PathBuf::from(dir).join("matrix-rdkafka.tsv");
        std::fs::write(&path, "")?;
        Ok(Matrix { client, path })
    }

    fn row(&self, scenario: &str, result: &str, note: &str) -> std::io::Result<()> {
        let mut f = OpenOptions::new().append(true).open(&self.path)?;
        writeln!(f, "{}\t{scenario}\t{result}\t{}", self.client, note.replace(['\t', '\n'], " "))
    }
}

#[tokio::main]
async fn main() {
    let (version, lib) = rdkafka::util::get_rdkafka_version();
    let client = format!("rust-rdkafka 0.39.0 (librdkafka {lib})");
    println!("{client} (version int {version:#x})");
    let matrix = Matrix::open(client).expect("open the matrix file");
    let mut broker = match broker::Broker::start(&["group.initial.rebalance.delay.ms=0"]).await {
        Ok(b) => b,
        Err(e) => {
            println!("FAIL: sluice starts: {e}");
            println!("rdkafka: 0 passed, 1 failed");
            std::process::exit(1);
        }
    };
    let addr = broker.addr.clone();
    let (mut passed, mut failed) = (0, 0);
    let scenarios: Vec<(&str, &str, Scenario)> = vec![
        ("produce-consume-codecs", produce::CODECS_NOTE, Box::pin(produce::codecs(addr.clone()))),
        ("idempotent", produce::IDEMPOTENT_NOTE, Box::pin(produce::idempotent(addr.clone()))),
        ("group-of-three", group::NOTE, Box::pin(group::group_of_three(addr.clone()))),
        ("transactions", produce::TXN_NOTE, Box::pin(produce::transactions(addr.clone()))),
        ("admin", admin::NOTE, Box::pin(admin::admin(addr.clone()))),
        ("sasl-tls", cluster::SASL_NOTE, Box::pin(cluster::sasl_tls())),
        ("leader-kill", cluster::KILL_NOTE, Box::pin(cluster::leader_kill())),
    ];
    for (scenario, note, run) in scenarios {
        let outcome = run.await;
        let result = match &outcome {
            Ok(()) => {
                passed += 1;
                println!("PASS: {scenario}: {note}");
                "pass"
            }
            Err(why) => {
                failed += 1;
                println!("FAIL: {scenario}: {why}");
                "fail"
            }
        };
        if let Err(e) = matrix.row(scenario, result, note) {
            println!("FAIL: matrix row for {scenario}: {e}");
            failed += 1;
        }
    }
    match broker.stop().await {
        Ok(()) => passed += 1,
        Err(e) => {
            failed += 1;
            println!("FAIL: sluice stops cleanly: {e}");
        }
    }
    if failed > 0 {
        println!("sluice log:\n{}", broker.log());
    }
    println!("rdkafka: {passed} passed, {failed} failed");
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
