"""pyconsumer: a Kafka consumer for Python with a Cython hot path and Arrow output."""
from __future__ import annotations

from pyconsumer._version import __version__
from pyconsumer.consumer import KafkaConsumer
from pyconsumer.records import ConsumerRecord
from pyconsumer.structs import BrokerInfo, OffsetAndMetadata, PartitionInfo, TopicPartition

__all__ = [
    "BrokerInfo",
    "ConsumerRecord",
    "KafkaConsumer",
    "OffsetAndMetadata",
    "PartitionInfo",
    "TopicPartition",
    "__version__",
]
