//! The sticky task assignor of streams groups, after Kafka's `StickyTaskAssignor`:
//! active tasks stay with their previous owner while that keeps the group balanced, the
//! rest go to the least loaded member; standby replicas of the stateful tasks (those whose
//! subtopology has a changelog) go to members of other processes (a process never holds two
//! copies of one task): the task's previous active owner first, then, least loaded first,
//! its previous standby owners and the members that report changelog offsets for it (most
//! offsets first, as Kafka 4.4 ranks them), each while under its share of all copies; else
//! the least loaded member.
//!
//! Kafka 4.4's assignor makes no warm-up tasks (its `AssignmentRefiner.refine` returns the
//! assignment unchanged) and places standbys without regard to racks or client tags (its
//! `StickyTaskAssignor` never reads `rack.aware.assignment.tags`, rack ids or client tags);
//! so neither does this one.

use std::collections::{BTreeMap, BTreeSet};

use super::task_offsets::Offsets;

/// A task: (subtopology id, partition).
pub type TaskId = (String, i32);

/// What a member asks of the assignor.
#[derive(Debug, Clone)]
pub struct MemberSpec<'a> {
    pub id: &'a str,
    pub process_id: &'a str,
    /// Active tasks it had in the previous target.
    pub prev_active: &'a BTreeSet<TaskId>,
    /// Standby tasks it had in the previous target.
    pub prev_standby: &'a BTreeSet<TaskId>,
    /// The changelog offsets it last reported, per task.
    pub offsets: &'a Offsets,
}

/// A member's share of the target assignment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assigned {
    pub active: BTreeSet<TaskId>,
    pub standby: BTreeSet<TaskId>,
}

/// Every task of a configured topology: tasks per subtopology → task ids.
pub fn all_tasks(tasks: &BTreeMap<String, i32>) -> Vec<TaskId> {
    tasks.iter().flat_map(|(s, n)| (0..*n).map(move |p| (s.clone(), p))).collect()
}

