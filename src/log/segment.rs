//! One segment: a `.log` file of record batches named by its base offset, with its indexes.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::batch::{self, BatchHeader, HEADER_LEN, LOG_OVERHEAD};
use super::index::{OffsetIndex, TimeIndex};

/// File name stem of a segment: the base offset, zero-padded to 20 digits like Kafka.
pub fn file_stem(base: i64) -> String {
    format!("{base:020}")
}

/// A segment of a partition's log.
pub struct Segment {
    pub base: i64,
    path: PathBuf,
    /// Opened on first use and closed when idle (see [`Segment::close_if_idle`]).
    file: parking_lot::Mutex<Option<Arc<File>>>,
    last_used: std::sync::atomic::AtomicI64,
    /// Bytes of whole batches in the file.
    pub size: u64,
    index: OffsetIndex,
    time_index: TimeIndex,
    bytes_since_index: u64,
    /// One past the last offset stored here (the base when empty).
    pub next_offset: i64,
    /// Largest batch max-timestamp stored here, and the last offset of that batch.
    pub max_timestamp: i64,
    pub offset_of_max_timestamp: i64,
    /// Wall-clock time of the first append, for `segment.ms`.
    pub created_ms: i64,
    /// `index.interval.bytes`: bytes between offset index entries.
    pub index_interval: u64,
}

/// How a segment is opened.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Trust the file; rebuild indexes only if they don't check out.
    Trust,
    /// Check every batch's CRC and truncate at the first bad or partial one.
    Full,
}

impl Segment {
    /// Creates a new, empty segment.
    pub fn create(dir: &Path, base: i64, now_ms: i64) -> std::io::Result<Segment> {
        let path = dir.join(format!("{}.log", file_stem(base)));
        let file = OpenOptions::new().create(true).read(true).append(true).open(&path)?;
        file.set_len(0)?;
        let (index, _) = OffsetIndex::load(&dir.join(format!("{}.index", file_stem(base))), 0)?;
        let (time_index, _) = TimeIndex::load(&dir.join(format!("{}.timeindex", file_stem(base))), Some(0))?;
        Ok(Segment {
            base,
            path,
            file: parking_lot::Mutex::new(Some(Arc::new(file))),
            last_used: std::sync::atomic::AtomicI64::new(now_ms),
            size: 0,
            index,
            time_index,
            bytes_since_index: 0,
            next_offset: base,
            max_timestamp: -1,
            offset_of_max_timestamp: -1,
            created_ms: now_ms,
            index_interval: 4096,
        })
    }

