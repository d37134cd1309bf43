"""The fetch buffer: completed fetches held per partition and drained under max.poll.records.

Java's ``FetchBuffer``/``FetchCollector``. Responses are queued per partition as they arrive and
turned into :class:`pyconsumer.records.CompletedFetch` cursors only when drained, after checking
the partition is still fetchable at the offset the request was sent for (a stale response is
dropped). Draining hands out at most ``max.poll.records`` per call and advances the position to
the cursor's next fetch offset, never past a record the caller has not received. A partition
whose response carried record bytes moves to the end of the fetch order once drained (Java
FetchCollector), so with a small ``fetch.max.bytes`` (brokers fill a response in request order)
every partition gets its turn. What is taken, and how, the poll's :class:`Collector` says
(:mod:`.collect`): buffered partitions whose records all fit in the budget (their record-set
index's bound says) are taken by one ``take_many`` call for the MANY strategy (poll_arrow: one
batch, nothing to concatenate), on the decode threads at once for SIDE_BY_SIDE
(:mod:`.decode`), else one at a time. Either way the result is exactly that of taking them one
after another.

A response whose first batch at the position is incomplete (larger than the bytes asked for,
or a log cut mid-batch) gets one re-fetch of that partition asking for the whole batch
(:attr:`FetchBuffer.refetch`, read by the request side); when that does not help, or the
declared size is beyond what any fetch may ask for, the partition stops with a
FetchProgressError that stays (like a corrupt batch) until the user seeks.
"""
from __future__ import annotations

import collections
import functools
import logging
from collections.abc import Callable, Sized
from typing import TYPE_CHECKING, TypeVar, cast

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.fetch import decode
from pyconsumer.consumer.fetch.collect import Collector, Strategy
from pyconsumer.consumer.fetch.replicas import ReadReplicas
from pyconsumer.consumer.metrics import ConsumerMetrics
from pyconsumer.consumer.partition_errors import PartitionAction, classify
from pyconsumer.consumer.subscription import PartitionState, SubscriptionState
from pyconsumer.errors import (
    ErrorCode,
    FetchProgressError,
    KafkaError,
    OffsetOutOfRangeError,
    error_for_code,
)
from pyconsumer.net.client import NetworkClient
from pyconsumer.records import CompletedFetch, RecordSetIndex
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import TopicPartition

if TYPE_CHECKING:  # types only
    from pyconsumer.protocol.bodies import PartitionData

log = logging.getLogger(__name__)

T = TypeVar("T")

# the RETRY codes (partition_errors' FETCH table) a fetch warns of, as Java's FetchCollector;
# the others (an unknown leader epoch) are a debug line
_WARN_ON_RETRY = frozenset({ErrorCode.UNKNOWN_SERVER_ERROR})

# re-fetches of a partition stuck on an incomplete batch before it fails: one, asking for
# the whole batch (and placed first in its request, so the response budget goes to it)
_MAX_REFETCHES = 1


class Refetch:
    """A partition to re-fetch at ``offset`` asking ``max_bytes`` (its incomplete batch)."""

    __slots__ = ("offset", "max_bytes", "tries")

    def __init__(self, offset: int, max_bytes: int, tries: int) -> None:
        self.offset = offset
        self.max_bytes = max_bytes
        self.tries = tries



class Fetched:
    """One partition's part of a Fetch response, waiting in the queue."""

    __slots__ = ("tp", "fetch_offset", "max_bytes", "data", "version", "cursor", "error", "end",
                 "bound", "index")

    def __init__(self, tp: TopicPartition, fetch_offset: int, max_bytes: int,
                 data: PartitionData, version: int) -> None:
        self.tp = tp
        self.fetch_offset = fetch_offset
        #: the offset after its last complete batch, when the headers say (prefetch goes there)
        self.end: int | None = None
        #: at least its records at or past fetch_offset, when the headers say (its index's)
        self.bound: int | None = None
        #: where its batches are (built once, when it arrives without error)
        self.index: RecordSetIndex | None = None
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


