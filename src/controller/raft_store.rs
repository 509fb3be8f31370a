//! Durable storage for the metadata Raft log: entries, hard state and the latest snapshot.
//!
//! `raft.log` is an append-only file of checksummed frames (an entry, or a hard state);
//! replaying it in order rebuilds the in-memory view, a later entry at an index replacing
//! the suffix from there, as Raft's truncation demands. A torn tail (crash mid-write) is cut
//! off. `snapshot.bin` holds the latest snapshot: the metadata image as of an index. When
//! a snapshot is taken the log is rewritten without the entries it covers.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;
use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::{GetEntriesContext, RaftState, StorageError};

const ENTRY: u8 = 1;
const HARD_STATE: u8 = 2;

#[derive(Default)]
struct Core {
    hard_state: HardState,
    /// Its metadata gives the index and term just before `entries[0]`, and the voters.
    snapshot: Snapshot,
    entries: Vec<Entry>,
}

impl Core {
    fn first_index(&self) -> u64 {
        self.snapshot.get_metadata().index + 1
    }
    fn last_index(&self) -> u64 {
        self.entries.last().map_or(self.snapshot.get_metadata().index, |e| e.index)
    }
    fn append(&mut self, ents: &[Entry]) {
        let Some(first) = ents.first() else { return };
        // Raft hands us entries that may overwrite a divergent suffix; never a gap.
        assert!(first.index >= self.first_index() && first.index <= self.last_index() + 1, "raft log gap");
        let keep = (first.index - self.first_index()) as usize;
        self.entries.truncate(keep);
        self.entries.extend_from_slice(ents);
    }
}

/// The Raft log of this node. Cloning shares it.
#[derive(Clone)]
pub struct RaftStore {
    core: Arc<RwLock<Core>>,
    file: Arc<parking_lot::Mutex<File>>,
    dir: PathBuf,
    /// Raft asked for a snapshot that the stored one cannot serve (it predates the
    /// configuration that holds the receiver): the node takes a fresh one.
    snapshot_wanted: Arc<std::sync::atomic::AtomicBool>,
}

fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 9);
    out.extend_from_slice(&(payload.len() as u32 + 1).to_be_bytes());
    let mut body = Vec::with_capacity(payload.len() + 1);
    body.push(kind);
    body.extend_from_slice(payload);
    out.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Reads frames until the end or the first torn/corrupt one; returns them and the good length.
fn read_frames(bytes: &[u8]) -> (Vec<(u8, &[u8])>, usize) {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        let crc = u32::from_be_bytes(bytes[pos + 4..pos + 8].try_into().unwrap());
        let Some(body) = bytes.get(pos + 8..pos + 8 + len) else { break };
        if len == 0 || crc32c::crc32c(body) != crc {
            break;
        }
        out.push((body[0], &body[1..]));
        pos += 8 + len;
    }
    (out, pos)
}

impl RaftStore {
    /// Opens (or creates) the log in `dir`. `voters` is the bootstrap configuration of a
    /// log without a snapshot; after that the snapshot's configuration, and the
    /// configuration changes in the log after it, say who votes (KIP-853's voter set in
    /// the log, so that added and removed voters survive restarts).
    pub fn open(dir: &Path, voters: &[u64]) -> std::io::Result<RaftStore> {
        std::fs::create_dir_all(dir)?;
        let mut core = Core::default();
        match std::fs::read(dir.join("snapshot.bin")) {
            Ok(b) => core.snapshot = Snapshot::parse_from_bytes(&b).map_err(std::io::Error::other)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        if core.snapshot.get_metadata().get_conf_state().voters.is_empty() {
            core.snapshot.mut_metadata().set_conf_state(ConfState::from((voters.to_vec(), vec![])));
        }
        core.hard_state.commit = core.snapshot.get_metadata().index;
        core.hard_state.term = core.snapshot.get_metadata().term;
        let path = dir.join("raft.log");
        let mut bytes = Vec::new();
        if let Ok(mut f) = File::open(&path) {
            f.read_to_end(&mut bytes)?;
        }
        let (frames, good) = read_frames(&bytes);
        for (kind, payload) in frames {
            match kind {
                ENTRY => {
                    let e = Entry::parse_from_bytes(payload).map_err(std::io::Error::other)?;
                    // Entries a snapshot already covers (written before it) are skipped.
                    if e.index >= core.first_index() && e.index <= core.last_index() + 1 {
                        core.append(&[e]);
                    }
                }
                HARD_STATE => {
                    let hs = HardState::parse_from_bytes(payload).map_err(std::io::Error::other)?;
                    if hs.commit >= core.hard_state.commit {
                        core.hard_state = hs;
                    }
                }
                _ => break,
            }
        }
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
        if good < bytes.len() {
            tracing::warn!(cut = bytes.len() - good, "metadata log had a torn tail; cut it off");
            file.set_len(good as u64)?;
        }
        let mut file = file;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(good as u64))?;
        Ok(RaftStore {
            core: Arc::new(RwLock::new(core)),
            file: Arc::new(parking_lot::Mutex::new(file)),
            dir: dir.to_path_buf(),
            snapshot_wanted: Arc::default(),
        })
    }

