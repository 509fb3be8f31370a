//! The transaction state machine driven by hand: a "log" that takes every write, a
//! producer id counter and a clock that is a number.

use super::*;
use crate::txn::record::{self, Recovery};

const ID: &str = "tx";

/// The coordinator's loop without I/O: writes always succeed, markers are written when
/// the test says so.
struct Sim {
    m: TxnMachine,
    last_pid: i64,
    now: i64,
}

impl Sim {
    fn new() -> Sim {
        Sim { m: TxnMachine::default(), last_pid: 100, now: 1_000 }
    }

    fn run(&mut self, f: impl Fn(&TxnMachine, Option<i64>) -> Step) -> Result<Then> {
        let mut step = f(&self.m, None);
        if step == Step::NeedProducerId {
            self.last_pid += 1;
            step = f(&self.m, Some(self.last_pid));
        }
        match step {
            Step::Answer(r) => r.map(|(p, e)| Then::Answer(p, e)),
            Step::Write(rec, then) => {
                self.m.written(rec);
                Ok(then)
            }
            Step::NeedProducerId => panic!("asked twice for a producer id"),
        }
    }

    /// Writes every marker of the prepared transaction and records the completion.
    fn markers(&mut self) -> MarkerJob {
        let job = self.m.markers_due(ID).expect("prepared");
        let done = self.m.markers_written(ID, &job, self.now).expect("still prepared");
        self.m.written(done);
        job
    }

    /// InitProducerId as the coordinator runs it: an open transaction is aborted first.
    fn init(&mut self, expected: Option<(i64, i16)>) -> Result<(i64, i16)> {
        let req = InitRequest { id: ID, timeout_ms: 60_000, expected };
        let now = self.now;
        match self.run(|m, f| m.init_producer(&req, now, f))? {
            Then::Answer(p, e) => Ok((p, e)),
            Then::InitAfterAbort(p, e) => {
                self.markers();
                let req = InitRequest { expected: expected.map(|_| (p, e)), ..req };
                match self.run(|m, f| m.init_producer(&req, now, f))? {
                    Then::Answer(p, e) => Ok((p, e)),
                    t => panic!("{t:?}"),
                }
            }
            t => panic!("{t:?}"),
        }
    }

    fn add(&mut self, pid: i64, epoch: i16, partition: i32) -> Result<()> {
        let now = self.now;
        self.run(|m, _| m.add_partitions(ID, pid, epoch, &[("t".into(), partition)], now)).map(|_| ())
    }

    fn end(&mut self, pid: i64, epoch: i16, commit: bool, tv2: bool) -> Result<Then> {
        let (now, req) = (self.now, EndRequest { id: ID, producer_id: pid, epoch, commit, tv2 });
        self.run(|m, f| m.end(&req, now, f))
    }

    fn state(&self) -> &TxnMeta {
        self.m.get(ID).expect("known")
    }
}

fn parts(ps: &[i32]) -> BTreeSet<(String, i32)> {
    ps.iter().map(|p| ("t".to_string(), *p)).collect()
}

#[test]
fn commit_prepares_writes_markers_then_completes() {
    let mut s = Sim::new();
    assert_eq!(s.init(None).unwrap(), (101, 0));
    assert_eq!(s.state().state, TxnState::Empty);
    s.add(101, 0, 0).unwrap();
    s.now += 5;
    s.add(101, 0, 1).unwrap();
    assert_eq!((s.state().state, s.state().start_ms), (TxnState::Ongoing, 1_000), "the first add starts the transaction");
    assert_eq!(s.m.verify(ID, 101, 0, "t", 1), Ok(()));
    assert!(matches!(s.m.verify(ID, 101, 0, "t", 7), Err(Error::InvalidTxnState(_))));
    assert_eq!(s.end(101, 0, true, false).unwrap(), Then::WriteMarkers(101, 0));
    assert_eq!(s.state().state, TxnState::PrepareCommit);
    let job = s.markers();
    assert_eq!(job, MarkerJob { producer_id: 101, epoch: 0, commit: true, partitions: parts(&[0, 1]) });
    assert_eq!(s.state().state, TxnState::CompleteCommit);
    assert!(s.state().partitions.is_empty());
    assert!(s.m.prepared().is_empty());
}

