"""KafkaCluster itself: listeners, users, node control and cleanup, on real Apache Kafka."""
from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.testing._kafka import remove_stale_folders
from pyconsumer.testing import KAFKA_VERSION, SAMPLE_TIMESTAMP_BASE_MS, KafkaCluster, TestRecord, produce


def test_the_session_broker_is_apache_kafka(kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    topic = make_kafka_topic(2)
    produce(kafka.bootstrap_servers, topic, [TestRecord(b"k", b"v", partition=1)])
    with KafkaConsumer(bootstrap_servers=kafka.bootstrap_servers) as c:
        assert c.partitions_for_topic(topic) == {0, 1}
        assert c.end_offsets([TopicPartition(topic, 0), TopicPartition(topic, 1)]) == {
            TopicPartition(topic, 0): 0, TopicPartition(topic, 1): 1}
    absent = max(kafka.node_ids()) + 1       # an external cluster's ids come from its metadata
    with pytest.raises(KeyError, match=f"no node {absent}"):
        kafka[absent]


def test_the_session_cluster_is_the_configured_release_with_its_listeners(kafka: KafkaCluster) -> None:
    """The node's own log names the release; SASL, SSL and SASL_SSL listeners of their own. On an
    external cluster the first line skips: its nodes' logs are not ours to read."""
    assert "Kafka version: " + KAFKA_VERSION in kafka[1].log_path.read_text()
    assert kafka.version == KAFKA_VERSION
    settings = kafka.broker_settings(1)      # as the broker reports them, defaults included
    assert settings["group.consumer.session.timeout.ms"] == "6000" and settings["log.retention.ms"] == "-1"
    assert settings["num.partitions"] == "1"
    ports = {kafka.listener(name) for name in ("SASL_PLAINTEXT", "SSL", "SASL_SSL")}
    assert len(ports) == 3 and kafka.bootstrap_servers not in ports
    with pytest.raises(ValueError, match="no listener 'GSSAPI'"):
        kafka.listener("GSSAPI")      # only a cluster made with kerberos= has it


def test_old_records_outlive_retention_checks_and_close_leaves_nothing() -> None:
    """Test data carries fixed 2023 timestamps: the cluster keeps it through the broker's
    retention checks (a topic with an explicit 7-day retention is emptied by the same checks),
    and close() leaves no JVM and no folder behind."""
    with KafkaCluster(nodes=1, broker_config={"log.retention.check.interval.ms": "200",
                                                "log.initial.task.delay.ms": "0"}) as cluster:
        folder = cluster.folder
        node = cluster[1]
        proc = node._proc
        assert folder is not None and folder.is_dir() and proc is not None
        assert node.rss_bytes() is not None
        kept = cluster.create_topic("kept")
        control = cluster.create_topic("control", config={"retention.ms": str(7 * 24 * 3600 * 1000)})
        old = [TestRecord(None, b"v", partition=0, timestamp_ms=SAMPLE_TIMESTAMP_BASE_MS + i) for i in range(10)]
        for topic in (kept, control):
            produce(cluster.bootstrap_servers, topic, old)
        tps = [TopicPartition(kept, 0), TopicPartition(control, 0)]
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers) as c:
            deadline = time.monotonic() + 60
            while c.beginning_offsets(tps)[tps[1]] != 10 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert c.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 10}   # checks ran; kept kept
    assert proc.poll() is not None                      # the JVM is gone
    assert not folder.exists()                          # data, logs and TLS material removed
    assert not cluster.node


def test_a_bad_setting_names_the_node_and_shows_the_log() -> None:
    cluster = KafkaCluster(broker_config={"num.network.threads": "zero"}, start_timeout=60)
    with pytest.raises(Exception) as info:
        cluster.start()
    text = str(info.value)
    assert "node 1" in text and "num.network.threads" in text
    assert cluster.folder is None                       # cleaned up after the failure


def test_folders_of_dead_runs_are_removed(tmp_path: Path) -> None:
    """A run killed before close() leaves its folder (its JVMs die with it): the next cluster
    start removes folders whose owner process is gone, and only those."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale, live, foreign = (tmp_path / f"pyconsumer-kafka-{n}" for n in ("stale", "live", "foreign"))
    for folder, pid in ((stale, str(dead.pid)), (live, str(os.getpid())), (foreign, None)):
        (folder / "node1").mkdir(parents=True)
        if pid is not None:
            (folder / "owner.pid").write_text(pid)
    assert remove_stale_folders(tmp_path) == [stale]
    assert not stale.exists() and live.is_dir() and foreign.is_dir()
