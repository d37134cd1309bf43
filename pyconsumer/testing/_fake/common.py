"""What every module of the fake shares: a request as the fake received it, the body type, the
hang-up signal and the constants."""
from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from pyconsumer.protocol import ApiKey

ZERO_UUID = uuid.UUID(int=0)
HOST = "127.0.0.1"
# consumer settings for tests on the fake: short timers, so joins, retries and empty fetches
# take milliseconds
FAST_CONSUMER: dict[str, Any] = dict(fetch_max_wait_ms=100, heartbeat_interval_ms=100,
                                     retry_backoff_ms=20, reconnect_backoff_ms=20,
                                     reconnect_backoff_max_ms=200, auto_offset_reset="earliest")
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3

Body = dict[str, Any]
RecordLike = tuple[Any, ...]   # (key, value[, headers[, timestamp]])


class Hangup(Exception):
    """Close the connection without answering (broker stopped, drop_next)."""


@dataclasses.dataclass(frozen=True)
class Request:
    """One request as the fake received it."""

    broker: int
    api: ApiKey
    version: int
    correlation_id: int
    client_id: str | None
    body: Body
    at: float                       # time.monotonic() on arrival
    size: int = 0                   # bytes on the wire, size prefix included


__all__ = ["EARLIEST", "FAST_CONSUMER", "HOST", "LATEST", "MAX_TIMESTAMP", "ZERO_UUID", "Body",
           "Hangup", "RecordLike", "Request"]
