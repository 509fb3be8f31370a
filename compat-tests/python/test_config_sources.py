"""DescribeConfigs sources as Kafka reports them (issue 19): a key nobody set is
DEFAULT_CONFIG, a key given at startup is STATIC_BROKER_CONFIG, one altered at run time
DYNAMIC_BROKER_CONFIG, and a topic key inherits its source from the broker's. The broker
runs in the repository's root, where it loads the shipped config.toml as a newcomer's
`sluice` does: that file sets nothing, so its keys stay defaults."""

import subprocess

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic

from conftest import REPO_ROOT, free_port, sluice_bin
from cluster import wait_until

UNSET = ["num.partitions", "log.retention.hours", "log.retention.ms", "min.insync.replicas",
         "log.segment.bytes", "unclean.leader.election.enable", "auto.create.topics.enable"]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("sources")
    port = free_port()
    cmd = [sluice_bin(), "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(d / "data"),
           "--set", "default.replication.factor=1"]
    with open(d / "log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        a = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        wait_until(lambda: proc.poll() is None and a.list_topics(timeout=1) is not None, 10, what="the broker answering")
        yield a, (d / "log")
    finally:
        proc.terminate()
        proc.wait(10)


def broker_configs(a):
    r = ConfigResource(ConfigResource.Type.BROKER, "1")
    return a.describe_configs([r])[r].result(15)


def test_the_shipped_config_toml_is_loaded_and_sets_nothing(broker):
    a, _ = broker
    cfg = broker_configs(a)
    for k in UNSET:
        assert cfg[k].source == ConfigSource.DEFAULT_CONFIG.value, f"{k}: {ConfigSource(cfg[k].source)}"


def test_a_key_set_at_startup_is_static_and_an_altered_one_dynamic(broker):
    a, _ = broker
    cfg = broker_configs(a)
    assert cfg["default.replication.factor"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert cfg["default.replication.factor"].value == "1", "set at its default value, and still static"
    r = ConfigResource(ConfigResource.Type.BROKER, "1",
                       incremental_configs=[ConfigEntry("log.retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([r])[r].result(15)
    cfg = broker_configs(a)
    assert cfg["log.retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert cfg["log.retention.ms"].value == "3600000"


def test_a_topic_key_nobody_set_is_a_default(broker):
    a, _ = broker
    a.create_topics([NewTopic("sources", 1, 1)])["sources"].result(15)
    r = ConfigResource(ConfigResource.Type.TOPIC, "sources")
    cfg = a.describe_configs([r])[r].result(15)
    assert cfg["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert cfg["min.insync.replicas"].source == ConfigSource.DEFAULT_CONFIG.value
    assert not cfg["segment.bytes"].is_read_only
