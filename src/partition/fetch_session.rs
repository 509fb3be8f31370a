//! Incremental fetch sessions (KIP-227), as Kafka's `FetchSessionCache` keeps them: a
//! client that fetches the same partitions again and again names them once, in a full
//! fetch (epoch 0) that opens a session; later fetches (epoch 1, 2, …) name only the
//! partitions whose fetch position changed, plus those to forget, and the answer holds
//! only partitions with something new (records, a moved high watermark, log start or
//! last stable offset, an error). A pure state machine: time comes in as `now_ms`.
//!
//! The cache is bounded by `max.incremental.fetch.session.cache.slots`. When it is full,
//! a new session takes the slot of the least recently used one if that has been idle
//! for over `min.incremental.fetch.session.eviction.ms`; otherwise of the least
//! valuable evictable one (fewer partitions, not a follower's) if the new one is worth
//! more. A session becomes evictable by a consumer once it has lived past the eviction
//! time; a follower (privileged) may evict a consumer's session at any time.

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::error::{Error, Result};

/// The session id of a sessionless fetch.
pub const INVALID_SESSION_ID: i32 = 0;
/// The epoch of a full fetch that opens a session.
pub const INITIAL_EPOCH: i32 = 0;
/// The epoch of a full fetch that wants no session (and closes the one it names).
pub const FINAL_EPOCH: i32 = -1;

/// A partition as a fetch names it: by topic id from v13, by name before (the other
/// field is then nil or empty).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionKey {
    pub topic_id: Uuid,
    pub topic: StrBytes,
    pub partition: i32,
}

impl PartitionKey {
    /// A copy that owns its name: a request's name shares the whole request frame, which
    /// a session must not keep alive.
    fn owned(&self) -> PartitionKey {
        let topic = if self.topic.is_empty() { StrBytes::default() } else { StrBytes::from_string(self.topic.to_string()) };
        PartitionKey { topic_id: self.topic_id, topic, partition: self.partition }
    }
}

/// What a fetch asks of one partition; a session remembers it between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FetchParams {
    pub fetch_offset: i64,
    pub partition_max_bytes: i32,
    pub current_leader_epoch: i32,
    pub last_fetched_epoch: i32,
}

/// What the answer for one partition showed, as far as a session compares answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    pub error: i16,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub has_records: bool,
    /// A preferred read replica or a diverging epoch: the client must act on it.
    pub redirects: bool,
}

/// How to serve one fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Answer every requested partition; open no session.
    Sessionless,
    /// Answer every requested partition, then [`FetchSessionCache::open`] a session.
    Full,
    /// Fetch these partitions of the session, in this order, and answer only the ones
    /// [`FetchSessionCache::respond`] keeps.
    Incremental { session_id: i32, partitions: Vec<(PartitionKey, FetchParams)> },
}

/// Kafka's two settings of the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchSessionConfig {
    /// `max.incremental.fetch.session.cache.slots`.
    pub max_slots: usize,
    /// `min.incremental.fetch.session.eviction.ms`.
    pub eviction_ms: i64,
}

impl Default for FetchSessionConfig {
    fn default() -> Self {
        FetchSessionConfig { max_slots: 1000, eviction_ms: 120_000 }
    }
}

/// One partition in a session: the request's parameters and the last answer's offsets.
#[derive(Debug, Clone)]
struct Cached {
    params: FetchParams,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    /// Its place in the session's order.
    seq: u64,
}

impl Cached {
    /// Whether `a` must be sent, given what was sent last; remembers `a`.
    fn must_respond(&mut self, a: &Answered) -> bool {
        let changed = a.has_records
            || a.redirects
            || a.error != 0
            || a.high_watermark != self.high_watermark
            || a.last_stable_offset != self.last_stable_offset
            || a.log_start_offset != self.log_start_offset;
        // After an error the offsets are unknown, so the partition is sent again when it recovers.
        let error = a.error != 0;
        self.high_watermark = if error { -1 } else { a.high_watermark };
        self.last_stable_offset = a.last_stable_offset;
        self.log_start_offset = a.log_start_offset;
        changed
    }
}