#[test]
fn abort_writes_abort_markers() {
    let mut s = Sim::new();
    let (pid, epoch) = s.init(None).unwrap();
    s.add(pid, epoch, 3).unwrap();
    assert_eq!(s.end(pid, epoch, false, false).unwrap(), Then::WriteMarkers(pid, epoch));
    assert_eq!(s.m.prepared(), vec![ID.to_string()]);
    let job = s.markers();
    assert!(!job.commit);
    assert_eq!(s.state().state, TxnState::CompleteAbort);
    // The next transaction of the same producer starts afresh.
    s.add(pid, epoch, 4).unwrap();
    assert_eq!(s.state().partitions, parts(&[4]));
}

#[test]
fn a_write_not_reported_changes_nothing() {
    let mut s = Sim::new();
    let (pid, epoch) = s.init(None).unwrap();
    let step = s.m.add_partitions(ID, pid, epoch, &[("t".into(), 0)], s.now);
    assert!(matches!(step, Step::Write(ref m, _) if m.state == TxnState::Ongoing));
    assert_eq!(s.state().state, TxnState::Empty, "the append failed: the state is what the log holds");
}

#[test]
fn init_producer_with_an_open_transaction_aborts_it_at_a_bumped_epoch_first() {
    let mut s = Sim::new();
    let (pid, _) = s.init(None).unwrap();
    s.add(pid, 0, 0).unwrap();
    let req = InitRequest { id: ID, timeout_ms: 60_000, expected: None };
    let Step::Write(fence, then) = s.m.init_producer(&req, s.now, None) else { panic!() };
    assert_eq!((fence.state, fence.epoch), (TxnState::PrepareAbort, 1), "the abort markers fence epoch 0");
    assert_eq!(then, Then::InitAfterAbort(pid, 1));
    s.m.written(fence);
    assert_eq!(s.m.init_producer(&req, s.now, None), Step::Answer(Err(Error::ConcurrentTransactions)));
    let job = s.markers();
    assert_eq!((job.epoch, job.commit, job.partitions), (1, false, parts(&[0])));
    assert_eq!(s.init(None).unwrap(), (pid, 2));
    // The same through the coordinator's loop, for a producer that names itself (KIP-360).
    s.add(pid, 2, 0).unwrap();
    assert_eq!(s.init(Some((pid, 2))).unwrap(), (pid, 4));
    assert_eq!(s.state().state, TxnState::Empty);
}

#[test]
fn an_old_epoch_is_fenced_and_old_clients_hear_invalid_producer_epoch() {
    let mut s = Sim::new();
    let (pid, _) = s.init(None).unwrap();
    assert_eq!(s.init(None).unwrap(), (pid, 1));
    let fenced = s.add(pid, 0, 0).unwrap_err();
    assert_eq!(fenced, Error::ProducerFenced(0));
    // PRODUCER_FENCED (90) for clients that know it (KIP-588), else INVALID_PRODUCER_EPOCH (47).
    assert_eq!(fenced.clone().for_old_clients(true).code(), 90);
    assert_eq!(fenced.for_old_clients(false).code(), 47);
    assert_eq!(s.end(pid, 0, true, false), Err(Error::ProducerFenced(0)));
    assert_eq!(s.end(pid, 0, true, true), Err(Error::ProducerFenced(0)));
    assert_eq!(s.m.verify(ID, pid, 0, "t", 0), Err(Error::InvalidProducerEpoch { got: 0, current: 1 }));
    assert_eq!(s.add(pid + 1, 1, 0), Err(Error::InvalidProducerIdMapping));
    assert_eq!(s.end(pid + 1, 1, true, false), Err(Error::InvalidProducerIdMapping));
    // A producer that names another producer id, or an epoch it never had, is fenced.
    assert_eq!(s.init(Some((pid + 1, 1))), Err(Error::ProducerFenced(1)));
    assert_eq!(s.init(Some((pid, 7))), Err(Error::ProducerFenced(7)));
    // An open transaction stays open when a fenced producer asks.
    s.add(pid, 1, 0).unwrap();
    assert_eq!(s.init(Some((pid, 0))), Err(Error::ProducerFenced(0)));
    assert_eq!(s.state().state, TxnState::Ongoing);
}

