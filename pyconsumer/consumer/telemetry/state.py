"""The client telemetry state machine (Java's ClientTelemetryReporter's sender and
ClientTelemetryState): what to send next and when, and what each answer changes. No I/O and
no clock of its own: every method takes the time (monotonic seconds).

States and their moves are Java's. The first GetTelemetrySubscriptions goes out at once; an
answer that requests metrics schedules the first push at the push interval times a random
factor in [0.5, 1.5) (so clients started together spread their pushes), later pushes one
interval apart; an answer requesting none asks again one interval later without pushing.
Errors, as Java's ClientTelemetryUtils maps them: INVALID_REQUEST, INVALID_RECORD,
UNSUPPORTED_VERSION and any code it does not know stop telemetry for good;
UNKNOWN_SUBSCRIPTION_ID and UNSUPPORTED_COMPRESSION_TYPE ask for the subscription again at
once; TELEMETRY_TOO_LARGE and THROTTLING_QUOTA_EXCEEDED ask again one interval later. A
response's ``throttle_time_ms`` delays the next request at least that long. A broker that
does not offer the APIs stops it for good; a request lost with its connection is retried
one interval later (the default 5 minutes before any subscription).
"""
from __future__ import annotations

import enum
import math
import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyconsumer.errors import ErrorCode

#: Java's ClientTelemetryReporter.DEFAULT_PUSH_INTERVAL_MS
DEFAULT_PUSH_INTERVAL_MS = 5 * 60 * 1000
#: the first push's interval is the subscription's times a factor in this range
INITIAL_PUSH_JITTER = (0.5, 1.5)
ZERO_UUID = uuid.UUID(int=0)

_STOP = {ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_RECORD, ErrorCode.UNSUPPORTED_VERSION}
_AT_ONCE = {ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE}
_NEXT_INTERVAL = {ErrorCode.TELEMETRY_TOO_LARGE, ErrorCode.THROTTLING_QUOTA_EXCEEDED}


class TelemetryState(enum.Enum):
    SUBSCRIPTION_NEEDED = "subscription needed"
    SUBSCRIPTION_IN_PROGRESS = "subscription in progress"
    PUSH_NEEDED = "push needed"
    PUSH_IN_PROGRESS = "push in progress"
    TERMINATING_PUSH_NEEDED = "terminating push needed"
    TERMINATING_PUSH_IN_PROGRESS = "terminating push in progress"
    TERMINATED = "terminated"


S = TelemetryState
_NEXT: dict[TelemetryState, frozenset[TelemetryState]] = {
    S.SUBSCRIPTION_NEEDED: frozenset({S.SUBSCRIPTION_IN_PROGRESS, S.TERMINATED}),
    S.SUBSCRIPTION_IN_PROGRESS: frozenset({S.PUSH_NEEDED, S.SUBSCRIPTION_NEEDED,
                                           S.TERMINATING_PUSH_NEEDED, S.TERMINATED}),
    S.PUSH_NEEDED: frozenset({S.PUSH_IN_PROGRESS, S.SUBSCRIPTION_NEEDED,
                              S.TERMINATING_PUSH_NEEDED, S.TERMINATED}),
    S.PUSH_IN_PROGRESS: frozenset({S.PUSH_NEEDED, S.SUBSCRIPTION_NEEDED,
                                   S.TERMINATING_PUSH_NEEDED, S.TERMINATED}),
    S.TERMINATING_PUSH_NEEDED: frozenset({S.TERMINATING_PUSH_IN_PROGRESS, S.TERMINATED}),
    S.TERMINATING_PUSH_IN_PROGRESS: frozenset({S.TERMINATED}),
    S.TERMINATED: frozenset(),
}
_TERMINATING = frozenset({S.TERMINATING_PUSH_NEEDED, S.TERMINATING_PUSH_IN_PROGRESS,
                          S.TERMINATED})


@dataclass(frozen=True)
class TelemetrySubscription:
    """A GetTelemetrySubscriptions answer, as kept until the next one."""

    client_instance_id: uuid.UUID
    subscription_id: int
    push_interval_ms: int
    accepted_compression_types: tuple[int, ...]
    delta_temporality: bool
    requested_metrics: tuple[str, ...]
    telemetry_max_bytes: int


