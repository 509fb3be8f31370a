//! Producer id allocation that never hands out the same id twice, even across restarts.

use std::path::PathBuf;

use parking_lot::Mutex;

/// Ids are reserved on disk in blocks so that each allocation doesn't need a write.
const BLOCK: i64 = 1000;
/// Ids are striped by node id, so brokers never hand out the same id and need not ask
/// anyone: broker n hands out n, n + STRIDE, n + 2·STRIDE, …
const STRIDE: i64 = 1024;

/// Hands out producer ids.
pub struct ProducerIdManager {
    path: PathBuf,
    node: i64,
    state: Mutex<(i64, i64)>, // (next sequence number, end of the reserved block)
}

impl ProducerIdManager {
    /// Loads the reservation mark from `path`; ids start after it.
    pub fn open(path: PathBuf, node_id: i32) -> std::io::Result<ProducerIdManager> {
        let next = std::fs::read_to_string(&path).ok().and_then(|s| s.trim().parse::<i64>().ok()).unwrap_or(0);
        Ok(ProducerIdManager { path, node: (node_id as i64).rem_euclid(STRIDE), state: Mutex::new((next, next)) })
    }

    /// The next unused producer id.
    pub fn allocate(&self) -> std::io::Result<i64> {
        let mut st = self.state.lock();
        if st.0 >= st.1 {
            let end = st.0 + BLOCK;
            let tmp = self.path.with_extension("tmp");
            std::fs::write(&tmp, end.to_string())?;
            std::fs::File::open(&tmp)?.sync_all()?;
            std::fs::rename(&tmp, &self.path)?;
            st.1 = end;
        }
        let id = st.0 * STRIDE + self.node;
        st.0 += 1;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pid");
        let m = ProducerIdManager::open(p.clone(), 3).unwrap();
        let a = m.allocate().unwrap();
        let b = m.allocate().unwrap();
        drop(m);
        let m = ProducerIdManager::open(p, 3).unwrap();
        let c = m.allocate().unwrap();
        assert!(a < b && b < c);
        assert!([a, b, c].iter().all(|id| id % STRIDE == 3), "ids of node 3 stay in its stripe");
    }
}
