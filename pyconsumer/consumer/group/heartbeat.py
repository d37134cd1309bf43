"""Heartbeats on time: the timing (:class:`HeartbeatTimer`, a pure object: every method takes
the time, nothing does I/O) and the background thread that polls between the application's
calls (:class:`HeartbeatThread`).

Java's ``Heartbeat``: a heartbeat is due ``heartbeat.interval.ms`` after the last one was sent
(``retry.backoff.ms`` after one failed); the session is considered lost when no heartbeat was
answered for ``session.timeout.ms``; the member has left the application's control when
``poll()`` was not called for ``max.poll.interval.ms``.
"""
from __future__ import annotations

import logging
import threading

from pyconsumer.net.client import NetworkClient

log = logging.getLogger(__name__)


class HeartbeatTimer:
    def __init__(self, *, session_timeout_ms: float, heartbeat_interval_ms: float,
                 max_poll_interval_ms: float, retry_backoff_ms: float, now: float) -> None:
        self.session_timeout = session_timeout_ms / 1000.0
        self.interval = heartbeat_interval_ms / 1000.0
        self.max_poll_interval = max_poll_interval_ms / 1000.0
        self.retry_backoff = retry_backoff_ms / 1000.0
        self.last_poll = now
        self.last_received = now
        self.next_due = now + self.interval
        self.in_flight = False

    # ------------------------------------------------------------------ events

    def poll(self, now: float) -> None:
        """The application called poll()."""
        self.last_poll = now

    def sent(self, now: float) -> None:
        self.in_flight = True
        self.next_due = now + self.interval

    def received(self, now: float) -> None:
        """A heartbeat was answered (with or without a group error: the coordinator is alive)."""
        self.in_flight = False
        self.last_received = now

    def failed(self, now: float) -> None:
        """A heartbeat got no answer (connection lost, timeout): try again after the backoff."""
        self.in_flight = False
        self.next_due = now + self.retry_backoff

    def reset(self, now: float) -> None:
        """A new generation starts (join completed): the session counts from now."""
        self.in_flight = False
        self.last_received = now
        self.next_due = now + self.interval

    # ------------------------------------------------------------------ questions

    def should_heartbeat(self, now: float) -> bool:
        return not self.in_flight and now >= self.next_due

    def time_to_next_heartbeat(self, now: float) -> float:
        """Seconds until a heartbeat is due (0: now)."""
        return max(0.0, self.next_due - now)

    def session_expired(self, now: float) -> bool:
        return now - self.last_received > self.session_timeout

    def poll_timeout_expired(self, now: float) -> bool:
        return now - self.last_poll > self.max_poll_interval

    def time_to_poll_timeout(self, now: float) -> float:
        return max(0.0, self.last_poll + self.max_poll_interval - now)


class HeartbeatThread(threading.Thread):
    """Keeps the membership alive while the application is away from the consumer: a
    non-blocking background poll (which runs the heartbeat step) every few tens of ms,
    skipped while the application holds the lock (its own polls run the step then)."""

    _PERIOD = 0.05

    def __init__(self, client: NetworkClient, group_id: str) -> None:
        super().__init__(name=f"pyconsumer-heartbeat-{group_id}", daemon=True)
        self.client = client
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()
        if self is not threading.current_thread():
            self.join(5)

    def run(self) -> None:
        client = self.client
        while not self._stop_event.wait(self._PERIOD):
            if not client.lock.acquire(blocking=False):
                continue                     # the application is inside a call
            try:
                if client.closed:
                    return
                client.poll(timeout_ms=0, background=True, wakeup=False)
            except Exception:
                log.exception("heartbeat thread")
            finally:
                client.lock.release()


__all__ = ["HeartbeatThread", "HeartbeatTimer"]
