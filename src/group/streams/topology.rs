//! A streams group's topology, and configuring it against the cluster's topics as Kafka's
//! `InternalTopicManager` does: the partition counts of repartition topics are derived
//! from what writes into them, copartition groups are enforced, changelog topics get as
//! many partitions as their subtopology has tasks, and what is missing is reported as a
//! heartbeat status rather than an error.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Heartbeat status codes (StreamsGroupHeartbeatResponse `Status`).
pub const STATUS_STALE_TOPOLOGY: i8 = 0;
pub const STATUS_MISSING_SOURCE_TOPICS: i8 = 1;
pub const STATUS_INCORRECTLY_PARTITIONED_TOPICS: i8 = 2;
pub const STATUS_MISSING_INTERNAL_TOPICS: i8 = 3;
pub const STATUS_SHUTDOWN_APPLICATION: i8 = 4;
pub const STATUS_ASSIGNMENT_DELAYED: i8 = 5;
pub const STATUS_MISSING_CLIENT_TAGS: i8 = 6;

/// An internal topic as the client describes it; `partitions` 0 means "derive it".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TopicInfo {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: BTreeMap<String, String>,
}

/// Topics that must have equal partition counts: indexes into the subtopology's
/// `source_topics` and `repartition_source_topics`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CopartitionGroup {
    pub source_topics: Vec<i16>,
    pub repartition_source_topics: Vec<i16>,
}

/// One subtopology: a connected part of the processor graph, one task per input partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Subtopology {
    pub id: String,
    pub source_topics: Vec<String>,
    pub repartition_sink_topics: Vec<String>,
    pub repartition_source_topics: Vec<TopicInfo>,
    pub state_changelog_topics: Vec<TopicInfo>,
    pub copartition_groups: Vec<CopartitionGroup>,
}

/// The topology a group runs, with its epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Topology {
    pub epoch: i32,
    pub subtopologies: Vec<Subtopology>,
}

/// The outcome of configuring a topology against the existing topics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Configured {
    /// Tasks per subtopology; set only when every topic exists and is rightly partitioned.
    pub tasks: Option<BTreeMap<String, i32>>,
    /// Internal topics to create, with their derived partition counts.
    pub to_create: Vec<TopicInfo>,
    /// (status code, detail) to report to members.
    pub status: Vec<(i8, String)>,
}

