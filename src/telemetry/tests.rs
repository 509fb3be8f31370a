use std::collections::BTreeMap;

use super::*;

fn subs(kv: &[(&str, &[(&str, &str)])]) -> BTreeMap<String, BTreeMap<String, String>> {
    kv.iter().map(|(n, c)| (n.to_string(), c.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())).collect()
}

fn client(id: &str) -> ClientInfo {
    ClientInfo { client_id: id.into(), source_address: "127.0.0.1".into(), ..Default::default() }
}

fn push(g: &Grant, len: usize) -> Push {
    Push { instance_id: g.instance_id, subscription_id: g.subscription_id, terminating: false, compression: 0, payload_len: len }
}

#[test]
fn a_matching_client_gets_the_subscription_and_others_nothing() {
    let m = Manager::new(1024);
    m.set_subscriptions(&subs(&[(
        "s",
        &[("metrics", "org.apache.kafka.producer."), ("interval.ms", "1000"), ("match", "client_id=app-.*")],
    )]));
    let g = m.get_subscriptions(Uuid::nil(), &client("app-1"), 0).unwrap();
    assert!(!g.instance_id.is_nil());
    assert_eq!((g.metrics.clone(), g.push_interval_ms), (vec!["org.apache.kafka.producer.".to_string()], 1000));
    let other = m.get_subscriptions(Uuid::nil(), &client("other"), 0).unwrap();
    assert_eq!((other.metrics.len(), other.push_interval_ms), (0, INTERVAL_MS_DEFAULT));
}

#[test]
fn pushes_follow_kafkas_timing_and_checks() {
    let m = Manager::new(100);
    m.set_subscriptions(&subs(&[("s", &[("metrics", "*"), ("interval.ms", "1000")])]));
    let c = client("a");
    let g = m.get_subscriptions(Uuid::nil(), &c, 0).unwrap();
    assert!(matches!(m.get_subscriptions(g.instance_id, &c, 10), Err(Error::ThrottlingQuotaExceeded(_))));
    m.check_push(&push(&g, 10), &c, 20).expect("the first push after a get is on time");
    assert!(matches!(m.check_push(&push(&g, 10), &c, 500), Err(Error::ThrottlingQuotaExceeded(_))));
    let too_big = m.check_push(&push(&g, 101), &c, 1100);
    assert!(matches!(too_big, Err(Error::TelemetryTooLarge(_))), "{too_big:?}");
    let stale = Push { subscription_id: g.subscription_id ^ 1, ..push(&g, 1) };
    assert!(matches!(m.check_push(&stale, &c, 2200), Err(Error::UnknownSubscriptionId(_))));
    // After UNKNOWN_SUBSCRIPTION_ID a client may ask again at once.
    let g2 = m.get_subscriptions(g.instance_id, &c, 2201).unwrap();
    let bad = Push { compression: 9, ..push(&g2, 1) };
    assert!(matches!(m.check_push(&bad, &c, 2202), Err(Error::UnsupportedCompressionType(_))));
    let nil = Push { instance_id: Uuid::nil(), ..push(&g2, 1) };
    assert!(matches!(m.check_push(&nil, &c, 5000), Err(Error::InvalidRequest(_))));
    let last = Push { terminating: true, ..push(&g2, 1) };
    m.check_push(&last, &c, 2300).expect("a terminating push may come early");
    assert!(matches!(m.check_push(&push(&g2, 1), &c, 9000), Err(Error::InvalidRequest(_))), "nothing after terminating");
}

#[test]
fn a_changed_subscription_changes_the_id_and_instances_expire() {
    let m = Manager::new(100);
    m.set_subscriptions(&subs(&[("s", &[("metrics", "a"), ("interval.ms", "1000")])]));
    let c = client("a");
    let g = m.get_subscriptions(Uuid::nil(), &c, 0).unwrap();
    m.set_subscriptions(&subs(&[("s", &[("metrics", "b"), ("interval.ms", "1000")])]));
    assert!(matches!(m.check_push(&push(&g, 1), &c, 10), Err(Error::UnknownSubscriptionId(_))));
    let g2 = m.get_subscriptions(g.instance_id, &c, 20).unwrap();
    assert_ne!(g.subscription_id, g2.subscription_id);
    assert_eq!(m.instances(), 1);
    m.expire(20 + EXPIRY_MS + 1);
    assert_eq!(m.instances(), 0);
}