/// Computes the target assignment of `members` over `tasks`, with `standbys` replicas of
/// the tasks of the `stateful` subtopologies.
pub fn assign(members: &[MemberSpec<'_>], tasks: &[TaskId], stateful: &BTreeSet<&str>, standbys: usize) -> BTreeMap<String, Assigned> {
    let mut out: BTreeMap<String, Assigned> = members.iter().map(|m| (m.id.to_string(), Assigned::default())).collect();
    if members.is_empty() {
        return out;
    }
    let n = members.len();
    let floor = tasks.len() / n;
    // How many members may carry one task above `floor`.
    let mut extra = tasks.len() % n;
    let mut unassigned: Vec<&TaskId> = Vec::new();
    let prev_owner = |t: &TaskId| members.iter().find(|m| m.prev_active.contains(t));
    // Stickiness first, up to the floor; then as many members as may go one above it.
    let mut pending: Vec<&TaskId> = Vec::new();
    for t in tasks {
        match prev_owner(t) {
            Some(m) if out[m.id].active.len() < floor => {
                out.get_mut(m.id).expect("member").active.insert(t.clone());
            }
            Some(_) => pending.push(t),
            None => unassigned.push(t),
        }
    }
    for t in pending {
        let m = prev_owner(t).expect("had an owner");
        let load = out[m.id].active.len();
        if load == floor && extra > 0 {
            extra -= 1;
            out.get_mut(m.id).expect("member").active.insert(t.clone());
        } else {
            unassigned.push(t);
        }
    }
    for t in unassigned {
        // Least loaded; a previous standby owner (already warm) wins a tie, then the id.
        let m = members.iter().min_by_key(|m| (out[m.id].active.len(), !m.prev_standby.contains(t), m.id)).expect("members exist");
        out.get_mut(m.id).expect("member").active.insert(t.clone());
    }
    if standbys > 0 {
        let with_state: Vec<TaskId> = tasks.iter().filter(|t| stateful.contains(t.0.as_str())).cloned().collect();
        assign_standbys(members, &with_state, standbys, &mut out);
    }
    out
}

fn assign_standbys(members: &[MemberSpec<'_>], tasks: &[TaskId], standbys: usize, out: &mut BTreeMap<String, Assigned>) {
    // Kafka's quota: every copy, active or standby, spread evenly (rounded up).
    let copies = out.values().map(|a| a.active.len()).sum::<usize>() + tasks.len() * standbys;
    let quota = copies.div_ceil(members.len());
    for t in tasks {
        for _ in 0..standbys {
            let load = |m: &MemberSpec<'_>| out[m.id].active.len() + out[m.id].standby.len();
            // Processes already holding a copy of this task.
            let holding: BTreeSet<&str> =
                members.iter().filter(|m| out[m.id].active.contains(t) || out[m.id].standby.contains(t)).map(|m| m.process_id).collect();
            let open: Vec<&MemberSpec<'_>> = members.iter().filter(|m| !holding.contains(m.process_id)).collect();
            // Where the task's state is already warm: previous standby owners, then reporters,
            // more offsets first.
            let warmth = |m: &MemberSpec<'_>| -> Option<(bool, i64)> {
                let (prev, reported) = (m.prev_standby.contains(t), m.offsets.get(t).copied());
                (prev || reported.is_some()).then(|| (!prev, -reported.unwrap_or(0)))
            };
            let pick = open
                .iter()
                .find(|m| m.prev_active.contains(t) && load(m) < quota)
                .or_else(|| {
                    open.iter()
                        .filter_map(|m| warmth(m).map(|w| (m, w)))
                        .filter(|(m, _)| load(m) < quota)
                        .min_by_key(|(m, w)| (load(m), *w, m.id))
                        .map(|(m, _)| m)
                })
                .or_else(|| open.iter().min_by_key(|m| (load(m), m.id)));
            match pick {
                Some(m) => {
                    out.get_mut(m.id).expect("member").standby.insert(t.clone());
                }
                // Not enough processes for the replicas asked for, as Kafka tolerates.
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static NO: Offsets = Offsets::new();

    fn tasks(sub: &str, n: i32) -> Vec<TaskId> {
        (0..n).map(|p| (sub.to_string(), p)).collect()
    }

    #[test]
    fn balances_and_sticks() {
        let none = BTreeSet::new();
        let ids = ["a", "b"];
        let specs: Vec<MemberSpec> =
            ids.iter().map(|id| MemberSpec { id, process_id: id, prev_active: &none, prev_standby: &none, offsets: &NO }).collect();
        let all = tasks("0", 6);
        let first = assign(&specs, &all, &BTreeSet::new(), 0);
        assert_eq!(first["a"].active.len(), 3);
        assert_eq!(first["b"].active.len(), 3);
        // A third member joins: each old member keeps two of its own tasks.
        let specs3 = vec![
            MemberSpec { id: "a", process_id: "a", prev_active: &first["a"].active, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "b", process_id: "b", prev_active: &first["b"].active, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "c", process_id: "c", prev_active: &none, prev_standby: &none, offsets: &NO },
        ];
        let second = assign(&specs3, &all, &BTreeSet::new(), 0);
        for id in ["a", "b", "c"] {
            assert_eq!(second[id].active.len(), 2, "{id}: {second:?}");
        }
        assert!(second["a"].active.is_subset(&first["a"].active));
        assert!(second["b"].active.is_subset(&first["b"].active));
    }

    #[test]
    fn uneven_counts_stay_within_one() {
        let none = BTreeSet::new();
        let prev: BTreeSet<TaskId> = tasks("0", 4).into_iter().collect();
        let specs = vec![
            MemberSpec { id: "a", process_id: "p1", prev_active: &prev, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "b", process_id: "p2", prev_active: &none, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "c", process_id: "p3", prev_active: &none, prev_standby: &none, offsets: &NO },
        ];
        let out = assign(&specs, &tasks("0", 5), &BTreeSet::new(), 0);
        let sizes: Vec<usize> = out.values().map(|a| a.active.len()).collect();
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 5);
    }

    #[test]
    fn standbys_go_to_other_processes() {
        let none = BTreeSet::new();
        let specs = vec![
            MemberSpec { id: "a1", process_id: "p1", prev_active: &none, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "a2", process_id: "p1", prev_active: &none, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "b1", process_id: "p2", prev_active: &none, prev_standby: &none, offsets: &NO },
        ];
        let stateful = BTreeSet::from(["0"]);
        let out = assign(&specs, &tasks("0", 3), &stateful, 1);
        let process = |id: &str| if id.starts_with('a') { "p1" } else { "p2" };
        for t in tasks("0", 3) {
            let active: Vec<&String> = out.iter().filter(|(_, a)| a.active.contains(&t)).map(|(k, _)| k).collect();
            let standby: Vec<&String> = out.iter().filter(|(_, a)| a.standby.contains(&t)).map(|(k, _)| k).collect();
            assert_eq!(active.len(), 1);
            assert_eq!(standby.len(), 1, "{t:?}: {out:?}");
            assert_ne!(process(active[0]), process(standby[0]));
        }
        // With one process there is nowhere to put a standby.
        let one = &specs[..2];
        let out = assign(one, &tasks("0", 2), &stateful, 1);
        assert!(out.values().all(|a| a.standby.is_empty()));
    }

    #[test]
    fn stateless_tasks_get_no_standbys() {
        let none = BTreeSet::new();
        let specs = vec![
            MemberSpec { id: "a", process_id: "p1", prev_active: &none, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "b", process_id: "p2", prev_active: &none, prev_standby: &none, offsets: &NO },
        ];
        let mut all = tasks("0", 2);
        all.extend(tasks("1", 2));
        let out = assign(&specs, &all, &BTreeSet::from(["1"]), 1);
        let standby: BTreeSet<TaskId> = out.values().flat_map(|a| a.standby.iter().cloned()).collect();
        assert_eq!(standby, tasks("1", 2).into_iter().collect());
    }

    #[test]
    fn standbys_go_where_the_state_is_warm() {
        let none = BTreeSet::new();
        let t0: BTreeSet<TaskId> = tasks("0", 1).into_iter().collect();
        let stateful = BTreeSet::from(["0"]);
        let standby_of = |specs: &[MemberSpec]| {
            let out = assign(specs, &tasks("0", 1), &stateful, 1);
            assert!(out["a"].active.contains(&("0".to_string(), 0)), "{out:?}");
            out.iter().filter(|(_, a)| !a.standby.is_empty()).map(|(k, _)| k.clone()).collect::<Vec<_>>()
        };
        let few = Offsets::from([(("0".to_string(), 0), 10)]);
        let many = Offsets::from([(("0".to_string(), 0), 50)]);
        // Of two reporters, the one with more of the changelog; "b" would win on the id.
        let specs = [
            MemberSpec { id: "a", process_id: "p1", prev_active: &t0, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "b", process_id: "p2", prev_active: &none, prev_standby: &none, offsets: &few },
            MemberSpec { id: "c", process_id: "p3", prev_active: &none, prev_standby: &none, offsets: &many },
            MemberSpec { id: "d", process_id: "p4", prev_active: &none, prev_standby: &none, offsets: &NO },
        ];
        assert_eq!(standby_of(&specs), ["c"]);
        // A previous standby owner comes before any reporter.
        let specs = [
            MemberSpec { id: "a", process_id: "p1", prev_active: &t0, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "b", process_id: "p2", prev_active: &none, prev_standby: &none, offsets: &many },
            MemberSpec { id: "d", process_id: "p4", prev_active: &none, prev_standby: &t0, offsets: &NO },
        ];
        assert_eq!(standby_of(&specs), ["d"]);
        // Without any warm member: the least loaded, then the id.
        let specs = [
            MemberSpec { id: "a", process_id: "p1", prev_active: &t0, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "c", process_id: "p3", prev_active: &none, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "b", process_id: "p2", prev_active: &none, prev_standby: &none, offsets: &NO },
        ];
        assert_eq!(standby_of(&specs), ["b"]);
    }

    #[test]
    fn the_previous_active_owner_keeps_a_standby_copy() {
        let none = BTreeSet::new();
        let prev: BTreeSet<TaskId> = tasks("0", 2).into_iter().collect();
        let many: Offsets = tasks("0", 2).into_iter().map(|t| (t, 99)).collect();
        // "a" owned both tasks; "b" joins and takes one. Its standby stays with "a", whose
        // state is the freshest, not with "c", which reports offsets.
        let specs = [
            MemberSpec { id: "a", process_id: "p1", prev_active: &prev, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "b", process_id: "p2", prev_active: &none, prev_standby: &none, offsets: &NO },
            MemberSpec { id: "c", process_id: "p3", prev_active: &none, prev_standby: &none, offsets: &many },
        ];
        let out = assign(&specs, &tasks("0", 2), &BTreeSet::from(["0"]), 1);
        let moved = out["b"].active.iter().next().expect("b got a task").clone();
        assert!(out["a"].standby.contains(&moved), "{out:?}");
    }
}