    /// Opens an existing segment, recovering it as asked. Returns the segment and
    /// how many bytes of torn or corrupt tail were cut off.
    pub fn open(dir: &Path, base: i64, recovery: Recovery) -> std::io::Result<(Segment, u64)> {
        let path = dir.join(format!("{}.log", file_stem(base)));
        let meta = std::fs::metadata(&path)?;
        let file_len = meta.len();
        let created_ms =
            meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_millis() as i64);
        let (index, index_ok) = OffsetIndex::load(&dir.join(format!("{}.index", file_stem(base))), file_len)?;
        let (time_index, time_ok) = TimeIndex::load(&dir.join(format!("{}.timeindex", file_stem(base))), Some(u32::MAX))?;
        // An empty time index for a non-empty segment was lost, not merely unused.
        let time_ok = time_ok && (file_len == 0 || !time_index.entries.is_empty());
        let mut seg = Segment {
            base,
            path,
            file: parking_lot::Mutex::new(None),
            last_used: std::sync::atomic::AtomicI64::new(created_ms),
            size: file_len,
            index,
            time_index,
            bytes_since_index: 0,
            next_offset: base,
            max_timestamp: -1,
            offset_of_max_timestamp: -1,
            created_ms,
            index_interval: 4096,
        };
        let truncated =
            if recovery == Recovery::Full || !index_ok || !time_ok { seg.rebuild(recovery == Recovery::Full)? } else { seg.load_tail()? };
        Ok((seg, truncated))
    }

    /// Scans the whole file, rebuilding both indexes; with `check_crc`, cuts the file at
    /// the first batch that is partial, corrupt or out of order.
    fn rebuild(&mut self, check_crc: bool) -> std::io::Result<u64> {
        self.index.truncate_to_position(0)?;
        self.time_index.truncate_to_offset(0)?;
        self.bytes_since_index = 0;
        self.next_offset = self.base;
        self.max_timestamp = -1;
        let file_len = self.f()?.metadata()?.len();
        let mut pos = 0u64;
        let mut prev_next = self.base;
        while pos < file_len {
            let Some(h) = self.header_at(pos, file_len)? else { break };
            if h.base_offset < prev_next || h.last_offset() < h.base_offset {
                break;
            }
            if check_crc {
                let mut buf = vec![0u8; h.total_len()];
                self.f()?.read_exact_at(&mut buf, pos)?;
                if batch::validate(&buf).is_err() {
                    break;
                }
            }
            self.track(&h, pos)?;
            pos += h.total_len() as u64;
            prev_next = h.last_offset() + 1;
        }
        self.index_max_timestamp();
        self.persist_indexes()?;
        let cut = file_len - pos;
        if cut > 0 {
            self.f()?.set_len(pos)?;
        }
        self.size = pos;
        Ok(cut)
    }

    /// For a segment whose indexes are sound: walk from the last indexed batch to the end
    /// to learn the next offset, and take the max timestamp from the time index.
    fn load_tail(&mut self) -> std::io::Result<u64> {
        let start = self.index.entries.last().map_or(0, |e| e.1 as u64);
        if let Some(&(ts, rel)) = self.time_index.entries.last() {
            self.max_timestamp = ts;
            self.offset_of_max_timestamp = self.base + rel as i64;
        }
        let mut pos = start;
        while pos < self.size {
            let Some(h) = self.header_at(pos, self.size)? else {
                // A partial batch where a trusted file should end: recover properly.
                return self.rebuild(true);
            };
            self.next_offset = h.last_offset() + 1;
            if h.max_timestamp > self.max_timestamp {
                self.max_timestamp = h.max_timestamp;
                self.offset_of_max_timestamp = h.last_offset();
            }
            pos += h.total_len() as u64;
        }
        Ok(0)
    }

    /// Reads the header of the batch at `pos`, or None if no whole batch is there.
    pub fn header_at(&self, pos: u64, limit: u64) -> std::io::Result<Option<BatchHeader>> {
        if pos + HEADER_LEN as u64 > limit {
            return Ok(None);
        }
        let mut hb = [0u8; HEADER_LEN];
        self.f()?.read_exact_at(&mut hb, pos)?;
        let h = match BatchHeader::parse(&hb) {
            Ok(h) => h,
            Err(_) => return Ok(None),
        };
        if h.magic != 2 || h.batch_length < (HEADER_LEN - LOG_OVERHEAD) as i32 || pos + h.total_len() as u64 > limit {
            return Ok(None);
        }
        Ok(Some(h))
    }

    /// Updates indexes and counters for a batch now stored at `pos`.
    fn track(&mut self, h: &BatchHeader, pos: u64) -> std::io::Result<()> {
        let rel = (h.base_offset - self.base) as u32;
        if h.max_timestamp > self.max_timestamp {
            self.max_timestamp = h.max_timestamp;
            self.offset_of_max_timestamp = h.last_offset();
        }
        if self.index.entries.is_empty() || self.bytes_since_index >= self.index_interval() {
            self.index.append(rel, pos as u32);
            // As Kafka: time index entries ride with the offset index's.
            self.index_max_timestamp();
            self.bytes_since_index = 0;
        }
        self.bytes_since_index += h.total_len() as u64;
        self.next_offset = h.last_offset() + 1;
        Ok(())
    }

    /// Records the largest timestamp so far in the time index.
    fn index_max_timestamp(&mut self) {
        if self.max_timestamp >= 0 {
            self.time_index.maybe_append(self.max_timestamp, (self.offset_of_max_timestamp - self.base) as u32);
        }
    }

    /// The segment stops being the active one: its time index gets the segment's largest
    /// timestamp (as Kafka's does) and both indexes go to the file.
    pub fn seal(&mut self) -> std::io::Result<()> {
        self.index_max_timestamp();
        self.persist_indexes()
    }

    fn persist_indexes(&mut self) -> std::io::Result<()> {
        self.index.persist()?;
        self.time_index.persist()
    }

    fn index_interval(&self) -> u64 {
        self.index_interval
    }

    /// Appends one batch whose offsets are already assigned.
    pub fn append(&mut self, bytes: &[u8], h: &BatchHeader) -> std::io::Result<()> {
        self.append_parts(bytes, &[], h)
    }

    /// Appends one batch given as two consecutive parts (a rewritten header and the
    /// producer's untouched bytes), so the leader need not copy a batch to rewrite it.
    pub fn append_parts(&mut self, head: &[u8], tail: &[u8], h: &BatchHeader) -> std::io::Result<()> {
        let pos = self.size;
        if let Err(e) = write_all_parts(&*self.f()?, head, tail) {
            // Leave no partial batch behind on a failed write.
            let _ = self.f()?.set_len(pos);
            return Err(e);
        }
        self.size += (head.len() + tail.len()) as u64;
        self.track(h, pos)
    }

    /// Byte position from which to scan for `offset`.
    pub fn position_for(&self, offset: i64) -> u64 {
        self.index.lookup((offset - self.base).max(0) as u32) as u64
    }

    /// A shared handle on the `.log` file, for sending ranges of it without copies.
    pub fn file(&self) -> std::io::Result<Arc<File>> {
        self.f()
    }

    /// The file handle, opened if needed.
    fn f(&self) -> std::io::Result<Arc<File>> {
        let mut guard = self.file.lock();
        if guard.is_none() {
            *guard = Some(Arc::new(OpenOptions::new().read(true).append(true).open(&self.path)?));
        }
        self.last_used.store(crate::clock::now_ms(), std::sync::atomic::Ordering::Relaxed);
        Ok(guard.as_ref().expect("just opened").clone())
    }

    /// Closes the file handles if unused for `idle_ms`. Reads in flight keep their own
    /// reference, so nothing they hold is closed under them.
    pub fn close_if_idle(&mut self, now_ms: i64, idle_ms: i64) -> bool {
        if now_ms - self.last_used.load(std::sync::atomic::Ordering::Relaxed) < idle_ms {
            return false;
        }
        if let Err(e) = self.persist_indexes() {
            tracing::warn!(segment = %self.path.display(), error = %e, "could not write index entries");
        }
        self.file.lock().take().is_some()
    }

    /// The `.log` file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Finds the position of the batch that holds `offset`, scanning forward from the index.
    pub fn find_batch(&self, offset: i64) -> std::io::Result<Option<(u64, BatchHeader)>> {
        let mut pos = self.position_for(offset);
        while let Some(h) = self.header_at(pos, self.size)? {
            if h.last_offset() >= offset {
                return Ok(Some((pos, h)));
            }
            pos += h.total_len() as u64;
        }
        Ok(None)
    }

    /// Reads `len` bytes at `pos`.
    pub fn read_at(&self, pos: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.f()?.read_exact_at(&mut buf, pos)?;
        Ok(buf)
    }

    /// Offset from which to scan for the first record with timestamp >= ts.
    pub fn time_lookup(&self, ts: i64) -> i64 {
        self.base + self.time_index.lookup(ts) as i64
    }

    /// Removes every batch at or after `offset`.
    pub fn truncate_to(&mut self, offset: i64) -> std::io::Result<()> {
        let pos = match self.find_batch(offset)? {
            Some((pos, h)) if h.base_offset >= offset => pos,
            Some((pos, h)) => pos + h.total_len() as u64,
            None => return Ok(()),
        };
        self.f()?.set_len(pos)?;
        self.size = pos;
        self.index.truncate_to_position(pos as u32)?;
        self.time_index.truncate_to_offset((offset - self.base).max(0) as u32)?;
        self.rebuild(false)?;
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        if let Some(f) = self.file.lock().as_ref() {
            f.sync_data()?;
        }
        self.index.sync()?;
        self.time_index.sync()
    }

    /// Deletes the segment's files.
    pub fn delete(self) -> std::io::Result<()> {
        let _ = std::fs::remove_file(self.index.path());
        let _ = std::fs::remove_file(self.time_index.path());
        std::fs::remove_file(&self.path)
    }

    /// Iterates over the headers of all batches from `pos`.
    pub fn headers_from(&self, mut pos: u64) -> std::io::Result<Vec<(u64, BatchHeader)>> {
        let mut out = Vec::new();
        while let Some(h) = self.header_at(pos, self.size)? {
            out.push((pos, h));
            pos += h.total_len() as u64;
        }
        Ok(out)
    }
}

