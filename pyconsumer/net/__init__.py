"""Networking: broker connections, the selector loop, the cluster metadata cache."""
from __future__ import annotations

from pyconsumer.net.client import NetworkClient
from pyconsumer.net.connection import BrokerConnection, ConnectionSettings, ConnectionState, Response
from pyconsumer.net.future import Future
from pyconsumer.net.metadata import ClusterMetadata

__all__ = ["BrokerConnection", "ClusterMetadata", "ConnectionSettings", "ConnectionState",
           "Future", "NetworkClient", "Response"]