    /// The index the latest snapshot covers (without copying its data).
    pub fn snapshot_index(&self) -> u64 {
        self.core.read().snapshot.get_metadata().index
    }

    /// The latest snapshot (its data is an image; empty for a new log).
    pub fn snapshot_now(&self) -> Snapshot {
        self.core.read().snapshot.clone()
    }

    /// Appends entries (possibly replacing a divergent suffix). Durable after [`sync`](Self::sync).
    pub fn append(&self, ents: &[Entry]) -> std::io::Result<()> {
        if ents.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::new();
        for e in ents {
            buf.extend(frame(ENTRY, &e.write_to_bytes().map_err(std::io::Error::other)?));
        }
        self.file.lock().write_all(&buf)?;
        self.core.write().append(ents);
        Ok(())
    }

    /// Records the hard state (term, vote, commit). Durable after [`sync`](Self::sync).
    pub fn set_hard_state(&self, hs: &HardState) -> std::io::Result<()> {
        self.file.lock().write_all(&frame(HARD_STATE, &hs.write_to_bytes().map_err(std::io::Error::other)?))?;
        self.core.write().hard_state = hs.clone();
        Ok(())
    }

    /// Makes everything written so far durable: a vote or an entry must survive a crash.
    pub fn sync(&self) -> std::io::Result<()> {
        self.file.lock().sync_data()
    }

    /// Installs a snapshot received from the leader: the log restarts after it.
    pub fn apply_snapshot(&self, snap: Snapshot) -> std::io::Result<()> {
        let mut core = self.core.write();
        let meta = snap.get_metadata();
        core.entries.retain(|e| e.index > meta.index);
        if core.entries.first().is_some_and(|e| e.index != meta.index + 1) {
            core.entries.clear();
        }
        core.hard_state.commit = core.hard_state.commit.max(meta.index);
        core.hard_state.term = core.hard_state.term.max(meta.term);
        core.snapshot = snap;
        self.rewrite(&core)
    }

    /// Was a fresh snapshot asked for since the last call?
    pub fn take_snapshot_wanted(&self) -> bool {
        self.snapshot_wanted.swap(false, std::sync::atomic::Ordering::Relaxed)
    }

    /// Takes a snapshot at `index` (applied, so committed) holding `image` and `conf` (the
    /// configuration as of `index`), and drops the entries it covers.
    pub fn compact(&self, index: u64, image: Vec<u8>, conf: ConfState) -> std::io::Result<()> {
        let mut core = self.core.write();
        if index < core.first_index() || index > core.last_index() {
            return Ok(());
        }
        let term = core.entries[(index - core.first_index()) as usize].term;
        let mut snap = Snapshot::default();
        snap.set_data(image.into());
        snap.mut_metadata().index = index;
        snap.mut_metadata().term = term;
        snap.mut_metadata().set_conf_state(conf);
        core.entries.retain(|e| e.index > index);
        core.snapshot = snap;
        self.rewrite(&core)
    }

    /// Writes the snapshot, then a fresh log holding the remaining entries; each by rename.
    fn rewrite(&self, core: &Core) -> std::io::Result<()> {
        let write = |name: &str, bytes: &[u8]| -> std::io::Result<()> {
            let tmp = self.dir.join(format!("{name}.tmp"));
            let mut f = File::create(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, self.dir.join(name))
        };
        write("snapshot.bin", &core.snapshot.write_to_bytes().map_err(std::io::Error::other)?)?;
        let mut log = frame(HARD_STATE, &core.hard_state.write_to_bytes().map_err(std::io::Error::other)?);
        for e in &core.entries {
            log.extend(frame(ENTRY, &e.write_to_bytes().map_err(std::io::Error::other)?));
        }
        write("raft.log", &log)?;
        let mut f = OpenOptions::new().write(true).open(self.dir.join("raft.log"))?;
        std::io::Seek::seek(&mut f, std::io::SeekFrom::End(0))?;
        File::open(&self.dir)?.sync_all()?;
        *self.file.lock() = f;
        Ok(())
    }

    /// How many entries the log holds beyond the snapshot.
    pub fn len(&self) -> usize {
        self.core.read().entries.len()
    }

