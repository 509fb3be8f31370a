//! A broker's log dirs (`log.dirs`, KIP-113): which dir holds a partition, where a new one
//! goes (the dir with the fewest partitions, as Kafka's `LogManager.nextLogDirs`), each
//! dir's identity (`meta.properties` with a `directory.id`, KIP-858) and the size of the
//! volume under it (KIP-827).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use uuid::Uuid;

/// Suffix of a partition's copy that AlterReplicaLogDirs is building (`<topic>-<p>.<id>-future`).
pub const FUTURE_SUFFIX: &str = "-future";

/// One configured log dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDir {
    /// Absolute, as configured (Kafka names dirs by their configured absolute path).
    pub path: PathBuf,
    /// Its `directory.id`, kept across restarts in `meta.properties`.
    pub id: Uuid,
}

/// The configured log dirs, and how many partitions each holds.
#[derive(Debug)]
pub struct LogDirs {
    dirs: Vec<LogDir>,
    counts: Mutex<HashMap<PathBuf, usize>>,
}

/// Whether a directory entry's name is a partition's (`<topic>-<index>`), not the
/// metadata log, a deleted partition or a future copy.
fn is_partition_dir(name: &str) -> bool {
    name != "__cluster_metadata-0" && name.rsplit_once('-').is_some_and(|(t, i)| !t.is_empty() && i.parse::<u32>().is_ok())
}

/// Parses `log.dirs` (or `log.dir`): a comma list; blanks are dropped and paths made absolute.
pub fn parse(value: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let p = std::path::absolute(p).unwrap_or_else(|_| PathBuf::from(p));
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

impl LogDirs {
    /// Creates the dirs if need be and reads (or writes) each one's identity. A dir that
    /// cannot be opened is an error: the broker refuses to start on a config it cannot honour.
    pub fn open(paths: &[PathBuf], node_id: i32) -> std::io::Result<LogDirs> {
        for path in paths {
            std::fs::create_dir_all(path)?;
        }
        finish_moves(paths)?;
        let mut dirs = Vec::with_capacity(paths.len());
        let mut counts = HashMap::new();
        for path in paths {
            let id = super::meta_properties::directory_id(path, node_id)?;
            let n = std::fs::read_dir(path)?
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str().is_some_and(is_partition_dir))
                .count();
            counts.insert(path.clone(), n);
            dirs.push(LogDir { path: path.clone(), id });
        }
        assert!(!dirs.is_empty(), "log.dirs names at least one dir");
        Ok(LogDirs { dirs, counts: Mutex::new(counts) })
    }

    /// The configured dirs, in configured order.
    pub fn all(&self) -> &[LogDir] {
        &self.dirs
    }

    /// The dir a client names (DescribeLogDirs, AlterReplicaLogDirs): the configured path,
    /// compared after making it absolute, so `/data/a/` and `/data/a` are one dir.
    pub fn get(&self, path: &str) -> Option<&LogDir> {
        let p = std::path::absolute(path.trim_end_matches('/')).ok()?;
        self.dirs.iter().find(|d| d.path == p)
    }

    /// The dir that holds partition dir `name`, if any does.
    pub fn find(&self, name: &str) -> Option<&LogDir> {
        self.dirs.iter().find(|d| d.path.join(name).is_dir())
    }

    /// Where partition dir `name` lives: where it already is, else in the online dir
    /// holding the fewest partitions (the first configured on a tie). `None` when every dir
    /// is offline.
    pub fn place(&self, name: &str, offline: impl Fn(&Path) -> bool) -> Option<PathBuf> {
        if let Some(d) = self.find(name) {
            return Some(d.path.join(name));
        }
        let mut counts = self.counts.lock();
        let d = self.dirs.iter().filter(|d| !offline(&d.path)).min_by_key(|d| counts.get(&d.path).copied().unwrap_or(0))?;
        *counts.entry(d.path.clone()).or_default() += 1;
        Some(d.path.join(name))
    }

    /// Notes that a partition moved from one dir to another, or left (`to` None).
    pub fn moved(&self, from: &Path, to: Option<&Path>) {
        let mut counts = self.counts.lock();
        if let Some(n) = counts.get_mut(from) {
            *n = n.saturating_sub(1);
        }
        if let Some(to) = to {
            *counts.entry(to.to_path_buf()).or_default() += 1;
        }
    }
}

