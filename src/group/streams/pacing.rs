//! When a streams group may compute a new target assignment, as Kafka 4.4's
//! `GroupMetadataManager` paces it: not while the initial rebalance delay runs (a timer
//! armed when a member joins an empty group, `streams.initial.rebalance.delay.ms`), and not
//! sooner than `streams.assignment.interval.ms` after the previous computation. A delayed
//! assignment is answered with the ASSIGNMENT_DELAYED status and the old target. Time is an
//! argument; nothing here reads a clock.

use serde::{Deserialize, Serialize};

const INITIAL_DELAY: &str = "Assignment delayed due to the configured initial rebalance delay.";
const INTERVAL: &str = "Assignment delayed due to the configured assignment interval.";

/// The group's assignment clock.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Pacing {
    /// When the last target assignment was computed (0: never), as Kafka's assignment timestamp.
    #[serde(default)]
    pub assigned_at: i64,
    /// The initial rebalance delay's deadline while it runs. Like Kafka's coordinator timers
    /// it does not survive a restart (the group then assigns at once).
    #[serde(skip)]
    pub initial_delay_until: Option<i64>,
}

impl Pacing {
    /// A member joined a group that had none: start the delay unless it already runs
    /// (Kafka's `scheduleIfAbsent`). A delay of 0 disables it.
    pub fn member_joined_empty_group(&mut self, delay_ms: i32, now: i64) {
        if delay_ms > 0 && self.initial_delay_until.is_none() {
            self.initial_delay_until = Some(now + delay_ms as i64);
        }
    }

    /// Has the initial delay's timer run out at `now`? Clears it if so (the timer fires once).
    pub fn initial_delay_expired(&mut self, now: i64) -> bool {
        match self.initial_delay_until {
            Some(t) if now >= t => {
                self.initial_delay_until = None;
                true
            }
            _ => false,
        }
    }

    /// Why a new assignment may not be computed at `now`, if it may not.
    pub fn delayed(&mut self, interval_ms: i32, now: i64) -> Option<&'static str> {
        self.initial_delay_expired(now);
        if self.initial_delay_until.is_some() {
            return Some(INITIAL_DELAY);
        }
        // Kafka's canComputeNextTargetAssignment.
        if self.assigned_at != 0 && interval_ms > 0 && now < self.assigned_at + interval_ms as i64 {
            return Some(INTERVAL);
        }
        None
    }

    /// A target assignment was computed at `now`.
    pub fn assigned(&mut self, now: i64) {
        self.assigned_at = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_delay_runs_once_and_is_not_rearmed_while_running() {
        let mut p = Pacing::default();
        p.member_joined_empty_group(3000, 100);
        assert_eq!(p.delayed(0, 100), Some(INITIAL_DELAY));
        // A second empty-group join while it runs keeps the first deadline.
        p.member_joined_empty_group(3000, 2000);
        assert_eq!(p.delayed(0, 3099), Some(INITIAL_DELAY));
        assert_eq!(p.delayed(0, 3100), None);
        assert!(p.initial_delay_until.is_none());
        // Disabled with 0.
        p.member_joined_empty_group(0, 5000);
        assert_eq!(p.delayed(0, 5000), None);
    }

    #[test]
    fn interval_counts_from_the_last_assignment() {
        let mut p = Pacing::default();
        // Never assigned: the interval does not hold the first assignment back.
        assert_eq!(p.delayed(1000, 5), None);
        p.assigned(10);
        assert_eq!(p.delayed(1000, 500), Some(INTERVAL));
        assert_eq!(p.delayed(1000, 1010), None);
        assert_eq!(p.delayed(0, 11), None);
    }
}