#[test]
fn init_producer_retried_with_the_epoch_it_moved_on_from_gets_the_same_answer() {
    let mut s = Sim::new();
    let (pid, _) = s.init(None).unwrap();
    assert_eq!(s.init(Some((pid, 0))).unwrap(), (pid, 1));
    assert_eq!(s.init(Some((pid, 0))).unwrap(), (pid, 1), "the answer was lost: no second bump");
    assert_eq!(s.init(Some((pid, 1))).unwrap(), (pid, 2));
    assert_eq!(s.init(None).unwrap(), (pid, 3));
    assert_eq!(s.init(Some((pid, 2))), Err(Error::ProducerFenced(2)), "a new producer came in between");
}

#[test]
fn concurrent_transactions_while_a_prepare_is_pending() {
    let mut s = Sim::new();
    let (pid, _) = s.init(None).unwrap();
    s.add(pid, 0, 0).unwrap();
    s.end(pid, 0, true, false).unwrap();
    assert_eq!(s.add(pid, 0, 1), Err(Error::ConcurrentTransactions));
    assert_eq!(s.end(pid, 0, true, false), Err(Error::ConcurrentTransactions), "a retried commit waits for the markers");
    assert!(matches!(s.end(pid, 0, false, false), Err(Error::InvalidTxnState(_))));
    assert_eq!(s.init(None), Err(Error::ConcurrentTransactions));
    s.markers();
    assert_eq!(s.init(None).unwrap(), (pid, 1));
}

#[test]
fn a_transaction_past_its_timeout_is_aborted_at_a_bumped_epoch() {
    let mut s = Sim::new();
    let (pid, _) = s.init(None).unwrap();
    s.add(pid, 0, 0).unwrap();
    assert!(s.m.expire(1_000 + 60_000).is_empty(), "exactly the timeout is not past it");
    let expired = s.m.expire(1_000 + 60_001);
    assert_eq!(expired.len(), 1);
    assert_eq!((expired[0].state, expired[0].epoch, expired[0].producer_id), (TxnState::PrepareAbort, 1, pid));
    assert_eq!(s.state().state, TxnState::Ongoing, "nothing changes until the record is written");
    s.m.written(expired[0].clone());
    assert!(s.m.expire(1_000 + 120_000).is_empty());
    assert_eq!(s.m.prepared(), vec![ID.to_string()]);
    assert_eq!(s.markers().epoch, 1);
    assert_eq!(s.end(pid, 0, true, false), Err(Error::ProducerFenced(0)), "the timed-out producer is fenced");
    assert_eq!(s.init(None).unwrap(), (pid, 2));
}

#[test]
fn end_txn_retries_get_the_first_answer() {
    let mut s = Sim::new();
    let (pid, _) = s.init(None).unwrap();
    s.add(pid, 0, 0).unwrap();
    s.end(pid, 0, true, false).unwrap();
    s.markers();
    assert_eq!(s.end(pid, 0, true, false), Ok(Then::Answer(pid, 0)));
    assert_eq!(s.end(pid, 0, true, false), Ok(Then::Answer(pid, 0)));
    assert!(matches!(s.end(pid, 0, false, false), Err(Error::InvalidTxnState(_))));
    assert!(s.m.markers_due(ID).is_none());
}

