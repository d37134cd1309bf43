"""Deadlines, and the one "try, wait, retry until the deadline" loop.

A deadline is a ``time.monotonic()`` instant in seconds. Blocking calls (a commit, a
committed-offsets read, an offsets lookup, finding the coordinator, a metadata update) all do
the same thing: make an attempt that sends a request and polls for its answer; on a retriable
outcome wait (``retry.backoff.ms`` doubling up to ``retry.backoff.max.ms`` with jitter, as
Java's KIP-580 retries; never past the deadline) and try again; when the deadline
has passed, raise a timeout that names the last error. :func:`retry_until` is that loop.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from pyconsumer.errors import KafkaError
from pyconsumer.net.backoff import ExponentialBackoff

T = TypeVar("T")


def deadline_after(timeout_ms: float) -> float:
    return time.monotonic() + timeout_ms / 1000.0


def remaining_ms(deadline: float) -> float:
    """Milliseconds left until ``deadline`` (0 once it has passed)."""
    return max(0.0, (deadline - time.monotonic()) * 1000.0)


class Retry(Exception):
    """An attempt failed in a way another attempt may fix. ``error`` is what went wrong (None:
    the answer did not come before the deadline); ``backoff`` False retries at once (e.g.
    MEMBER_ID_REQUIRED, whose next attempt is already prepared)."""

    def __init__(self, error: KafkaError | None = None, *, backoff: bool = True) -> None:
        super().__init__(str(error) if error is not None else "no answer in time")
        self.error = error
        self.backoff = backoff


def retry_until(deadline: float, attempt: Callable[[], T], *,
                wait: Callable[[float], None], backoff_ms: float,
                timeout: Callable[[KafkaError | None], BaseException],
                backoff_max_ms: float | None = None) -> T:
    """``attempt()`` until it returns, retrying on :class:`Retry` after ``backoff_ms`` (growing
    to ``backoff_max_ms`` when given; waited with ``wait(ms)``, which polls the network); after
    the deadline raise ``timeout(last error)``. Any other exception (a fatal error, a wakeup)
    goes through."""
    policy = ExponentialBackoff(backoff_ms, backoff_ms if backoff_max_ms is None
                                else backoff_max_ms)
    failures = 0
    last: KafkaError | None = None
    while True:
        try:
            return attempt()
        except Retry as r:
            if r.error is not None:
                last = r.error
            backoff = r.backoff
        left = remaining_ms(deadline)
        if left <= 0:
            raise timeout(last)
        if backoff:
            wait(min(policy.backoff_ms(failures), left))
            failures += 1


__all__ = ["Retry", "deadline_after", "remaining_ms", "retry_until"]