/// Writes `head` then `tail` with as few syscalls as the kernel allows.
fn write_all_parts(mut f: &File, head: &[u8], tail: &[u8]) -> std::io::Result<()> {
    let mut bufs = [std::io::IoSlice::new(head), std::io::IoSlice::new(tail)];
    let mut bufs = &mut bufs[..];
    while !bufs.is_empty() {
        match f.write_vectored(bufs) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => std::io::IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::tests::make_batch;

    fn put(seg: &mut Segment, off: i64, n: i32) {
        let mut b = make_batch(n, 1000 + off, -1, -1, -1);
        batch::assign_offset(&mut b, off, 0);
        let h = batch::validate(&b).unwrap();
        seg.append(&b, &h).unwrap();
    }

    #[test]
    fn torn_tail_is_cut_and_indexes_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = Segment::create(dir.path(), 0, 0).unwrap();
        for i in 0..10 {
            put(&mut seg, i * 3, 3);
        }
        let full = seg.size;
        drop(seg);
        let log = dir.path().join(format!("{}.log", file_stem(0)));
        let f = OpenOptions::new().append(true).open(&log).unwrap();
        f.set_len(full - 5).unwrap();
        std::fs::write(dir.path().join(format!("{}.index", file_stem(0))), b"garbage").unwrap();
        let (seg, cut) = Segment::open(dir.path(), 0, Recovery::Full).unwrap();
        assert!(cut > 0);
        assert_eq!(seg.next_offset, 27);
        assert_eq!(seg.find_batch(13).unwrap().unwrap().1.base_offset, 12);
    }

    #[test]
    fn a_batch_appended_in_two_parts_is_stored_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = Segment::create(dir.path(), 0, 0).unwrap();
        put(&mut seg, 0, 2);
        let mut b = make_batch(4, 2000, -1, -1, -1);
        batch::assign_offset(&mut b, 2, 0);
        let h = batch::validate(&b).unwrap();
        seg.append_parts(&b[..HEADER_LEN], &b[HEADER_LEN..], &h).unwrap();
        let start = seg.size - b.len() as u64;
        let mut stored = vec![0u8; b.len()];
        seg.file().unwrap().read_exact_at(&mut stored, start).unwrap();
        assert_eq!(stored, b);
        drop(seg);
        let (seg, cut) = Segment::open(dir.path(), 0, Recovery::Full).unwrap();
        assert_eq!((cut, seg.next_offset), (0, 6));
        assert_eq!(seg.find_batch(3).unwrap().unwrap().1, h);
    }
}
