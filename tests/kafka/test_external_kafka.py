"""PYCONSUMER_TEST_KAFKA: the ``kafka`` tier against a cluster the tests did not start.

:class:`ExternalKafka` on the in-process fake (brokers 0 and 1, no node 1 of ours) reads node
ids and API versions from the cluster's metadata and refuses node control with
:class:`NotOurCluster`. A few tier tests run in a child pytest pointed at the session's Kafka:
those needing only topics and records pass, those needing a cluster of their own skip saying
why, none fail."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.protocol import ApiKey
from pyconsumer.testing import ExternalKafka, FakeCluster, KafkaCluster, NotOurCluster

from tests.backends import start_or_skip

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake() -> Iterator[FakeCluster]:
    cluster = FakeCluster(2, topics={"t": 3})
    try:
        yield cluster
        assert not cluster.errors, cluster.errors
    finally:
        cluster.close()


def test_node_ids_and_versions_come_from_the_external_metadata(fake: FakeCluster) -> None:
    pytest.importorskip("confluent_kafka")
    kafka = ExternalKafka(fake.bootstrap).start()
    assert kafka.node_ids() == [0, 1]                  # not the 1.. of the clusters we start
    assert kafka.home == 0                             # where its test topics go
    assert kafka.address_of(1) == f"127.0.0.1:{fake.brokers[1].port}"
    assert kafka.leaders("t") == {0: 0, 1: 1, 2: 0}
    versions = kafka.api_versions(1)
    assert versions[int(ApiKey.FETCH)][1] >= 13 and int(ApiKey.METADATA) in versions
    with pytest.raises(KeyError, match=r"no node 2; .* has nodes \[0, 1\]"):
        kafka.api_versions(2)
    with pytest.raises(KeyError, match="no node 2"):
        kafka[2]
    with pytest.raises(NotOurCluster, match="reading node 0's log or process needs a Kafka the tests started"):
        kafka[0]
    assert kafka.listener("PLAINTEXT") == kafka.bootstrap_servers == fake.bootstrap
    for refused in (lambda: kafka.kill(0), lambda: kafka.stop(1), lambda: kafka.restart(0),
                    lambda: kafka.listener("SASL_PLAINTEXT"), lambda: kafka.tls):
        with pytest.raises(NotOurCluster, match=f"not the external one at {fake.bootstrap}"):
            refused()
    kafka.close()                                      # nothing of the fake's stopped
    assert kafka.node_ids() == [0, 1]


def test_external_topics_keep_old_records_on_one_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test records carry 2023 timestamps: topics made on an external cluster (whose brokers
    keep 7 days by default) have no retention limit unless the test sets one; without
    replicas every partition is on the home broker, as on the one-node session cluster."""
    made: list[tuple[Mapping[str, str] | None, Sequence[Sequence[int]] | None]] = []

    def create_topic(self: KafkaCluster, name: str, partitions: int = 1, *, replication_factor: int = 1,
                     config: Mapping[str, str] | None = None, timeout: float = 30.0,
                     replica_assignment: Sequence[Sequence[int]] | None = None) -> str:
        made.append((config, replica_assignment))
        return name

    monkeypatch.setattr(KafkaCluster, "create_topic", create_topic)
    kafka = ExternalKafka("127.0.0.1:9")
    kafka.home = 3
    kafka.create_topic("a", 2)
    kafka.create_topic("b", config={"retention.ms": "60000", "cleanup.policy": "compact"})
    kafka.create_topic("c", 2, replication_factor=3)                  # placed by the cluster
    kafka.create_topic("d", 2, replica_assignment=[[1], [2]])
    assert made == [({"retention.ms": "-1"}, [[3], [3]]),
                    ({"retention.ms": "60000", "cleanup.policy": "compact"}, [[3]]),
                    ({"retention.ms": "-1"}, None), ({"retention.ms": "-1"}, [[1], [2]])]


def test_a_cluster_of_our_own_is_not_started_in_external_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYCONSUMER_TEST_KAFKA", "127.0.0.1:9")
    cluster = KafkaCluster(users={"alice": "alice-secret"}, broker_config={"ssl.client.auth": "required"})
    with pytest.raises(NotOurCluster, match="needs a Kafka of its own with broker settings ssl.client.auth "
                                            "and the test's SASL users, not the external one at 127.0.0.1:9"):
        start_or_skip(cluster)
    assert not cluster.node and cluster.folder is None  # nothing started


#: test id -> the outcome in external mode (and for skips, what the reason names)
CHILD_TESTS: dict[str, tuple[str, str]] = {
    "tests/kafka/test_offsets_on_kafka.py::test_negotiated_versions_respect_kafka_4_minimums": ("passed", ""),
    "tests/kafka/test_cluster.py::test_the_session_broker_is_apache_kafka": ("passed", ""),
    "tests/kafka/test_cluster.py::test_the_session_cluster_is_the_configured_release_with_its_listeners":
        ("skipped", "reading node 1's log or process needs a Kafka the tests started"),
    "tests/kafka/test_security_on_kafka.py::test_a_mechanism_the_listener_does_not_enable":
        ("skipped", "the SASL_PLAINTEXT listener with the test users and CA needs a Kafka the tests started"),
    "tests/kafka/test_fetch_sessions_on_kafka.py::test_no_session_slots_means_full_fetches":
        ("skipped", "needs a Kafka of its own with broker settings max.incremental.fetch.session.cache.slots"),
    "tests/kafka/test_three_nodes.py::test_a_rolling_restart_under_a_committing_group_loses_nothing":
        ("skipped", "needs a 3-node Kafka of its own to stop, kill and restart nodes of"),
}


def _outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/") + ".py"
        result: tuple[str, str] = ("passed", "")
        for child in case:
            if child.tag in ("skipped", "failure", "error"):
                result = (child.tag.replace("failure", "failed"), child.get("message", "") + (child.text or ""))
        out[f"{path}::{case.get('name')}"] = result
    return out


def test_the_tier_against_a_kafka_it_did_not_start(kafka: KafkaCluster, tmp_path: Path) -> None:
    """A child pytest with PYCONSUMER_TEST_KAFKA set to the session's broker (to the child,
    one it did not start) runs a few tier tests: two pass there, the rest skip, each saying
    why it needs a cluster of its own."""
    junit = tmp_path / "junit.xml"
    env: dict[str, Any] = {**os.environ, "PYCONSUMER_TEST_KAFKA": kafka.bootstrap_servers}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           f"--junitxml={junit}", *CHILD_TESTS], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert junit.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    got = _outcomes(junit)
    assert set(got) == set(CHILD_TESTS), (sorted(got), done.stdout[-3000:])
    for test, (outcome, reason) in CHILD_TESTS.items():
        assert got[test][0] == outcome, (test, got[test])
        if outcome == "skipped":
            assert reason in got[test][1] and kafka.bootstrap_servers in got[test][1], (test, got[test])
    assert done.returncode == 0, done.stdout[-3000:]
