"""pyconsumer: a Kafka consumer for Python with a Cython hot path and Arrow output."""
from __future__ import annotations

from pyconsumer.consumer import KafkaConsumer
from pyconsumer.records import ConsumerRecord
from pyconsumer.structs import BrokerInfo, OffsetAndMetadata, PartitionInfo, TopicPartition

try:
    from importlib.metadata import PackageNotFoundError, version as _version

    __version__ = _version("pyconsumer")
except PackageNotFoundError:  # a source tree that was not installed
    __version__ = "0+unknown"

__all__ = [
    "BrokerInfo",
    "ConsumerRecord",
    "KafkaConsumer",
    "OffsetAndMetadata",
    "PartitionInfo",
    "TopicPartition",
    "__version__",
]
