"""The consumer: KafkaConsumer and the control path behind it."""
from __future__ import annotations

from pyconsumer.consumer.consumer import KafkaConsumer

__all__ = ["KafkaConsumer"]
