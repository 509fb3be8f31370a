//! Feature levels (KIP-584, KIP-1022): the features this build supports, the levels a
//! cluster has finalized, and Kafka's rules for changing them (its `FeatureControlManager`).
//!
//! Only features whose every level Sluice honours are claimed:
//! - `metadata.version` 7–33 (3.3-IV3 … 4.4-IV2, Kafka 4.4's latest production level).
//!   Sluice's metadata log has its own versioned format, so each level is served alike; the
//!   level is kept so tools and clients see Kafka's answer, and downgrades follow Kafka's
//!   `didMetadataChange` walk.
//! - `transaction.version` 0–2: the transaction coordinator picks TV2 behaviour by the
//!   EndTxn version the client sends, and clients pick it from this finalized level.
//! - `group.version` 0–1: at 0, ConsumerGroupHeartbeat answers UNSUPPORTED_VERSION as
//!   Kafka's does, so clients fall back to the classic protocol.
//!
//! - `kraft.version` 0–1: at 1 the voter set lives in the metadata log and AddRaftVoter
//!   and RemoveRaftVoter change it (KIP-853); at 0 they answer UNSUPPORTED_VERSION. New
//!   clusters start at 1; a cluster from before the feature upgrades with
//!   `kafka-features upgrade --feature kraft.version=1`. Like Kafka, no downgrade.
//!
//! None of these levels has a dependency in Kafka 4.4 beyond `metadata.version` ≥ 7, which
//! every supported `metadata.version` meets. `share.version`, `streams.version` and
//! `eligible.leader.replicas.version` are not claimed.

use std::collections::BTreeMap;

use super::records::Record;

/// The name of the feature that versions the metadata itself.
pub const METADATA_VERSION: &str = "metadata.version";
/// The feature that turns the consumer group protocol (KIP-848) on at level 1.
pub const GROUP_VERSION: &str = "group.version";
/// The feature whose level picks the transaction protocol (KIP-890 at 2).
pub const TRANSACTION_VERSION: &str = "transaction.version";
/// The feature whose level 1 lets the voter set change (KIP-853).
pub const KRAFT_VERSION: &str = "kraft.version";
/// Kafka 4.4's `MetadataVersion.MINIMUM_VERSION` (3.3-IV3).
const MV_MIN: i16 = 7;
/// Kafka 4.4's `MetadataVersion.LATEST_PRODUCTION` (4.4-IV2).
const MV_LATEST: i16 = 33;

/// A feature this build supports: its level range and the level a new cluster starts at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureDef {
    pub name: &'static str,
    pub min: i16,
    pub max: i16,
    /// Kafka 4.4's default for a cluster formatted at `metadata.version` 33.
    pub bootstrap: i16,
}

/// Every feature this build supports.
pub const FEATURES: &[FeatureDef] = &[
    FeatureDef { name: GROUP_VERSION, min: 0, max: 1, bootstrap: 1 },
    FeatureDef { name: KRAFT_VERSION, min: 0, max: 1, bootstrap: 1 },
    FeatureDef { name: METADATA_VERSION, min: MV_MIN, max: MV_LATEST, bootstrap: MV_LATEST },
    FeatureDef { name: TRANSACTION_VERSION, min: 0, max: 2, bootstrap: 2 },
];

/// `MetadataVersion.didMetadataChange` for levels 7..=33 (index 0 is level 7).
const MV_CHANGED: [bool; 27] = [
    true, true, false, false, true, false, true, true, true, false, true, false, false, false, false, false, true, false, false, false,
    false, false, false, true, false, true, true,
];

/// The definition of `name`, if this build supports it.
pub fn def(name: &str) -> Option<&'static FeatureDef> {
    FEATURES.iter().find(|d| d.name == name)
}

/// The records a new cluster's first controller writes: every feature at its bootstrap level.
pub fn bootstrap_records() -> Vec<Record> {
    FEATURES.iter().map(|d| Record::FeatureLevel { name: d.name.to_string(), level: d.bootstrap }).collect()
}

/// The finalized levels given the image's: a cluster whose log predates feature records
/// (no `metadata.version` yet) runs at the bootstrap levels until its controller writes them.
pub fn finalized(image: &BTreeMap<String, i16>) -> BTreeMap<String, i16> {
    if image.contains_key(METADATA_VERSION) {
        return image.clone();
    }
    FEATURES.iter().filter(|d| d.bootstrap > 0).map(|d| (d.name.to_string(), d.bootstrap)).collect()
}

