//! Sparse indexes of one segment: offset → file position, and timestamp → offset.
//!
//! Entries live in memory and reach their file in batches: when the segment is flushed,
//! rolled or goes idle, and on shutdown. No handle stays open, so thousands of written
//! partitions hold one file each (their `.log`), and an entry costs no system call. After
//! a crash the active segment's indexes are rebuilt from the log anyway.
//! A file that doesn't check out on open (wrong size, out of order, past the
//! segment's end) is thrown away and rebuilt from the segment by the caller.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Offset index: (offset relative to the segment base, byte position).
pub struct OffsetIndex {
    path: PathBuf,
    /// How many of `entries` are in the file.
    written: usize,
    pub entries: Vec<(u32, u32)>,
}

/// Time index: (max timestamp so far, offset relative to the segment base).
pub struct TimeIndex {
    path: PathBuf,
    written: usize,
    pub entries: Vec<(i64, u32)>,
}

/// Appends `entries[*written..]` to the file at `path`, `width` bytes each.
fn write_pending<T>(path: &Path, written: &mut usize, entries: &[T], encode: impl Fn(&T, &mut Vec<u8>)) -> std::io::Result<()> {
    if *written >= entries.len() {
        return Ok(());
    }
    let mut bytes = Vec::new();
    entries[*written..].iter().for_each(|e| encode(e, &mut bytes));
    OpenOptions::new().create(true).append(true).open(path)?.write_all(&bytes)?;
    *written = entries.len();
    Ok(())
}

/// Cuts the file to its first `keep` entries of `width` bytes, if it holds more.
fn truncate_file(path: &Path, written: &mut usize, keep: usize, width: u64) -> std::io::Result<()> {
    if *written > keep {
        OpenOptions::new().write(true).open(path)?.set_len(keep as u64 * width)?;
        *written = keep;
    }
    Ok(())
}

