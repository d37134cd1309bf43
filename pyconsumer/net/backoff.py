"""Exponential backoff with jitter (Java ``ExponentialBackoff``).

Used for reconnects (reconnect.backoff.ms doubling up to reconnect.backoff.max.ms), for the
metadata refresh backoff (retry.backoff.ms up to retry.backoff.max.ms) and for connection setup
timeouts (socket.connection.setup.timeout.ms up to socket.connection.setup.timeout.max.ms). The
jitter (+-20 %) keeps many clients that lost the same broker from reconnecting in lock step.
A first value above the maximum gives a constant maximum, as in Java (Kafka >= 3.7), whose
config check warns "a static backoff with value <max> will be applied".
"""
from __future__ import annotations

import math
import random


class ExponentialBackoff:
    def __init__(
        self, initial_ms: float, max_ms: float, multiplier: float = 2.0, jitter: float = 0.2,
        rng: random.Random | None = None,
    ) -> None:
        if initial_ms < 0 or max_ms < 0:
            raise ValueError("backoff times must not be negative")
        self.max_ms = float(max_ms)
        self.initial_ms = float(min(initial_ms, max_ms))
        self.multiplier = multiplier
        self.jitter = jitter
        self._rng = rng or random.Random()
        # attempts after which the ceiling is reached; later attempts stay there
        if self.initial_ms > 0 and self.max_ms > self.initial_ms and multiplier > 1:
            self._exp_max = math.log(self.max_ms / self.initial_ms, multiplier)
        else:
            self._exp_max = 0.0

    def backoff_ms(self, attempts: int) -> float:
        """Delay before attempt number ``attempts + 1`` (``attempts`` failures so far, >= 0)."""
        if self._exp_max <= 0:
            return self.initial_ms
        exp = min(float(max(attempts, 0)), self._exp_max)
        term: float = self.initial_ms * self.multiplier ** exp
        if self.jitter:
            term *= self._rng.uniform(1 - self.jitter, 1 + self.jitter)
        return min(term, self.max_ms)
