//! Moving a partition's log to another log dir while it takes writes (AlterReplicaLogDirs,
//! KIP-113): a future copy is built beside the target dir's partitions, catches up
//! without the partition's lock, and is swapped in under it; then the old dir goes.
//!
//! The order of the swap makes a crash at any point recoverable: the old dir is renamed
//! to `-delete` only after the copy is complete and fsynced, and the copy takes the
//! partition's name right after. A restart that finds a complete `-future` copy and no
//! partition dir promotes the copy (see [`crate::log::dirs::LogDirs::open`]).

use std::path::{Path, PathBuf};

use super::Partition;
use crate::error::{Error, Result};
use crate::log::dirs::FUTURE_SUFFIX;
use crate::log::future::{sync_dir, FutureCopy};
use crate::log::Log;

/// A move in progress, as DescribeLogDirs shows it (`is_future`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FutureReplica {
    /// The log dir the partition is moving to.
    pub log_dir: PathBuf,
    /// Segment bytes copied so far.
    pub size: u64,
    /// The source's log end offset that the copy holds everything below.
    pub offset: i64,
}

/// Rounds without the lock stop once one carries less than this: the last round, under
/// the lock, then copies about as much (what was appended while this one ran).
const SMALL_ROUND: u64 = 256 << 10;
/// At most this many rounds before the swap, however fast the partition is written.
const MAX_ROUNDS: usize = 20;

impl Partition {
    /// The log dir holding this partition's log (the parent of its dir).
    pub fn log_dir(&self) -> PathBuf {
        self.with_state(|s| s.log.dir().parent().map(Path::to_path_buf).unwrap_or_default())
    }

    /// Whether this partition's log dir is offline.
    pub fn is_offline(&self) -> bool {
        self.with_state(|s| s.log.is_offline())
    }

    /// The move in progress, if any.
    pub fn future(&self) -> Option<FutureReplica> {
        self.future.lock().clone()
    }

    /// Asks for the log to be in `log_dir`. Returns true if a move must be run (see
    /// [`Partition::run_move`]) because none was running; asking for the current dir
    /// cancels a move, asking for another dir redirects it.
    pub fn request_move(&self, log_dir: &Path) -> bool {
        // The state lock is never taken inside the future's (the swap nests them the other way).
        let (here, start_offset) = self.with_state(|s| (s.log.dir().parent().map(Path::to_path_buf), s.log.log_start_offset()));
        let mut future = self.future.lock();
        if here.as_deref() == Some(log_dir) {
            *future = None;
            return false;
        }
        if future.as_ref().is_some_and(|f| f.log_dir == log_dir) {
            return false;
        }
        let start = future.is_none();
        *future = Some(FutureReplica { log_dir: log_dir.to_path_buf(), size: 0, offset: start_offset });
        start
    }

    /// Runs the move that [`Partition::request_move`] asked for, to its end (blocking file
    /// I/O: call it off the request threads). Returns the dirs moved from and to, or None
    /// when the move was cancelled.
    pub fn run_move(&self, now_ms: &dyn Fn() -> i64) -> Result<Option<(PathBuf, PathBuf)>> {
        let _files = self.relocating.lock();
        loop {
            let r = self.copy_and_swap(now_ms);
            let here = self.log_dir();
            let mut future = self.future.lock();
            // Redirected while the swap ran: move again, to the new target.
            if r.is_ok() && future.as_ref().is_some_and(|f| f.log_dir != here) {
                continue;
            }
            *future = None;
            return r;
        }
    }

    fn copy_and_swap(&self, now_ms: &dyn Fn() -> i64) -> Result<Option<(PathBuf, PathBuf)>> {
        let (src, topic_id) = (self.with_state(|s| s.log.dir().to_path_buf()), self.topic_id);
        let name = src.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mut copy: Option<FutureCopy> = None;
        let mut rounds = 0;
        loop {
            // The target may have changed (or the move been cancelled) since the last round.
            let Some(target) = self.future().map(|f| f.log_dir) else {
                discard(copy);
                return Ok(None);
            };
            let dst = target.join(format!("{name}.{}{FUTURE_SUFFIX}", topic_id.simple()));
            if copy.as_ref().is_some_and(|c| c.dst != dst) {
                discard(copy.take());
                rounds = 0;
            }
            let (rewrites, leo) = self.with_state(|s| (s.log.rewrites(), s.log.log_end_offset()));
            let c = match &mut copy {
                Some(c) => c,
                None => copy.insert(FutureCopy::start(&src, &dst, rewrites)?),
            };
            let n = c.round(rewrites, false)?;
            rounds += 1;
            if let Some(f) = self.future.lock().as_mut().filter(|f| f.log_dir == target) {
                f.size = c.size();
                f.offset = leo;
            }
            if n < SMALL_ROUND || rounds >= MAX_ROUNDS {
                break;
            }
        }
        let mut c = copy.expect("a round ran");
        // Make what the rounds wrote durable before the old copy may go.
        for e in std::fs::read_dir(&c.dst)?.filter_map(|e| e.ok()) {
            std::fs::File::open(e.path())?.sync_all()?;
        }
        let mut st = self.state.lock();
        if self.future().is_none_or(|f| c.dst.parent() != Some(&f.log_dir)) {
            drop(st);
            discard(Some(c));
            return Ok(None);
        }
        c.round(st.log.rewrites(), true)?;
        let (from, to) = (src.parent().expect("a partition dir has a parent").to_path_buf(), c.dst.parent().expect("in a log dir").to_path_buf());
        let trash = from.join(format!("{name}.{}-delete", topic_id.simple()));
        let dest = to.join(&name);
        std::fs::rename(&src, &trash)?;
        if let Err(e) = std::fs::rename(&c.dst, &dest) {
            std::fs::rename(&trash, &src)?;
            return Err(e.into());
        }
        let _ = sync_dir(&to).and_then(|_| sync_dir(&from));
        match Log::open(&dest, st.log.config.clone(), true, now_ms()) {
            Ok(log) => {
                st.log = log;
                st.epochs.relocate(&dest);
            }
            Err(e) => {
                // Put everything back: the partition keeps serving from where it was.
                std::fs::rename(&dest, &c.dst)?;
                std::fs::rename(&trash, &src)?;
                drop(st);
                discard(Some(c));
                return Err(Error::Storage(format!("opening the moved log in {}: {e}", dest.display())));
            }
        }
        drop(st);
        let _ = std::fs::remove_dir_all(&trash);
        Ok(Some((from, to)))
    }
}

/// Removes a copy that will not be used.
fn discard(copy: Option<FutureCopy>) {
    if let Some(c) = copy {
        let _ = std::fs::remove_dir_all(&c.dst);
    }
}
