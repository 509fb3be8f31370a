//! Share sessions (KIP-932's ShareSessionCache): a member's ShareFetch requests to one
//! broker name only what changed, so the broker keeps, per (group, member), the
//! partitions being fetched and the epoch the next request must carry.

use std::collections::{BTreeSet, HashMap};

use super::group::Tp;
use crate::error::{Error, Result};

/// The epoch that opens a session.
pub const INITIAL_EPOCH: i32 = 0;
/// The epoch that closes one.
pub const FINAL_EPOCH: i32 = -1;

/// One session.
#[derive(Debug, Clone, Default)]
pub struct ShareSession {
    /// The epoch the next request must carry.
    pub next_epoch: i32,
    pub partitions: BTreeSet<Tp>,
}

/// What a request does to its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A session was opened (any earlier one of the member replaced).
    Opened,
    /// The session goes on.
    Continued,
    /// The session is closed: the caller releases what the member holds.
    Closed(BTreeSet<Tp>),
}

/// Every share session on this broker, capped at `group.share.max.share.sessions`.
#[derive(Debug, Default)]
pub struct SessionCache {
    sessions: HashMap<(String, String), ShareSession>,
    max: usize,
}

fn next(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

impl SessionCache {
    /// A cache that holds at most `max` sessions.
    pub fn new(max: usize) -> SessionCache {
        SessionCache { sessions: HashMap::new(), max }
    }

    /// Sessions open now.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// True when no session is open.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// The session of `member`, if open.
    pub fn get(&self, group: &str, member: &str) -> Option<&ShareSession> {
        self.sessions.get(&(group.to_string(), member.to_string()))
    }

    /// Checks a request's epoch against the member's session and moves the session on:
    /// epoch 0 opens, -1 closes, anything else must be the session's next epoch. `add`
    /// and `forget` change the partitions (ShareFetch; ShareAcknowledge changes none).
    pub fn step(&mut self, group: &str, member: &str, epoch: i32, add: &[Tp], forget: &[Tp]) -> Result<Step> {
        let key = (group.to_string(), member.to_string());
        match epoch {
            INITIAL_EPOCH => {
                if !self.sessions.contains_key(&key) && self.sessions.len() >= self.max {
                    return Err(Error::ShareSessionLimitReached);
                }
                let s = ShareSession { next_epoch: 1, partitions: add.iter().copied().collect() };
                self.sessions.insert(key, s);
                Ok(Step::Opened)
            }
            FINAL_EPOCH => match self.sessions.remove(&key) {
                Some(s) => Ok(Step::Closed(s.partitions)),
                None => Err(Error::ShareSessionNotFound),
            },
            e => {
                let s = self.sessions.get_mut(&key).ok_or(Error::ShareSessionNotFound)?;
                if e != s.next_epoch {
                    return Err(Error::InvalidShareSessionEpoch { got: e, expected: s.next_epoch });
                }
                s.next_epoch = next(e);
                s.partitions.extend(add.iter().copied());
                for tp in forget {
                    s.partitions.remove(tp);
                }
                Ok(Step::Continued)
            }
        }
    }

    /// Does any member of `group` have a session here?
    pub fn has_group(&self, group: &str) -> bool {
        self.sessions.keys().any(|(g, _)| g == group)
    }

    /// Drops every session of `member` (it left the group); returns their partitions.
    pub fn remove_member(&mut self, group: &str, member: &str) -> Option<BTreeSet<Tp>> {
        self.sessions.remove(&(group.to_string(), member.to_string())).map(|s| s.partitions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> Tp {
        (uuid::Uuid::from_u128(1), p)
    }

    #[test]
    fn epochs_open_continue_and_close() {
        let mut c = SessionCache::new(10);
        assert_eq!(c.step("g", "m", 1, &[], &[]), Err(Error::ShareSessionNotFound));
        assert_eq!(c.step("g", "m", 0, &[tp(0)], &[]), Ok(Step::Opened));
        assert_eq!(c.step("g", "m", 2, &[], &[]), Err(Error::InvalidShareSessionEpoch { got: 2, expected: 1 }));
        assert_eq!(c.step("g", "m", 1, &[tp(1)], &[tp(0)]), Ok(Step::Continued));
        assert_eq!(c.get("g", "m").unwrap().partitions, [tp(1)].into_iter().collect());
        assert_eq!(c.step("g", "m", 1, &[], &[]), Err(Error::InvalidShareSessionEpoch { got: 1, expected: 2 }));
        assert_eq!(c.step("g", "m", -1, &[], &[]), Ok(Step::Closed([tp(1)].into_iter().collect())));
        assert_eq!(c.step("g", "m", -1, &[], &[]), Err(Error::ShareSessionNotFound));
        assert!(c.is_empty());
    }

    #[test]
    fn the_cache_is_capped_and_reopening_replaces() {
        let mut c = SessionCache::new(1);
        c.step("g", "a", 0, &[], &[]).unwrap();
        assert_eq!(c.step("g", "b", 0, &[], &[]), Err(Error::ShareSessionLimitReached));
        c.step("g", "a", 1, &[], &[]).unwrap();
        assert_eq!(c.step("g", "a", 0, &[tp(3)], &[]), Ok(Step::Opened));
        assert_eq!(c.get("g", "a").unwrap().next_epoch, 1);
        assert_eq!(c.remove_member("g", "a"), Some([tp(3)].into_iter().collect()));
        assert_eq!(c.len(), 0);
    }

    #[test]
    fn the_epoch_wraps_to_one() {
        assert_eq!(next(i32::MAX), 1);
    }
}