/// UpdateFeatures' upgrade types (`FeatureUpdate.UpgradeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum UpgradeType {
    Upgrade,
    SafeDowngrade,
    UnsafeDowngrade,
    Unknown,
}

impl UpgradeType {
    /// From the request's code: 1, 2, 3; anything else is unknown.
    pub fn from_code(code: i8) -> UpgradeType {
        match code {
            1 => UpgradeType::Upgrade,
            2 => UpgradeType::SafeDowngrade,
            3 => UpgradeType::UnsafeDowngrade,
            _ => UpgradeType::Unknown,
        }
    }
}

/// One requested change.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FeatureUpdate {
    pub feature: String,
    pub level: i16,
    pub upgrade_type: UpgradeType,
}

fn invalid(feature: &str, level: i16, reason: &str) -> String {
    format!("Invalid update version {level} for feature {feature}. {reason}")
}

/// `MetadataVersion.checkIfMetadataChanged` for a downgrade from `high` to `low`: walk down
/// from `high` past levels that changed nothing; reaching `low` means nothing is lost.
fn metadata_changed(high: i16, low: i16) -> bool {
    let mut v = high;
    while v > low && !MV_CHANGED[(v - MV_MIN) as usize] {
        v -= 1;
    }
    v != low
}

/// Kafka's checks of one update against the current level, and its record.
fn plan_one(u: &FeatureUpdate, current: i16, controller: i32) -> Result<Record, String> {
    let (f, level) = (u.feature.as_str(), u.level);
    if u.upgrade_type == UpgradeType::Unknown {
        return Err(invalid(f, level, "The controller does not support the given upgrade type."));
    }
    if level < 0 {
        return Err(invalid(f, level, "A feature version cannot be less than 0."));
    }
    let (min, max) = def(f).map_or((0, 0), |d| (d.min, d.max));
    if level < min || level > max {
        let reason = if max == 0 {
            format!("Local controller {controller} does not support this feature.")
        } else {
            format!("Local controller {controller} only supports versions {min}-{max}")
        };
        return Err(invalid(f, level, &reason));
    }
    if level < current && u.upgrade_type == UpgradeType::Upgrade {
        return Err(invalid(
            f,
            level,
            "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.",
        ));
    }
    if level > current && u.upgrade_type != UpgradeType::Upgrade {
        return Err(invalid(f, level, "Can't downgrade to a newer version."));
    }
    if f == KRAFT_VERSION && level < current {
        // Kafka's KafkaRaftClient refuses it: the voters in the log cannot be forgotten.
        return Err(invalid(f, level, "Downgrading kraft.version is not supported."));
    }
    if f == METADATA_VERSION && level < current && metadata_changed(current, level) {
        let reason = if u.upgrade_type == UpgradeType::UnsafeDowngrade {
            "Unsafe metadata downgrade is not supported in this version."
        } else {
            "Refusing to perform the requested downgrade because it might delete metadata information."
        };
        return Err(format!("Unsupported metadata.version downgrade from {current} to {level}. {reason}"));
    }
    if def(f).is_none() {
        // Level 0 of a feature this build does not know: Kafka's `Feature.featureFromName`.
        return Err(invalid(f, level, &format!("Feature {f} not found.")));
    }
    Ok(Record::FeatureLevel { name: f.to_string(), level })
}

