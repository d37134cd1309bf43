"""Your own Kafka in place of the one :class:`~pyconsumer.testing.KafkaCluster` starts.

``PYCONSUMER_TEST_KAFKA=host:9092[,host2:9092] pytest -m kafka`` runs the Apache Kafka tier
against that cluster: :class:`ExternalKafka` makes the test topics there (names unique per
run) and offers the same admin calls. What only a cluster of our own can do (kill, stop or
restart a node, a SASL or SSL listener of known users and CA, special broker settings) is
refused with :class:`NotOurCluster`, which the tests turn into a skip naming the reason.
Node ids come from the cluster's metadata (any ids, any number of brokers), never assumed.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._errors import BrokerStartError
from ._kafka import KafkaCluster, KafkaNode, TlsFiles
from ._process import probe_api_versions

__all__ = ["ExternalKafka", "NotOurCluster"]


class NotOurCluster(BrokerStartError):
    """The scenario needs a cluster these tests started (node control, known listeners)."""


class ExternalKafka(KafkaCluster):
    """A running Kafka cluster at ``bootstrap_servers``, used as is (never started or stopped)."""

    def __init__(self, bootstrap_servers: str) -> None:
        super().__init__(nodes=1)
        if not bootstrap_servers.strip():
            raise ValueError("ExternalKafka needs bootstrap servers (host:port[,host:port])")
        self._bootstrap = bootstrap_servers.strip()
        #: the broker leading every partition of the topics made here (set by start: the
        #: lowest node id), as on the one-node cluster the tier's tests were written for
        self.home: int | None = None

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    def listener(self, name: str) -> str:
        if name == "PLAINTEXT":
            return self._bootstrap
        raise self._refuse(f"the {name} listener with the test users and CA")

    def start(self) -> ExternalKafka:
        """Check that the cluster answers metadata (BrokerStartError naming it otherwise)."""
        try:
            brokers = self.admin().list_topics(timeout=self.start_timeout / 4).brokers
        except Exception as exc:  # noqa: BLE001 - confluent-kafka's KafkaException
            raise BrokerStartError(f"the external Kafka at {self._bootstrap} does not answer: {exc}") from None
        if not brokers:
            raise BrokerStartError(f"the external Kafka at {self._bootstrap} lists no brokers")
        self.home = min(brokers)
        return self

    @property
    def tls(self) -> TlsFiles:
        raise self._refuse("TLS material")

    def brokers(self) -> dict[int, tuple[str, int]]:
        """node id -> (host, port) of every broker the cluster's metadata lists now."""
        md = self.admin().list_topics(timeout=self.start_timeout / 4)
        return {b.id: (b.host, b.port) for b in md.brokers.values()}

    def node_ids(self) -> list[int]:
        return sorted(self.brokers())

    def _broker(self, node_id: int) -> tuple[str, int]:
        brokers = self.brokers()
        if node_id not in brokers:
            raise KeyError(f"no node {node_id}; the external Kafka at {self._bootstrap} has nodes {sorted(brokers)}")
        return brokers[node_id]

    def address_of(self, node_id: int) -> str:
        host, port = self._broker(node_id)
        return f"{host}:{port}"

    def api_versions(self, node_id: int) -> dict[int, tuple[int, int]]:
        """{api key: (min, max)} as broker ``node_id`` answers ApiVersions now."""
        return probe_api_versions(*self._broker(node_id), timeout=10.0)

    def __getitem__(self, node_id: int) -> KafkaNode:
        brokers = self.brokers()
        if node_id in brokers:
            raise self._refuse(f"reading node {node_id}'s log or process")
        raise KeyError(f"no node {node_id}; the external Kafka at {self._bootstrap} has nodes {sorted(brokers)}")

    def create_topic(self, name: str, partitions: int = 1, *, replication_factor: int = 1,
                     config: Mapping[str, str] | None = None, timeout: float = 30.0,
                     replica_assignment: Sequence[Sequence[int]] | None = None) -> str:
        """As KafkaCluster's, with ``retention.ms=-1`` unless ``config`` sets it (test records
        carry fixed 2023 timestamps, which a broker's default 7-day retention deletes at its
        next check) and, without replicas, every partition on broker :attr:`home` (tests
        count requests and sessions per broker, and order rows, as on one node)."""
        if replica_assignment is None and replication_factor == 1:
            if self.home is None:
                self.start()
            assert self.home is not None
            replica_assignment = [[self.home]] * partitions
        return super().create_topic(name, partitions, replication_factor=replication_factor,
                                    config={"retention.ms": "-1", **(config or {})}, timeout=timeout,
                                    replica_assignment=replica_assignment)

    def close(self) -> None:
        """Nothing to stop: the cluster is not ours (its test topics stay)."""

    def _refuse(self, what: str) -> NotOurCluster:
        return NotOurCluster(f"{what} needs a Kafka the tests started, not the external one at {self._bootstrap}")

    def kill(self, node_id: int) -> None:
        raise self._refuse(f"killing node {node_id}")

    def stop(self, node_id: int) -> None:
        raise self._refuse(f"stopping node {node_id}")

    def restart(self, node_id: int, *, wait: bool = True) -> None:
        raise self._refuse(f"restarting node {node_id}")

    def is_running(self, node_id: int = 1) -> bool:
        return True

    def __repr__(self) -> str:
        return f"ExternalKafka({self._bootstrap})"
