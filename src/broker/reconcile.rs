//! Makes this broker's partitions match the metadata image: open what it now hosts,
//! tell each partition who leads, and remove what was deleted or moved away.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Broker, Topic};
use crate::metadata::image::TopicImage;
use crate::metadata::TopicRecord;

impl Broker {
    /// Brings local state in line with the image. Idempotent; cheap when nothing changed.
    pub fn reconcile(&self, clean: bool) {
        let _turn = self.reconciling.lock();
        let roles = self.applying_roles.load(std::sync::atomic::Ordering::Acquire);
        let img = self.cluster.image();
        let me = self.identity.node_id;
        let reconfigure_all = {
            let mut cfg = self.config.write();
            let changed = cfg.dynamic_set != img.broker_configs;
            cfg.dynamic_set = img.broker_configs.clone();
            if changed {
                // AlterConfigs checked these values; one that still does not parse (from
                // another build's metadata log) keeps the settings as they were.
                match crate::config::Settings::from_config(&cfg) {
                    Ok(s) => self.settings.store(Arc::new(s)),
                    Err(e) => tracing::error!(error = %e, "dynamic broker config not applied"),
                }
            }
            changed
        };
        self.apply_group_configs(&img.group_configs);
        self.telemetry.set_subscriptions(&img.client_metrics);
        let current = self.replicas.by_name();
        let mut next: HashMap<String, Arc<Topic>> = HashMap::with_capacity(img.topics.len());
        for t in img.topics.values() {
            let old = current.get(&t.name).filter(|o| o.record.id == t.id);
            let topic = self.reconcile_topic(t, old.map(|o| &**o), me, clean, roles);
            let configs_changed = old.is_none_or(|o| o.record.configs != t.configs);
            if reconfigure_all || configs_changed {
                self.reconfigure(&topic);
            }
            next.insert(t.name.clone(), Arc::new(topic));
        }
        // What is no longer ours: deleted topics, and partitions moved to other brokers.
        let mut gone = Vec::new();
        for (name, old) in &current {
            match next.get(name).filter(|n| n.record.id == old.record.id) {
                None => gone.extend(old.local().cloned()),
                Some(n) => gone.extend(old.local().filter(|p| n.partition(p.index).is_none()).cloned()),
            }
        }
        self.replicas.replace(next);
        if !roles {
            // Only the first reconcile, on the saved image, runs before (nothing was hosted
            // yet, so nothing is gone).
            return;
        }
        for p in gone {
            let dir = p.with_state(|s| s.log.dir().to_path_buf());
            self.remove_partition_files(&dir, p.index, p.topic_id);
        }
        let s = self.settings();
        let settings =
            crate::replication::Settings { me, wait_ms: s.replica_fetch_wait_max_ms, partition_max_bytes: s.replica_fetch_max_bytes };
        self.replication.update_fetchers(&self.all_topics(), settings);
        self.groups.sync_ownership(self, |keep, loaded| self.shares.restore_groups(keep, loaded, crate::clock::now_ms()));
        self.txns.sync_ownership(self);
        self.share_state.sync_ownership(self);
    }

    fn reconcile_topic(&self, t: &TopicImage, old: Option<&Topic>, me: i32, clean: bool, roles: bool) -> Topic {
        let record = TopicRecord { name: t.name.clone(), id: t.id, partitions: t.partitions.len() as i32, configs: t.configs.clone() };
        let mut slots = Vec::with_capacity(t.partitions.len());
        for (i, st) in t.partitions.iter().enumerate() {
            let slot = if st.replicas.contains(&me) {
                let existing = old.and_then(|o| o.partition(i as i32)).cloned();
                let p = match existing {
                    Some(p) => Some(p),
                    None => match self.open_partition(&record, i as i32, clean) {
                        Ok(p) => Some(Arc::new(p)),
                        Err(e) => {
                            tracing::error!(topic = %t.name, partition = i, error = %e, "cannot open partition");
                            None
                        }
                    },
                };
                if let Some(p) = p.as_ref().filter(|_| roles) {
                    p.set_replica_state(st, me);
                }
                p
            } else {
                None
            };
            slots.push(slot);
        }
        Topic::new(record, t.partitions.clone(), slots)
    }

    /// Removes a partition's dir (`<log dir>/<topic>-<index>`), renaming it first as Kafka
    /// does, so that a crash midway leaves a `-delete` dir rather than a torn partition.
    fn remove_partition_files(&self, dir: &std::path::Path, index: i32, id: uuid::Uuid) {
        let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else { return };
        let trash = parent.join(format!("{}.{}-delete", name.to_string_lossy(), id.simple()));
        if std::fs::rename(dir, &trash).is_ok() {
            let _ = std::fs::remove_dir_all(&trash);
        }
        self.log_dirs.moved(parent, None);
        tracing::info!(dir = %dir.display(), partition = index, "removed partition files");
    }
}

impl Broker {
    /// Once this broker has caught up with the metadata log (the controller unfenced it):
    /// from now on it leads and follows as the image says, and loads the group and
    /// transaction state of what it leads.
    pub fn start_applying_roles(&self) {
        self.applying_roles.store(true, std::sync::atomic::Ordering::Release);
        self.reconcile(true);
    }

    /// Reconciles whenever more metadata is applied, until shutdown.
    pub async fn follow_image(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let mut applied = self.cluster.applied();
        let mut reconciled_at = None;
        loop {
            tokio::select! {
                r = applied.changed() => if r.is_err() { return },
                _ = shutdown.changed() => return,
            }
            if !self.applying_roles.load(std::sync::atomic::Ordering::Acquire) {
                continue; // start_applying_roles reconciles with the image it finds then
            }
            // The controller's idle NoOps move the offset twice a second and change nothing.
            let changed_at = self.cluster.image().changed_at;
            if reconciled_at == Some(changed_at) {
                continue;
            }
            reconciled_at = Some(changed_at);
            let me = self.clone();
            let _ = tokio::task::spawn_blocking(move || me.reconcile(true)).await;
        }
    }
}
