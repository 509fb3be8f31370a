use super::*;

fn cfg(kv: &[(&str, &str)]) -> BrokerConfig {
    let mut c = BrokerConfig::default();
    for (k, v) in kv {
        c.set_static(k, v).unwrap();
    }
    c
}

fn err(kv: &[(&str, &str)]) -> String {
    Listeners::from_config(&cfg(kv), true, true).unwrap_err().0
}

#[test]
fn the_default_is_one_plaintext_listener_for_everything() {
    let l = Listeners::from_config(&BrokerConfig::default(), true, true).unwrap();
    assert_eq!(l.bind.len(), 1);
    assert_eq!((l.bind[0].name.as_str(), l.bind[0].protocol), ("PLAINTEXT", SecurityProtocol::Plaintext));
    assert_eq!(l.inter_broker, "PLAINTEXT");
    assert_eq!(l.controller_protocol, Some(SecurityProtocol::Plaintext), "KRaft's implicit CONTROLLER:PLAINTEXT");
    assert!(l.controller_listener().is_none());
}

#[test]
fn named_listeners_map_to_protocols_and_pick_their_roles() {
    let l = Listeners::from_config(
        &cfg(&[
            ("listeners", "CLIENT://127.0.0.1:9092,internal://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"),
            ("listener.security.protocol.map", "CLIENT:SSL,INTERNAL:PLAINTEXT,CONTROLLER:SSL"),
            ("inter.broker.listener.name", "INTERNAL"),
            ("advertised.listeners", "CLIENT://broker-1.example:19092"),
        ]),
        true,
        true,
    )
    .unwrap();
    assert_eq!(l.controller_listener().map(|c| c.port), Some(9093));
    assert_eq!(l.controller_protocol, Some(SecurityProtocol::Ssl));
    assert_eq!((l.inter_broker.as_str(), l.inter_broker_protocol), ("INTERNAL", SecurityProtocol::Plaintext));
    let adv: Vec<(&str, &str, u16)> = l.advertised.iter().map(|a| (a.name.as_str(), a.host.as_str(), a.port)).collect();
    assert_eq!(adv, [("CLIENT", "broker-1.example", 19092), ("INTERNAL", "127.0.0.1", 9094)]);
    assert_eq!(l.broker_listeners().count(), 2);
}

#[test]
fn kafkas_startup_errors() {
    assert!(err(&[("listeners", "CLIENT://:9092")]).contains("No security protocol defined for listener CLIENT"));
    assert!(err(&[("listeners", "PLAINTEXT://:9092,PLAINTEXT://:9093")]).contains("different name"));
    assert!(err(&[("listeners", "PLAINTEXT://:9092,SSL://:9092")]).contains("different port"));
    Listeners::from_config(&cfg(&[("listeners", "PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092")]), true, true).unwrap();
    Listeners::from_config(&cfg(&[("listeners", "PLAINTEXT://:0,SSL://:0")]), true, true).unwrap();
    assert!(err(&[("listeners", "127.0.0.1:9092")]).contains("NAME://host:port"));
    assert!(err(&[("inter.broker.listener.name", "PLAINTEXT"), ("security.inter.broker.protocol", "PLAINTEXT")]).contains("Only one of"));
    assert!(err(&[("inter.broker.listener.name", "NOPE")]).contains("not found in listener.security.protocol.map"));
    assert!(err(&[("security.inter.broker.protocol", "SSL")]).contains("must be a listener name defined in advertised.listeners"));
    assert!(err(&[("advertised.listeners", "SSL://h:1")]).contains("subset"));
    assert!(err(&[("advertised.listeners", "PLAINTEXT://0.0.0.0:9092")]).contains("0.0.0.0"));
    assert!(err(&[("listener.security.protocol.map", "PLAINTEXT:TLS")]).contains("not one of"));
    assert!(err(&[("controller.listener.names", "")]).contains("at least one"));
    // An explicit map must name the controller listener: Kafka adds CONTROLLER:PLAINTEXT only to its default map.
    let l = Listeners::from_config(&cfg(&[("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT")]), true, true).unwrap();
    assert!(l.controller_protocol().unwrap_err().0.contains("CONTROLLER"));
    // With SSL in use, neither does the default map.
    assert!(err(&[("listeners", "SSL://:9093,CONTROLLER://:9094"), ("security.inter.broker.protocol", "SSL")]).contains("CONTROLLER"));
    let broker_only = cfg(&[("listeners", "PLAINTEXT://:9092,CONTROLLER://:9093")]);
    assert!(Listeners::from_config(&broker_only, true, false).unwrap_err().0.contains("just the broker role"));
    let controller_only = cfg(&[("listeners", "PLAINTEXT://:9092,CONTROLLER://:9093")]);
    assert!(Listeners::from_config(&controller_only, false, true).unwrap_err().0.contains("only contain KRaft controller listeners"));
}

#[test]
fn per_listener_keys_win_over_the_plain_key() {
    let c = cfg(&[("ssl.client.auth", "requested"), ("listener.name.internal.ssl.client.auth", "required")]);
    assert_eq!(for_listener(&c, "INTERNAL", "ssl.client.auth"), "required");
    assert_eq!(for_listener(&c, "CLIENT", "ssl.client.auth"), "requested");
    assert_eq!(for_listener(&BrokerConfig::default(), "X", "ssl.client.auth"), "none");
    assert!(BrokerConfig::default().set_static("listener.name.x.no.such.key", "1").is_err());
    assert_eq!(split_listener_key("listener.name.client.ssl.keystore.type"), Some(("client", "ssl.keystore.type")));
}

#[test]
fn voters_keep_their_host_names() {
    let v = parse_voters("1@kafka-1:9093, 2@10.0.0.2:9093,3@[::1]:9093").unwrap();
    assert_eq!(v[&1], Voter { host: "kafka-1".into(), port: 9093 });
    assert_eq!(v[&3].address(), "[::1]:9093");
    assert!(parse_voters("").unwrap().is_empty());
    for bad in ["kafka-1:9093", "x@h:1", "1@h", "1@h:99999", "1@:9093", "1@h:1,1@g:2"] {
        assert!(parse_voters(bad).is_err(), "{bad}");
    }
}
