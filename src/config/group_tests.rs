use super::*;

fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn check(kv: &[(&str, &str)]) -> Result<(), String> {
    validate_group_configs(&map(kv), &BrokerConfig::default())
}

#[test]
fn every_key_with_a_broker_synonym_names_a_known_broker_key() {
    for k in GROUP_KEYS {
        if let Some(b) = k.broker {
            assert!(super::super::broker_key(b).is_some(), "{} falls back to unknown {b}", k.name);
        }
        for b in match k.bound {
            Bound::Range(lo, hi) => vec![lo, hi],
            Bound::Max(b) | Bound::Min(b) => vec![b],
            Bound::None => vec![],
        } {
            assert!(BrokerConfig::default().get(b).parse::<i64>().is_ok(), "{}: bound {b} has no numeric default", k.name);
        }
    }
}

#[test]
fn values_are_checked_with_kafkas_messages() {
    // Messages as Kafka 4.4's GroupConfig.validate gives them, for the broker's defaults.
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("no.such", "1")], "Unknown group config name: no.such"),
        (&[("consumer.session.timeout.ms", "1000")], "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
        (
            &[("consumer.session.timeout.ms", "abc")],
            "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT",
        ),
        (
            &[("share.record.lock.duration.ms", "500")],
            "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000",
        ),
        (&[("share.isolation.level", "READ_COMMITTED")], "String must be one of: read_committed, read_uncommitted"),
        (
            &[("share.auto.offset.reset", "foo")],
            "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
        ),
        (&[("streams.num.standby.replicas", "5")], "streams.num.standby.replicas must be less than or equal to 2"),
        (&[("share.renew.acknowledge.enable", "maybe")], "Expected value to be either true or false"),
        (
            &[("share.heartbeat.interval.ms", "15000"), ("share.session.timeout.ms", "15000")],
            "share.session.timeout.ms must be in the range",
        ),
        (&[("errors.deadletterqueue.topic.name", "__x")], "DLQ topic name must not start with '__'"),
        (&[("streams.assignor.name", "foo")], "is not a registered task assignor. Registered assignors are: [sticky]."),
    ];
    for (kv, want) in cases {
        let got = check(kv).expect_err(&format!("{kv:?} was accepted"));
        assert!(got.contains(want), "{kv:?}: {got}");
    }
    for ok in [
        &[("consumer.heartbeat.interval.ms", "15000"), ("consumer.session.timeout.ms", "45000")][..],
        &[("share.auto.offset.reset", "earliest")],
        &[("share.auto.offset.reset", "by_duration:PT1H")],
        &[("share.auto.offset.reset", "by_duration:P1DT2H3M4.5S")],
        &[("share.isolation.level", "read_committed")],
        &[("streams.rack.aware.assignment.tags", "a,b")],
        &[("consumer.assignor.offload.enable", "false")],
    ] {
        check(ok).unwrap_or_else(|e| panic!("{ok:?}: {e}"));
    }
}

#[test]
fn session_must_exceed_heartbeat_with_the_broker_default_for_the_unset_one() {
    let mut cfg = BrokerConfig::default();
    cfg.set_static("group.consumer.min.session.timeout.ms", "1000").unwrap();
    let err = validate_group_configs(&map(&[("consumer.session.timeout.ms", "5000")]), &cfg).unwrap_err();
    assert_eq!(err, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms");
}

#[test]
fn durations_parse_like_javas() {
    assert_eq!(OffsetReset::parse("by_duration:PT1H"), Some(OffsetReset::ByDuration(3_600_000)));
    assert_eq!(OffsetReset::parse("by_duration:P2D"), Some(OffsetReset::ByDuration(172_800_000)));
    assert_eq!(OffsetReset::parse("by_duration:PT0.5S"), Some(OffsetReset::ByDuration(500)));
    for bad in ["by_duration:", "by_duration:x", "by_duration:P", "by_duration:PT", "by_duration:-PT1H", "by_duration:PT1.5H"] {
        assert_eq!(OffsetReset::parse(bad), None, "{bad}");
    }
}

#[test]
fn settings_take_overrides_capped_to_the_current_bounds() {
    let cfg = BrokerConfig::default();
    let s = GroupSettings::resolve(&BTreeMap::new(), &cfg);
    assert_eq!((s.consumer_session_timeout_ms, s.share_record_lock_duration_ms), (45_000, 30_000));
    assert_eq!((s.share_auto_offset_reset, s.share_read_committed), (OffsetReset::Latest, false));
    let o = map(&[
        ("consumer.session.timeout.ms", "50000"),
        ("share.record.lock.duration.ms", "3600000"),
        ("share.auto.offset.reset", "earliest"),
        ("share.isolation.level", "read_committed"),
    ]);
    let s = GroupSettings::resolve(&o, &cfg);
    assert_eq!(s.consumer_session_timeout_ms, 50_000);
    assert_eq!(s.share_record_lock_duration_ms, 60_000, "capped to group.share.max.record.lock.duration.ms");
    assert_eq!((s.share_auto_offset_reset, s.share_read_committed), (OffsetReset::Earliest, true));
}

#[test]
fn streams_settings_fall_back_to_the_broker_and_take_overrides() {
    let cfg = BrokerConfig::default();
    let s = GroupSettings::resolve(&BTreeMap::new(), &cfg);
    assert_eq!((s.streams_initial_rebalance_delay_ms, s.streams_assignment_interval_ms), (3000, 1000));
    assert_eq!((s.streams_task_offset_interval_ms, s.streams_acceptable_recovery_lag), (60_000, 10_000));
    assert!(s.streams_rack_aware_assignment_tags.is_empty());
    let o = map(&[
        ("streams.initial.rebalance.delay.ms", "0"),
        ("streams.assignment.interval.ms", "60000"),
        ("streams.task.offset.interval.ms", "1000"),
        ("streams.acceptable.recovery.lag", "5"),
        ("streams.rack.aware.assignment.tags", "zone, rack"),
    ]);
    let s = GroupSettings::resolve(&o, &cfg);
    assert_eq!(s.streams_initial_rebalance_delay_ms, 0);
    assert_eq!(s.streams_assignment_interval_ms, 15_000, "capped to group.streams.max.assignment.interval.ms");
    assert_eq!(s.streams_task_offset_interval_ms, 15_000, "raised to group.streams.min.task.offset.interval.ms");
    assert_eq!(s.streams_acceptable_recovery_lag, 5);
    assert_eq!(s.streams_rack_aware_assignment_tags, vec!["zone".to_string(), "rack".to_string()]);
}
