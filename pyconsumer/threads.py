"""The consumer's thread model, and the two small objects that enforce it.

* **The application thread** is whichever thread is inside a consumer call. One at a time: a
  call from a second thread while another is in progress raises
  :class:`~pyconsumer.errors.ConcurrentAccessError` (Java's ``acquireAndEnsureOpen``);
  ``wakeup()`` and ``metrics()`` are the methods any thread may call. (:class:`AccessGuard`)
* **The heartbeat thread** (one per consumer that joins a group) keeps the membership alive
  while the application is away from the consumer (processing records). It only sends
  Heartbeat (ConsumerGroupHeartbeat with group.protocol=consumer), FindCoordinator, the
  KIP-714 telemetry requests (GetTelemetrySubscriptions, PushTelemetry) and, on a
  poll timeout, LeaveGroup (a leaving heartbeat), and records their outcome: the heartbeat
  timer, a coordinator to look up, a generation lost or a member fenced, a new target
  assignment, a fatal error. It never changes the assignment, positions or fetched data, and
  never runs user code (reconciliation happens in poll()).
* **The decode threads** (``pyconsumer-decode_N``, one pool per thread count, shared by the
  process's consumers, see :mod:`pyconsumer.consumer.fetch.decode`) decode record sets to Arrow for ``poll_arrow()``:
  only cursors the application thread hands them, while it waits for them inside the call.
  They touch no consumer state, connection or lock, and run no user code.
* **One lock** (:class:`ClientLock`, owned by the network client) serialises everything that
  touches connections and consumer state. The application thread holds it for the whole of a
  consumer call, except around user code (rebalance listener, commit callbacks); the
  heartbeat thread takes it only for one non-blocking step and never waits for it.
* **Blocking calls keep heartbeats flowing.** Every ``NetworkClient.poll`` first runs the
  registered poll hooks (the membership's heartbeat step) and never sleeps past the time the
  hooks ask to run again, so ``commit()``, ``committed()``, ``position()``, a join... heartbeat
  while they wait, on the application thread.
* **Callbacks that change consumer state run on the application thread.** Requests completed
  while the heartbeat thread polls (fetches, offsets, commits, joins) have their callbacks
  queued and run at the start of the application's next network poll; only callbacks
  registered as thread-safe (heartbeat, FindCoordinator, LeaveGroup, telemetry: they only
  record)
  run where they complete.
* **What the heartbeat thread recorded is acted upon by the application thread**: a lost
  generation (a heartbeat answered UNKNOWN_MEMBER_ID, or ``max.poll.interval.ms`` expired) is
  handled at the next ``poll()`` (``on_partitions_lost``, assignment cleared) before any record
  is returned; a fatal error (FENCED_INSTANCE_ID) is raised from the next ``poll()``.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyconsumer.errors import ConcurrentAccessError


class ClientLock:
    """A re-entrant lock that its owner can set aside whole (around user callbacks)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._depth = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = threading.get_ident()
        if self._owner == me:
            self._depth += 1
            return True
        if not self._lock.acquire(blocking, timeout):
            return False
        self._owner, self._depth = me, 1
        return True

    def release(self) -> None:
        if self._owner != threading.get_ident():
            raise RuntimeError("ClientLock released by a thread that does not hold it")
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
            self._lock.release()

    def __enter__(self) -> ClientLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def held(self) -> bool:
        return self._owner == threading.get_ident()

    @contextmanager
    def set_aside(self) -> Iterator[None]:
        """Release the lock entirely (whatever the depth) for the block, then take it back:
        user code runs without it, so the heartbeat thread can do its step meanwhile."""
        if self._owner != threading.get_ident():
            yield
            return
        depth, self._depth, self._owner = self._depth, 0, None
        self._lock.release()
        try:
            yield
        finally:
            self._lock.acquire()
            self._owner, self._depth = threading.get_ident(), depth


class AccessGuard:
    """Java's light-weight ``acquire()``: records the thread inside the consumer and refuses
    a second one (no waiting: concurrent use is a programming error). A re-entrant lock
    taken without blocking: its owner may enter again (a listener calling back into the
    consumer), any other thread is refused; two C calls per consumer call."""

    def __init__(self, what: str = "KafkaConsumer") -> None:
        self._what = what
        self._lock = threading.RLock()

    def acquire(self) -> None:
        if not self._lock.acquire(blocking=False):
            raise ConcurrentAccessError(
                f"{self._what} is not safe for multi-threaded access: thread "
                f"{threading.current_thread().name!r} called it while another thread "
                "is inside a call (only wakeup() and metrics() may be called from another "
                "thread)")

    def release(self) -> None:
        self._lock.release()


__all__ = ["AccessGuard", "ClientLock"]
