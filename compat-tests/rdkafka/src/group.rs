//! A consumer group of three StreamConsumers: join, one leaves, rebalance, resume after restart.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::{admin, config, ctx, unique, Outcome};

pub const NOTE: &str = "StreamConsumer (classic protocol): 3 join, 1 leaves, rebalance, resume after restart; none missed or twice";

/// How often each value was delivered, by any member.
type Ledger = Arc<Mutex<HashMap<String, usize>>>;

/// One member: a StreamConsumer receiving in its own task until told to stop. librdkafka's
/// auto-commit commits what was delivered every 500 ms, on a revocation, and when the member
/// closes (leaving the group), so a partition's next owner starts where this one stopped.
struct Member {
    consumer: Arc<StreamConsumer>,
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<(), String>>,
}

fn join(bootstrap: &str, group: &str, topic: &str, ledger: &Ledger) -> Result<Member, String> {
    let consumer: StreamConsumer = ctx(
        config(
            bootstrap,
            &[
                ("group.id", group),
                ("auto.offset.reset", "earliest"),
                ("enable.auto.commit", "true"),
                ("auto.commit.interval.ms", "500"),
                ("session.timeout.ms", "10000"),
                ("heartbeat.interval.ms", "300"),
                ("fetch.wait.max.ms", "100"),
            ],
        )
        .create(),
        "consumer",
    )?;
    ctx(consumer.subscribe(&[topic]), "subscribe")?;
    let consumer = Arc::new(consumer);
    let (stop, mut stopped) = watch::channel(false);
    let (c, ledger) = (consumer.clone(), ledger.clone());
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stopped.changed() => return Ok(()),
                m = c.recv() => {
                    let m = m.map_err(|e| format!("member: {e}"))?;
                    let v = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
                    *ledger.lock().unwrap().entry(v).or_default() += 1;
                }
            }
        }
    });
    Ok(Member { consumer, stop, task })
}

impl Member {
    fn partitions(&self) -> Vec<i32> {
        self.consumer.assignment().map(|a| a.elements().iter().map(|e| e.partition()).collect()).unwrap_or_default()
    }

    /// Stops receiving and closes the consumer (a final commit, then LeaveGroup).
    async fn leave(self) -> Outcome {
        let _ = self.stop.send(true);
        ctx(self.task.await, "member task")??;
        let consumer = Arc::try_unwrap(self.consumer).map_err(|_| "the member is still shared")?;
        drop(consumer);
        Ok(())
    }
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) -> Outcome {
    for _ in 0..600 {
        if cond() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("timed out after 60 s waiting for {what}"))
}

/// The members between them own every partition, each at least one, none twice.
fn shared(members: &[&Member], partitions: i32) -> bool {
    let mut all = HashSet::new();
    let mut count = 0;
    for m in members {
        let ps = m.partitions();
        if ps.is_empty() {
            return false;
        }
        count += ps.len();
        all.extend(ps);
    }
    all.len() == partitions as usize && count == all.len()
}

/// Sends values PREFIX-0.. round-robin over the partitions, acks=all.
pub async fn produce(bootstrap: &str, topic: &str, partitions: i32, prefix: &str, n: usize) -> Outcome {
    let p: FutureProducer = ctx(config(bootstrap, &[("acks", "all")]).create(), "producer")?;
    let sends = (0..n).map(|i| {
        let v = format!("{prefix}-{i}");
        let p = &p;
        async move { p.send(FutureRecord::<(), _>::to(topic).partition(i as i32 % partitions).payload(&v), Duration::from_secs(30)).await }
    });
    for r in futures_util::future::join_all(sends).await {
        r.map_err(|(e, _)| format!("produce {prefix}: {e}"))?;
    }
    Ok(())
}

pub async fn group_of_three(bootstrap: String) -> Outcome {
    const PARTS: i32 = 6;
    let (topic, group) = (unique("group3"), unique("g3"));
    admin::create_topic(&bootstrap, &topic, PARTS, &[]).await?;
    produce(&bootstrap, &topic, PARTS, "a", 300).await?;
    let ledger: Ledger = Arc::default();
    let distinct = |l: &Ledger| l.lock().unwrap().len();

    let (m1, m2, m3) = (
        join(&bootstrap, &group, &topic, &ledger)?,
        join(&bootstrap, &group, &topic, &ledger)?,
        join(&bootstrap, &group, &topic, &ledger)?,
    );
    wait_for("three members to share six partitions", || shared(&[&m1, &m2, &m3], PARTS)).await?;
    wait_for("300 records consumed by three members", || distinct(&ledger) == 300).await?;
    m3.leave().await?;
    wait_for("two members to share six partitions", || shared(&[&m1, &m2], PARTS)).await?;
    produce(&bootstrap, &topic, PARTS, "b", 300).await?;
    wait_for("600 records consumed by two members", || distinct(&ledger) == 600).await?;
    m1.leave().await?;
    m2.leave().await?;

    produce(&bootstrap, &topic, PARTS, "c", 120).await?;
    let m4 = join(&bootstrap, &group, &topic, &ledger)?;
    wait_for("720 records consumed after the restart", || distinct(&ledger) == 720).await?;
    m4.leave().await?;
    let twice: Vec<String> = ledger.lock().unwrap().iter().filter(|(_, n)| **n > 1).map(|(v, _)| v.clone()).collect();
    if !twice.is_empty() {
        return Err(format!("{} records delivered twice, e.g. {:?}", twice.len(), &twice[..twice.len().min(5)]));
    }
    let reader: StreamConsumer = ctx(config(&bootstrap, &[("group.id", &group)]).create(), "offsets reader")?;
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTS {
        tpl.add_partition(&topic, p);
    }
    let got = ctx(reader.committed_offsets(tpl, Duration::from_secs(10)), "committed offsets")?;
    for e in got.elements() {
        if e.offset() != Offset::Offset(120) {
            return Err(format!("partition {} committed {:?}, want 120", e.partition(), e.offset()));
        }
    }
    Ok(())
}
