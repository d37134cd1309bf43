"""pyconsumer: a Kafka consumer for Python with a Cython hot path and Arrow output.

The consumer is loaded on first use: ``import pyconsumer`` (and so the ``pyconsumer``
command, whose ``--help`` or Ctrl-C need not wait for the whole client) loads only the
records layer until ``pyconsumer.KafkaConsumer`` is asked for. The records layer stays
eager: it hands the compiled decoder the error classes it raises.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pyconsumer._version import __version__

from pyconsumer.records import ConsumerRecord
from pyconsumer.structs import BrokerInfo, OffsetAndMetadata, PartitionInfo, TopicPartition

if TYPE_CHECKING:
    from pyconsumer.consumer import KafkaConsumer

__all__ = [
    "BrokerInfo",
    "ConsumerRecord",
    "KafkaConsumer",
    "OffsetAndMetadata",
    "PartitionInfo",
    "TopicPartition",
    "__version__",
]

_HOMES = {"KafkaConsumer": "pyconsumer.consumer"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pyconsumer' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value                  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
