//! Kafka's log dir failure channel: the first I/O error while writing or flushing a
//! partition's log takes the whole log dir offline. From then on every append to a log in
//! that dir fails at once with KAFKA_STORAGE_ERROR, and whoever watches the channel (the
//! broker) is told, once per dir. A broker whose every log dir is offline halts, as
//! Kafka's does, and its partitions move to the other replicas.
//!
//! One channel per process (a broker is one process), like the fault registry it answers
//! to: the disk faults of [`crate::fault`] reach the log through it as real errors do.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

/// Who is told that a log dir went offline: the dir and the error that took it down.
pub type Sink = Box<dyn Fn(&Path, &str) + Send + Sync>;

/// The log dirs found failing, and who to tell.
#[derive(Default)]
pub struct Channel {
    /// Set once any dir is offline: the append path's fast check.
    any: AtomicBool,
    offline: Mutex<Vec<PathBuf>>,
    sink: OnceLock<Sink>,
}

/// The process's channel.
pub fn global() -> &'static Channel {
    static GLOBAL: OnceLock<Channel> = OnceLock::new();
    GLOBAL.get_or_init(Channel::default)
}

impl Channel {
    /// Sets who is told of a dir going offline; only the first call counts.
    pub fn on_offline(&self, sink: Sink) {
        let _ = self.sink.set(sink);
    }

    /// Whether `log_dir` (the parent of partition dirs) is offline.
    pub fn is_offline(&self, log_dir: &Path) -> bool {
        self.any.load(Ordering::Relaxed) && self.offline.lock().iter().any(|d| d == log_dir)
    }

    /// The offline dirs, in the order they failed.
    pub fn offline_dirs(&self) -> Vec<PathBuf> {
        self.offline.lock().clone()
    }

    /// Takes `log_dir` offline after `error`; the sink hears of each dir once.
    pub fn report(&self, log_dir: &Path, error: &str) {
        let first = {
            let mut offline = self.offline.lock();
            let first = !offline.iter().any(|d| d == log_dir);
            if first {
                offline.push(log_dir.to_path_buf());
                self.any.store(true, Ordering::Relaxed);
            }
            first
        };
        if first {
            tracing::error!(dir = %log_dir.display(), error, "log dir is offline: an I/O error while writing a partition's log");
            if let Some(sink) = self.sink.get() {
                sink(log_dir, error);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_dir_goes_offline_once_and_others_stay_online() {
        let c = Channel::default();
        let told = Arc::new(Mutex::new(Vec::new()));
        let t = told.clone();
        c.on_offline(Box::new(move |d, e| t.lock().push((d.to_path_buf(), e.to_string()))));
        let (a, b) = (Path::new("/data/a"), Path::new("/data/b"));
        assert!(!c.is_offline(a));
        c.report(a, "EIO");
        c.report(a, "EIO again");
        assert!(c.is_offline(a) && !c.is_offline(b));
        assert_eq!(c.offline_dirs(), vec![a.to_path_buf()]);
        assert_eq!(*told.lock(), vec![(a.to_path_buf(), "EIO".to_string())]);
    }
}