impl Topology {
    /// Request-level checks Kafka makes before anything else (STREAMS_INVALID_TOPOLOGY).
    pub fn validate(&self) -> Result<()> {
        let mut ids = BTreeSet::new();
        for s in &self.subtopologies {
            if !ids.insert(&s.id) {
                return Err(Error::StreamsInvalidTopology(format!("Duplicate subtopology id {}.", s.id)));
            }
            if s.source_topics.is_empty() && s.repartition_source_topics.is_empty() {
                return Err(Error::StreamsInvalidTopology(format!("Subtopology {} does not contain any source topics.", s.id)));
            }
            for c in &s.state_changelog_topics {
                if c.partitions != 0 {
                    return Err(Error::StreamsInvalidTopology(format!(
                        "Changelog topic {} must have an undefined partition count, but it is set to {}.",
                        c.name, c.partitions
                    )));
                }
            }
            for g in &s.copartition_groups {
                let bad_source = g.source_topics.iter().any(|&i| i < 0 || i as usize >= s.source_topics.len());
                let bad_repart = g.repartition_source_topics.iter().any(|&i| i < 0 || i as usize >= s.repartition_source_topics.len());
                if bad_source || bad_repart {
                    return Err(Error::StreamsInvalidTopology(format!(
                        "Copartition group of subtopology {} refers to a topic index out of range.",
                        s.id
                    )));
                }
            }
            let all = s.source_topics.iter().chain(s.repartition_source_topics.iter().map(|t| &t.name));
            for name in all.chain(s.state_changelog_topics.iter().map(|t| &t.name)).chain(&s.repartition_sink_topics) {
                if name.is_empty() || name.len() > 249 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
                    return Err(Error::StreamsInvalidTopology(format!("Invalid topic name '{name}' in subtopology {}.", s.id)));
                }
            }
        }
        Ok(())
    }

    fn repartition_names(&self) -> BTreeSet<&str> {
        self.subtopologies.iter().flat_map(|s| s.repartition_source_topics.iter().map(|t| t.name.as_str())).collect()
    }

    /// Every topic name the topology reads or writes (for the partition-count fingerprint).
    pub fn topic_names(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for s in &self.subtopologies {
            out.extend(s.source_topics.iter().cloned());
            out.extend(s.repartition_source_topics.iter().map(|t| t.name.clone()));
            out.extend(s.state_changelog_topics.iter().map(|t| t.name.clone()));
        }
        out
    }

    /// The source topics (external and repartition) of a subtopology.
    pub fn inputs<'a>(s: &'a Subtopology) -> impl Iterator<Item = &'a str> {
        s.source_topics.iter().map(String::as_str).chain(s.repartition_source_topics.iter().map(|t| t.name.as_str()))
    }

    /// Configures the topology against `existing` (topic name → partition count).
    pub fn configure(&self, existing: &BTreeMap<String, i32>) -> Result<Configured> {
        let mut out = Configured::default();
        let repart = self.repartition_names();
        let missing: BTreeSet<&str> = self
            .subtopologies
            .iter()
            .flat_map(|s| s.source_topics.iter())
            .map(String::as_str)
            .filter(|t| !repart.contains(t) && !existing.contains_key(*t))
            .collect();
        if !missing.is_empty() {
            let names: Vec<&str> = missing.into_iter().collect();
            out.status.push((STATUS_MISSING_SOURCE_TOPICS, format!("Source topics {} are missing.", names.join(", "))));
            return Ok(out);
        }
        let mut counts = self.repartition_counts(existing)?;
        if let Some(detail) = self.enforce_copartitioning(existing, &mut counts)? {
            out.status.push((STATUS_INCORRECTLY_PARTITIONED_TOPICS, detail));
            return Ok(out);
        }
        let count_of = |t: &str| counts.get(t).or_else(|| existing.get(t)).copied().unwrap_or(0);
        let mut tasks = BTreeMap::new();
        let mut required: BTreeMap<String, TopicInfo> = BTreeMap::new();
        for s in &self.subtopologies {
            let n = Topology::inputs(s).map(count_of).max().unwrap_or(0);
            tasks.insert(s.id.clone(), n);
            for t in &s.repartition_source_topics {
                required.insert(t.name.clone(), TopicInfo { partitions: count_of(&t.name), ..t.clone() });
            }
            for t in &s.state_changelog_topics {
                required.insert(t.name.clone(), TopicInfo { partitions: n, ..t.clone() });
            }
        }
        let mut wrong = Vec::new();
        for (name, info) in required {
            match existing.get(&name) {
                None => out.to_create.push(info),
                Some(&n) if n != info.partitions => wrong.push(format!("{name} (has {n}, needs {})", info.partitions)),
                Some(_) => {}
            }
        }
        if !wrong.is_empty() {
            out.status.push((
                STATUS_INCORRECTLY_PARTITIONED_TOPICS,
                format!("Internal topics are incorrectly partitioned: {}", wrong.join(", ")),
            ));
        } else if !out.to_create.is_empty() {
            let names: Vec<&str> = out.to_create.iter().map(|t| t.name.as_str()).collect();
            out.status.push((STATUS_MISSING_INTERNAL_TOPICS, format!("Internal topics are missing: [{}]", names.join(", "))));
        } else {
            out.tasks = Some(tasks);
        }
        Ok(out)
    }

    /// Repartition topics' partition counts: the client's when it fixed one, else the
    /// largest input of the subtopologies writing into the topic, iterated to a fixpoint.
    fn repartition_counts(&self, existing: &BTreeMap<String, i32>) -> Result<BTreeMap<String, i32>> {
        let mut counts: BTreeMap<String, i32> = BTreeMap::new();
        let mut unknown: BTreeSet<String> = BTreeSet::new();
        for t in self.subtopologies.iter().flat_map(|s| &s.repartition_source_topics) {
            if t.partitions > 0 {
                counts.insert(t.name.clone(), t.partitions);
            } else {
                unknown.insert(t.name.clone());
            }
        }
        for name in &unknown {
            if !self.subtopologies.iter().any(|s| s.repartition_sink_topics.contains(name)) {
                return Err(Error::StreamsInvalidTopology(
                    "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic.".into(),
                ));
            }
        }
        while !unknown.is_empty() {
            let mut progress = false;
            for name in unknown.clone() {
                let mut best = 0;
                for s in self.subtopologies.iter().filter(|s| s.repartition_sink_topics.contains(&name)) {
                    for input in Topology::inputs(s) {
                        best = best.max(counts.get(input).or_else(|| existing.get(input)).copied().unwrap_or(0));
                    }
                }
                if best > 0 {
                    counts.insert(name.clone(), best);
                    unknown.remove(&name);
                    progress = true;
                }
            }
            if !progress {
                return Err(Error::StreamsInvalidTopology(
                    "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved.".into(),
                ));
            }
        }
        Ok(counts)
    }

    /// Copartition groups: external topics must already agree (else a status detail is
    /// returned); repartition topics follow them, and a fixed count that disagrees is an
    /// invalid topology.
    fn enforce_copartitioning(&self, existing: &BTreeMap<String, i32>, counts: &mut BTreeMap<String, i32>) -> Result<Option<String>> {
        let fixed: BTreeSet<&str> = self
            .subtopologies
            .iter()
            .flat_map(|s| &s.repartition_source_topics)
            .filter(|t| t.partitions > 0)
            .map(|t| t.name.as_str())
            .collect();
        for s in &self.subtopologies {
            for g in &s.copartition_groups {
                let sources: Vec<&String> = g.source_topics.iter().map(|&i| &s.source_topics[i as usize]).collect();
                let reparts: Vec<&String> =
                    g.repartition_source_topics.iter().map(|&i| &s.repartition_source_topics[i as usize].name).collect();
                let external: BTreeMap<&str, i32> =
                    sources.iter().filter_map(|t| existing.get(t.as_str()).map(|n| (t.as_str(), *n))).collect();
                let distinct: BTreeSet<i32> = external.values().copied().collect();
                if distinct.len() > 1 {
                    let list: Vec<String> = external.iter().map(|(t, n)| format!("{t}={n}")).collect();
                    return Ok(Some(format!("Following topics do not have the same number of partitions: [{}]", list.join(", "))));
                }
                let target = match distinct.first() {
                    Some(&n) => n,
                    None => reparts.iter().filter_map(|t| counts.get(t.as_str())).copied().max().unwrap_or(0),
                };
                for t in reparts {
                    let cur = counts.get(t.as_str()).copied().unwrap_or(0);
                    if fixed.contains(t.as_str()) && cur != target {
                        return Err(Error::StreamsInvalidTopology(format!(
                            "Number of partitions [{cur}] of repartition topic [{t}] doesn't match number of partitions [{target}] of the source topic."
                        )));
                    }
                    counts.insert(t.clone(), target);
                }
            }
        }
        Ok(None)
    }
}