#[test]
fn transactions_v2_bump_on_every_end_and_answer_retries_from_the_epoch_below() {
    let mut s = Sim::new();
    let (pid, _) = s.init(None).unwrap();
    s.add(pid, 0, 0).unwrap();
    assert_eq!(s.end(pid, 0, true, true).unwrap(), Then::WriteMarkers(pid, 1));
    assert_eq!(s.end(pid, 0, true, true), Err(Error::ConcurrentTransactions));
    assert!(matches!(s.end(pid, 0, false, true), Err(Error::InvalidTxnState(_))));
    assert_eq!(s.markers().epoch, 1, "the markers carry the new epoch");
    assert_eq!(s.end(pid, 0, true, true), Ok(Then::Answer(pid, 1)));
    assert_eq!(s.end(pid, 0, true, true), Ok(Then::Answer(pid, 1)));
    assert!(matches!(s.end(pid, 0, false, true), Err(Error::InvalidTxnState(_))), "a retry of another end");
    // A commit of nothing is refused; an abort of nothing moves the epoch on.
    assert!(matches!(s.end(pid, 1, true, true), Err(Error::InvalidTxnState(_))));
    assert_eq!(s.end(pid, 1, false, true).unwrap(), Then::Answer(pid, 2));
    assert_eq!(s.state().state, TxnState::CompleteAbort);
    assert_eq!(s.end(pid, 1, false, true), Ok(Then::Answer(pid, 2)));
    assert_eq!(s.end(pid, 0, false, true), Err(Error::ProducerFenced(0)));
    assert_eq!(s.init(None).unwrap(), (pid, 3));
    assert_eq!(s.end(pid, 2, false, true), Err(Error::ProducerFenced(2)), "no retry from Empty");
    assert!(matches!(s.end(pid, 3, true, true), Err(Error::InvalidTxnState(_))));
}

#[test]
fn transactions_v2_a_producer_whose_transaction_timed_out_is_fenced_not_answered_as_a_retry() {
    let mut s = Sim::new();
    let (pid, _) = s.init(None).unwrap();
    s.add(pid, 0, 0).unwrap();
    let fence = s.m.expire(i64::MAX / 2).remove(0);
    s.m.written(fence);
    assert_eq!(s.end(pid, 0, false, true), Err(Error::ProducerFenced(0)), "while its abort is written");
    assert_eq!(s.end(pid, 0, true, true), Err(Error::ProducerFenced(0)));
    s.markers();
    assert_eq!(s.end(pid, 0, true, true), Err(Error::ProducerFenced(0)), "after");
    assert_eq!(s.end(pid, 0, false, true), Err(Error::ProducerFenced(0)));
    assert_eq!(s.end(pid, 0, true, false), Err(Error::ProducerFenced(0)));
}

/// Puts `id` at the last epoch before its producer id must change.
fn exhausted(s: &mut Sim, state: TxnState) -> i64 {
    let (pid, _) = s.init(None).unwrap();
    let m = TxnMeta { epoch: i16::MAX - 1, state, ..s.state().clone() };
    s.m.written(m);
    pid
}

#[test]
fn init_producer_moves_to_a_new_producer_id_when_the_epoch_is_used_up() {
    let mut s = Sim::new();
    let old = exhausted(&mut s, TxnState::CompleteCommit);
    let (pid, epoch) = s.init(Some((old, i16::MAX - 1))).unwrap();
    assert_eq!((epoch, s.state().last_producer_id), (0, old));
    assert_ne!(pid, old);
    assert_eq!(s.init(Some((old, i16::MAX - 1))).unwrap(), (pid, 0), "a retry across the rotation");
    assert_eq!(s.add(old, i16::MAX - 1, 0), Err(Error::InvalidProducerIdMapping));
    s.add(pid, 0, 0).unwrap();
}

