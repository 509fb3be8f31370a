//! AddRaftVoter and RemoveRaftVoter on the active controller (KIP-853), as Kafka's
//! `AddVoterHandler` and `RemoveVoterHandler` decide them.
//!
//! One change at a time, each committed through the Raft log. A voter is added in two
//! steps: it joins as a learner (Kafka's observer) and the leader replicates to it; once
//! it holds everything committed when it joined, a second change makes it a voter. One that
//! does not catch up within the request's timeout is dropped again: REQUEST_TIMED_OUT.
//! Removal turns the voter into a learner at once (it keeps the log, as Kafka's removed
//! voters keep fetching as observers); a leader that removed itself hands leadership over
//! once the change is applied (`QuorumNode::hand_over`). A learner that does not catch up
//! stays a learner: adding it again resumes the wait.

use std::time::Duration;

use uuid::Uuid;

use super::driver::Status;
use super::quorum::{node_id, raft_id};
use super::rpc::Response;
use super::Controller;
use crate::error::{Error, Result};
use crate::metadata::features::{finalized, KRAFT_VERSION};
use crate::metadata::voters::{VoterChange, VoterEndpoint, VoterInfo};

/// Kafka's name for a voter: its id and directory id (nil for a bootstrap voter).
fn replica_key(id: i32, dir: Uuid) -> String {
    format!("ReplicaKey(id={id}, directoryId={})", if dir.is_nil() { "<undefined>".to_string() } else { crate::metadata::kafka_uuid(dir) })
}

pub(super) fn pending() -> Error {
    Error::RequestTimedOut("Request timed out waiting for leader to handle previous add or remove voter request".into())
}

/// UNSUPPORTED_VERSION unless `kraft.version` is at least 1 in `features` (the image's).
pub fn check_reconfig_supported(features: &std::collections::BTreeMap<String, i16>) -> Result<()> {
    let level = finalized(features).get(KRAFT_VERSION).copied().unwrap_or(0);
    if level < 1 {
        return Err(Error::Unsupported(format!("Cluster doesn't support changing the voters because the {KRAFT_VERSION} feature is {level}")));
    }
    Ok(())
}

/// Whether `id` may join the voters given the quorum's state (AddVoterHandler's checks).
pub fn check_add(st: &Status, id: i32, dir: Uuid, endpoints: &[VoterEndpoint]) -> Result<()> {
    if dir.is_nil() {
        return Err(Error::InvalidRequest("Add voter request didn't include a valid directory id".into()));
    }
    if endpoints.is_empty() {
        return Err(Error::InvalidRequest(format!("Add voter request didn't include the endpoints of voter {}", replica_key(id, dir))));
    }
    if st.voter_change_pending {
        return Err(pending());
    }
    if st.voters.contains(&raft_id(id)) {
        return Err(Error::DuplicateVoter(format!(
            "The voter id for {} is already part of the set of voters {:?}.",
            replica_key(id, dir),
            st.voters.iter().map(|v| node_id(*v)).collect::<Vec<_>>()
        )));
    }
    Ok(())
}

/// Whether voter (`id`, `dir`) may leave, `known_dir` being the directory id the log
/// recorded for `id` (RemoveVoterHandler's checks: the key must match, and the set may not
/// become empty).
pub fn check_remove(st: &Status, id: i32, dir: Uuid, known_dir: Uuid) -> Result<()> {
    if st.voter_change_pending {
        return Err(pending());
    }
    let voters: Vec<i32> = st.voters.iter().map(|v| node_id(*v)).collect();
    if !voters.contains(&id) || dir != known_dir || voters.len() == 1 {
        return Err(Error::VoterNotFound(format!("Cannot remove voter {} from the set of voters {voters:?}", replica_key(id, dir))));
    }
    Ok(())
}

/// Has learner `id` replicated everything committed up to `target`?
pub fn caught_up(st: &Status, id: i32, target: u64) -> bool {
    st.progress.iter().any(|(v, matched)| *v == raft_id(id) && *matched >= target)
}

