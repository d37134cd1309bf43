"""Your own Kafka in place of the one :class:`~pyconsumer.testing.KafkaCluster` starts.

``PYCONSUMER_TEST_KAFKA=host:9092[,host2:9092] pytest -m kafka`` runs the Apache Kafka tier
against that cluster: :class:`ExternalKafka` makes the test topics there (names unique per
run) and offers the same admin calls. What only a cluster of our own can do (kill, stop or
restart a node, a SASL or SSL listener of known users and CA, special broker settings) is
refused with :class:`NotOurCluster`, which the tests turn into a skip naming the reason.
"""
from __future__ import annotations

from ._errors import BrokerStartError
from ._kafka import KafkaCluster, TlsFiles

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

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    def listener(self, name: str) -> str:
        if name == "PLAINTEXT":
            return self._bootstrap
        raise NotOurCluster(f"the external Kafka at {self._bootstrap} is used through its bootstrap "
                            f"servers only: no {name} listener with known users or CA")

    def start(self) -> ExternalKafka:
        """Check that the cluster answers metadata (BrokerStartError naming it otherwise)."""
        try:
            brokers = self.admin().list_topics(timeout=self.start_timeout / 4).brokers
        except Exception as exc:  # noqa: BLE001 - confluent-kafka's KafkaException
            raise BrokerStartError(f"the external Kafka at {self._bootstrap} does not answer: {exc}") from None
        if not brokers:
            raise BrokerStartError(f"the external Kafka at {self._bootstrap} lists no brokers")
        return self

    @property
    def tls(self) -> TlsFiles:
        raise self._refuse("TLS material")

    def close(self) -> None:
        """Nothing to stop: the cluster is not ours (its test topics stay)."""

    def _refuse(self, what: str) -> NotOurCluster:
        return NotOurCluster(f"{what} needs a cluster the tests started; {self._bootstrap} is external")

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
