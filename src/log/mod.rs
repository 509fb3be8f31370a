//! A partition's on-disk log: a directory of segments named by base offset.

pub mod batch;
pub mod cleaner;
pub mod compression;
pub mod control;
pub mod dir_failure;
pub mod dirs;
pub mod epochs;
pub mod future;
pub mod index;
pub mod meta_properties;
pub mod producers;
pub mod records;
pub mod segment;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use batch::BatchHeader;
use segment::{Recovery, Segment};

use crate::error::{Error, Result};

/// The topic settings a log obeys.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    pub segment_bytes: u64,
    pub segment_ms: i64,
    pub retention_ms: i64,
    pub retention_bytes: i64,
    pub index_interval_bytes: u64,
    pub delete_policy: bool,
    pub flush_messages: i64,
    pub flush_ms: i64,
    /// Set when `cleanup.policy` includes `compact`.
    pub compact: Option<cleaner::CleanConfig>,
}

impl PartialEq for cleaner::CleanConfig {
    fn eq(&self, o: &Self) -> bool {
        self.delete_retention_ms == o.delete_retention_ms
            && self.min_compaction_lag_ms == o.min_compaction_lag_ms
            && self.min_cleanable_dirty_ratio == o.min_cleanable_dirty_ratio
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 3_600_000,
            retention_ms: 7 * 24 * 3_600_000,
            retention_bytes: -1,
            index_interval_bytes: 4096,
            delete_policy: true,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            compact: None,
        }
    }
}

/// What a read returned: whole batches, and where the data came from.
#[derive(Debug, Default)]
pub struct ReadResult {
    pub bytes: Vec<u8>,
}

/// Whole batches as a range of a segment file, to be sent without copying.
#[derive(Debug, Clone)]
pub struct FileSlice {
    pub file: std::sync::Arc<std::fs::File>,
    pub pos: u64,
    pub len: usize,
    /// Offset of the last record in the range.
    pub last_offset: i64,
}

impl FileSlice {
    /// Copies the range into memory (for callers that need to look inside).
    pub fn to_vec(&self) -> std::io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; self.len];
        self.file.read_exact_at(&mut buf, self.pos)?;
        Ok(buf)
    }
}

/// File in the partition directory that keeps the log start offset across restarts.
const LOG_START_FILE: &str = "log-start-offset";
/// File that remembers up to which offset the log has been compacted.
const CLEANER_CHECKPOINT: &str = "cleaner-checkpoint";

/// A partition's log.
pub struct Log {
    dir: PathBuf,
    segments: BTreeMap<i64, Segment>,
    log_start_offset: i64,
    pub config: LogConfig,
    unflushed_messages: i64,
    last_flush_ms: i64,
    /// The topic, from the directory's name (`<topic>-<partition>`): what disk faults match.
    topic: String,
    /// How many times bytes already written were cut (truncation, reset): a copy of the
    /// files made before a cut cannot be extended by appending (see [`future`]).
    rewrites: u64,
}

