//! A partition's copy being built in another log dir while the partition keeps taking
//! writes: Kafka's "future log" of AlterReplicaLogDirs (KIP-113).
//!
//! Kafka fills its future log by fetching from the current one. Sluice copies the files
//! instead, which carries every piece of partition state at once (segments, indexes,
//! leader-epoch checkpoint, producer snapshot, aborted transactions): rounds of copying
//! run without the partition's lock, each bringing the copy closer, and the last round
//! runs under the lock, so it only carries what was appended since the round before.
//! Segment files only grow between cuts (truncation, reset), so a file that grew gets
//! only its new bytes; a cut since the first round (see [`super::Log::rewrites`]) makes
//! the last round copy everything again. Small state files are copied whole each round.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What was copied of one source file: its inode and how many bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Copied {
    ino: u64,
    len: u64,
}

/// A copy of the partition dir `src` being built at `dst`.
#[derive(Debug)]
pub struct FutureCopy {
    pub src: PathBuf,
    pub dst: PathBuf,
    copied: HashMap<String, Copied>,
    /// The source log's [`super::Log::rewrites`] when copying began.
    rewrites: u64,
}

/// Whether a file only ever grows by appends (between cuts): segments and their indexes.
fn append_only(name: &str) -> bool {
    name.ends_with(".log") || name.ends_with(".index") || name.ends_with(".timeindex")
}

impl FutureCopy {
    /// Starts a copy of `src` into `dst` (created empty; a leftover from an interrupted
    /// move is discarded). `rewrites` is the source log's count of cuts now.
    pub fn start(src: &Path, dst: &Path, rewrites: u64) -> std::io::Result<FutureCopy> {
        if dst.exists() {
            std::fs::remove_dir_all(dst)?;
        }
        std::fs::create_dir_all(dst)?;
        Ok(FutureCopy { src: src.to_path_buf(), dst: dst.to_path_buf(), copied: HashMap::new(), rewrites })
    }

    /// One round: brings every file of `dst` up to its source and removes what the source
    /// no longer has. With `rewrites` different from the start's, segments are recopied
    /// whole. With `sync`, what was written is fsynced. Returns the bytes copied.
    pub fn round(&mut self, rewrites: u64, sync: bool) -> std::io::Result<u64> {
        if rewrites != self.rewrites {
            self.copied.clear();
            self.rewrites = rewrites;
        }
        let mut total = 0;
        let mut seen = Vec::new();
        for e in std::fs::read_dir(&self.src)?.filter_map(|e| e.ok()) {
            let Ok(name) = e.file_name().into_string() else { continue };
            if name.ends_with(".tmp") || name.ends_with(".cleaned") {
                continue;
            }
            // A file deleted since the listing (retention) is simply not copied.
            let Ok(meta) = e.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            seen.push(name.clone());
            let now = Copied { ino: meta.ino(), len: meta.len() };
            let from = match self.copied.get(&name) {
                Some(c) if append_only(&name) && c.ino == now.ino && c.len <= now.len => c.len,
                _ => 0,
            };
            if from == now.len && self.copied.contains_key(&name) {
                continue;
            }
            match copy_range(&e.path(), &self.dst.join(&name), from, sync) {
                Ok(n) => {
                    total += n;
                    self.copied.insert(name, Copied { ino: now.ino, len: from + n });
                }
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(err),
            }
        }
        for gone in self.copied.keys().filter(|k| !seen.contains(k)).cloned().collect::<Vec<_>>() {
            self.copied.remove(&gone);
            let _ = std::fs::remove_file(self.dst.join(&gone));
        }
        Ok(total)
    }

    /// Bytes copied so far.
    pub fn size(&self) -> u64 {
        self.copied.iter().filter(|(n, _)| n.ends_with(".log")).map(|(_, c)| c.len).sum()
    }
}

/// Copies `src` from byte `from` to its end into `dst` at the same position (truncating
/// `dst` there first). Returns the bytes copied.
fn copy_range(src: &Path, dst: &Path, from: u64, sync: bool) -> std::io::Result<u64> {
    let mut input = File::open(src)?;
    input.seek(SeekFrom::Start(from))?;
    let mut out = OpenOptions::new().create(true).write(true).truncate(false).open(dst)?;
    out.set_len(from)?;
    out.seek(SeekFrom::Start(from))?;
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        let k = input.read(&mut buf)?;
        if k == 0 {
            break;
        }
        out.write_all(&buf[..k])?;
        n += k as u64;
    }
    if sync {
        out.sync_all()?;
    }
    Ok(n)
}

/// Fsyncs a directory, so renames and new entries in it survive a crash.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_carry_appends_cuts_and_deletions() {
        let tmp = tempfile::tempdir().unwrap();
        let (src, dst) = (tmp.path().join("a/t-0"), tmp.path().join("b/t-0.x-future"));
        std::fs::create_dir_all(&src).unwrap();
        let seg = src.join("00000000000000000000.log");
        std::fs::write(&seg, b"hello").unwrap();
        std::fs::write(src.join("leader-epoch-checkpoint"), b"0\n0\n").unwrap();
        let mut c = FutureCopy::start(&src, &dst, 0).unwrap();
        assert_eq!(c.round(0, false).unwrap(), 9);
        // An append: only the new bytes travel.
        OpenOptions::new().append(true).open(&seg).unwrap().write_all(b" world").unwrap();
        assert_eq!(c.round(0, true).unwrap(), 6 + 4);
        assert_eq!(std::fs::read(dst.join("00000000000000000000.log")).unwrap(), b"hello world");
        // A cut, then a regrowth to a longer length: the whole file again.
        std::fs::write(&seg, b"HELLO WORLD!").unwrap();
        c.round(1, false).unwrap();
        assert_eq!(std::fs::read(dst.join("00000000000000000000.log")).unwrap(), b"HELLO WORLD!");
        // Retention removed a file: so does the copy.
        std::fs::remove_file(src.join("leader-epoch-checkpoint")).unwrap();
        c.round(1, false).unwrap();
        assert!(!dst.join("leader-epoch-checkpoint").exists());
        assert_eq!(c.size(), 12);
    }
}