def error_interval_ms(code: int, interval_ms: float) -> float:
    """How long to wait before asking for the subscription again after error ``code``
    (inf: never); ``interval_ms`` is the current push interval (-1: none yet)."""
    if code in _AT_ONCE:
        return 0.0
    if code in _NEXT_INTERVAL:
        return interval_ms if interval_ms != -1 else float(DEFAULT_PUSH_INTERVAL_MS)
    return math.inf              # _STOP, and any code Java does not map


class TelemetrySender:
    """One consumer's telemetry state; its owner (the reporter) calls it under the client
    lock. ``jitter(lo, hi)`` draws the first push's factor (``random.uniform``)."""

    def __init__(self, jitter: Callable[[float, float], float] = random.uniform) -> None:
        self._jitter = jitter
        self.state = S.SUBSCRIPTION_NEEDED
        self.subscription: TelemetrySubscription | None = None
        #: when the last request was answered (None: never), and the wait after it, in ms
        self.last_request: float | None = None
        self.interval_ms = 0.0
        #: no request before this time (a response's throttle_time_ms)
        self.throttled_until = 0.0
        self.enabled = True
        #: why telemetry stopped for good (None while it runs)
        self.stopped: str | None = None

    # ------------------------------------------------------------------ transitions

    def _move(self, new: TelemetryState) -> bool:
        if new not in _NEXT[self.state]:
            self.stop(f"no telemetry state move from {self.state.value} to {new.value}")
            return False
        self.state = new
        return True

    def stop(self, why: str) -> None:
        """Send nothing more, ever."""
        self.enabled = False
        if self.stopped is None:
            self.stopped = why

    def _wait(self, interval_ms: float, now: float, why: str = "") -> None:
        self.interval_ms = interval_ms
        self.last_request = now
        if math.isinf(interval_ms):
            self.stop(why or "the broker's answer cannot be resolved by retrying")

    @property
    def terminating(self) -> bool:
        return self.state in _TERMINATING

    # ------------------------------------------------------------------ scheduling

    def time_to_next_update(self, now: float) -> float:
        """Seconds until a request is due (0: now; inf: none is, or one is in flight)."""
        if not self.enabled or self.state in (S.SUBSCRIPTION_IN_PROGRESS, S.PUSH_IN_PROGRESS,
                                              S.TERMINATING_PUSH_IN_PROGRESS, S.TERMINATED):
            return math.inf
        if self.state is S.TERMINATING_PUSH_NEEDED:
            return 0.0
        due = (now if self.last_request is None
               else self.last_request + self.interval_ms / 1000.0)
        return max(0.0, due - now, self.throttled_until - now)

    def begin_subscription(self) -> uuid.UUID | None:
        """Move to asking; the client instance id to ask with (zero the first time), or None
        when not in a state to ask."""
        if self.state is not S.SUBSCRIPTION_NEEDED or not self._move(S.SUBSCRIPTION_IN_PROGRESS):
            return None
        return ZERO_UUID if self.subscription is None else self.subscription.client_instance_id

    def begin_push(self) -> tuple[TelemetrySubscription, bool] | None:
        """Move to pushing; the subscription to push for and whether this is the terminating
        push, or None when not in a state to push."""
        sub = self.subscription
        if self.state not in (S.PUSH_NEEDED, S.TERMINATING_PUSH_NEEDED):
            return None
        if sub is None:
            self._move(S.SUBSCRIPTION_NEEDED)
            return None
        terminating = self.state is S.TERMINATING_PUSH_NEEDED
        if not self._move(S.TERMINATING_PUSH_IN_PROGRESS if terminating else S.PUSH_IN_PROGRESS):
            return None
        return sub, terminating

    def push_not_built(self, now: float) -> None:
        """The payload could not be made: try again one interval later."""
        assert self.subscription is not None
        if self.state is S.PUSH_IN_PROGRESS:
            self.state = S.PUSH_NEEDED
        self._wait(self.subscription.push_interval_ms, now)

    # ------------------------------------------------------------------ answers

    def _throttle(self, body: Mapping[str, Any], now: float) -> None:
        throttle_ms = body.get("throttle_time_ms", 0) or 0
        if throttle_ms > 0:
            self.throttled_until = max(self.throttled_until, now + throttle_ms / 1000.0)

    def on_subscription(self, body: Mapping[str, Any], now: float) -> bool:
        """A GetTelemetrySubscriptions answer; True when the temporality changed (the sums'
        history must be forgotten)."""
        self._throttle(body, now)
        old = self.subscription
        code = body["error_code"]
        if code:
            if self.terminating:
                return False
            self._move(S.SUBSCRIPTION_NEEDED)
            self._wait(error_interval_ms(code, old.push_interval_ms if old else -1), now,
                       f"GetTelemetrySubscriptions answered {_name(code)}")
            return False
        instance = body["client_instance_id"]
        if instance == ZERO_UUID:
            self.stop("the broker assigned no client instance id")
            return False
        interval = body["push_interval_ms"]
        sub = TelemetrySubscription(
            client_instance_id=instance, subscription_id=body["subscription_id"],
            push_interval_ms=interval if interval > 0 else DEFAULT_PUSH_INTERVAL_MS,
            accepted_compression_types=tuple(body["accepted_compression_types"]),
            delta_temporality=body["delta_temporality"],
            requested_metrics=tuple(body["requested_metrics"]),
            telemetry_max_bytes=body["telemetry_max_bytes"])
        if self.terminating:
            return False
        # no metrics requested: ask again one interval later, push nothing
        new = S.PUSH_NEEDED if sub.requested_metrics else S.SUBSCRIPTION_NEEDED
        if not self._move(new):
            return False
        self.subscription = sub
        self.last_request = now
        self.interval_ms = (sub.push_interval_ms * self._jitter(*INITIAL_PUSH_JITTER)
                            if new is S.PUSH_NEEDED else float(sub.push_interval_ms))
        return old is not None and old.delta_temporality != sub.delta_temporality

    def on_push(self, body: Mapping[str, Any], now: float) -> None:
        """A PushTelemetry answer."""
        self._throttle(body, now)
        if self.terminating:
            return
        sub = self.subscription
        assert sub is not None
        code = body["error_code"]
        if code:
            self._move(S.SUBSCRIPTION_NEEDED)
            self._wait(error_interval_ms(code, sub.push_interval_ms), now,
                       f"PushTelemetry answered {_name(code)}")
            return
        self.last_request = now
        self.interval_ms = float(sub.push_interval_ms)
        self._move(S.PUSH_NEEDED)

    def on_failure(self, now: float, *, unsupported: bool) -> None:
        """The request got no answer (its connection failed or it timed out), or the broker
        does not offer the API (``unsupported``: stop for good)."""
        if self.terminating:
            return
        if self.state not in (S.SUBSCRIPTION_IN_PROGRESS, S.PUSH_IN_PROGRESS):
            self.stop(f"a telemetry request failed in state {self.state.value}")
            return
        if unsupported:
            self._wait(math.inf, now, "the broker does not support client telemetry")
        else:
            sub = self.subscription
            self._wait(float(sub.push_interval_ms if sub else DEFAULT_PUSH_INTERVAL_MS), now)
        self._move(S.SUBSCRIPTION_NEEDED)

    # ------------------------------------------------------------------ closing

    def initiate_close(self) -> bool:
        """The consumer closes: True when a terminating push is now due (there is a
        subscription and telemetry runs), as Java's initiateClose."""
        if not self.enabled or self.last_request is None \
                or self.state is S.SUBSCRIPTION_NEEDED or self.terminating:
            return False
        return self._move(S.TERMINATING_PUSH_NEEDED)

    def close(self) -> None:
        if self.state is not S.TERMINATED:
            self.state = S.TERMINATED


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


__all__ = ["DEFAULT_PUSH_INTERVAL_MS", "INITIAL_PUSH_JITTER", "TelemetrySender",
           "TelemetryState", "TelemetrySubscription", "ZERO_UUID", "error_interval_ms"]
