"""The Fetcher: Fetch requests to partition leaders, and draining what they bring back.

Java's ``Fetcher``/``FetchCollector``: at most one Fetch in flight per leader node; a partition
with buffered, undrained data is not fetched again (buffering is bounded to about one
response per partition). Responses are queued per partition as they arrive and turned into
:class:`pyext.records.CompletedFetch` cursors only when drained, after checking the partition
is still fetchable at the offset the request was sent for (a stale response is dropped).
Draining hands out at most ``max.poll.records`` per call and advances the position to the
cursor's next fetch offset, never past a record the caller has not received. A partition
whose response carried record bytes moves to the end of the fetch order once drained (Java
FetchCollector), so with a small ``fetch.max.bytes`` (brokers fill a response in request
order) every partition gets its turn.

A response whose first batch at the position is incomplete (larger than the bytes asked for,
or a log cut mid-batch) gets one re-fetch of that partition asking for the whole batch; when
that does not help, or the declared size is beyond what any fetch may ask for, the partition
stops with a FetchProgressError that stays (like a corrupt batch) until the user seeks.

Fetches are sessionless (session id 0, epoch -1, KIP-227 full fetches): every request lists
every partition it wants from that node.
"""
from __future__ import annotations

import collections
import logging
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.subscription import SubscriptionState
from pyconsumer.errors import (
    ErrorCode,
    FetchProgressError,
    KafkaError,
    OffsetOutOfRangeError,
    error_for_code,
)
from pyconsumer.metrics import ConsumerMetrics
from pyconsumer.net.client import NetworkClient
from pyconsumer.net.connection import Response
from pyconsumer.net.future import Future
from pyconsumer.protocol import ApiKey
from pyconsumer.records import CompletedFetch
from pyconsumer.structs import TopicPartition

log = logging.getLogger(__name__)

T = TypeVar("T")

_ZERO_UUID = uuid.UUID(int=0)
_LAST_VERSION_BY_NAME = 12        # Fetch v13+ names topics by id only

# partition errors after which the leader is looked up again (Java FetchCollector)
_REFRESH_METADATA = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REPLICA_NOT_AVAILABLE,
                     ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.FENCED_LEADER_EPOCH,
                     ErrorCode.OFFSET_NOT_AVAILABLE}
_UNKNOWN_TOPIC = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID}

# re-fetches of a partition stuck on an incomplete batch before it fails: one, asking for
# the whole batch (and placed first in its request, so the response budget goes to it)
_MAX_REFETCHES = 1


class _Refetch:
    """A partition to re-fetch at ``offset`` asking ``max_bytes`` (its incomplete batch)."""

    __slots__ = ("offset", "max_bytes", "tries")

    def __init__(self, offset: int, max_bytes: int, tries: int) -> None:
        self.offset = offset
        self.max_bytes = max_bytes
        self.tries = tries


class _Fetched:
    """One partition's part of a Fetch response, waiting in the queue."""

    __slots__ = ("tp", "fetch_offset", "max_bytes", "data", "version", "cursor", "error")

    def __init__(self, tp: TopicPartition, fetch_offset: int, max_bytes: int,
                 data: dict[str, Any], version: int) -> None:
        self.tp = tp
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes            # the partition_max_bytes the request asked
        self.data = data
        self.version = version
        self.cursor: CompletedFetch | None = None
        # the partition cannot move on from this data: raised by every drain until dropped
        self.error: KafkaError | None = None

    @property
    def has_bytes(self) -> bool:
        records = self.data.get("records")
        return records is not None and len(records) > 0