impl Log {
    /// Opens (or creates) the log in `dir`. After an unclean shutdown the active segment
    /// is checked batch by batch and any torn tail is cut off.
    pub fn open(dir: &Path, config: LogConfig, clean_shutdown: bool, now_ms: i64) -> std::io::Result<Log> {
        std::fs::create_dir_all(dir)?;
        // A compaction that died before its swap leaves a `.cleaned` file: the original stands.
        for e in std::fs::read_dir(dir)?.filter_map(|e| e.ok()) {
            if e.file_name().to_string_lossy().ends_with(".cleaned") {
                let _ = std::fs::remove_file(e.path());
            }
        }
        let mut bases: Vec<i64> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_suffix(".log")?.parse::<i64>().ok()
            })
            .collect();
        bases.sort_unstable();
        let mut segments = BTreeMap::new();
        let last = bases.last().copied();
        let mut prev_next: Option<i64> = None;
        for base in bases {
            let recovery = if Some(base) == last && !clean_shutdown { Recovery::Full } else { Recovery::Trust };
            let (mut seg, cut) = Segment::open(dir, base, recovery)?;
            if cut > 0 {
                tracing::warn!(dir = %dir.display(), base, bytes = cut, "cut a torn or corrupt tail off the log");
            }
            seg.index_interval = config.index_interval_bytes;
            if let Some(p) = prev_next {
                if base < p {
                    tracing::warn!(dir = %dir.display(), base, "segment overlaps its predecessor; ignoring it");
                    continue;
                }
            }
            prev_next = Some(seg.next_offset);
            segments.insert(base, seg);
        }
        let stored_start = std::fs::read_to_string(dir.join(LOG_START_FILE)).ok().and_then(|s| s.trim().parse::<i64>().ok()).unwrap_or(0);
        if segments.is_empty() {
            let mut seg = Segment::create(dir, stored_start, now_ms)?;
            seg.index_interval = config.index_interval_bytes;
            segments.insert(stored_start, seg);
        }
        let first_base = *segments.keys().next().expect("at least one segment");
        let mut log = Log {
            dir: dir.to_path_buf(),
            segments,
            log_start_offset: stored_start.max(first_base),
            config,
            unflushed_messages: 0,
            last_flush_ms: now_ms,
            topic: topic_of(dir),
            rewrites: 0,
        };
        let leo = log.log_end_offset();
        if log.log_start_offset > leo {
            log.log_start_offset = leo;
        }
        // Recovery opened every file; let them go until someone reads or writes.
        log.close_idle_files(i64::MAX, 0);
        Ok(log)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many times written bytes were cut from this log since it was opened.
    pub fn rewrites(&self) -> u64 {
        self.rewrites
    }

    /// Whether this log's dir is offline (a write there failed).
    pub fn is_offline(&self) -> bool {
        self.check_online().is_err()
    }

    /// The log end offset: the offset the next batch will get.
    pub fn log_end_offset(&self) -> i64 {
        self.active().next_offset
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    fn active(&self) -> &Segment {
        self.segments.values().next_back().expect("a log always has a segment")
    }

    fn active_mut(&mut self) -> &mut Segment {
        self.segments.values_mut().next_back().expect("a log always has a segment")
    }

    /// Total bytes of all segments.
    pub fn size(&self) -> u64 {
        self.segments.values().map(|s| s.size).sum()
    }

    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// Appends a batch whose base offset and epoch the caller has already patched in.
    pub fn append(&mut self, bytes: &[u8], h: &BatchHeader, now_ms: i64) -> Result<()> {
        self.append_parts(bytes, &[], h, now_ms)
    }

    /// [`append`](Self::append) of a batch in two consecutive parts (see [`Segment::append_parts`]).
    /// An I/O error takes the log dir offline (see [`dir_failure`]); in an offline dir every
    /// append fails at once.
    pub fn append_parts(&mut self, head: &[u8], tail: &[u8], h: &BatchHeader, now_ms: i64) -> Result<()> {
        assert_eq!(h.base_offset, self.log_end_offset(), "offsets are dense and assigned by the leader");
        self.check_online()?;
        let written = self.write_batch(head, tail, h, now_ms);
        self.on_io(written)?;
        Ok(())
    }

    fn write_batch(&mut self, head: &[u8], tail: &[u8], h: &BatchHeader, now_ms: i64) -> std::io::Result<()> {
        self.maybe_roll((head.len() + tail.len()) as u64, now_ms)?;
        if crate::fault::global().on_disk(crate::fault::DiskOp::Write, &self.topic, now_ms) {
            return Err(injected("write"));
        }
        let seg = self.active_mut();
        if seg.size == 0 {
            seg.created_ms = now_ms;
        }
        seg.append_parts(head, tail, h)?;
        self.unflushed_messages += h.records_count as i64;
        if self.unflushed_messages >= self.config.flush_messages {
            self.sync(now_ms)?;
        }
        Ok(())
    }

    /// Refuses a write to a log whose dir is offline.
    fn check_online(&self) -> Result<()> {
        match self.log_dir() {
            Some(d) if dir_failure::global().is_offline(d) => Err(Error::Storage(format!("log dir {} is offline", d.display()))),
            _ => Ok(()),
        }
    }

    /// Passes an I/O result on, taking the log dir offline if it is an error.
    fn on_io<T>(&self, r: std::io::Result<T>) -> Result<T> {
        r.map_err(|e| {
            if let Some(d) = self.log_dir() {
                dir_failure::global().report(d, &format!("{}: {e}", self.dir.display()));
            }
            Error::from(e)
        })
    }

    /// The log dir this partition's log lives in (its directory's parent).
    fn log_dir(&self) -> Option<&Path> {
        self.dir.parent()
    }

    fn maybe_roll(&mut self, incoming: u64, now_ms: i64) -> std::io::Result<()> {
        let cfg = self.config.clone();
        let seg = self.active();
        let full = seg.size > 0 && seg.size + incoming > cfg.segment_bytes;
        let old = seg.size > 0 && now_ms - seg.created_ms >= cfg.segment_ms;
        // Positions in the index are 32-bit.
        let too_big_for_index = seg.size + incoming > u32::MAX as u64;
        if full || old || too_big_for_index {
            self.roll(now_ms)?;
        }
        Ok(())
    }

    /// Starts a new active segment at the log end offset.
    pub fn roll(&mut self, now_ms: i64) -> std::io::Result<()> {
        let base = self.log_end_offset();
        if self.active().base == base {
            return Ok(());
        }
        // The closed segment goes to disk in the background, as Kafka does, so a
        // roll never stalls the produce that triggered it.
        self.active_mut().seal()?;
        let stem = segment::file_stem(self.active().base);
        let files: Vec<PathBuf> = ["log", "index", "timeindex"].iter().map(|ext| self.dir.join(format!("{stem}.{ext}"))).collect();
        std::thread::spawn(move || {
            for f in files {
                match std::fs::File::open(&f).and_then(|h| h.sync_data()) {
                    // Deleted meanwhile (retention, topic deletion): nothing left to flush.
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => tracing::warn!(file = %f.display(), error = %e, "could not flush a rolled segment"),
                }
            }
        });
        let mut seg = Segment::create(&self.dir, base, now_ms)?;
        seg.index_interval = self.config.index_interval_bytes;
        self.segments.insert(base, seg);
        Ok(())
    }

    /// Reads whole batches starting with the one that holds `offset`, stopping before
    /// `upper` (the high watermark) and after about `max_bytes`. The first batch is
    /// returned whole even when larger than `max_bytes` if `min_one` is set.
    pub fn read(&self, offset: i64, upper: i64, max_bytes: usize, min_one: bool) -> Result<ReadResult> {
        if offset < self.log_start_offset || offset > self.log_end_offset() {
            return Err(Error::OffsetOutOfRange(offset));
        }
        if offset >= upper {
            return Ok(ReadResult::default());
        }
        let Some((_, seg)) = self.segments.range(..=offset).next_back() else {
            return Err(Error::OffsetOutOfRange(offset));
        };
        // The offset may sit in a gap at the end of a segment (or after compaction): move on.
        let mut found = None;
        for (_, s) in self.segments.range(seg.base..) {
            if let Some(x) = s.find_batch(offset)? {
                found = Some((s, x));
                break;
            }
        }
        let Some((seg, (start, first))) = found else { return Ok(ReadResult::default()) };
        if first.base_offset >= upper {
            return Ok(ReadResult::default());
        }
        let want = (max_bytes as u64).min(seg.size - start);
        let mut buf = seg.read_at(start, want as usize)?;
        // Cut at the last whole batch below `upper`.
        let mut pos = 0usize;
        while pos + batch::HEADER_LEN <= buf.len() {
            let h = BatchHeader::parse(&buf[pos..])?;
            if h.base_offset >= upper || pos + h.total_len() > buf.len() {
                break;
            }
            pos += h.total_len();
        }
        if pos == 0 {
            if !min_one {
                return Ok(ReadResult::default());
            }
            buf = seg.read_at(start, first.total_len())?;
            pos = buf.len();
        }
        buf.truncate(pos);
        Ok(ReadResult { bytes: buf })
    }

    /// Like [`Log::read`], but only finds the byte range, reading batch headers and
    /// not the data, so the caller can hand the range to the socket. None: nothing to read.
    pub fn read_slice(&self, offset: i64, upper: i64, max_bytes: usize, min_one: bool) -> Result<Option<FileSlice>> {
        if offset < self.log_start_offset || offset > self.log_end_offset() {
            return Err(Error::OffsetOutOfRange(offset));
        }
        if offset >= upper {
            return Ok(None);
        }
        let Some((_, seg)) = self.segments.range(..=offset).next_back() else {
            return Err(Error::OffsetOutOfRange(offset));
        };
        let mut found = None;
        for (_, s) in self.segments.range(seg.base..) {
            if let Some(x) = s.find_batch(offset)? {
                found = Some((s, x));
                break;
            }
        }
        let Some((seg, (start, first))) = found else { return Ok(None) };
        if first.base_offset >= upper {
            return Ok(None);
        }
        let limit = start.saturating_add(max_bytes as u64);
        let (mut pos, mut last_offset) = (start, first.last_offset());
        while let Some(h) = seg.header_at(pos, seg.size)? {
            let end = pos + h.total_len() as u64;
            if h.base_offset >= upper || (end > limit && !(pos == start && min_one)) {
                break;
            }
            last_offset = h.last_offset();
            pos = end;
        }
        if pos == start {
            return Ok(None);
        }
        Ok(Some(FileSlice { file: seg.file()?, pos: start, len: (pos - start) as usize, last_offset }))
    }

    /// The first offset whose record timestamp is >= `ts`, with that record's timestamp.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>> {
        for seg in self.segments.values() {
            if seg.max_timestamp < ts || seg.next_offset == seg.base {
                continue;
            }
            let from = seg.time_lookup(ts).max(self.log_start_offset);
            let pos = seg.find_batch(from)?.map_or(0, |(p, _)| p);
            for (p, h) in seg.headers_from(pos)? {
                if h.max_timestamp < ts || h.last_offset() < self.log_start_offset {
                    continue;
                }
                if h.attributes & batch::ATTR_LOG_APPEND_TIME != 0 {
                    // Every record of a LogAppendTime batch carries the batch's time.
                    return Ok(Some((h.base_offset.max(self.log_start_offset), h.max_timestamp)));
                }
                let bytes = seg.read_at(p, h.total_len())?;
                if let Some(recs) = batch::record_timestamps(&bytes) {
                    if let Some(&(delta, t)) = recs.iter().find(|&&(d, t)| t >= ts && h.base_offset + d as i64 >= self.log_start_offset) {
                        return Ok(Some((h.base_offset + delta as i64, t)));
                    }
                }
                // Compressed batch: its first offset is the earliest that can match.
                return Ok(Some((h.base_offset.max(self.log_start_offset), h.max_timestamp)));
            }
        }
        Ok(None)
    }

    /// The offset and timestamp of the record with the largest timestamp.
    pub fn max_timestamp(&self) -> Result<Option<(i64, i64)>> {
        let Some(seg) = self.segments.values().filter(|s| s.max_timestamp >= 0).max_by_key(|s| s.max_timestamp) else {
            return Ok(None);
        };
        let target = seg.offset_of_max_timestamp;
        if let Some((p, h)) = seg.find_batch(target)? {
            if h.attributes & batch::ATTR_LOG_APPEND_TIME != 0 {
                return Ok(Some((h.base_offset, h.max_timestamp)));
            }
            let bytes = seg.read_at(p, h.total_len())?;
            if let Some(recs) = batch::record_timestamps(&bytes) {
                if let Some(&(delta, t)) = recs.iter().find(|&&(_, t)| t == h.max_timestamp) {
                    return Ok(Some((h.base_offset + delta as i64, t)));
                }
            }
            return Ok(Some((h.last_offset(), h.max_timestamp)));
        }
        Ok(None)
    }

    /// Headers of every batch from `offset` to the end, for rebuilding state.
    pub fn headers_from(&self, offset: i64) -> Result<Vec<BatchHeader>> {
        let mut out = Vec::new();
        let first = self.segments.range(..=offset).next_back().map_or(i64::MIN, |(b, _)| *b);
        for seg in self.segments.range(first..).map(|(_, s)| s) {
            let pos = seg.find_batch(offset)?.map_or(seg.size, |(p, _)| p);
            out.extend(seg.headers_from(pos)?.into_iter().map(|(_, h)| h).filter(|h| h.last_offset() >= offset));
        }
        Ok(out)
    }

    /// Deletes segments that retention has expired, never the active one.
    /// Returns how many segments went.
    pub fn apply_retention(&mut self, now_ms: i64) -> Result<usize> {
        if !self.config.delete_policy {
            return self.delete_below_start();
        }
        let mut deleted = 0;
        let mut total = self.size() as i64;
        while self.segments.len() > 1 {
            let first = self.segments.values().next().expect("more than one segment");
            // An empty segment (compaction can leave one) ages from its file time, as in Kafka.
            let newest = if first.max_timestamp >= 0 { first.max_timestamp } else { first.created_ms };
            let by_time = self.config.retention_ms >= 0 && now_ms - newest > self.config.retention_ms;
            let by_size = self.config.retention_bytes >= 0 && total - first.size as i64 >= self.config.retention_bytes;
            let below_start = first.next_offset <= self.log_start_offset;
            if !(by_time || by_size || below_start) {
                break;
            }
            let base = first.base;
            let seg = self.segments.remove(&base).expect("present");
            total -= seg.size as i64;
            seg.delete()?;
            deleted += 1;
        }
        if deleted > 0 {
            let start = *self.segments.keys().next().expect("active remains");
            self.set_log_start_offset(start.max(self.log_start_offset))?;
        }
        Ok(deleted)
    }

    /// Deletes whole segments that lie below the log start offset (after DeleteRecords).
    pub fn delete_below_start(&mut self) -> Result<usize> {
        let mut deleted = 0;
        while self.segments.len() > 1 {
            let first = self.segments.values().next().expect("more than one segment");
            if first.next_offset > self.log_start_offset {
                break;
            }
            let base = first.base;
            self.segments.remove(&base).expect("present").delete()?;
            deleted += 1;
        }
        Ok(deleted)
    }

    /// Removes every batch from the one holding `offset` on (a batch straddling `offset`
    /// goes whole: only the leader's copy of it is right). Returns the new log end offset.
    pub fn truncate_to(&mut self, offset: i64, now_ms: i64) -> Result<i64> {
        if offset >= self.log_end_offset() {
            return Ok(self.log_end_offset());
        }
        if offset <= self.log_start_offset {
            self.reset_to(offset.max(self.log_start_offset), now_ms)?;
            return Ok(self.log_end_offset());
        }
        let mut point = offset;
        if let Some(seg) = self.segments.range(..=offset).next_back().map(|(_, s)| s) {
            if let Some((_, h)) = seg.find_batch(offset)? {
                point = point.min(h.base_offset);
            }
        }
        self.rewrites += 1;
        let doomed: Vec<i64> = self.segments.range(point..).map(|(b, _)| *b).collect();
        for b in doomed {
            self.segments.remove(&b).expect("present").delete()?;
        }
        if self.segments.is_empty() {
            let mut seg = segment::Segment::create(&self.dir, point, now_ms)?;
            seg.index_interval = self.config.index_interval_bytes;
            self.segments.insert(point, seg);
        } else {
            self.active_mut().truncate_to(point)?;
        }
        debug_assert_eq!(self.log_end_offset(), point);
        Ok(self.log_end_offset())
    }

    /// Empties the log and restarts it at `offset` (a follower too far behind its leader).
    pub fn reset_to(&mut self, offset: i64, now_ms: i64) -> Result<()> {
        self.rewrites += 1;
        for (_, seg) in std::mem::take(&mut self.segments) {
            seg.delete()?;
        }
        let mut seg = segment::Segment::create(&self.dir, offset, now_ms)?;
        seg.index_interval = self.config.index_interval_bytes;
        self.segments.insert(offset, seg);
        self.log_start_offset = offset;
        let tmp = self.dir.join(format!("{LOG_START_FILE}.tmp"));
        std::fs::write(&tmp, offset.to_string())?;
        std::fs::rename(&tmp, self.dir.join(LOG_START_FILE))?;
        Ok(())
    }

    /// Moves the log start offset forward and remembers it across restarts.
    pub fn set_log_start_offset(&mut self, offset: i64) -> Result<()> {
        if offset <= self.log_start_offset {
            return Ok(());
        }
        self.log_start_offset = offset;
        let tmp = self.dir.join(format!("{LOG_START_FILE}.tmp"));
        std::fs::write(&tmp, offset.to_string())?;
        std::fs::rename(&tmp, self.dir.join(LOG_START_FILE))?;
        Ok(())
    }

    /// fsyncs the active segment if `flush.ms` has passed.
    pub fn maybe_flush_by_time(&mut self, now_ms: i64) -> Result<()> {
        if self.unflushed_messages > 0 && now_ms - self.last_flush_ms >= self.config.flush_ms {
            self.flush(now_ms)?;
        }
        Ok(())
    }

    /// fsyncs the active segment and its indexes. A failure takes the log dir offline.
    pub fn flush(&mut self, now_ms: i64) -> Result<()> {
        self.check_online()?;
        let synced = self.sync(now_ms);
        self.on_io(synced)
    }

    fn sync(&mut self, now_ms: i64) -> std::io::Result<()> {
        if crate::fault::global().on_disk(crate::fault::DiskOp::Fsync, &self.topic, now_ms) {
            return Err(injected("fsync"));
        }
        self.active_mut().flush()?;
        self.unflushed_messages = 0;
        self.last_flush_ms = now_ms;
        Ok(())
    }

    /// Closed segments old enough to compact: (base, path, next offset, size).
    pub fn cleanable_segments(&self, now_ms: i64, min_lag_ms: i64) -> Vec<(i64, PathBuf, i64, u64)> {
        let active = self.active().base;
        self.segments
            .values()
            .take_while(|s| s.base != active && s.max_timestamp <= now_ms.saturating_sub(min_lag_ms))
            .map(|s| (s.base, s.path().to_path_buf(), s.next_offset, s.size))
            .collect()
    }

    /// The offset below which the log has been compacted.
    pub fn cleaner_checkpoint(&self) -> i64 {
        std::fs::read_to_string(self.dir.join(CLEANER_CHECKPOINT)).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
    }

    pub fn set_cleaner_checkpoint(&self, offset: i64) -> Result<()> {
        let tmp = self.dir.join(format!("{CLEANER_CHECKPOINT}.tmp"));
        std::fs::write(&tmp, offset.to_string())?;
        std::fs::rename(&tmp, self.dir.join(CLEANER_CHECKPOINT))?;
        Ok(())
    }

    /// Swaps a compacted copy in for the segment at `base`. The rename is atomic, so a
    /// crash leaves either the old or the new file; indexes are rebuilt from it.
    pub fn replace_segment(&mut self, base: i64, cleaned: &Path) -> Result<bool> {
        let Some(seg) = self.segments.get(&base) else {
            let _ = std::fs::remove_file(cleaned);
            return Ok(false);
        };
        let path = seg.path().to_path_buf();
        std::fs::rename(cleaned, &path)?;
        let stem = segment::file_stem(base);
        let _ = std::fs::remove_file(self.dir.join(format!("{stem}.index")));
        let _ = std::fs::remove_file(self.dir.join(format!("{stem}.timeindex")));
        let (mut fresh, _) = Segment::open(&self.dir, base, Recovery::Trust)?;
        fresh.index_interval = self.config.index_interval_bytes;
        let old = self.segments.insert(base, fresh).expect("present");
        // Keep the offsets a segment covers even if its tail records were compacted away.
        let next = old.next_offset;
        if let Some(s) = self.segments.get_mut(&base) {
            s.next_offset = s.next_offset.max(next);
        }
        Ok(true)
    }

    /// Closes file handles of segments idle for `idle_ms`. Returns how many closed.
    pub fn close_idle_files(&mut self, now_ms: i64, idle_ms: i64) -> usize {
        self.segments.values_mut().filter_map(|s| s.close_if_idle(now_ms, idle_ms).then_some(())).count()
    }

    /// Applies new settings.
    pub fn reconfigure(&mut self, config: LogConfig) {
        for s in self.segments.values_mut() {
            s.index_interval = config.index_interval_bytes;
        }
        self.config = config;
    }
}

