//! Server-side assignors for KIP-848 consumer groups: `uniform` (balanced and
//! sticky) and `range` (contiguous ranges per topic, like the classic one).

use std::collections::{BTreeMap, BTreeSet};

/// A topic partition, by topic id.
pub type Tp = (uuid::Uuid, i32);

/// What an assignor sees of one member.
pub struct MemberSpec<'a> {
    pub id: &'a str,
    /// Topics (by id) the member subscribes to that exist.
    pub topics: BTreeSet<uuid::Uuid>,
    /// The member's previous target, for stickiness.
    pub previous: &'a BTreeSet<Tp>,
}

/// Member id → partitions.
pub type Assignment = BTreeMap<String, BTreeSet<Tp>>;

/// Range: per topic, members sorted by id take contiguous runs of partitions.
pub fn range(members: &[MemberSpec], partitions: &BTreeMap<uuid::Uuid, i32>) -> Assignment {
    let mut out: Assignment = members.iter().map(|m| (m.id.to_string(), BTreeSet::new())).collect();
    for (&topic, &count) in partitions {
        let mut subs: Vec<&str> = members.iter().filter(|m| m.topics.contains(&topic)).map(|m| m.id).collect();
        subs.sort_unstable();
        if subs.is_empty() {
            continue;
        }
        let per = count as usize / subs.len();
        let extra = count as usize % subs.len();
        let mut next = 0i32;
        for (i, m) in subs.iter().enumerate() {
            let n = per + usize::from(i < extra);
            let set = out.get_mut(*m).expect("member");
            for p in next..next + n as i32 {
                set.insert((topic, p));
            }
            next += n as i32;
        }
    }
    out
}

/// Uniform: as even as subscriptions allow, keeping each member's previous
/// partitions where that doesn't unbalance the group.
pub fn uniform(members: &[MemberSpec], partitions: &BTreeMap<uuid::Uuid, i32>) -> Assignment {
    let mut out: Assignment = members.iter().map(|m| (m.id.to_string(), BTreeSet::new())).collect();
    let all: Vec<Tp> = partitions.iter().flat_map(|(&t, &n)| (0..n).map(move |p| (t, p))).collect();
    let eligible = |tp: &Tp| -> Vec<&str> { members.iter().filter(|m| m.topics.contains(&tp.0)).map(|m| m.id).collect() };
    let subscribed: Vec<&Tp> = all.iter().filter(|tp| !eligible(tp).is_empty()).collect();
    let n_members = members.len().max(1);
    let quota = subscribed.len().div_ceil(n_members);
    let mut owner: BTreeMap<Tp, String> = BTreeMap::new();
    // Keep previous owners, up to the quota.
    for m in members {
        for tp in m.previous {
            if m.topics.contains(&tp.0)
                && partitions.get(&tp.0).is_some_and(|&n| tp.1 < n)
                && !owner.contains_key(tp)
                && out[m.id].len() < quota
            {
                owner.insert(*tp, m.id.to_string());
                out.get_mut(m.id).expect("member").insert(*tp);
            }
        }
    }
    // Hand out the rest to the eligible member with the fewest.
    for tp in subscribed {
        if owner.contains_key(tp) {
            continue;
        }
        let best = eligible(tp).into_iter().min_by_key(|m| (out[*m].len(), *m)).expect("eligible");
        out.get_mut(best).expect("member").insert(*tp);
        owner.insert(*tp, best.to_string());
    }
    // Even out: move partitions from the fullest member to an eligible emptier one.
    loop {
        let mut moved = false;
        let ids: Vec<String> = out.keys().cloned().collect();
        for from in &ids {
            let candidates: Vec<Tp> = out[from].iter().copied().collect();
            for tp in candidates {
                let target = eligible(&tp).into_iter().filter(|m| *m != from).min_by_key(|m| (out[*m].len(), *m));
                if let Some(to) = target {
                    if out[to].len() + 1 < out[from].len() {
                        out.get_mut(from).expect("member").remove(&tp);
                        out.get_mut(to).expect("member").insert(tp);
                        moved = true;
                    }
                }
            }
        }
        if !moved {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_is_balanced_and_sticky() {
        let t = uuid::Uuid::from_u128(1);
        let parts = BTreeMap::from([(t, 6)]);
        let none = BTreeSet::new();
        let specs: Vec<MemberSpec> =
            ["a", "b", "c"].iter().map(|id| MemberSpec { id, topics: BTreeSet::from([t]), previous: &none }).collect();
        let a1 = uniform(&specs, &parts);
        assert!(a1.values().all(|s| s.len() == 2));
        // "c" leaves: a and b keep theirs and split c's.
        let specs2: Vec<MemberSpec> =
            ["a", "b"].iter().map(|id| MemberSpec { id, topics: BTreeSet::from([t]), previous: &a1[*id] }).collect();
        let a2 = uniform(&specs2, &parts);
        assert!(a2["a"].is_superset(&a1["a"]) && a2["b"].is_superset(&a1["b"]));
        assert_eq!(a2["a"].len() + a2["b"].len(), 6);
    }

    #[test]
    fn range_gives_contiguous_runs() {
        let t = uuid::Uuid::from_u128(1);
        let none = BTreeSet::new();
        let specs: Vec<MemberSpec> = ["b", "a"].iter().map(|id| MemberSpec { id, topics: BTreeSet::from([t]), previous: &none }).collect();
        let a = range(&specs, &BTreeMap::from([(t, 5)]));
        assert_eq!(a["a"], BTreeSet::from([(t, 0), (t, 1), (t, 2)]));
        assert_eq!(a["b"], BTreeSet::from([(t, 3), (t, 4)]));
    }
}
