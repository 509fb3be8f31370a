//! A steady acks=all load for scenarios: `sluice produce` run again and again from a thread,
//! a small batch of numbered values each time, every outcome kept with how long it took.
//! The tool is not idempotent, so a batch whose answer was lost may be written twice (a
//! retry, Kafka's at-least-once); one that failed may or may not have landed.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::harness::Harness;

/// Values per `sluice produce`.
const BATCH: usize = 20;

/// One `sluice produce` of the load.
#[derive(Debug, Clone)]
pub struct Batch {
    pub values: Vec<String>,
    /// Since the load started, when it was sent.
    pub sent: Duration,
    /// From sending to the answer (retries included).
    pub took: Duration,
    /// The tool's error, if the batch was not acknowledged.
    pub error: Option<String>,
}

/// A running load.
pub struct Load {
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicUsize>,
    thread: JoinHandle<Vec<Batch>>,
    t0: Instant,
}

impl Load {
    /// Starts producing `prefix-0`, `prefix-1`, ... to partition `p` of `topic` with acks=all,
    /// through the brokers at `bootstrap`; each try waits `request_timeout_ms` for its answer
    /// (short, to leave a stalled leader soon; long, to wait out a slow acks=all).
    pub fn start(h: &Harness, bootstrap: &str, topic: &str, p: u16, prefix: &str, request_timeout_ms: u64) -> Load {
        let (stop, acked) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let (exe, bootstrap, topic, prefix) = (h.exe().to_path_buf(), bootstrap.to_string(), topic.to_string(), prefix.to_string());
        let (stop2, acked2, t0) = (stop.clone(), acked.clone(), Instant::now());
        let thread = std::thread::spawn(move || {
            let mut batches = Vec::new();
            let mut next = 0;
            while !stop2.load(Ordering::Relaxed) {
                let values: Vec<String> = (next..next + BATCH).map(|i| format!("{prefix}-{i}")).collect();
                next += BATCH;
                let sent = Instant::now();
                let error = spawn_produce(&exe, &bootstrap, &topic, p, &values, request_timeout_ms).and_then(outcome).err();
                if error.is_none() {
                    acked2.fetch_add(values.len(), Ordering::Relaxed);
                }
                batches.push(Batch { values, sent: sent - t0, took: sent.elapsed(), error });
            }
            batches
        });
        Load { stop, acked, thread, t0 }
    }

    /// Values acknowledged so far.
    pub fn acked(&self) -> usize {
        self.acked.load(Ordering::Relaxed)
    }

    /// Time since the load started (the clock of [`Batch::sent`]).
    pub fn now(&self) -> Duration {
        self.t0.elapsed()
    }

    /// Waits until `n` more values than now are acknowledged, or `timeout`.
    pub fn wait_more(&self, h: &mut Harness, n: usize, what: &str, timeout: Duration) -> Result<(), String> {
        let want = self.acked() + n;
        h.wait_for(what, timeout, |_| (self.acked() >= want).then_some(()))
    }

    /// Stops the load after its current batch; every batch it sent.
    pub fn finish(self) -> Report {
        self.stop.store(true, Ordering::Relaxed);
        Report { batches: self.thread.join().unwrap_or_default() }
    }
}

/// What a load did.
pub struct Report {
    pub batches: Vec<Batch>,
}

impl Report {
    /// The acknowledged values, in the order they were sent.
    pub fn acked(&self) -> Vec<String> {
        self.batches.iter().filter(|b| b.error.is_none()).flat_map(|b| b.values.clone()).collect()
    }

    /// The values of batches that failed (their fate unknown).
    pub fn failed(&self) -> Vec<String> {
        self.batches.iter().filter(|b| b.error.is_some()).flat_map(|b| b.values.clone()).collect()
    }

    /// The first error, if any batch failed.
    pub fn first_error(&self) -> Option<&str> {
        self.batches.iter().find_map(|b| b.error.as_deref())
    }

    /// "N batches of BATCH: p50 X ms, p99 Y ms, max Z ms" over the acknowledged batches.
    pub fn latency(&self) -> String {
        let mut ms: Vec<u128> = self.batches.iter().filter(|b| b.error.is_none()).map(|b| b.took.as_millis()).collect();
        ms.sort_unstable();
        let at = |q: f64| ms.get(((ms.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0);
        format!(
            "{} acknowledged batches of {BATCH} (each one `sluice produce`, process start included): p50 {} ms, p99 {} ms, max {} ms",
            ms.len(),
            at(0.5),
            at(0.99),
            at(1.0)
        )
    }
}

/// Starts `sluice produce --acks all` of `values` to partition `p` through `bootstrap`, each
/// try waiting `timeout_ms` for its answer; its stderr is piped, its output dropped.
pub fn spawn_produce(exe: &Path, bootstrap: &str, topic: &str, p: u16, values: &[String], timeout_ms: u64) -> Result<Child, String> {
    let (p, timeout) = (p.to_string(), format!("request.timeout.ms={timeout_ms}"));
    let mut child = Command::new(exe)
        .args(["produce", topic, "-p", &p, "--acks", "all", "-X", &timeout, "-b", bootstrap])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all((values.join("\n") + "\n").as_bytes()).map_err(|e| e.to_string())?;
    }
    Ok(child)
}

/// The outcome of a produce started with [`spawn_produce`]: its stderr when it failed.
pub fn outcome(child: Child) -> Result<(), String> {
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// Reads partition `p` back after a load: every acknowledged value there (none lost), nothing
/// the load never sent. Copies made by the tool's retries are counted and shown, not failed:
/// without idempotence Kafka promises at-least-once.
pub fn expect_no_loss(h: &mut Harness, topic: &str, p: u16, report: &Report, when: &str) -> Result<(), String> {
    let (acked, failed) = (report.acked(), report.failed());
    let r = h.read_back(topic, p, &acked)?;
    let strays = r.unacknowledged.iter().filter(|v| !failed.contains(v)).count();
    if !r.lost.is_empty() || strays > 0 {
        return Err(format!(
            "{when}: of {} acknowledged records {} lost (e.g. {:?}); {strays} records read that were never sent",
            acked.len(),
            r.lost.len(),
            r.lost.iter().take(3).collect::<Vec<_>>()
        ));
    }
    let unknown = r.unacknowledged.len();
    h.say(&format!(
        "read back {} records {when}: all {} acknowledged, 0 lost; {} doubled by retries; {unknown} of {} whose produce failed landed anyway",
        r.read,
        acked.len(),
        r.doubled,
        failed.len()
    ));
    Ok(())
}