/// The topic of a partition directory named `<topic>-<partition>`.
fn topic_of(dir: &Path) -> String {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.rsplit_once('-').map_or(name.clone(), |(t, _)| t.to_string())
}

/// The error an injected disk fault stands for: EIO, as a failing disk gives.
fn injected(op: &str) -> std::io::Error {
    std::io::Error::other(format!("injected disk fault: {op} failed (EIO)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::tests::make_batch;

    fn append(log: &mut Log, n: i32, ts: i64) -> i64 {
        let mut b = make_batch(n, ts, -1, -1, -1);
        let base = log.log_end_offset();
        batch::assign_offset(&mut b, base, 0);
        let h = batch::validate(&b).unwrap();
        log.append(&b, &h, ts).unwrap();
        base
    }

    #[test]
    fn append_read_roll_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = LogConfig { segment_bytes: 500, index_interval_bytes: 100, ..Default::default() };
        let mut log = Log::open(dir.path(), cfg.clone(), true, 0).unwrap();
        for i in 0..50 {
            assert_eq!(append(&mut log, 4, 1000 + i * 10), i * 4);
        }
        assert!(log.segment_count() > 3);
        let r = log.read(101, 200, 1 << 20, true).unwrap();
        let h = BatchHeader::parse(&r.bytes).unwrap();
        assert_eq!(h.base_offset, 100);
        assert!(log.read(201, 200, 10, true).is_err());
        assert_eq!(log.read(200, 200, 10, true).unwrap().bytes.len(), 0);
        assert_eq!(log.offset_for_timestamp(1000 + 7 * 10 + 2).unwrap(), Some((30, 1072)));
        assert_eq!(log.max_timestamp().unwrap(), Some((199, 1493)));
        drop(log);
        let log = Log::open(dir.path(), cfg, false, 0).unwrap();
        assert_eq!(log.log_end_offset(), 200);
        assert_eq!(log.headers_from(150).unwrap().len(), 13);
    }

    #[test]
    fn log_append_time_batches_match_by_their_append_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = Log::open(dir.path(), LogConfig::default(), true, 0).unwrap();
        let mut b = make_batch(3, 100, -1, -1, -1);
        batch::assign_offset(&mut b, 0, 0);
        batch::set_log_append_time(&mut b, 5000);
        let h = batch::validate(&b).unwrap();
        log.append(&b, &h, 5000).unwrap();
        assert_eq!(log.offset_for_timestamp(5000).unwrap(), Some((0, 5000)));
        assert_eq!(log.max_timestamp().unwrap(), Some((0, 5000)));
    }

    #[test]
    fn retention_by_size_moves_the_start_offset() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = LogConfig { segment_bytes: 300, retention_bytes: 600, ..Default::default() };
        let mut log = Log::open(dir.path(), cfg.clone(), true, 0).unwrap();
        for i in 0..40 {
            append(&mut log, 2, i);
        }
        let n = log.apply_retention(100).unwrap();
        assert!(n > 0 && log.size() <= 600 + 300);
        assert!(log.log_start_offset() > 0);
        assert!(log.read(0, 80, 100, true).is_err());
        let start = log.log_start_offset();
        drop(log);
        let log = Log::open(dir.path(), cfg, true, 0).unwrap();
        assert_eq!(log.log_start_offset(), start);
    }
}