#[derive(Debug)]
struct Session {
    /// A follower's session: worth more than a consumer's when the cache is full.
    privileged: bool,
    uses_topic_ids: bool,
    created_ms: i64,
    last_used_ms: i64,
    /// The epoch the next incremental fetch must carry.
    next_epoch: i32,
    partitions: HashMap<PartitionKey, Cached>,
    /// The fetch order. A partition that is answered moves to the end, so a response
    /// that `fetch.max.bytes` cuts short starts with the others next time.
    order: BTreeMap<u64, PartitionKey>,
    next_seq: u64,
}

impl Session {
    fn add(&mut self, key: &PartitionKey, params: FetchParams, answered: Option<&Answered>) {
        if let Some(c) = self.partitions.get_mut(key) {
            c.params = params;
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = key.owned();
        self.order.insert(seq, key.clone());
        // A partition added by an incremental fetch has sent nothing yet: -1 makes its first answer go out.
        let (high_watermark, last_stable_offset, log_start_offset) =
            answered.map_or((-1, -1, -1), |a| (if a.error != 0 { -1 } else { a.high_watermark }, a.last_stable_offset, a.log_start_offset));
        self.partitions.insert(key, Cached { params, high_watermark, last_stable_offset, log_start_offset, seq });
    }

    fn forget(&mut self, key: &PartitionKey) {
        if let Some(c) = self.partitions.remove(key) {
            self.order.remove(&c.seq);
        }
    }

    fn move_to_end(&mut self, key: &PartitionKey) {
        let Some(c) = self.partitions.get_mut(key) else { return };
        if let Some(k) = self.order.remove(&c.seq) {
            c.seq = self.next_seq;
            self.next_seq += 1;
            self.order.insert(c.seq, k);
        }
    }

    /// Whether a requester may take this session's slot while it is not stale: anyone
    /// once it has lived past the eviction time (as of its last use), a follower also
    /// when it is a consumer's.
    fn evictable_by(&self, privileged: bool, eviction_ms: i64) -> bool {
        let old = self.last_used_ms - self.created_ms > eviction_ms;
        old || (privileged && !self.privileged)
    }
}

fn next_epoch(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// Every fetch session on this broker.
#[derive(Debug)]
pub struct FetchSessionCache {
    config: FetchSessionConfig,
    sessions: HashMap<i32, Session>,
    evictions: u64,
    incremental_fetches: u64,
    /// xorshift state for session ids, which clients cannot guess.
    rng: u64,
}

impl FetchSessionCache {
    /// An empty cache; `seed` picks the session ids.
    pub fn new(config: FetchSessionConfig, seed: u64) -> FetchSessionCache {
        FetchSessionCache { config, sessions: HashMap::new(), evictions: 0, incremental_fetches: 0, rng: seed | 1 }
    }

    /// Sessions open now.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// True when no session is open.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Partitions over all sessions.
    pub fn partitions(&self) -> usize {
        self.sessions.values().map(|s| s.partitions.len()).sum()
    }

    /// Sessions evicted to make room for new ones, ever.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// Incremental fetches served, ever.
    pub fn incremental_fetches(&self) -> u64 {
        self.incremental_fetches
    }

    /// The partitions of session `id`, in fetch order.
    pub fn session_partitions(&self, id: i32) -> Option<Vec<PartitionKey>> {
        self.sessions.get(&id).map(|s| s.order.values().cloned().collect())
    }

    /// Reads a request's session id and epoch. A full fetch closes the session it names;
    /// an incremental one must name an open session at its next epoch, with the same kind
    /// of topic reference, and moves it on: `requested` partitions are added or updated,
    /// then `forgotten` ones dropped.
    pub fn begin(
        &mut self,
        session_id: i32,
        epoch: i32,
        requested: &[(PartitionKey, FetchParams)],
        forgotten: &[PartitionKey],
        uses_topic_ids: bool,
        now_ms: i64,
    ) -> Result<Plan> {
        if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            if session_id != INVALID_SESSION_ID {
                self.sessions.remove(&session_id);
            }
            return Ok(if epoch == FINAL_EPOCH { Plan::Sessionless } else { Plan::Full });
        }
        let s = self.sessions.get_mut(&session_id).ok_or(Error::FetchSessionIdNotFound(session_id))?;
        if epoch != s.next_epoch {
            return Err(Error::InvalidFetchSessionEpoch { got: epoch, expected: s.next_epoch });
        }
        if s.uses_topic_ids != uses_topic_ids {
            return Err(Error::FetchSessionTopicIdError(session_id));
        }
        for (key, params) in requested {
            s.add(key, *params, None);
        }
        for key in forgotten {
            s.forget(key);
        }
        s.next_epoch = next_epoch(epoch);
        s.last_used_ms = now_ms;
        self.incremental_fetches += 1;
        let partitions = s.order.values().map(|k| (k.clone(), s.partitions[k].params)).collect();
        Ok(Plan::Incremental { session_id, partitions })
    }

    /// After a full fetch at epoch 0 was answered: opens a session of its partitions and
    /// returns the id, or [`INVALID_SESSION_ID`] when the cache is full and nothing may
    /// be evicted (the client then goes on with full fetches).
    pub fn open<'a>(
        &mut self,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: impl IntoIterator<Item = (&'a PartitionKey, FetchParams, Answered)>,
        now_ms: i64,
    ) -> i32 {
        let partitions: Vec<_> = partitions.into_iter().collect();
        if self.sessions.len() >= self.config.max_slots && !self.try_evict(privileged, partitions.len(), now_ms) {
            return INVALID_SESSION_ID;
        }
        let id = self.new_id();
        let mut s = Session {
            privileged,
            uses_topic_ids,
            created_ms: now_ms,
            last_used_ms: now_ms,
            next_epoch: 1,
            partitions: HashMap::with_capacity(partitions.len()),
            order: BTreeMap::new(),
            next_seq: 0,
        };
        for (key, params, answered) in partitions {
            s.add(key, params, Some(&answered));
        }
        self.sessions.insert(id, s);
        id
    }

    /// After an incremental fetch was answered: which of its partitions (in the plan's
    /// order) go in the response. The kept ones move to the end of the session's order.
    pub fn respond(&mut self, session_id: i32, answered: &[(&PartitionKey, Answered)]) -> Vec<bool> {
        // Closed or evicted meanwhile: the client learns on its next fetch; send it all now.
        let Some(s) = self.sessions.get_mut(&session_id) else { return vec![true; answered.len()] };
        let keep: Vec<bool> = answered.iter().map(|(k, a)| s.partitions.get_mut(*k).is_none_or(|c| c.must_respond(a))).collect();
        for ((k, _), kept) in answered.iter().zip(&keep) {
            if *kept {
                s.move_to_end(k);
            }
        }
        keep
    }

    /// Makes room for a session of `size` partitions, by Kafka's rule (see the module doc).
    fn try_evict(&mut self, privileged: bool, size: usize, now_ms: i64) -> bool {
        let stale = self.sessions.iter().min_by_key(|(id, s)| (s.last_used_ms, **id)).map(|(id, s)| (*id, s.last_used_ms));
        let victim = match stale {
            None => return false,
            Some((id, last_used)) if now_ms - last_used > self.config.eviction_ms => id,
            Some(_) => {
                let eviction_ms = self.config.eviction_ms;
                let least = self
                    .sessions
                    .iter()
                    .filter(|(_, s)| s.evictable_by(privileged, eviction_ms))
                    .min_by_key(|(id, s)| (s.privileged, s.partitions.len(), **id));
                match least {
                    // Only a strictly more valuable session takes the slot.
                    Some((id, s)) if (privileged, size) > (s.privileged, s.partitions.len()) => *id,
                    _ => return false,
                }
            }
        };
        self.sessions.remove(&victim);
        self.evictions += 1;
        true
    }

    /// A positive id not in use.
    fn new_id(&mut self) -> i32 {
        loop {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let id = (self.rng >> 33) as i32 & i32::MAX;
            if id != INVALID_SESSION_ID && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }
}

#[cfg(test)]
#[path = "fetch_session_tests.rs"]
mod tests;