/// The records an UpdateFeatures writes, or the message of the first update Kafka refuses
/// (the whole request then fails, as in Kafka 4.4). `finalized` holds the current levels
/// ([`finalized`]); `controller` is the active controller's node id, which Kafka names.
pub fn plan_updates(finalized: &BTreeMap<String, i16>, updates: &[FeatureUpdate], controller: i32) -> Result<Vec<Record>, String> {
    updates.iter().map(|u| plan_one(u, finalized.get(&u.feature).copied().unwrap_or(0), controller)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current() -> BTreeMap<String, i16> {
        finalized(&BTreeMap::new())
    }

    fn update(feature: &str, level: i16, upgrade_type: UpgradeType) -> FeatureUpdate {
        FeatureUpdate { feature: feature.into(), level, upgrade_type }
    }

    fn one(feature: &str, level: i16, t: UpgradeType) -> Result<Vec<Record>, String> {
        plan_updates(&current(), &[update(feature, level, t)], 1)
    }

    #[test]
    fn a_cluster_without_feature_records_runs_at_the_bootstrap_levels() {
        let f = current();
        assert_eq!(f.get(METADATA_VERSION), Some(&33));
        assert_eq!(f.get(TRANSACTION_VERSION), Some(&2));
        assert_eq!(f.get(GROUP_VERSION), Some(&1));
        assert_eq!(f.get(KRAFT_VERSION), Some(&1));
        assert_eq!(bootstrap_records().len(), FEATURES.len());
    }

    #[test]
    fn levels_out_of_range_and_unknown_features_are_refused_with_kafkas_messages() {
        use UpgradeType::*;
        assert_eq!(
            one("group.version", 2, Upgrade),
            Err("Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1".into())
        );
        assert_eq!(
            one("share.version", 1, Upgrade),
            Err("Invalid update version 1 for feature share.version. Local controller 1 does not support this feature.".into())
        );
        assert_eq!(one("nope", 0, Upgrade), Err("Invalid update version 0 for feature nope. Feature nope not found.".into()));
        assert_eq!(
            one("group.version", -1, SafeDowngrade),
            Err("Invalid update version -1 for feature group.version. A feature version cannot be less than 0.".into())
        );
        assert!(one("group.version", 1, Unknown).unwrap_err().ends_with("The controller does not support the given upgrade type."));
    }

    #[test]
    fn downgrades_need_a_downgrade_type_and_upgrades_an_upgrade() {
        use UpgradeType::*;
        assert!(one("transaction.version", 1, Upgrade).unwrap_err().contains("without setting the upgrade type"));
        assert_eq!(
            one("transaction.version", 1, SafeDowngrade),
            Ok(vec![Record::FeatureLevel { name: "transaction.version".into(), level: 1 }])
        );
        assert_eq!(one("group.version", 0, UnsafeDowngrade), Ok(vec![Record::FeatureLevel { name: "group.version".into(), level: 0 }]));
        let mut low = current();
        low.insert("group.version".into(), 0);
        let up = |t| plan_updates(&low, &[update("group.version", 1, t)], 1);
        assert!(up(SafeDowngrade).unwrap_err().ends_with("Can't downgrade to a newer version."));
        assert!(up(Upgrade).is_ok());
        assert!(one(KRAFT_VERSION, 0, UnsafeDowngrade).unwrap_err().ends_with("Downgrading kraft.version is not supported."));
        low.insert(KRAFT_VERSION.into(), 0);
        assert!(plan_updates(&low, &[update(KRAFT_VERSION, 1, Upgrade)], 1).is_ok(), "an old log upgrades");
    }

    #[test]
    fn metadata_version_downgrades_follow_did_metadata_change() {
        use UpgradeType::*;
        let at = |level: i16| {
            let mut f = current();
            f.insert(METADATA_VERSION.into(), level);
            f
        };
        let down = |from: i16, to: i16, t| plan_updates(&at(from), &[update(METADATA_VERSION, to, t)], 1);
        assert!(down(25, 24, SafeDowngrade).is_ok());
        assert!(down(29, 24, SafeDowngrade).is_ok());
        assert!(down(12, 11, SafeDowngrade).is_ok());
        assert_eq!(
            down(13, 12, SafeDowngrade),
            Err("Unsupported metadata.version downgrade from 13 to 12. Refusing to perform the requested downgrade because it might delete metadata information.".into())
        );
        assert_eq!(
            down(33, 32, UnsafeDowngrade),
            Err("Unsupported metadata.version downgrade from 33 to 32. Unsafe metadata downgrade is not supported in this version.".into())
        );
        assert!(down(33, 6, SafeDowngrade).unwrap_err().contains("only supports versions 7-33"));
        assert!(down(24, 33, Upgrade).is_ok());
    }

    #[test]
    fn the_first_refused_update_fails_the_whole_request() {
        use UpgradeType::*;
        let r = plan_updates(&current(), &[update("transaction.version", 1, SafeDowngrade), update("group.version", 9, Upgrade)], 1);
        assert!(r.unwrap_err().contains("group.version"));
    }
}
