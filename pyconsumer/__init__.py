"""pyconsumer: a Kafka consumer for Python with a Cython hot path and Arrow output."""
from __future__ import annotations

# The one place the version lives: setuptools reads it (pyproject's dynamic version), the
# client reports it to brokers (ApiVersions client_software_version), the CLI prints it.
__version__ = "0.1.0"

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
