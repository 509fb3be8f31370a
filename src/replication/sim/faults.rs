//! Crashes and restarts of the simulated brokers.

use super::{open, Alter, Sim};

impl Sim {
    /// The process dies: memory, in-flight requests and timers are gone; the directory stays.
    pub fn crash(&mut self, b: i32) {
        let br = &mut self.brokers[Self::index(b)];
        br.part = None;
        br.waiting.clear();
        br.parked.clear();
        br.fetch = None;
        br.alter = Alter::Idle;
        br.epoch = None;
        br.lead = None;
        self.stats.crashes += 1;
        self.note(format!("broker {b} crashed"));
    }

    /// The process starts again on its directory: recovery, then registration as a new
    /// incarnation; the metadata it kept (if its metadata log survived) waits until it serves.
    pub fn restart(&mut self, b: i32) {
        let i = Self::index(b);
        let keep_metadata = self.rng.chance(50);
        let now = self.now;
        let br = &mut self.brokers[i];
        let p = open(br.dir.path(), self.min_isr, now);
        br.incarnation += 1;
        br.epoch_seen = -1;
        br.serving = false;
        br.next_register = now;
        br.next_fetch = now;
        br.next_shrink = now;
        br.paused_until = 0;
        let on_disk = std::mem::take(&mut br.mirror);
        br.part = Some(p);
        if !keep_metadata {
            br.known = None;
        }
        self.sync_mirror(i);
        if self.brokers[i].mirror != on_disk {
            self.fail(format!(
                "broker {b}: reopening its log changed it ({} batches before, {} after)",
                on_disk.len(),
                self.brokers[i].mirror.len()
            ));
        }
        // The saved metadata is not acted on yet: the broker leads or follows only once it
        // has caught up and the controller unfenced it (`Broker::start_applying_roles`).
        self.note(format!("broker {b} restarted (metadata kept: {keep_metadata}, log end {})", on_disk.len()));
    }
}
