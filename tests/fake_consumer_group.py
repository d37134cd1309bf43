"""The fake cluster's consumer group protocol (KIP-848) coordinator, now shipped in
:mod:`pyconsumer.testing` (see pyconsumer/testing/_fake_group.py); this module keeps the
tests' imports working."""
from __future__ import annotations

from pyconsumer.testing._fake_group import *  # noqa: F403
from pyconsumer.testing._fake_group import ConsumerGroup, ConsumerMember, IdPartition, TopicLike

__all__ = ["ConsumerGroup", "ConsumerMember", "IdPartition", "TopicLike"]
