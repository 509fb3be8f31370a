//! The changelog offsets a streams member reports for the tasks whose state it holds
//! (StreamsGroupHeartbeat's TaskOffsets and TaskEndOffsets), as Kafka 4.4's
//! `MemberTaskOffsets`: kept per member in memory only (Kafka writes no record for them), a
//! null list keeps what the member reported before, a list replaces it whole. The assignor
//! ranks standby candidates by them and StreamsGroupDescribe shows them.

use std::collections::BTreeMap;

use super::assignor::TaskId;
use crate::error::{Error, Result};

/// Offset per task.
pub type Offsets = BTreeMap<TaskId, i64>;

/// One member's last reported offsets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskOffsets {
    /// Cumulative changelog offsets of the task's local state.
    pub offsets: Offsets,
    /// Cumulative changelog end offsets.
    pub end_offsets: Offsets,
}

/// What one heartbeat reports; `None` is a null list (unchanged).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reported {
    pub offsets: Option<Offsets>,
    pub end_offsets: Option<Offsets>,
}

impl Reported {
    /// Decodes the two lists; a task listed twice is INVALID_REQUEST, with Kafka's message.
    pub fn from_lists(offsets: Option<&[(TaskId, i64)]>, end_offsets: Option<&[(TaskId, i64)]>) -> Result<Reported> {
        Ok(Reported { offsets: offsets.map(to_map).transpose()?, end_offsets: end_offsets.map(to_map).transpose()? })
    }
}

fn to_map(list: &[(TaskId, i64)]) -> Result<Offsets> {
    let mut out = Offsets::new();
    for ((sub, p), off) in list {
        if out.insert((sub.clone(), *p), *off).is_some() {
            return Err(Error::InvalidRequest(format!("Task offsets contain a duplicate entry for subtopology {sub} and partition {p}.")));
        }
    }
    Ok(out)
}

impl TaskOffsets {
    /// Applies a heartbeat's report: each non-null list replaces the one kept.
    pub fn apply(&mut self, r: Reported) {
        if let Some(o) = r.offsets {
            self.offsets = o;
        }
        if let Some(o) = r.end_offsets {
            self.end_offsets = o;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str, p: i32) -> TaskId {
        (s.to_string(), p)
    }

    #[test]
    fn a_null_list_keeps_the_last_report_and_a_list_replaces_it_whole() {
        let mut k = TaskOffsets::default();
        k.apply(Reported::from_lists(Some(&[(t("0", 0), 10), (t("0", 1), 20)]), Some(&[(t("0", 0), 15)])).unwrap());
        assert_eq!(k.offsets, Offsets::from([(t("0", 0), 10), (t("0", 1), 20)]));
        k.apply(Reported::from_lists(None, None).unwrap());
        assert_eq!(k.offsets.len(), 2);
        assert_eq!(k.end_offsets, Offsets::from([(t("0", 0), 15)]));
        k.apply(Reported::from_lists(Some(&[(t("1", 3), 7)]), None).unwrap());
        assert_eq!(k.offsets, Offsets::from([(t("1", 3), 7)]));
        assert_eq!(k.end_offsets, Offsets::from([(t("0", 0), 15)]));
        // An empty list is not a null one: it clears.
        k.apply(Reported::from_lists(Some(&[]), Some(&[])).unwrap());
        assert_eq!(k, TaskOffsets::default());
    }

    #[test]
    fn a_task_listed_twice_is_an_invalid_request() {
        let e = Reported::from_lists(Some(&[(t("0", 1), 1), (t("0", 1), 2)]), None).unwrap_err();
        assert!(matches!(&e, Error::InvalidRequest(m) if m.contains("subtopology 0 and partition 1")), "{e:?}");
        assert!(Reported::from_lists(None, Some(&[(t("a", 0), 1), (t("a", 0), 1)])).is_err());
        // The same task in both lists is fine.
        assert!(Reported::from_lists(Some(&[(t("0", 1), 1)]), Some(&[(t("0", 1), 9)])).is_ok());
    }
}