/// Ends what a crash interrupted: `-delete` dirs go; a `-future` copy (see
/// [`super::future`]) whose partition dir still exists somewhere was not finished and goes;
/// one whose partition dir is gone was complete (the swap renames the old dir away only
/// then) and becomes the partition's dir.
fn finish_moves(paths: &[PathBuf]) -> std::io::Result<()> {
    let mut futures = Vec::new();
    for path in paths {
        for e in std::fs::read_dir(path)?.filter_map(|e| e.ok()) {
            let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
            if name.ends_with("-delete") && !is_partition_dir(&name) {
                let _ = std::fs::remove_dir_all(e.path());
            } else if let Some(partition) = name.strip_suffix(FUTURE_SUFFIX).and_then(|n| n.rsplit_once('.')).map(|(p, _)| p.to_string()) {
                futures.push((e.path(), path.join(partition)));
            }
        }
    }
    for (future, partition) in futures {
        let name = partition.file_name().expect("a partition name");
        if paths.iter().any(|d| d.join(name).is_dir()) {
            tracing::info!(dir = %future.display(), "removing an unfinished copy of a partition move");
            std::fs::remove_dir_all(&future)?;
        } else {
            tracing::info!(dir = %partition.display(), "completing a partition move interrupted by a crash");
            std::fs::rename(&future, &partition)?;
        }
    }
    Ok(())
}

/// The total and usable bytes of the volume holding `path` (statvfs), as DescribeLogDirs
/// v4 reports them; `None` if the volume cannot be asked.
pub fn volume_bytes(path: &Path) -> Option<(i64, i64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a properly sized out-parameter.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let frsize = st.f_frsize as i64;
    Some((st.f_blocks as i64 * frsize, st.f_bavail as i64 * frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_partitions_go_to_the_dir_with_fewest_and_stay_where_they_are() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir_all(a.join("t-0")).unwrap();
        std::fs::create_dir_all(a.join("__cluster_metadata-0")).unwrap();
        let dirs = LogDirs::open(&[a.clone(), b.clone()], 1).unwrap();
        assert_eq!(dirs.place("t-0", |_| false), Some(a.join("t-0")));
        assert_eq!(dirs.place("t-1", |_| false), Some(b.join("t-1")));
        std::fs::create_dir_all(b.join("t-1")).unwrap();
        // a and b hold one each: the first configured wins the tie.
        assert_eq!(dirs.place("t-2", |_| false), Some(a.join("t-2")));
        // An offline dir gets nothing new.
        assert_eq!(dirs.place("t-3", |d| d == a), Some(b.join("t-3")));
        assert_eq!(dirs.place("t-4", |_| true), None);
        // The identity survives a reopen.
        let again = LogDirs::open(&[a.clone(), b.clone()], 1).unwrap();
        assert_eq!(again.all(), dirs.all());
        assert_ne!(dirs.all()[0].id, dirs.all()[1].id);
        assert_eq!(dirs.get(&format!("{}/", a.display())).map(|d| d.id), Some(dirs.all()[0].id));
        assert!(dirs.get("/no/such/dir").is_none());
        assert!(volume_bytes(&a).is_some_and(|(total, usable)| total > 0 && usable <= total));
    }

    #[test]
    fn a_restart_finishes_or_drops_interrupted_moves() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        // t-0 was mid-copy (its dir still exists); t-1's swap had renamed the old dir away.
        for d in ["a/t-0", "b/t-0.ab-future", "a/t-1.cd-delete", "b/t-1.cd-future"] {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        let dirs = LogDirs::open(&[a.clone(), b.clone()], 1).unwrap();
        assert!(!b.join("t-0.ab-future").exists() && !a.join("t-1.cd-delete").exists());
        assert_eq!(dirs.find("t-1").map(|d| d.path.clone()), Some(b.clone()));
        assert_eq!(dirs.find("t-0").map(|d| d.path.clone()), Some(a.clone()));
    }

    #[test]
    fn log_dirs_parse_as_a_comma_list() {
        assert_eq!(parse(" /a, /b,,/a "), vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        assert!(!is_partition_dir("t-0.abc-delete") && !is_partition_dir("__cluster_metadata-0") && is_partition_dir("my-topic-12"));
    }
}
