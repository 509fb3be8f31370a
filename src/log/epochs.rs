//! The leader-epoch cache: for each leader epoch, the first offset written in it.
//!
//! It answers "where does epoch E end?", which is how a returning follower finds the
//! point where its history diverged from the new leader's. Kept in
//! `leader-epoch-checkpoint` in Kafka's text layout: a version line, a count line, then
//! `epoch start_offset` per line.

use std::path::{Path, PathBuf};

const FILE: &str = "leader-epoch-checkpoint";

/// Epoch start offsets, ascending in both.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpochCache {
    entries: Vec<(i32, i64)>,
    path: PathBuf,
    /// The last entry is not in the file yet (see [`EpochCache::assign_on_leadership`]).
    dirty: bool,
}

impl EpochCache {
    /// Loads the cache of the log in `dir` (empty if there is none).
    pub fn open(dir: &Path) -> EpochCache {
        let path = dir.join(FILE);
        let entries = std::fs::read_to_string(&path)
            .ok()
            .map(|text| {
                text.lines()
                    .skip(2)
                    .filter_map(|l| {
                        let mut it = l.split_whitespace();
                        Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        EpochCache { entries, path, dirty: false }
    }

    /// Points the cache at its log's new dir (the log moved, its checkpoint with it).
    pub fn relocate(&mut self, dir: &Path) {
        self.path = dir.join(FILE);
    }

    fn save(&mut self) -> std::io::Result<()> {
        self.dirty = false;
        let mut text = format!("0\n{}\n", self.entries.len());
        for (e, o) in &self.entries {
            text.push_str(&format!("{e} {o}\n"));
        }
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path)
    }

    /// The latest epoch, if any.
    pub fn latest(&self) -> Option<i32> {
        self.entries.last().map(|e| e.0)
    }

    /// Notes that `epoch` starts at `offset` (ignored unless newer than the latest).
    pub fn assign(&mut self, epoch: i32, offset: i64) -> std::io::Result<()> {
        if epoch < 0 || self.latest().is_some_and(|l| epoch < l) {
            return Ok(());
        }
        if self.latest() == Some(epoch) {
            return if self.dirty { self.save() } else { Ok(()) };
        }
        self.supersede(epoch, offset);
        self.save()
    }

    /// A new leader's epoch, starting at its log end: kept in memory and written with the
    /// first batch appended in it. Until then the file without it answers the same for
    /// every offset in the log (the epoch holds none), and a broker leading thousands of
    /// partitions starts without rewriting thousands of files.
    pub fn assign_on_leadership(&mut self, epoch: i32, offset: i64) {
        if epoch < 0 || self.latest().is_some_and(|l| epoch <= l) {
            return;
        }
        self.supersede(epoch, offset);
        self.dirty = true;
    }

    /// As Kafka: a new epoch replaces the epochs that start where it starts or later
    /// (they hold no records), so an idle partition's cache does not grow with every
    /// change of leader.
    fn supersede(&mut self, epoch: i32, offset: i64) {
        self.entries.retain(|(_, o)| *o < offset);
        self.entries.push((epoch, offset));
    }

    /// Where `epoch` ends, as Kafka's OffsetForLeaderEpoch answers: for the latest epoch,
    /// the log end; for an older one, the start of the next epoch, paired with the largest
    /// epoch ≤ `epoch` (or `epoch` itself if it predates them all). `(-1, -1)` when
    /// `epoch` is newer than any here, or the cache is empty.
    pub fn end_offset_for(&self, epoch: i32, leo: i64) -> (i32, i64) {
        if epoch < 0 {
            return (-1, -1);
        }
        if self.latest() == Some(epoch) {
            return (epoch, leo);
        }
        match self.entries.iter().find(|(e, _)| *e > epoch) {
            None => (-1, -1),
            Some(&(_, next_start)) => match self.entries.iter().rev().find(|(e, _)| *e <= epoch) {
                Some(&(floor, _)) => (floor, next_start),
                None => (epoch, next_start),
            },
        }
    }

    /// Forgets epochs that start at or after `offset` (the log was truncated there).
    pub fn truncate_from(&mut self, offset: i64) -> std::io::Result<()> {
        let before = self.entries.len();
        self.entries.retain(|(_, o)| *o < offset);
        if self.entries.len() != before {
            self.save()?;
        }
        Ok(())
    }

    /// Drops everything (the log restarted at a new offset).
    pub fn clear(&mut self) -> std::io::Result<()> {
        self.entries.clear();
        self.save()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_offsets_truncation_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = EpochCache::open(dir.path());
        c.assign(0, 0).unwrap();
        c.assign(2, 10).unwrap();
        c.assign(2, 12).unwrap(); // same epoch: no new entry
        c.assign(5, 30).unwrap();
        assert_eq!(c.end_offset_for(0, 40), (0, 10));
        assert_eq!(c.end_offset_for(1, 40), (0, 10), "an unknown epoch maps to the one before it");
        assert_eq!(c.end_offset_for(2, 40), (2, 30));
        assert_eq!(c.end_offset_for(5, 40), (5, 40));
        assert_eq!(c.end_offset_for(9, 40), (-1, -1), "newer than anything known");
        assert_eq!(EpochCache::open(dir.path()), c);
        c.truncate_from(30).unwrap();
        assert_eq!(c.end_offset_for(2, 25), (2, 25));
        let later_dir = tempfile::tempdir().unwrap();
        let mut later = EpochCache::open(later_dir.path());
        later.assign(4, 100).unwrap();
        later.assign(6, 120).unwrap();
        assert_eq!(later.end_offset_for(1, 130), (1, 100), "older than the first: ends where the first starts");
        let empty_dir = tempfile::tempdir().unwrap();
        let mut empty = EpochCache::open(empty_dir.path());
        assert_eq!(empty.end_offset_for(3, 5), (-1, -1));
        empty.assign(-1, 0).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn leadership_epochs_are_written_with_their_first_batch_and_supersede_empty_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = EpochCache::open(dir.path());
        c.assign(3, 0).unwrap();
        c.assign_on_leadership(4, 10);
        assert_eq!(c.end_offset_for(3, 10), (3, 10));
        assert_eq!(c.latest(), Some(4));
        assert_eq!(EpochCache::open(dir.path()).latest(), Some(3), "not written before a batch lands in it");
        // Leadership moves again with nothing written: the empty epoch 4 is replaced.
        c.assign_on_leadership(6, 10);
        c.assign(6, 10).unwrap();
        let reopened = EpochCache::open(dir.path());
        assert_eq!(reopened.entries, vec![(3, 0), (6, 10)]);
        assert_eq!(reopened.end_offset_for(4, 15), (3, 10), "an epoch that held nothing ends where the next starts");
        // An older epoch never goes in after a newer one.
        c.assign_on_leadership(5, 12);
        assert_eq!(c.latest(), Some(6));
    }
}