    /// Is the log empty beyond the snapshot?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Committed entries from `from` on (at most `max`), or `None` if compacted away.
    pub fn committed_since(&self, from: u64, max: usize) -> Option<Vec<Entry>> {
        let core = self.core.read();
        if from < core.first_index() {
            return None;
        }
        let commit = core.hard_state.commit;
        Some(core.entries.iter().filter(|e| e.index >= from && e.index <= commit).take(max).cloned().collect())
    }
}

impl raft::Storage for RaftStore {
    fn initial_state(&self) -> raft::Result<RaftState> {
        let core = self.core.read();
        Ok(RaftState::new(core.hard_state.clone(), core.snapshot.get_metadata().get_conf_state().clone()))
    }

    fn entries(&self, low: u64, high: u64, max_size: impl Into<Option<u64>>, _: GetEntriesContext) -> raft::Result<Vec<Entry>> {
        let core = self.core.read();
        if low < core.first_index() {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > core.last_index() + 1 {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let lo = (low - core.first_index()) as usize;
        let hi = (high - core.first_index()) as usize;
        let mut ents = core.entries[lo..hi].to_vec();
        raft::util::limit_size(&mut ents, max_size.into());
        Ok(ents)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        let core = self.core.read();
        let meta = core.snapshot.get_metadata();
        if idx == meta.index {
            return Ok(meta.term);
        }
        if idx < core.first_index() {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if idx > core.last_index() {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        Ok(core.entries[(idx - core.first_index()) as usize].term)
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.core.read().first_index())
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.core.read().last_index())
    }

    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        let core = self.core.read();
        let conf = core.snapshot.get_metadata().get_conf_state();
        if !conf.voters.contains(&to) && !conf.learners.contains(&to) {
            // Raft refuses a snapshot whose configuration lacks the receiver (a voter
            // being added): one taken now holds it.
            self.snapshot_wanted.store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(raft::Error::Store(StorageError::SnapshotTemporarilyUnavailable));
        }
        if core.snapshot.get_metadata().index < request_index {
            // The driver compacts often enough that a newer one comes soon.
            return Err(raft::Error::Store(StorageError::SnapshotTemporarilyUnavailable));
        }
        Ok(core.snapshot.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64, term: u64, data: &[u8]) -> Entry {
        let mut e = Entry::default();
        e.index = index;
        e.term = term;
        e.data = data.to_vec().into();
        e
    }

    #[test]
    fn survives_reopen_truncation_torn_tail_and_compaction() {
        use raft::Storage;
        let dir = tempfile::tempdir().unwrap();
        let s = RaftStore::open(dir.path(), &[1, 2, 3]).unwrap();
        s.append(&[entry(1, 1, b"a"), entry(2, 1, b"b"), entry(3, 1, b"c")]).unwrap();
        // A new leader overwrites the divergent tail from index 2.
        s.append(&[entry(2, 2, b"B")]).unwrap();
        let mut hs = HardState::default();
        hs.term = 2;
        hs.vote = 3;
        hs.commit = 2;
        s.set_hard_state(&hs).unwrap();
        s.sync().unwrap();
        drop(s);
        // Simulate a crash in the middle of a write.
        let mut f = OpenOptions::new().append(true).open(dir.path().join("raft.log")).unwrap();
        f.write_all(&[0, 0, 0, 50, 1, 2]).unwrap();
        drop(f);
        let s = RaftStore::open(dir.path(), &[1, 2, 3]).unwrap();
        assert_eq!(s.last_index().unwrap(), 2);
        assert_eq!(s.term(2).unwrap(), 2);
        let st = s.initial_state().unwrap();
        assert_eq!((st.hard_state.term, st.hard_state.vote, st.hard_state.commit), (2, 3, 2));
        assert_eq!(st.conf_state.voters, vec![1, 2, 3], "a log without a snapshot starts from the configured voters");
        s.append(&[entry(3, 2, b"c")]).unwrap();
        s.compact(2, b"image@2".to_vec(), ConfState::from((vec![1, 2, 3, 4], vec![]))).unwrap();
        drop(s);
        let s = RaftStore::open(dir.path(), &[9]).unwrap();
        let st = s.initial_state().unwrap();
        assert_eq!(st.conf_state.voters, vec![1, 2, 3, 4], "the snapshot's voters outlive the configured ones");
        assert_eq!(s.first_index().unwrap(), 3);
        assert_eq!(s.term(2).unwrap(), 2);
        assert_eq!(&s.snapshot(0, 4).unwrap().data[..], b"image@2");
        assert!(s.snapshot(0, 5).is_err(), "node 5 is not in that snapshot's configuration");
        assert!(s.take_snapshot_wanted() && !s.take_snapshot_wanted());
        assert_eq!(s.entries(3, 4, None, GetEntriesContext::empty(false)).unwrap()[0].data[..], b"c"[..]);
        assert!(s.entries(2, 4, None, GetEntriesContext::empty(false)).is_err());
    }
}