class Fetcher:
    def __init__(self, client: NetworkClient, config: ConsumerConfig,
                 subscriptions: SubscriptionState, metrics: ConsumerMetrics | None = None
                 ) -> None:
        self.client = client
        self.metrics = ConsumerMetrics(config) if metrics is None else metrics
        self.config = config
        self.subscriptions = subscriptions
        self._completed: collections.deque[_Fetched] = collections.deque()
        self._next_in_line: _Fetched | None = None
        self._nodes_in_flight: set[int] = set()
        self._read_committed = config.isolation_level == "read_committed"
        #: bumped whenever a Fetch completes, answered or failed (a waiting poll re-sends)
        self.completions = 0
        #: ms until a leader skipped for its reconnect backoff may be fetched again (inf: none)
        self.retry_in_ms = float("inf")
        self._refetch: dict[TopicPartition, _Refetch] = {}

    # ------------------------------------------------------------------ sending

    def _buffered_partitions(self) -> set[TopicPartition]:
        out = {f.tp for f in self._completed}
        nil = self._next_in_line
        if nil is not None and self._pending(nil):
            out.add(nil.tp)
        return out

    @staticmethod
    def _pending(fetched: _Fetched) -> bool:
        """The next-in-line data still has records, or an error, to hand out."""
        return fetched.error is not None or (
            fetched.cursor is not None and not fetched.cursor.is_drained)

    def send_fetches(self) -> int:
        """Queue one Fetch per leader that has fetchable partitions and no Fetch in flight."""
        buffered = self._buffered_partitions()
        metadata = self.client.metadata
        per_node: dict[int, dict[TopicPartition, tuple[int, int]]] = {}
        caught_up: dict[int, bool] = {}
        self.retry_in_ms = float("inf")
        for tp in self.subscriptions.fetchable_partitions():
            if tp in buffered:
                continue
            info = metadata.partition(tp)
            if info is None or info.leader < 0:
                metadata.request_update()
                continue
            node = info.leader
            if node in self._nodes_in_flight:
                continue
            delay = self.client.connection_delay_ms(node)
            if delay > 0:
                self.retry_in_ms = min(self.retry_in_ms, delay)
                continue
            position = self.subscriptions.position(tp)
            assert position is not None
            epoch = -1 if info.leader_epoch is None else info.leader_epoch
            per_node.setdefault(node, {})[tp] = (position.offset, epoch)
            hw = self.subscriptions.state(tp).high_watermark
            caught_up[node] = caught_up.get(node, True) and hw is not None and position.offset >= hw
        if buffered:
            # Hold back a fetch that would only long-poll caught-up partitions while other
            # partitions of the same leader still have data buffered: it would sit at the
            # broker for fetch.max.wait.ms and, one fetch per node, keep those partitions
            # from being fetched again the moment they drain. They go together instead.
            busy = {info.leader for tp in buffered
                    if (info := metadata.partition(tp)) is not None}
            for node in [n for n in per_node if caught_up.get(n) and n in busy]:
                del per_node[node]
        for node, partitions in per_node.items():
            self._send(node, partitions)
        return len(per_node)

    def _send(self, node: int, partitions: dict[TopicPartition, tuple[int, int]]) -> None:
        metadata = self.client.metadata
        config = self.config
        asks: dict[TopicPartition, int] = {}
        again: list[TopicPartition] = []
        for tp, (offset, _) in partitions.items():
            refetch = self._refetch.get(tp)
            if refetch is not None and refetch.offset == offset:
                asks[tp] = refetch.max_bytes
                again.append(tp)
            else:
                asks[tp] = config.max_partition_fetch_bytes
        # a re-fetch of an incomplete batch goes first (brokers fill a response in request
        # order) and the response may hold all of them
        order = again + [tp for tp in partitions if tp not in again]
        grown = sum(asks[tp] for tp in again)
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp in order:
            offset, epoch = partitions[tp]
            topics.setdefault(tp.topic, []).append({
                "partition": tp.partition, "fetch_offset": offset, "current_leader_epoch": epoch,
                "log_start_offset": -1, "partition_max_bytes": asks[tp],
            })
        max_bytes = max(config.fetch_max_bytes, grown)
        ids: dict[str, uuid.UUID | None] = {}
        for name in topics:
            t = metadata.topics.get(name)
            ids[name] = None if t is None else t.topic_id
        by_id = {i: n for n, i in ids.items() if i is not None}
        max_version = None if all(ids.values()) else _LAST_VERSION_BY_NAME

        def body(version: int) -> dict[str, Any]:
            return {
                "replica_id": -1,
                "max_wait_ms": config.fetch_max_wait_ms,
                "min_bytes": config.fetch_min_bytes,
                "max_bytes": max_bytes,
                "isolation_level": 1 if self._read_committed else 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [{"topic": name, "topic_id": ids[name] or _ZERO_UUID, "partitions": ps}
                           for name, ps in topics.items()],
                "forgotten_topics_data": [],
                "rack_id": config.client_rack or "",
            }

        # the request may wait fetch.max.wait.ms at the broker before it is even late
        timeout = self.config.request_timeout_ms + self.config.fetch_max_wait_ms
        fut = self.client.send(node, ApiKey.FETCH, body, timeout_ms=timeout,
                               max_version=max_version)
        self._nodes_in_flight.add(node)
        self.metrics.fetch_sent(node, fut)
        asked = {tp: (offset, asks[tp]) for tp, (offset, _) in partitions.items()}
        fut.add_callback(lambda f: self._on_response(f, node, asked, by_id))

    def _on_response(self, fut: Future[Response], node: int,
                     asked: dict[TopicPartition, tuple[int, int]],
                     by_id: dict[uuid.UUID, str]) -> None:
        self._nodes_in_flight.discard(node)
        self.completions += 1
        if fut.failed():
            log.debug("fetch from node %d failed: %s", node, fut.exception)
            return
        assert fut.value is not None
        response = fut.value
        body = response.body
        code = body.get("error_code", 0)
        if code:
            log.warning("fetch from node %d: %s", node, error_for_code(code))
            self.client.metadata.request_update()
            return
        self.metrics.fetch_answered(node, response, by_id)
        for t in body["responses"]:
            name = t["topic"] if response.version <= _LAST_VERSION_BY_NAME else by_id.get(t["topic_id"])
            if name is None:
                continue
            for p in t["partitions"]:
                tp = TopicPartition(name, p["partition_index"])
                if tp in asked:
                    offset, max_bytes = asked[tp]
                    self._completed.append(_Fetched(tp, offset, max_bytes, p, response.version))

    # ------------------------------------------------------------------ draining

    def has_available(self) -> bool:
        if self._completed:
            return True
        nil = self._next_in_line
        return nil is not None and self._pending(nil)

    def _initialize(self, fetched: _Fetched) -> CompletedFetch | None:
        """Java initializeCompletedFetch: a cursor over the partition's records, or None when
        the data is stale or carries a recoverable error (raised when it is not)."""
        tp = fetched.tp
        subs = self.subscriptions
        if not subs.is_fetchable(tp):
            log.debug("ignoring fetched records for %s: no longer fetchable", tp)
            return None
        data = fetched.data
        code = data["error_code"]
        try:
            if code == 0:
                position = subs.position(tp)
                if position is None or position.offset != fetched.fetch_offset:
                    log.debug("discarding stale fetch response for %s at offset %d", tp,
                              fetched.fetch_offset)
                    return None
                st = subs.state(tp)
                if data["high_watermark"] >= 0:
                    st.high_watermark = data["high_watermark"]
                if data.get("log_start_offset", -1) >= 0:
                    st.log_start_offset = data["log_start_offset"]
                if data.get("last_stable_offset", -1) >= 0:
                    st.last_stable_offset = data["last_stable_offset"]
                aborted = [(a["producer_id"], a["first_offset"])
                           for a in data.get("aborted_transactions") or ()]
                cursor = CompletedFetch(
                    data.get("records"), tp.topic, tp.partition, fetched.fetch_offset,
                    check_crcs=self.config.check_crcs,
                    isolation_level=self.config.isolation_level,
                    aborted_transactions=aborted,
                    key_deserializer=self.config.key_deserializer,
                    value_deserializer=self.config.value_deserializer)
                if fetched.has_bytes and cursor.is_drained:
                    # bytes, yet drained before a single record: the first batch is incomplete
                    err = self._stuck(fetched, cursor)
                    if err is not None:
                        raise err
                    return None
                return cursor
            if code in _REFRESH_METADATA:
                log.debug("fetch of %s: %s; refreshing metadata", tp, error_for_code(code))
                self.client.metadata.request_update()
            elif code == ErrorCode.UNKNOWN_LEADER_EPOCH:
                log.debug("fetch of %s: unknown leader epoch", tp)
            elif code in _UNKNOWN_TOPIC:
                log.warning("fetch of %s: %s", tp, error_for_code(code))
                self.client.metadata.request_update()
            elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                position = subs.position(tp)
                if position is None or position.offset != fetched.fetch_offset:
                    log.debug("discarding stale out-of-range answer for %s", tp)
                elif subs.default_reset.kind != "none":
                    log.info("fetch offset %d is out of range for %s, resetting offset",
                             fetched.fetch_offset, tp)
                    subs.request_reset(tp)
                else:
                    raise OffsetOutOfRangeError(
                        f"Fetch position {fetched.fetch_offset} is out of range for partition "
                        f"{tp} (auto.offset.reset=none)")
            elif code == ErrorCode.UNKNOWN_SERVER_ERROR:
                log.warning("unknown error fetching %s at offset %d", tp, fetched.fetch_offset)
            else:
                err = error_for_code(code, f"fetching {tp} at offset {fetched.fetch_offset}")
                assert err is not None
                raise err
            return None
        finally:
            if code != 0:
                subs.move_to_end(tp)

    def _take(self, fetched: _Fetched, n: int, take: Callable[[CompletedFetch, int], T],
              count: Callable[[T], int]) -> tuple[T, int] | None:
        cursor = fetched.cursor
        assert cursor is not None
        tp = fetched.tp
        subs = self.subscriptions
        if not subs.is_assigned(tp) or not subs.is_fetchable(tp):
            log.debug("not returning fetched records for %s: no longer assigned or fetchable", tp)
            cursor.discard()
            return None
        position = subs.position(tp)
        if position is None or cursor.next_fetch_offset != position.offset:
            log.debug("ignoring fetched records for %s: the position moved", tp)
            cursor.discard()
            return None
        chunk = take(cursor, n)
        got = count(chunk)
        subs.advance(tp, cursor.next_fetch_offset, cursor.last_epoch)
        self.metrics.taken(tp, got, cursor, fetched.data.get("records"), subs)
        if cursor.next_fetch_offset != fetched.fetch_offset:
            self._refetch.pop(tp, None)           # it moved on
        elif got == 0 and cursor.is_drained and fetched.has_bytes:
            # bytes, but every complete batch was below the position: nothing else follows
            fetched.error = self._stuck(fetched, cursor)
            if fetched.error is not None:
                raise fetched.error
        if got == 0 and not cursor.is_drained:
            cursor.discard()      # nothing more will come out of it
        return (chunk, got) if got else None

    def _stuck(self, fetched: _Fetched, cursor: CompletedFetch) -> KafkaError | None:
        """The partition's data held bytes but no record at or after the position. When it
        ends with an incomplete batch that more bytes would bring whole, arrange one re-fetch
        asking for them (None); otherwise the error that stops the partition."""
        tp, offset, config = fetched.tp, fetched.fetch_offset, self.config
        limit = max(config.max_partition_fetch_bytes, config.fetch_max_bytes)
        where = f"topic={tp.topic}, partition={tp.partition}, offset={offset}"
        settings = (f"max.partition.fetch.bytes={config.max_partition_fetch_bytes}, "
                    f"fetch.max.bytes={config.fetch_max_bytes}")
        cut = cursor.incomplete_batch
        if cut is None:
            return FetchProgressError(
                f"Failed to make progress reading {tp} at offset {offset} ({where}): the fetch "
                "response held bytes but no record at or after that offset",
                tp.topic, tp.partition, offset)
        batch_offset, size, have = cut
        batch = (f"the record batch at offset {batch_offset}" if batch_offset >= 0
                 else "a record batch")
        if size > limit:
            return FetchProgressError(
                f"Cannot read {tp} at offset {offset} ({where}): {batch} declares {size} bytes, "
                f"more than a fetch may ask for ({settings}); it is corrupt, or those settings "
                f"are too small for it ({have} bytes of it arrived)",
                tp.topic, tp.partition, offset)
        again = self._refetch.get(tp)
        tries = again.tries if again is not None and again.offset == offset else 0
        if tries >= _MAX_REFETCHES:
            what = (f"declares {size} bytes but only {have} arrived" if size >= 0
                    else f"is cut inside its header after {have} bytes")
            return FetchProgressError(
                f"Failed to make progress reading {tp} at offset {offset} ({where}): {batch} "
                f"{what}, after {tries + 1} fetches asking for up to {fetched.max_bytes} bytes "
                f"({settings}); the log ends mid-batch",
                tp.topic, tp.partition, offset)
        # ask for the whole batch (never less than the usual size); an unknown size (a cut
        # inside the batch header) gets the usual size again
        ask = min(max(size, config.max_partition_fetch_bytes), limit)
        log.debug("incomplete batch of %d bytes (%d arrived) at offset %d of %s: fetching it "
                  "again asking for %d bytes", size, have, batch_offset, tp, ask)
        self._refetch[tp] = _Refetch(offset, ask, tries + 1)
        return None

    def drain(self, max_records: int, take: Callable[[CompletedFetch, int], T],
              count: Callable[[T], int]) -> list[tuple[TopicPartition, T]]:
        """Up to ``max_records`` records from the buffered responses, as ``take`` shapes them
        (a list of ConsumerRecords, an Arrow batch), in fetch order, per partition."""
        out: list[tuple[TopicPartition, T]] = []
        remaining = max_records
        try:
            while remaining > 0:
                nil = self._next_in_line
                if nil is not None and nil.error is not None:
                    position = self.subscriptions.position(nil.tp) \
                        if self.subscriptions.is_fetchable(nil.tp) else None
                    if position is not None and position.offset == nil.fetch_offset:
                        raise nil.error               # until the user seeks elsewhere
                    self._next_in_line = None
                    continue
                if nil is None or nil.cursor is None or nil.cursor.is_drained:
                    if nil is not None and nil.has_bytes:
                        # fairness: a partition that used up part of a response goes to the
                        # end of the fetch order; one that got nothing keeps its place
                        self.subscriptions.move_to_end(nil.tp)
                    self._next_in_line = None
                    if not self._completed:
                        break
                    fetched = self._completed[0]
                    try:
                        cursor = self._initialize(fetched)
                    except KafkaError:
                        # drop it only when it has no data and nothing was returned yet: an
                        # error after good records surfaces on the next call instead
                        if not out and not fetched.has_bytes:
                            self._completed.popleft()
                        raise
                    self._completed.popleft()
                    if cursor is not None:
                        fetched.cursor = cursor
                        self._next_in_line = fetched
                else:
                    taken = self._take(nil, remaining, take, count)
                    if taken is not None:
                        out.append((nil.tp, taken[0]))
                        remaining -= taken[1]
        except KafkaError:
            if not out:
                raise
        return out

    def clear_buffered(self, keep: Callable[[TopicPartition], bool] | None = None) -> None:
        """Drop buffered data (all, or of the partitions ``keep`` rejects): after a seek,
        an unassign or a pause the data is no longer wanted."""
        self._completed = collections.deque(
            f for f in self._completed if keep is not None and keep(f.tp))
        self._refetch = {tp: r for tp, r in self._refetch.items()
                         if keep is not None and keep(tp)}
        nil = self._next_in_line
        if nil is not None and (keep is None or not keep(nil.tp)):
            if nil.cursor is not None:
                nil.cursor.discard()
            self._next_in_line = None


__all__ = ["Fetcher"]
