//! What KIP-848 consumer groups and KIP-1071 streams groups share: the group state names,
//! the member-epoch rules of their heartbeats and offset commits, and member expiry.

use crate::error::{Error, Result};

/// The group state as the describe APIs and ListGroups name it. `ready` is false while a
/// streams group's topology is not configured; `reconciling` is true while some member is
/// not yet at the target epoch or still moving.
pub fn state_name(empty: bool, ready: bool, epoch: i32, assignment_epoch: i32, reconciling: bool) -> &'static str {
    if empty {
        "Empty"
    } else if !ready {
        "NotReady"
    } else if epoch != assignment_epoch {
        "Assigning"
    } else if reconciling {
        "Reconciling"
    } else {
        "Stable"
    }
}

/// A heartbeat's epoch against the member's: a newer one is fenced; an older one only if it
/// is not the previous epoch or the member claims more than it holds (it missed a reply).
pub fn check_heartbeat_epoch(got: i32, current: i32, previous: i32, owned_within_assigned: bool) -> Result<()> {
    if got > current || (got < current && (got != previous || !owned_within_assigned)) {
        return Err(Error::FencedMemberEpoch { got, current });
    }
    Ok(())
}

/// OffsetCommit/TxnOffsetCommit at a member epoch: only the current one is accepted.
pub fn check_commit_epoch(got: i32, current: i32) -> Result<()> {
    if got != current {
        return Err(Error::StaleMemberEpoch(got));
    }
    Ok(())
}

/// Has a member's session, or its time to revoke, run out?
pub fn expired(now: i64, last_heartbeat: i64, session_timeout_ms: i64, revocation_deadline: Option<i64>) -> bool {
    now - last_heartbeat > session_timeout_ms || revocation_deadline.is_some_and(|d| now > d)
}
