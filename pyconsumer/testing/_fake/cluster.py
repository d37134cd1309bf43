""":class:`FakeCluster`: the cluster's state (state.py) with its brokers' listeners, the
dispatch of each request through the fault rules and a test's controls to the API's handler
(apis.py), the ticker for session and rebalance timeouts, and the methods tests call."""
from __future__ import annotations

import dataclasses
import functools
import struct
import threading
import time
from collections.abc import Callable, Iterable

from pyconsumer.errors import ErrorCode
from pyconsumer.protocol import ApiKey, decode_request, encode_response
from pyconsumer.structs import TopicPartition

from .._encode import aio_v2
from . import classic
from .api_versions import api_keys
from .apis import APIS, TELEMETRY_APIS
from .common import HOST, Body, Hangup, RecordLike, Request
from .faults import Control, Rule
from .groups import Committed
from .listener import Broker
from .sessions import FetchSession
from .state import ClusterState
from .client_metrics import Telemetry, TelemetrySubscriptionConfig


class FakeCluster(ClusterState):
    """A scripted Kafka cluster; see :mod:`pyconsumer.testing._fake`. A context manager."""

    def __init__(self, n_brokers: int = 1, *, topics: dict[str, int] | None = None,
                 max_versions: dict[ApiKey, int] | None = None,
                 min_session_timeout_ms: int = 1, max_session_timeout_ms: int = 1_800_000,
                 initial_rebalance_delay_ms: int = 0, fetch_wait_cap_s: float = 5.0,
                 auto_create_topics: bool = False, fetch_sessions: bool = True,
                 max_fetch_sessions: int = 1000,
                 client_telemetry: TelemetrySubscriptionConfig | None = None) -> None:
        if not 1 <= n_brokers <= 9:
            raise ValueError(f"n_brokers must be 1..9, got {n_brokers}")
        super().__init__(max_versions=max_versions, min_session_timeout_ms=min_session_timeout_ms,
                         max_session_timeout_ms=max_session_timeout_ms,
                         initial_rebalance_delay_ms=initial_rebalance_delay_ms,
                         fetch_wait_cap_s=fetch_wait_cap_s, auto_create_topics=auto_create_topics,
                         fetch_sessions=fetch_sessions, max_fetch_sessions=max_fetch_sessions)
        self.requests: list[Request] = []
        self.rejected: list[tuple[int, int, int]] = []   # (broker, api key, version) refused
        self.errors: list[BaseException] = []
        self._rules: list[Rule] = []
        self._controls: list[tuple[ApiKey, Control]] = []
        if client_telemetry is not None:
            self.telemetry = Telemetry(client_telemetry)
        self.handlers = {api: functools.partial(entry.handle, self) for api, entry in APIS.items()
                         if client_telemetry is not None or api not in TELEMETRY_APIS}
        self.brokers = [Broker(i, self._handle, self.errors) for i in range(n_brokers)]
        for b in self.brokers:
            b.start()
        for name, n in (topics or {}).items():
            self.create_topic(name, n)
        self._ticker = threading.Thread(target=self._tick_loop, daemon=True, name="fake-ticker")
        self._ticker.start()

    # ================================================================== lifecycle

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{b.port}" for b in self.brokers)

    def close(self) -> None:
        self._closed.set()
        for b in self.brokers:
            b.stop()
        with self.cond:
            self.cond.notify_all()
        self._ticker.join(2)

    def __enter__(self) -> FakeCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stop_broker(self, node: int) -> None:
        """Close the listener and every connection of broker ``node``."""
        with self.cond:
            self.brokers[node].stop()
            self.cond.notify_all()

    def start_broker(self, node: int) -> None:
        """Listen again, on the same port."""
        with self.cond:
            if not self.brokers[node].running:
                self.brokers[node].start()

    def drop_connections(self, node: int) -> None:
        """Close broker ``node``'s connections; it keeps listening."""
        self.brokers[node].drop_connections()

    # ================================================================== data
    # (create_topic and partition come with the state)

    def produce(self, tp: TopicPartition, records: Iterable[RecordLike], *,
                codec: str = "none", timestamp: int | None = None) -> list[int]:
        """Append one record batch of ``(key, value[, headers[, timestamp]])`` tuples; their
        offsets. Timestamps default to ``timestamp`` (now) plus the record's index."""
        recs = list(records)
        if not recs:
            raise ValueError("produce() needs at least one record")
        base_ts = int(time.time() * 1000) if timestamp is None else timestamp
        rows = []
        for i, r in enumerate(recs):
            key, value = r[0], r[1]
            headers = list(r[2]) if len(r) > 2 else []
            ts = r[3] if len(r) > 3 else base_ts + i
            rows.append((i, ts, key, value, headers))
        base = self.append_batch(tp, aio_v2(rows, codec, user="FakeCluster.produce"),
                                 [row[1] for row in rows])
        return list(range(base, base + len(recs)))

    def append_batch(self, tp: TopicPartition, batch: bytes,
                     timestamps: list[int] | None = None) -> int:
        """Append one magic-2 record batch as the leader would: its base offset and partition
        leader epoch are rewritten (both outside the CRC). Returns the base offset."""
        if len(batch) < 61 or batch[16] != 2:
            raise ValueError("append_batch() takes one magic v2 record batch")
        with self.cond:
            base = self.partition(tp).append(batch, timestamps)
            self.data_changed()
            return base

    def truncate(self, tp: TopicPartition, offset: int) -> None:
        """Cut the log at ``offset`` (a batch boundary), as an unclean leader election does;
        leader epochs starting at or past it are forgotten (Kafka's truncateFromEnd)."""
        with self.cond:
            p = self.partition(tp)
            if offset != p.end and offset not in {b.base for b in p.batches}:
                raise ValueError(f"{tp}: {offset} is not a batch boundary")
            p.truncate(offset)
            self.data_changed()

    def delete_records(self, tp: TopicPartition, offset: int) -> None:
        """Move the log start offset (DeleteRecords / retention)."""
        with self.cond:
            p = self.partition(tp)
            if not p.log_start <= offset <= p.end:
                raise ValueError(f"{tp}: log start {offset} outside [{p.log_start}, {p.end}]")
            p.delete_before(offset)

    def move_leader(self, tp: TopicPartition, node: int) -> int:
        """Make ``node`` the leader of ``tp`` with a new leader epoch (returned)."""
        with self.cond:
            epoch = self.partition(tp).lead(node)
            self.data_changed()
            return epoch

    def set_rack(self, node: int, rack: str | None) -> None:
        """Broker ``node``'s rack, in Metadata and for choosing read replicas."""
        with self.cond:
            if rack is None:
                self.racks.pop(node, None)
            else:
                self.racks[node] = rack

    def set_follower(self, tp: TopicPartition, node: int, end: int | None = None,
                     present: bool = True) -> None:
        """Make ``node`` a follower of ``tp`` holding the log up to ``end`` (None: all of
        it), or (``present=False``) no longer a replica."""
        with self.cond:
            p = self.partition(tp)
            if node == p.leader:
                raise ValueError(f"{node} leads {tp}")
            if present:
                p.followers[node] = end
            else:
                p.followers.pop(node, None)
            self.data_changed()

    def fetch_sessions_of(self, broker: int | None = None) -> list[FetchSession]:
        """Copies of the open fetch sessions (of one broker, or all)."""
        with self.cond:
            return [dataclasses.replace(x, partitions=dict(x.partitions))
                    for x in self.sessions.values() if broker is None or x.broker == broker]

    def evict_fetch_sessions(self, broker: int | None = None) -> list[int]:
        """Drop the fetch sessions (of one broker, or all) as a full session cache evicts
        them; their next incremental fetch gets FETCH_SESSION_ID_NOT_FOUND. Their ids."""
        with self.cond:
            gone = [i for i, x in self.sessions.items() if broker is None or x.broker == broker]
            for i in gone:
                del self.sessions[i]
            return gone

    # ================================================================== groups
    # (coordinator_of, group and consumer_group come with the state)

    def move_coordinator(self, group_id: str, node: int) -> None:
        """From now on ``node`` coordinates the group; the old coordinator answers
        NOT_COORDINATOR (its waiting JoinGroup/SyncGroup requests too)."""
        with self.cond:
            self._coordinators[group_id] = node
            self.cond.notify_all()

    def committed(self, group_id: str) -> dict[TopicPartition, int]:
        with self.cond:
            g = self.groups.get(group_id)
            return {} if g is None else {tp: c.offset for tp, c in g.offsets.items()}

    def set_committed(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        with self.cond:
            g = self.ensure_group(group_id)
            for tp, offset in offsets.items():
                g.offsets[tp] = Committed(offset, -1, "")

    # ================================================================== faults, log

    def inject(self, api: ApiKey, error: int, count: int = 1, broker: int | None = None) -> None:
        """The next ``count`` requests of ``api`` (to ``broker``, or any) get ``error``
        instead of being handled."""
        with self.cond:
            self._rules.append(Rule("error", api, broker, count, error=int(error)))

    def delay(self, api: ApiKey, seconds: float, count: int | None = None,
              broker: int | None = None) -> None:
        """Hold requests of ``api`` for ``seconds`` before handling them."""
        with self.cond:
            self._rules.append(Rule("delay", api, broker, count, seconds=seconds))

    def drop_next(self, api: ApiKey, count: int = 1, broker: int | None = None) -> None:
        """Close the connection instead of answering the next ``count`` requests of ``api``."""
        with self.cond:
            self._rules.append(Rule("drop", api, broker, count))

    def clear_faults(self) -> None:
        with self.cond:
            self._rules.clear()
            self._controls.clear()

    def control(self, api: ApiKey, fn: Control) -> Callable[[], None]:
        """``fn(request)`` answers ``api`` requests first (runs outside the cluster lock;
        None falls through to the default handler). Returns a function removing it."""
        entry = (api, fn)
        with self.cond:
            self._controls.append(entry)

        def remove() -> None:
            with self.cond:
                if entry in self._controls:
                    self._controls.remove(entry)
        return remove

    def default_answer(self, req: Request) -> Body:
        """What the fake itself answers to ``req`` (for a control() editing that answer)."""
        with self.cond:
            return self.handlers[req.api](self.brokers[req.broker], req)

    def mark(self) -> int:
        """The request log's length now: pass as ``after`` to look only at later requests."""
        with self.cond:
            return len(self.requests)

    def requests_of(self, api: ApiKey, after: int = 0) -> list[Request]:
        with self.cond:
            return [r for r in self.requests[after:] if r.api == api]

    def wait_for_request(self, match: ApiKey | Callable[[Request], bool], timeout: float = 5.0,
                         after: int = 0) -> Request:
        """The first logged request (from index ``after``) matching; waits up to ``timeout``."""
        pred = (lambda r: r.api == match) if isinstance(match, ApiKey) else match
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for r in self.requests[after:]:
                    if pred(r):
                        return r
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [f"{r.api.name} v{r.version} @{r.broker}" for r in self.requests[after:]]
                    raise AssertionError(f"no matching request within {timeout} s; seen: {seen}")
                self.cond.wait(min(left, 0.05))

    def wait_until(self, pred: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
        """Wait (under the cluster lock) until ``pred()`` holds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out after {timeout} s waiting for {what or pred}")
                self.cond.wait(min(left, 0.05))

    # ================================================================== dispatch

    def _handle(self, b: Broker, frame: bytes) -> bytes | None:
        api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
        adv = self.advertised()
        if api_key == ApiKey.API_VERSIONS and version > adv[ApiKey.API_VERSIONS][1]:
            # KIP-511: refuse with a v0 body listing what we speak
            return encode_response(ApiKey.API_VERSIONS, 0, correlation_id, {
                "error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": api_keys(self)})
        known = adv.get(api_key)  # type: ignore[call-overload, unused-ignore]
        if known is None or not known[0] <= version <= known[1]:
            self.rejected.append((b.node_id, api_key, version))
            return None                  # Kafka closes a connection that sends what it lacks
        api, version, correlation_id, client_id, body = decode_request(frame)
        req = Request(b.node_id, api, version, correlation_id, client_id, body, time.monotonic(),
                      size=len(frame) + 4)
        with self.cond:
            self.requests.append(req)
            self.cond.notify_all()
            rules = {kind: next((r for r in self._rules if r.kind == kind and r.take(req)), None)
                     for kind in ("delay", "drop", "error")}
            controls = [fn for a, fn in self._controls if a == api]
        if rules["delay"] is not None:
            self._closed.wait(rules["delay"].seconds)
        if rules["drop"] is not None or not b.running:
            return None
        answer: Body | None = None
        if rules["error"] is not None:
            with self.cond:
                answer = APIS[api].error(self, b, req, rules["error"].error)
        try:
            for fn in controls:
                if answer is None:
                    answer = fn(req)
            if answer is None:
                with self.cond:
                    answer = self.handlers[api](b, req)
        except Hangup:
            return None
        return encode_response(api, version, correlation_id, answer)

    def _tick_loop(self) -> None:
        while not self._closed.wait(0.01):
            with self.cond:
                try:
                    self._tick(time.monotonic())
                except BaseException as e:
                    self.errors.append(e)
                    return

    def _tick(self, now: float) -> None:
        for cg in self.consumer_groups.values():
            cg.expire(now, self.topics)
        classic.tick(self, now)


__all__ = ["FakeCluster"]
