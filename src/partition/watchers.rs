//! Fetches waiting on a partition (Kafka's fetch purgatory, keyed by partition): a
//! change to the partition wakes only the fetches that read it, not every waiting fetch.

use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// The waiters registered on one partition. Each is woken once per registration.
#[derive(Default)]
pub struct Watchers {
    list: Mutex<Vec<Weak<Notify>>>,
}

impl Watchers {
    /// Registers `waiter` for the next change. Register before reading, so a change in
    /// between is not missed: the wake-up is kept as the waiter's permit.
    pub fn watch(&self, waiter: &Arc<Notify>) {
        let mut list = self.list.lock();
        // A fetch re-registers after each spurious wake-up; once is enough.
        if list.iter().rev().take(4).any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(waiter))) {
            return;
        }
        // Fetches that ended without a change here leave dead entries: drop them as the
        // list doubles, so a quiet partition's list stays as long as its live waiters.
        if list.len() >= 16 && list.len().is_power_of_two() {
            list.retain(|w| w.strong_count() > 0);
        }
        list.push(Arc::downgrade(waiter));
    }

    /// Wakes every registered waiter and forgets them.
    pub fn wake(&self) {
        let list = std::mem::take(&mut *self.list.lock());
        for w in list {
            if let Some(n) = w.upgrade() {
                n.notify_one();
            }
        }
    }

    /// How many waiters are registered (dead ones included until pruned).
    pub fn len(&self) -> usize {
        self.list.lock().len()
    }

    /// No waiter is registered.
    pub fn is_empty(&self) -> bool {
        self.list.lock().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_before_the_wait_is_kept() {
        let w = Watchers::default();
        let n = Arc::new(Notify::new());
        w.watch(&n);
        w.wake();
        tokio::time::timeout(std::time::Duration::from_secs(1), n.notified()).await.expect("woken");
        assert!(w.is_empty());
    }

    #[test]
    fn dead_and_repeated_waiters_do_not_pile_up() {
        let w = Watchers::default();
        let live = Arc::new(Notify::new());
        for _ in 0..100 {
            w.watch(&live);
        }
        assert_eq!(w.len(), 1);
        for _ in 0..1000 {
            let gone = Arc::new(Notify::new());
            w.watch(&gone);
        }
        assert!(w.len() <= 32, "{} entries for one live waiter", w.len());
    }
}