impl Controller {
    /// AddRaftVoter: the learner step, the wait for it to catch up, then the promotion.
    pub(super) async fn add_voter(&self, id: i32, directory_id: Uuid, endpoints: Vec<VoterEndpoint>, timeout_ms: i32) -> Result<Response> {
        let Ok(_one_at_a_time) = self.voter_ops.try_lock() else { return Err(pending()) };
        check_reconfig_supported(&self.quorum.image().features)?;
        check_add(&self.quorum.status(), id, directory_id, &endpoints)?;
        let target = self.quorum.status().commit;
        self.quorum.change_voters(VoterChange::AddLearner { id, info: VoterInfo { directory_id, endpoints } }).await?;
        tracing::info!(voter = id, "adding a controller: replicating to it as a learner until it catches up");
        let timeout = Duration::from_millis(timeout_ms.clamp(1_000, 300_000) as u64);
        let mut status = self.quorum.status_watch();
        let caught = tokio::time::timeout(timeout, async {
            loop {
                let st = status.borrow_and_update().clone();
                if !st.is_leader {
                    return Err(Error::NotController);
                }
                if caught_up(&st, id, target) {
                    return Ok(());
                }
                if status.changed().await.is_err() {
                    return Err(Error::NotController);
                }
            }
        })
        .await;
        match caught {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(Error::RequestTimedOut(format!(
                    "Timed out waiting for voter {} to catch up to offset {target}",
                    replica_key(id, directory_id)
                )));
            }
        }
        let offset = self.quorum.change_voters(VoterChange::Promote { id }).await?;
        tracing::info!(voter = id, "controller added to the voters");
        Ok(Response::Done { offset })
    }

    /// RemoveRaftVoter.
    pub(super) async fn remove_voter(&self, id: i32, directory_id: Uuid) -> Result<Response> {
        let Ok(_one_at_a_time) = self.voter_ops.try_lock() else { return Err(pending()) };
        check_reconfig_supported(&self.quorum.image().features)?;
        let known = self.quorum.image().voters.get(&id).map_or(Uuid::nil(), |v| v.directory_id);
        check_remove(&self.quorum.status(), id, directory_id, known)?;
        let offset = self.quorum.change_voters(VoterChange::Demote { id }).await?;
        tracing::info!(voter = id, "controller removed from the voters");
        Ok(Response::Done { offset })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(voters: &[i32], learners: &[i32]) -> Status {
        Status {
            voters: voters.iter().map(|v| raft_id(*v)).collect(),
            learners: learners.iter().map(|v| raft_id(*v)).collect(),
            is_leader: true,
            ..Status::default()
        }
    }

    fn ep() -> Vec<VoterEndpoint> {
        vec![VoterEndpoint { name: "CONTROLLER".into(), host: "localhost".into(), port: 9093 }]
    }

    #[test]
    fn adding_is_refused_for_a_voter_a_missing_key_or_while_another_change_runs() {
        let dir = Uuid::new_v4();
        assert!(check_add(&status(&[0, 1, 2], &[]), 3, dir, &ep()).is_ok());
        assert!(matches!(check_add(&status(&[0, 1, 2], &[]), 1, dir, &ep()), Err(Error::DuplicateVoter(_))));
        assert!(matches!(check_add(&status(&[0, 1, 2], &[]), 3, Uuid::nil(), &ep()), Err(Error::InvalidRequest(_))));
        assert!(matches!(check_add(&status(&[0, 1, 2], &[]), 3, dir, &[]), Err(Error::InvalidRequest(_))));
        assert!(check_add(&status(&[0, 1, 2], &[3]), 3, dir, &ep()).is_ok(), "a learner (observer) may be added");
        let mut busy = status(&[0, 1, 2], &[]);
        busy.voter_change_pending = true;
        assert!(matches!(check_add(&busy, 3, dir, &ep()), Err(Error::RequestTimedOut(_))));
    }

    #[test]
    fn removing_needs_the_exact_key_and_never_empties_the_set() {
        let dir = Uuid::new_v4();
        let st = status(&[0, 1, 2, 3], &[]);
        assert!(check_remove(&st, 3, dir, dir).is_ok());
        assert!(check_remove(&st, 0, Uuid::nil(), Uuid::nil()).is_ok(), "a bootstrap voter has no directory id");
        assert!(matches!(check_remove(&st, 3, Uuid::new_v4(), dir), Err(Error::VoterNotFound(_))), "another incarnation");
        assert!(matches!(check_remove(&st, 7, Uuid::nil(), Uuid::nil()), Err(Error::VoterNotFound(_))));
        assert!(matches!(check_remove(&status(&[2], &[]), 2, Uuid::nil(), Uuid::nil()), Err(Error::VoterNotFound(_))), "the last voter");
    }

    #[test]
    fn voters_change_only_at_kraft_version_1() {
        let mut f = std::collections::BTreeMap::new();
        assert!(check_reconfig_supported(&f).is_ok(), "a new cluster's bootstrap levels");
        f.insert("metadata.version".to_string(), 33);
        assert!(matches!(check_reconfig_supported(&f), Err(Error::Unsupported(_))), "a log from before kraft.version");
        f.insert(KRAFT_VERSION.to_string(), 1);
        assert!(check_reconfig_supported(&f).is_ok());
    }

    #[test]
    fn a_learner_is_caught_up_once_it_matched_the_target() {
        let mut st = status(&[0, 1, 2], &[3]);
        st.progress = vec![(raft_id(0), 10), (raft_id(3), 9)];
        assert!(!caught_up(&st, 3, 10));
        st.progress[1].1 = 10;
        assert!(caught_up(&st, 3, 10));
        assert!(!caught_up(&st, 4, 0), "not replicated to at all");
    }
}
