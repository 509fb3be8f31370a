"""SCRAM credentials through librdkafka's Admin API (KIP-554): kept in the metadata log,
validated as Kafka's controller validates them, and still there after a restart."""

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512


def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def upsert(user, mechanism, iterations, password):
    return UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations), password.encode())


def alter(a, alterations):
    """user -> None on success, else the KafkaError code."""
    out = {}
    for user, fut in a.alter_user_scram_credentials(alterations).items():
        try:
            fut.result(timeout=20)
            out[user] = None
        except KafkaException as e:
            out[user] = e.args[0].code()
    return out


def described(a, users=None):
    """user -> {mechanism: iterations}, for users that have credentials."""
    if users is None:
        descs = a.describe_user_scram_credentials().result(timeout=20)
    else:
        descs = {u: f.result(timeout=20) for u, f in a.describe_user_scram_credentials(users).items()}
    return {u: {i.mechanism: i.iterations for i in d.scram_credential_infos} for u, d in descs.items()}


def test_upsert_describe_delete(broker):
    a = admin(broker)
    assert described(a) == {}
    assert alter(a, [upsert("alice", SHA256, 8192, "alice-secret"), upsert("bob", SHA512, 4096, "bob-secret")]) == \
        {"alice": None, "bob": None}
    assert described(a) == {"alice": {SHA256: 8192}, "bob": {SHA512: 4096}}
    # A second mechanism for alice, then a new iteration count for the first.
    assert alter(a, [upsert("alice", SHA512, 16384, "alice-secret")]) == {"alice": None}
    assert alter(a, [upsert("alice", SHA256, 4096, "alice-secret-2")]) == {"alice": None}
    assert described(a, ["alice"]) == {"alice": {SHA256: 4096, SHA512: 16384}}
    assert alter(a, [UserScramCredentialDeletion("alice", SHA512)]) == {"alice": None}
    assert described(a, ["alice", "bob"]) == {"alice": {SHA256: 4096}, "bob": {SHA512: 4096}}
    assert alter(a, [UserScramCredentialDeletion("bob", SHA512)]) == {"bob": None}
    assert described(a) == {"alice": {SHA256: 4096}}


def test_kafkas_error_codes(broker):
    a = admin(broker)
    assert alter(a, [upsert("low", SHA256, 1000, "pw"), upsert("high", SHA512, 20000, "pw")]) == \
        {"low": KafkaError.UNACCEPTABLE_CREDENTIAL, "high": KafkaError.UNACCEPTABLE_CREDENTIAL}
    assert alter(a, [UserScramCredentialDeletion("nobody", SHA256)]) == {"nobody": KafkaError.RESOURCE_NOT_FOUND}
    with pytest.raises(KafkaException) as e:
        a.describe_user_scram_credentials(["nobody"])["nobody"].result(timeout=20)
    assert e.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
    # Nothing above left a credential behind.
    assert described(a) == {}
    # One good change beside a refused one: the good one lands.
    assert alter(a, [upsert("ok", SHA256, 4096, "pw"), upsert("bad", SHA256, 1, "pw")]) == \
        {"ok": None, "bad": KafkaError.UNACCEPTABLE_CREDENTIAL}
    assert described(a) == {"ok": {SHA256: 4096}}


def test_credentials_survive_a_restart(start_broker):
    b = start_broker()
    a = admin(b)
    assert alter(a, [upsert("carol", SHA512, 8192, "carol-secret"), upsert("dave", SHA256, 4096, "d")]) == \
        {"carol": None, "dave": None}
    assert alter(a, [UserScramCredentialDeletion("dave", SHA256)]) == {"dave": None}
    b.restart()
    a = admin(b)
    assert described(a) == {"carol": {SHA512: 8192}}
    log = b.stderr_path.read_text(errors="replace")
    assert "carol-secret" not in log
