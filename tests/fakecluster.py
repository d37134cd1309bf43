"""The in-process fake cluster, now shipped as :mod:`pyconsumer.testing` (see
pyconsumer/testing/_fake.py); this module keeps the tests' imports working."""
from __future__ import annotations

from pyconsumer.testing._fake import *  # noqa: F403
from pyconsumer.testing._fake import (
    EARLIEST,
    FAST_CONSUMER,
    HOST,
    LATEST,
    MAX_TIMESTAMP,
    ZERO_UUID,
    Batch,
    Body,
    CachedPartition,
    Committed,
    ConsumerGroup,
    Control,
    FakeCluster,
    FetchSession,
    Group,
    Handler,
    Member,
    Partition,
    RawClient,
    RecordLike,
    Request,
    Topic,
)

__all__ = ["EARLIEST", "FAST_CONSUMER", "HOST", "LATEST", "MAX_TIMESTAMP", "ZERO_UUID", "Batch",
           "Body", "CachedPartition", "Committed", "ConsumerGroup", "Control", "FakeCluster",
           "FetchSession", "Group", "Handler", "Member", "Partition", "RawClient", "RecordLike",
           "Request", "Topic"]
