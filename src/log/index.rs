//! Sparse indexes of one segment: offset → file position, and timestamp → offset.
//!
//! Entries live in memory and are appended to their file as they are made; the file
//! handle is opened only when there is something to write, and closed when the
//! segment goes idle, so thousands of partitions don't hold thousands of handles.
//! A file that doesn't check out on open (wrong size, out of order, past the
//! segment's end) is thrown away and rebuilt from the segment by the caller.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Offset index: (offset relative to the segment base, byte position).
pub struct OffsetIndex {
    path: PathBuf,
    file: Option<File>,
    pub entries: Vec<(u32, u32)>,
}

/// Time index: (max timestamp so far, offset relative to the segment base).
pub struct TimeIndex {
    path: PathBuf,
    file: Option<File>,
    pub entries: Vec<(i64, u32)>,
}

fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).read(true).append(true).open(path)
}

fn handle<'a>(file: &'a mut Option<File>, path: &Path) -> std::io::Result<&'a mut File> {
    if file.is_none() {
        *file = Some(open_append(path)?);
    }
    Ok(file.as_mut().expect("just opened"))
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
        Ok((OffsetIndex { path: path.to_path_buf(), file: None, entries }, ok))
    }

    /// Adds an entry; the caller spaces them by `index.interval.bytes`.
    pub fn append(&mut self, rel: u32, pos: u32) -> std::io::Result<()> {
        let mut e = [0u8; 8];
        e[0..4].copy_from_slice(&rel.to_be_bytes());
        e[4..8].copy_from_slice(&pos.to_be_bytes());
        handle(&mut self.file, &self.path)?.write_all(&e)?;
        self.entries.push((rel, pos));
        Ok(())
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
        handle(&mut self.file, &self.path)?.set_len(keep as u64 * 8)?;
        Ok(())
    }

    pub fn sync(&self) -> std::io::Result<()> {
        self.file.as_ref().map_or(Ok(()), File::sync_data)
    }

    /// Lets go of the file handle; the next write opens it again.
    pub fn close(&mut self) {
        self.file = None;
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
        Ok((TimeIndex { path: path.to_path_buf(), file: None, entries }, ok))
    }

    /// Records that timestamps up to `ts` are found at or before relative offset `rel`.
    pub fn maybe_append(&mut self, ts: i64, rel: u32) -> std::io::Result<()> {
        if self.entries.last().is_some_and(|&(lt, _)| ts <= lt) {
            return Ok(());
        }
        let mut e = [0u8; 12];
        e[0..8].copy_from_slice(&ts.to_be_bytes());
        e[8..12].copy_from_slice(&rel.to_be_bytes());
        handle(&mut self.file, &self.path)?.write_all(&e)?;
        self.entries.push((ts, rel));
        Ok(())
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
        handle(&mut self.file, &self.path)?.set_len(keep as u64 * 12)?;
        Ok(())
    }

    pub fn sync(&self) -> std::io::Result<()> {
        self.file.as_ref().map_or(Ok(()), File::sync_data)
    }

    /// Lets go of the file handle; the next write opens it again.
    pub fn close(&mut self) {
        self.file = None;
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
        idx.append(0, 0).ok();
        idx.append(5, 50).unwrap();
        assert_eq!(idx.lookup(4), 0);
        assert_eq!(idx.lookup(7), 50);
        let (idx, ok) = OffsetIndex::load(&p, 40).unwrap();
        assert!(!ok, "an entry past the segment's end is caught");
        assert!(idx.entries.is_empty());
    }
}
