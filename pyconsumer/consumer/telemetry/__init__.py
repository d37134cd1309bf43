"""KIP-714 client telemetry: the consumer's metrics pushed to the cluster when it asks.

:mod:`.state` is the state machine (Java's), :mod:`.codecs` compresses a payload as the
broker reads it, :mod:`.reporter` drives both from the network client's poll.
"""
from __future__ import annotations

from pyconsumer.consumer.telemetry.reporter import ClientTelemetryReporter

__all__ = ["ClientTelemetryReporter"]