class FetchBuffer:
    """The completed fetches of every partition, and draining them."""

    def __init__(self, client: NetworkClient, config: ConsumerConfig,
                 subscriptions: SubscriptionState, metrics: ConsumerMetrics,
                 replicas: ReadReplicas) -> None:
        self.client = client
        self.config = config
        self.subscriptions = subscriptions
        self.metrics = metrics
        self.replicas = replicas
        self._completed: collections.deque[Fetched] = collections.deque()
        self._next_in_line: Fetched | None = None
        #: partitions to fetch again asking for their incomplete batch (the request side reads it)
        self.refetch: dict[TopicPartition, Refetch] = {}
        #: what every cursor is made with (the config is immutable: read once, not per cursor)
        self._check_crcs = config.check_crcs
        self._isolation_level = config.isolation_level
        self._key_deserializer = config.key_deserializer
        self._value_deserializer = config.value_deserializer

    # ------------------------------------------------------------------ what is held

    def add(self, fetched: Fetched) -> None:
        """Queue a partition's answer (arrival order is fetch order)."""
        self._completed.append(fetched)

    def buffered_partitions(self) -> set[TopicPartition]:
        out = {f.tp for f in self._completed}
        nil = self._next_in_line
        if nil is not None and self._pending(nil):
            out.add(nil.tp)
        return out

    @staticmethod
    def _pending(fetched: Fetched) -> bool:
        """The next-in-line data still has records, or an error, to hand out."""
        return fetched.error is not None or (
            fetched.cursor is not None and not fetched.cursor.is_drained)

    def held(self) -> dict[TopicPartition, list[Fetched]]:
        """The data held for each partition with some: next in line (while it has something
        to hand out) first, then the queue's."""
        held: dict[TopicPartition, list[Fetched]] = {}
        nil = self._next_in_line
        if nil is not None and self._pending(nil):
            held[nil.tp] = [nil]
        for f in self._completed:
            held.setdefault(f.tp, []).append(f)
        return held

    def in_hand(self) -> tuple[set[TopicPartition], dict[TopicPartition, int]]:
        """The partitions with records in hand, and the high watermark of each partition
        whose latest answer waiting in the queue was empty (not drained yet)."""
        served: set[TopicPartition] = set()
        seen_hw: dict[TopicPartition, int] = {}
        nil = self._next_in_line
        if nil is not None and self._pending(nil):
            served.add(nil.tp)
        for f in self._completed:
            if f.has_bytes:
                served.add(f.tp)
            elif not f.data["error_code"]:
                seen_hw[f.tp] = f.data["high_watermark"]    # an empty answer, not drained yet
        return served, seen_hw

    def stopped(self) -> TopicPartition | None:
        """The partition whose data next in line holds an error waiting for a seek."""
        nil = self._next_in_line
        return nil.tp if nil is not None and nil.error is not None else None

    # ------------------------------------------------------------------ draining

    def has_available(self) -> bool:
        if self._completed:
            return True
        nil = self._next_in_line
        return nil is not None and self._pending(nil)

    def _initialize(self, fetched: Fetched) -> CompletedFetch | None:
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
                if not self.apply_answer(tp, fetched.fetch_offset, data):
                    return None
                aborted = [(a["producer_id"], a["first_offset"])
                           for a in data.get("aborted_transactions") or ()]
                cursor = CompletedFetch(
                    data.get("records"), tp.topic, tp.partition, fetched.fetch_offset,
                    check_crcs=self._check_crcs, isolation_level=self._isolation_level,
                    aborted_transactions=aborted, key_deserializer=self._key_deserializer,
                    value_deserializer=self._value_deserializer, index=fetched.index)
                if fetched.has_bytes and cursor.is_drained:
                    # bytes, yet drained before a single record: the first batch is incomplete
                    err = self._stuck(fetched, cursor)
                    if err is not None:
                        raise err
                    return None
                return cursor
            action = classify(ApiKey.FETCH, code)
            if action is PartitionAction.REFRESH_METADATA:
                log.debug("fetch of %s: %s; refreshing metadata", tp, error_for_code(code))
                self.replicas.clear(tp)
                self.client.metadata.request_update()
            elif action is PartitionAction.UNKNOWN_TOPIC:
                log.warning("fetch of %s: %s", tp, error_for_code(code))
                self.replicas.clear(tp)
                self.client.metadata.request_update()
            elif action is PartitionAction.RETRY:
                if code in _WARN_ON_RETRY:
                    log.warning("fetch of %s at offset %d: %s; retrying", tp,
                                fetched.fetch_offset, error_for_code(code))
                else:
                    log.debug("fetch of %s: %s; retrying", tp, error_for_code(code))
            elif action is PartitionAction.RESET_OFFSET:
                position = subs.position(tp)
                if self.replicas.clear(tp):
                    # a replica may lag the leader: only the leader's word resets (KIP-392)
                    log.debug("fetch offset %d of %s is out of range on its read replica; "
                              "fetching from the leader", fetched.fetch_offset, tp)
                elif position is None or position.offset != fetched.fetch_offset:
                    log.debug("discarding stale out-of-range answer for %s", tp)
                elif subs.default_reset.kind != "none":
                    log.info("fetch offset %d is out of range for %s, resetting offset",
                             fetched.fetch_offset, tp)
                    subs.request_reset(tp)
                else:
                    raise OffsetOutOfRangeError(
                        f"Fetch position {fetched.fetch_offset} is out of range for partition "
                        f"{tp} (auto.offset.reset=none)")
            else:     # FATAL (the table's default for a fetch)
                err = error_for_code(code, f"fetching {tp} at offset {fetched.fetch_offset}")
                assert err is not None
                raise err
            return None
        finally:
            if code != 0:
                subs.move_to_end(tp)

    def apply_answer(self, tp: TopicPartition, fetch_offset: int, data: PartitionData
                     ) -> PartitionState | None:
        """What an error-free partition answer says of the log (high watermark, log start,
        last stable offset, read replica), if it is still current: the partition is
        fetchable and its position is where the fetch started. The partition's state, or
        None for a stale answer."""
        # (runs for every partition of every answer: one state lookup, each field read once)
        st = self.subscriptions.fetchable_state(tp)
        position = None if st is None else st.position
        if st is None or position is None or position.offset != fetch_offset:
            log.debug("discarding stale fetch response for %s at offset %d", tp, fetch_offset)
            return None
        replica = data.get("preferred_read_replica", -1)
        if replica is not None and replica >= 0:
            self.replicas.set(tp, replica)
        hw = data["high_watermark"]
        if hw >= 0:
            st.high_watermark = hw
        start = data.get("log_start_offset", -1)
        if start >= 0:
            st.log_start_offset = start
        stable = data.get("last_stable_offset", -1)
        if stable >= 0:
            st.last_stable_offset = stable
        return st

    def _take(self, fetched: Fetched, n: int, collector: Collector[T, object]
              ) -> tuple[T, int] | None:
        if not self._takeable(fetched):
            return None
        assert fetched.cursor is not None
        return self._took(fetched, collector.take(fetched.cursor, n), collector.count)

    def _takeable(self, fetched: Fetched) -> bool:
        """The cursor's records may still be handed out (else it is discarded)."""
        cursor = fetched.cursor
        assert cursor is not None
        tp = fetched.tp
        subs = self.subscriptions
        if not subs.is_assigned(tp) or not subs.is_fetchable(tp):
            log.debug("not returning fetched records for %s: no longer assigned or fetchable", tp)
            cursor.discard()
            return False
        position = subs.position(tp)
        if position is None or cursor.next_fetch_offset != position.offset:
            log.debug("ignoring fetched records for %s: the position moved", tp)
            cursor.discard()
            return False
        return True

    def _took(self, fetched: Fetched, chunk: T, count: Callable[[T], int],
              got: int | None = None,
              drained: list[tuple[TopicPartition, int, CompletedFetch, Sized | None]] | None = None
              ) -> tuple[T, int] | None:
        """Move the position past what a take returned (``got`` records, if counted
        already); (chunk, records) or None if empty. ``drained``: where the metrics of the
        take go (recorded by the caller with those of the other partitions of its chunk)."""
        cursor = fetched.cursor
        assert cursor is not None
        tp = fetched.tp
        subs = self.subscriptions
        if got is None:
            got = count(chunk)
        subs.advance(tp, cursor.next_fetch_offset, cursor.last_epoch)
        if drained is None:
            self.metrics.taken(tp, got, cursor, fetched.data.get("records"), subs)
        else:
            drained.append((tp, got, cursor, fetched.data.get("records")))
        if cursor.next_fetch_offset != fetched.fetch_offset:
            self.refetch.pop(tp, None)           # it moved on
        elif got == 0 and cursor.is_drained and fetched.has_bytes:
            # bytes, but every complete batch was below the position: nothing else follows
            fetched.error = self._stuck(fetched, cursor)
            if fetched.error is not None:
                raise fetched.error
        if got == 0 and not cursor.is_drained:
            cursor.discard()      # nothing more will come out of it
        return (chunk, got) if got else None

    def _drain_side_by_side(self, remaining: int, collector: Collector[T, object],
                            out: list[tuple[TopicPartition, T]]) -> int | None:
        """Take the buffered responses at the head of the queue whose records all fit in
        ``remaining`` (known from their batch headers) on the collector's threads at once;
        the records taken, or None when fewer than two qualify (the caller goes one by one).
        Same result as taking them in turn: positions move in queue order, and the first one
        that does not end cleanly (an error after some rows) becomes next in line, with the
        responses after it put back untouched."""
        group: list[tuple[Fetched, int]] = []
        budget = remaining
        size = 0
        threads = collector.threads
        for fetched in self._completed:
            records = fetched.data.get("records")
            if len(group) == threads or fetched.data["error_code"] or not records:
                break     # a full group, an error, or no record bytes
            bound = fetched.bound
            if bound is None or bound > budget:
                break
            group.append((fetched, bound))
            budget -= bound
            size += len(records)
        if len(group) < 2 or size < decode.min_bytes:
            return None
        jobs: list[tuple[Fetched, int]] = []
        failure: KafkaError | None = None
        for fetched, bound in group:
            try:
                cursor = self._initialize(fetched)
            except KafkaError as e:
                failure = e                       # stays at the head, as one by one
                break
            self._completed.popleft()
            if cursor is not None:
                fetched.cursor = cursor
                if self._takeable(fetched):
                    jobs.append((fetched, bound))
        calls: list[Callable[[], T]] = []
        take, count = collector.take, collector.count
        for fetched, bound in jobs:
            assert fetched.cursor is not None
            calls.append(functools.partial(take, fetched.cursor, bound))
        results = decode.run(calls, threads)
        got = 0
        for i, ((fetched, _), (chunk, error)) in enumerate(zip(jobs, results)):
            cursor = fetched.cursor
            assert cursor is not None
            try:
                if error is not None:
                    raise error
                taken = self._took(fetched, cast(T, chunk), count)
            except BaseException:
                self._hold(fetched, jobs[i + 1:])
                raise
            if taken is not None:
                out.append((fetched.tp, taken[0]))
                got += taken[1]
            if not cursor.is_drained:             # an error waits behind the rows taken
                self._hold(fetched, jobs[i + 1:])
                return got
            self.subscriptions.move_to_end(fetched.tp)
        if failure is not None:
            raise failure
        return got

    def _drain_many(self, remaining: int, collector: Collector[T, object],
                    out: list[tuple[TopicPartition, T]]) -> int | None:
        """Take the partition next in line and the buffered responses after it whose records
        fit in ``remaining`` (their record-set index's bound says; the last may be taken in
        part) with one ``collector.take_many`` call, which hands back one chunk for them all
        (one Arrow batch: no batch per partition to concatenate). The records taken, or None
        when fewer than two qualify (the caller goes one by one). Same positions and result
        as taking them in turn: take_many stops after a cursor that is not drained (which becomes next
        in line), and the responses it did not reach go back to the head of the queue."""
        group: list[tuple[Fetched, int]] = []
        left = remaining
        nil = self._next_in_line
        if nil is not None:
            cursor = nil.cursor
            if nil.error is not None or cursor is None or cursor.is_drained \
                    or cursor.pending_error is not None or not nil.bound:
                return None                       # the one-by-one path handles it first
            group.append((nil, min(nil.bound, left)))
            left -= group[-1][1]
        for fetched in self._completed:
            if left <= 0:
                break
            bound = fetched.bound
            if fetched.data["error_code"] or not fetched.data.get("records") or not bound:
                break                             # an error, no record bytes or no bound
            group.append((fetched, min(bound, left)))
            left -= group[-1][1]
        if len(group) < 2:
            return None
        jobs: list[tuple[Fetched, int]] = []
        failure: KafkaError | None = None
        for fetched, budget in group:
            if fetched is not nil:
                try:
                    cursor = self._initialize(fetched)
                except KafkaError as e:
                    failure = e                   # stays at the head, as one by one
                    break
                self._completed.popleft()
                if cursor is None:
                    continue
                fetched.cursor = cursor
                # just made: its answer was found current (fetchable, the position where its
                # fetch started, and the cursor starts there): _takeable would say yes
                jobs.append((fetched, budget))
                continue
            self._next_in_line = None
            if self._takeable(fetched):
                jobs.append((fetched, budget))
        got = 0
        if jobs:
            cursors = []
            for fetched, _ in jobs:
                assert fetched.cursor is not None
                cursors.append(fetched.cursor)
            count = collector.count
            try:
                chunk, rows = collector.take_many(cursors, [budget for _, budget in jobs])
            except BaseException:
                self._hold(jobs[0][0], jobs[1:])
                raise
            handed = False
            drained: list[tuple[TopicPartition, int, CompletedFetch, Sized | None]] = []
            try:
                for i, ((fetched, _), n) in enumerate(zip(jobs, rows)):
                    cursor = fetched.cursor
                    assert cursor is not None
                    if n and not handed:
                        out.append((fetched.tp, chunk))   # every row of the group, once
                        handed = True
                    try:
                        if n or cursor.pending_error is None:
                            self._took(fetched, chunk, count, n, drained)
                    except BaseException:
                        self._hold(fetched, jobs[i + 1:])
                        raise
                    got += n
                    if not cursor.is_drained:         # its budget ended, or an error waits
                        self._hold(fetched, jobs[i + 1:])
                        return got
                    if fetched.has_bytes:
                        self.subscriptions.move_to_end(fetched.tp)
            finally:
                # the group's metrics in one go (also of those taken before an error)
                self.metrics.taken_many(drained, self.subscriptions)
            self._hold_back(jobs[len(rows):])
        if failure is not None:
            raise failure
        return got

    def _hold_back(self, rest: list[tuple[Fetched, int]]) -> None:
        """``rest`` go back to the head of the queue with fresh cursors to come."""
        for f, _ in reversed(rest):
            assert f.cursor is not None
            f.cursor.discard()
            f.cursor = None
            self._completed.appendleft(f)

    def _hold(self, fetched: Fetched, rest: list[tuple[Fetched, int]]) -> None:
        """``fetched`` becomes next in line; ``rest`` go back to the head of the queue with
        fresh cursors to come (what their takes did is undone: no position moved for them)."""
        self._next_in_line = fetched
        self._hold_back(rest)

    def _stuck(self, fetched: Fetched, cursor: CompletedFetch) -> KafkaError | None:
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
        again = self.refetch.get(tp)
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
        self.refetch[tp] = Refetch(offset, ask, tries + 1)
        return None

    def drain(self, max_records: int, collector: Collector[T, object]
              ) -> list[tuple[TopicPartition, T]]:
        """Up to ``max_records`` records from the buffered responses, as ``collector``
        takes them (a list of ConsumerRecords, Arrow batches), in fetch order, per partition.
        Its strategy says how buffered partitions that all fit in the budget are taken:
        SIDE_BY_SIDE, on its ``threads`` at once (its take releases the GIL and is safe to run
        on several cursors at once); MANY, in one ``take_many`` call that gives one chunk for
        them all (listed under the first partition with records). Either way with exactly
        the records and positions of taking them one after another."""
        out: list[tuple[TopicPartition, T]] = []
        remaining = max_records
        strategy = collector.strategy
        many = strategy is Strategy.MANY
        side_by_side = strategy is Strategy.SIDE_BY_SIDE and collector.threads > 1
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
                    if side_by_side and len(self._completed) > 1:
                        # (MANY does better where it can: one call writing one batch beats
                        # takes side by side, whose batches cost a concatenation, a full copy,
                        # and on 2 cores shared with a broker the second take mostly waits
                        # for a core)
                        got = self._drain_side_by_side(remaining, collector, out)
                        if got is not None:
                            remaining -= got
                            continue
                    if many and len(self._completed) > 1:
                        got = self._drain_many(remaining, collector, out)
                        if got is not None:
                            remaining -= got
                            continue
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
                    if many and self._completed:
                        # the rest of this one and the responses after it, in one chunk
                        got = self._drain_many(remaining, collector, out)
                        if got is not None:
                            remaining -= got
                            continue
                    taken = self._take(nil, remaining, collector)
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
        self.refetch = {tp: r for tp, r in self.refetch.items()
                         if keep is not None and keep(tp)}
        nil = self._next_in_line
        if nil is not None and (keep is None or not keep(nil.tp)):
            if nil.cursor is not None:
                nil.cursor.discard()
            self._next_in_line = None


__all__ = ["FetchBuffer", "Fetched", "Refetch"]
