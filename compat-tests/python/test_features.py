"""Issue 19, features: UpdateFeatures v0-2 on the wire and the finalized levels in ApiVersions.

Raw requests (kproto) against one broker check the three request shapes (v0's
AllowDowngrade, v1's UpgradeType and ValidateOnly, v2's response without per-feature
results) and Kafka's INVALID_UPDATE_VERSION reasons; a 3-node dev-cluster checks that a
level changed through one node shows in ApiVersions on every node. kafka-features runs in
compat-tests/cli (features.sh), the Java admin in FeaturesTest.
"""

import time

import pytest

import kproto
from conftest import Broker
from dev_cluster import DevCluster

UPDATE_FEATURES = 57
INVALID_UPDATE_VERSION = 95
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
kproto.FIRST_FLEXIBLE[UPDATE_FEATURES] = 0


def api_versions_features(port):
    """ApiVersions v3: (supported {name: (min, max)}, finalized epoch, finalized {name: level})."""
    body = kproto.compact_string("sluice-compat") + kproto.compact_string("1.0") + kproto.EMPTY_TAGS
    with kproto.Conn(port) as c:
        r = c.request(kproto.API_VERSIONS, 3, body)
        assert r.i16() == 0
        r.compact_array(lambda rr: (rr.i16(), rr.i16(), rr.i16(), rr.tagged_fields()))
        r.i32()  # throttle
        supported, epoch, finalized = {}, -1, {}
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            sub = kproto.Reader(r._take(size))
            if tag == 0:
                for name, lo, hi, _ in sub.compact_array(lambda rr: (rr.compact_string(), rr.i16(), rr.i16(), rr.tagged_fields())):
                    supported[name] = (lo, hi)
            elif tag == 1:
                epoch = sub.i64()
            elif tag == 2:
                for name, hi, lo, _ in sub.compact_array(lambda rr: (rr.compact_string(), rr.i16(), rr.i16(), rr.tagged_fields())):
                    assert hi == lo, f"{name}: finalized min {lo} and max {hi} differ"
                    finalized[name] = hi
    return supported, epoch, finalized


def update_features(port, version, updates, validate_only=False):
    """updates: [(feature, level, upgrade_type or allow_downgrade for v0)].
    Returns (error_code, error_message, [(feature, code, message)] or None for v2)."""
    def one(u):
        name, level, kind = u
        tail = kproto.i8(1 if kind else 0) if version == 0 else kproto.i8(kind)
        return kproto.compact_string(name) + kproto.i16(level) + tail + kproto.EMPTY_TAGS
    body = kproto.i32(30000) + kproto.uvarint(len(updates) + 1) + b"".join(one(u) for u in updates)
    if version >= 1:
        body += kproto.i8(1 if validate_only else 0)
    body += kproto.EMPTY_TAGS
    with kproto.Conn(port) as c:
        r = c.request(UPDATE_FEATURES, version, body)
        r.i32()
        code, message = r.i16(), r.compact_string()
        results = None
        if version < 2:
            results = r.compact_array(lambda rr: (rr.compact_string(), rr.i16(), rr.compact_string(), rr.tagged_fields())[:3])
        r.tagged_fields()
        assert r.remaining() == 0, f"UpdateFeatures v{version}: {r.remaining()} bytes left over"
    return code, message, results


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("features"))
    b.start()
    yield b
    b.stop()


def wait_level(port, feature, level, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        _, epoch, finalized = api_versions_features(port)
        if finalized.get(feature, 0) == level:  # level 0 is not listed
            return epoch
        assert time.monotonic() < deadline, f"{feature} not at {level} on :{port} within {timeout}s: {finalized}"
        time.sleep(0.2)


def test_api_versions_reports_supported_and_finalized_levels(broker):
    supported, epoch, finalized = api_versions_features(broker.port)
    assert supported == {"metadata.version": (7, 33), "transaction.version": (0, 2), "group.version": (0, 1),
                         "kraft.version": (0, 1)}
    wait_level(broker.port, "metadata.version", 33)
    _, epoch, finalized = api_versions_features(broker.port)
    assert finalized == {"metadata.version": 33, "transaction.version": 2, "group.version": 1, "kraft.version": 1}
    assert epoch > 0


def test_each_version_answers_in_its_shape(broker):
    # v1, validate only: results per feature, nothing changes.
    assert update_features(broker.port, 1, [("transaction.version", 1, SAFE_DOWNGRADE)], validate_only=True) == (
        0, None, [("transaction.version", 0, None)])
    assert api_versions_features(broker.port)[2]["transaction.version"] == 2
    # v0: AllowDowngrade true is a safe downgrade.
    assert update_features(broker.port, 0, [("transaction.version", 1, True)]) == (0, None, [("transaction.version", 0, None)])
    wait_level(broker.port, "transaction.version", 1)
    # v0 without AllowDowngrade may not go down.
    code, message, results = update_features(broker.port, 0, [("transaction.version", 0, False)])
    assert (code, results) == (INVALID_UPDATE_VERSION, [])
    assert "without setting the upgrade type to either safe or unsafe downgrade" in message
    # v2: no per-feature results.
    assert update_features(broker.port, 2, [("transaction.version", 2, UPGRADE)]) == (0, None, None)
    wait_level(broker.port, "transaction.version", 2)


def test_bad_updates_get_invalid_update_version(broker):
    cases = [
        ([("transaction.version", 3, UPGRADE)],
         "Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions 0-2"),
        ([("no.such.feature", 1, UPGRADE)],
         "Invalid update version 1 for feature no.such.feature. Local controller 1 does not support this feature."),
        ([("group.version", 1, 7)],
         "Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."),
        ([("group.version", 1, SAFE_DOWNGRADE), ("metadata.version", 32, SAFE_DOWNGRADE)],
         "Unsupported metadata.version downgrade from 33 to 32. Refusing to perform the requested downgrade because it might delete metadata information."),
        ([("kraft.version", 0, SAFE_DOWNGRADE)],
         "Invalid update version 0 for feature kraft.version. Downgrading kraft.version is not supported."),
    ]
    for updates, want in cases:
        assert update_features(broker.port, 2, updates) == (INVALID_UPDATE_VERSION, want, None), updates
    # A refused request writes nothing, not even its valid updates.
    assert api_versions_features(broker.port)[2] == {"metadata.version": 33, "transaction.version": 2, "group.version": 1,
                                                     "kraft.version": 1}


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    d = DevCluster(tmp_path_factory.mktemp("features-dc"), brokers=3).start()
    try:
        d.wait_output(timeout=60)
        yield d
    finally:
        d.shutdown()


def test_a_level_change_shows_on_every_node(dc):
    ports = {i: int(addr.rsplit(":", 1)[1]) for i, (_, addr) in dc.children.items()}
    for p in ports.values():
        wait_level(p, "group.version", 1, timeout=30)
    first = min(ports)
    assert update_features(ports[first], 2, [("group.version", 0, SAFE_DOWNGRADE)]) == (0, None, None)
    epochs = {i: wait_level(p, "group.version", 0) for i, p in ports.items()}
    assert len(set(epochs.values())) == 1, f"every node reports the same finalized epoch: {epochs}"
    last = max(ports)
    assert update_features(ports[last], 1, [("group.version", 1, UPGRADE)]) == (0, None, [("group.version", 0, None)])
    for p in ports.values():
        wait_level(p, "group.version", 1)