#[test]
fn fencing_at_the_last_epoch_then_init_rotates() {
    let mut s = Sim::new();
    let old = exhausted(&mut s, TxnState::Ongoing);
    let fenced = s.m.expire(i64::MAX / 2);
    assert_eq!((fenced[0].producer_id, fenced[0].epoch), (old, i16::MAX), "abort markers keep the producer id");
    s.m.written(fenced[0].clone());
    s.markers();
    let (pid, epoch) = s.init(None).unwrap();
    assert_eq!(epoch, 0);
    assert_ne!(pid, old);
}

#[test]
fn transactions_v2_end_at_the_last_epoch_rotates_after_its_markers() {
    let mut s = Sim::new();
    let old = exhausted(&mut s, TxnState::Empty);
    s.add(old, i16::MAX - 1, 0).unwrap();
    let Then::WriteMarkers(pid, 0) = s.end(old, i16::MAX - 1, true, true).unwrap() else { panic!() };
    assert_ne!(pid, old);
    assert_eq!(s.end(old, i16::MAX - 1, true, true), Err(Error::ConcurrentTransactions));
    let job = s.markers();
    assert_eq!((job.producer_id, job.epoch), (old, i16::MAX), "markers end the records the old producer id wrote");
    assert_eq!((s.state().producer_id, s.state().epoch, s.state().last_producer_id), (pid, 0, old));
    assert_eq!(s.end(old, i16::MAX - 1, true, true), Ok(Then::Answer(pid, 0)), "a retry across the rotation");
    s.add(pid, 0, 1).unwrap();
}

#[test]
fn state_is_recovered_from_the_log_records() {
    let mut s = Sim::new();
    let (pid, _) = s.init(None).unwrap();
    s.add(pid, 0, 0).unwrap();
    let ongoing = s.state().clone();
    s.end(pid, 0, true, false).unwrap();
    let prepared = s.state().clone();
    let gone = TxnMeta { id: "gone".into(), ..ongoing.clone() };
    // A record written before last_producer_id, last_epoch and next_producer_id existed.
    let old_format = br#"{"v":0,"id":"old","producer_id":7,"epoch":3,"state":"CompleteAbort","partitions":[],"timeout_ms":60000,"start_ms":5,"update_ms":9}"#;

    let mut r = Recovery::default();
    for m in [&ongoing, &gone, &prepared] {
        r.record(Some(&record::key(&m.id)), Some(&record::value(m)));
    }
    r.record(Some(&record::key("gone")), None);
    r.record(Some(&record::key("old")), Some(old_format));
    r.record(None, Some(b"no key"));
    let mut m = TxnMachine::default();
    m.load(r.finish());

    assert_eq!(m.get(ID), Some(&prepared), "the last record wins");
    assert!(m.get("gone").is_none(), "a tombstone removes the id");
    let old = m.get("old").unwrap();
    assert_eq!((old.producer_id, old.epoch, old.last_producer_id, old.last_epoch, old.next_producer_id), (7, 3, -1, -1, -1));
    assert_eq!(m.prepared(), vec![ID.to_string()], "a loaded prepare is finished by the new coordinator");
    assert_eq!(m.markers_due(ID).unwrap().partitions, parts(&[0]));
    assert_eq!(m.id_of(7).as_deref(), Some("old"));
    m.unload(|id| id == "old");
    assert!(m.get("old").is_none());
}

#[test]
fn a_new_transactional_id_starts_at_epoch_zero_and_timeouts_are_bounded() {
    let mut s = Sim::new();
    let req = InitRequest { id: ID, timeout_ms: 60_000, expected: Some((5, 3)) };
    assert_eq!(s.m.init_producer(&req, 0, None), Step::NeedProducerId);
    assert_eq!(s.init(Some((5, 3))).unwrap(), (101, 0), "what a new producer names is moot");
    assert_eq!(s.state().timeout_ms, 60_000);
    assert_eq!(check_timeout(0, 900_000), Err(Error::InvalidTransactionTimeout(0)));
    assert_eq!(check_timeout(900_001, 900_000), Err(Error::InvalidTransactionTimeout(900_001)));
    assert_eq!(check_timeout(900_000, 900_000), Ok(()));
}