/// fsyncs the file (an fsync reaches the file's data whatever handle asks).
fn sync_file(path: &Path) -> std::io::Result<()> {
    match File::open(path) {
        Ok(f) => f.sync_data(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

impl OffsetIndex {
    /// Loads the index, or returns an empty one if the file is missing or doesn't check out.
    /// The bool says whether it loaded intact.
    pub fn load(path: &Path, segment_size: u64) -> std::io::Result<(OffsetIndex, bool)> {
        let bytes = std::fs::read(path).unwrap_or_default();
        let mut entries = Vec::with_capacity(bytes.len() / 8);
        let mut ok = bytes.len() % 8 == 0 && path.exists();
        for c in bytes.chunks_exact(8) {
            let rel = u32::from_be_bytes(c[0..4].try_into().expect("4"));
            let pos = u32::from_be_bytes(c[4..8].try_into().expect("4"));
            if let Some(&(lr, lp)) = entries.last() {
                if rel <= lr || pos <= lp {
                    ok = false;
                }
            }
            if pos as u64 >= segment_size {
                ok = false;
            }
            entries.push((rel, pos));
        }
        if !ok {
            entries.clear();
            std::fs::write(path, b"")?;
        }
        let written = entries.len();
        Ok((OffsetIndex { path: path.to_path_buf(), written, entries }, ok))
    }

    /// Adds an entry; the caller spaces them by `index.interval.bytes`.
    pub fn append(&mut self, rel: u32, pos: u32) {
        self.entries.push((rel, pos));
    }

    /// Writes the entries made since the last call to the file.
    pub fn persist(&mut self) -> std::io::Result<()> {
        write_pending(&self.path, &mut self.written, &self.entries, |&(rel, pos), b| {
            b.extend(rel.to_be_bytes());
            b.extend(pos.to_be_bytes());
        })
    }

    /// Position of the last indexed batch at or before relative offset `rel`.
    pub fn lookup(&self, rel: u32) -> u32 {
        match self.entries.partition_point(|&(r, _)| r <= rel) {
            0 => 0,
            i => self.entries[i - 1].1,
        }
    }

    /// Drops every entry at or after byte position `pos`.
    pub fn truncate_to_position(&mut self, pos: u32) -> std::io::Result<()> {
        let keep = self.entries.partition_point(|&(_, p)| p < pos);
        self.entries.truncate(keep);
        truncate_file(&self.path, &mut self.written, keep, 8)
    }

    /// Writes what is pending and fsyncs the file.
    pub fn sync(&mut self) -> std::io::Result<()> {
        self.persist()?;
        sync_file(&self.path)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl TimeIndex {
    /// Loads the index, or an empty one if it doesn't check out. The bool says whether it loaded intact.
    pub fn load(path: &Path, max_rel: Option<u32>) -> std::io::Result<(TimeIndex, bool)> {
        let bytes = std::fs::read(path).unwrap_or_default();
        let mut entries: Vec<(i64, u32)> = Vec::with_capacity(bytes.len() / 12);
        let mut ok = bytes.len() % 12 == 0 && path.exists();
        for c in bytes.chunks_exact(12) {
            let ts = i64::from_be_bytes(c[0..8].try_into().expect("8"));
            let rel = u32::from_be_bytes(c[8..12].try_into().expect("4"));
            if let Some(&(lt, lr)) = entries.last() {
                if ts <= lt || rel < lr {
                    ok = false;
                }
            }
            if max_rel.map_or(true, |m| rel > m) {
                ok = false;
            }
            entries.push((ts, rel));
        }
        if !ok {
            entries.clear();
            std::fs::write(path, b"")?;
        }
        let written = entries.len();
        Ok((TimeIndex { path: path.to_path_buf(), written, entries }, ok))
    }

    /// Records that timestamps up to `ts` are found at or before relative offset `rel`.
    pub fn maybe_append(&mut self, ts: i64, rel: u32) {
        if self.entries.last().is_some_and(|&(lt, lr)| ts <= lt || rel < lr) {
            return;
        }
        self.entries.push((ts, rel));
    }

    /// Writes the entries made since the last call to the file.
    pub fn persist(&mut self) -> std::io::Result<()> {
        write_pending(&self.path, &mut self.written, &self.entries, |&(ts, rel), b| {
            b.extend(ts.to_be_bytes());
            b.extend(rel.to_be_bytes());
        })
    }

    /// Relative offset from which to scan for the first record with timestamp >= `ts`.
    pub fn lookup(&self, ts: i64) -> u32 {
        match self.entries.partition_point(|&(t, _)| t < ts) {
            0 => 0,
            i => self.entries[i - 1].1,
        }
    }

    pub fn truncate_to_offset(&mut self, rel: u32) -> std::io::Result<()> {
        let keep = self.entries.partition_point(|&(_, r)| r < rel);
        self.entries.truncate(keep);
        truncate_file(&self.path, &mut self.written, keep, 12)
    }

    /// Writes what is pending and fsyncs the file.
    pub fn sync(&mut self) -> std::io::Result<()> {
        self.persist()?;
        sync_file(&self.path)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_index_is_reset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0.index");
        std::fs::write(&p, [1, 2, 3]).unwrap();
        let (idx, ok) = OffsetIndex::load(&p, 100).unwrap();
        assert!(!ok && idx.entries.is_empty());
        let (mut idx, _) = OffsetIndex::load(&p, 100).unwrap();
        idx.append(0, 0);
        idx.append(5, 50);
        assert_eq!(idx.lookup(4), 0);
        assert_eq!(idx.lookup(7), 50);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 0, "entries wait in memory");
        idx.persist().unwrap();
        let (again, ok) = OffsetIndex::load(&p, 100).unwrap();
        assert!(ok && again.entries == vec![(0, 0), (5, 50)]);
        idx.truncate_to_position(50).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 8);
        idx.append(5, 50);
        idx.persist().unwrap();
        let (idx, ok) = OffsetIndex::load(&p, 40).unwrap();
        assert!(!ok, "an entry past the segment's end is caught");
        assert!(idx.entries.is_empty());
    }
}
