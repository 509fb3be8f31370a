"""The metrics page (issue 22): every metric the issue names is there with its type, as
Prometheus's parser reads it, and the request and traffic counters move with real
clients' produce and consume. One broker serves the whole file."""

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import cluster as cl
from cluster import wait_until
from conftest import Broker, fail_on_invariant_violations
from helpers import create_topic, read_all
import metrics_page as mp

# (family name as the parser names it, type): counters lose their `_total` there.
EXPECTED = [
    ("sluice_isr_shrinks", "counter"),
    ("sluice_isr_expands", "counter"),
    ("sluice_under_replicated_partitions", "gauge"),
    ("sluice_under_min_isr_partitions", "gauge"),
    ("sluice_at_min_isr_partitions", "gauge"),
    ("sluice_offline_partitions", "gauge"),
    ("sluice_leader_elections", "counter"),
    ("sluice_leader_election_seconds", "histogram"),
    ("sluice_unclean_leader_elections", "counter"),
    ("sluice_active_controller", "gauge"),
    ("sluice_controller_changes", "counter"),
    ("sluice_live_brokers", "gauge"),
    ("sluice_fenced_brokers", "gauge"),
    ("sluice_metadata_lag_ms", "gauge"),
    ("sluice_replica_max_lag_records", "gauge"),
    ("sluice_requests", "counter"),
    ("sluice_request_errors", "counter"),
    ("sluice_request_duration_seconds", "histogram"),
    ("sluice_bytes_in", "counter"),
    ("sluice_bytes_out", "counter"),
    ("sluice_records_in", "counter"),
    ("sluice_connections", "gauge"),
    ("sluice_consumer_group_lag", "gauge"),
    ("sluice_registered_brokers", "gauge"),
    ("sluice_partitions", "gauge"),
    ("sluice_metadata_offset", "gauge"),
    ("sluice_incremental_fetch_sessions", "gauge"),
    ("sluice_incremental_fetch_session_partitions", "gauge"),
    ("sluice_incremental_fetch_session_evictions", "counter"),
    ("sluice_incremental_fetch_requests", "counter"),
]

KINDS = ["clean", "unclean", "preferred", "reassignment", "controlled_shutdown"]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("metrics"), {"metrics.listener": "127.0.0.1:0"})
    b.start()
    # The page is served once the broker logged its address.
    url = wait_until(lambda: mp.ADDRESS.findall(b.stderr_tail()) and mp.address(b.stderr_tail()), 10,
                     what="the metrics address in the broker's log")
    b.metrics_url = url
    yield b
    b.stop()
    fail_on_invariant_violations([b.stderr_path])


class Unmet(dict):
    """Checks not all true: falsy, so wait_until goes on, and shows them when it gives up."""
    def __bool__(self):
        return False


def scrape(node):
    return mp.scrape(node.metrics_url)


def test_produce_and_consume_move_the_request_and_topic_counters(node):
    topic = f"metrics-{uuid.uuid4().hex[:8]}"
    create_topic(node.bootstrap, topic)
    before = scrape(node)
    p = Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 5})
    values = [f"value-{i}".encode() for i in range(50)]
    for v in values:
        p.produce(topic, v)
    assert p.flush(15) == 0
    got = read_all(node.bootstrap, topic, 1, expected=len(values))
    assert len(got[0]) == len(values)
    # A group that commits the first 20: its lag is the other 30.
    group = f"metrics-group-{uuid.uuid4().hex[:8]}"
    c = Consumer({"bootstrap.servers": node.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 20)], asynchronous=False)
    finally:
        c.close()

    def moved():
        f = scrape(node)
        checks = {
            "group lag": mp.value(f, "sluice_consumer_group_lag", group=group) == len(values) - 20,
            "records_in": mp.value(f, "sluice_records_in_total", topic=topic) == len(values),
            "bytes_in": mp.value(f, "sluice_bytes_in_total", topic=topic) > sum(map(len, values)),
            "bytes_out": mp.value(f, "sluice_bytes_out_total", topic=topic) > sum(map(len, values)),
            "produce": mp.value(f, "sluice_requests_total", api="Produce")
            > mp.value(before, "sluice_requests_total", api="Produce"),
            "fetch": mp.value(f, "sluice_requests_total", api="Fetch")
            > mp.value(before, "sluice_requests_total", api="Fetch"),
            "produce time": mp.value(f, "sluice_request_duration_seconds_count", api="Produce")
            > mp.value(before, "sluice_request_duration_seconds_count", api="Produce"),
        }
        return checks if all(checks.values()) else Unmet(checks)
    wait_until(moved, 10, what="produce and fetch counted for the topic and the APIs")
    # The clients' connections are counted on the listener while they are open.
    f = scrape(node)
    open_now = sum(s.value for s in f["sluice_connections"].samples)
    assert open_now >= 1, f["sluice_connections"].samples


def test_a_refused_request_counts_its_error(node):
    before = scrape(node)
    err = {"api": "Produce", "error": "UNKNOWN_TOPIC_OR_PARTITION"}
    start = mp.value(before, "sluice_request_errors_total", **err)
    # A partition the topic does not have: the broker answers it with an error.
    topic = f"metrics-err-{uuid.uuid4().hex[:8]}"
    create_topic(node.bootstrap, topic)
    r = cl.raw_produce(node.port, topic, 7, [b"x"], acks=1)
    assert r["error"] == 3, r
    wait_until(lambda: mp.value(scrape(node), "sluice_request_errors_total", **err) > start, 10,
               what="UNKNOWN_TOPIC_OR_PARTITION counted for Produce")


def test_every_metric_is_present_with_its_type(node):
    # After the tests above: labelled series exist once something happened to them (an
    # API called, a topic written, a group committed, an error answered).
    fams = wait_until(lambda: (lambda f: f if "sluice_metadata_lag_ms" in f else None)(scrape(node)), 10,
                      what="a metrics page")
    wrong = [(name, kind, fams[name].type if name in fams else None) for name, kind in EXPECTED
             if name not in fams or fams[name].type != kind]
    assert not wrong, f"missing or mistyped (name, want, got): {wrong}"
    kinds = {s.labels.get("kind") for s in fams["sluice_leader_elections"].samples}
    assert kinds >= set(KINDS), f"election kinds on the page: {kinds}"
    buckets = [s for s in fams["sluice_leader_election_seconds"].samples if s.name.endswith("_bucket")]
    assert any(s.labels.get("le") == "+Inf" for s in buckets), buckets
    # A lone node is its own active controller and a live broker; it saw a leader once.
    assert mp.value(fams, "sluice_active_controller") == 1
    assert mp.value(fams, "sluice_live_brokers") == 1
    assert mp.value(fams, "sluice_fenced_brokers") == 0
    assert mp.value(fams, "sluice_controller_changes_total") >= 1
    assert 0 <= mp.value(fams, "sluice_metadata_lag_ms") < 60_000
