"""The poll loop: what one ``poll()`` / ``poll_arrow()`` call does between the facade and the
wings (Java ``KafkaConsumer.poll`` / ``updateAssignmentMetadataIfNeeded``).

Each round runs deferred callbacks and completed commits' callbacks, drives the group
membership (join, reconcile, metadata checks) and auto-commit, gives every assigned partition
a position (committed offsets, then ``auto.offset.reset`` and leader validation), prefetches,
drains what the fetch wing buffered, and otherwise sends fetches and waits for news: data, a
finished reset, a failed fetch, a metadata answer or group work. Positions count as delivered
only once the collector's ``build`` returned; any exception before rolls them back.

The result shapes are the collectors here (:class:`pyconsumer.consumer.fetch.Collector`), one
per shape: :class:`RecordsCollector` and :class:`TypedRecordsCollector` for ``poll()``,
:class:`ArrowCollector` and :class:`TypedArrowCollector` for ``poll_arrow()``; the facade makes
one per call and the drain asks it how to take.
"""
from __future__ import annotations

import functools
import itertools
import logging
import operator
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.fetch import Collector, Fetcher, Strategy, decode
from pyconsumer.consumer.group.coordinator import ConsumerCoordinator
from pyconsumer.consumer.group.membership import Membership
from pyconsumer.consumer.interceptors import ConsumerInterceptors
from pyconsumer.consumer.offsets import OffsetsClient
from pyconsumer.consumer.subscription import (
    FetchPosition,
    FetchState,
    SubscriptionState,
    SubscriptionType,
)
from pyconsumer.errors import ErrorCode, IllegalStateError, KafkaError, KafkaTimeoutError
from pyconsumer.net.client import NetworkClient
from pyconsumer.records import (
    CompletedFetch,
    ConsumerRecord,
    empty_batch,
    kafka_arrow_schema,
    records_columns,
    records_with,
    take_arrow_many,
)
from pyconsumer.structs import OffsetAndMetadata, TopicPartition
from pyconsumer.values import MalformedValueError, TypedValues
from pyconsumer.values.arrays import binaries, int_scalar, lists, strings

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger(__name__)
_TOPIC = operator.attrgetter("topic")
_PARTITION = operator.attrgetter("partition")

#: the network parts, from the facade (raises IllegalStateError once the consumer is closed)
Parts = Callable[[], tuple[NetworkClient, Fetcher, OffsetsClient]]


def check_poll_timeout(timeout_ms: Any) -> None:
    """poll()'s timeout: an int of milliseconds >= 0. Floats are refused outright: poll(1.0)
    (confluent-kafka's one second) would wait 1 ms, and no value-based rule can tell 1.0 s
    from a computed 1.0 ms."""
    if type(timeout_ms) is int and timeout_ms >= 0:
        return
    if isinstance(timeout_ms, float):
        raise TypeError(
            f"poll(timeout_ms={timeout_ms!r}): timeout_ms is an int of milliseconds, not a "
            f"float (seconds?): use poll(timeout_ms=1000) to wait one second, or "
            f"int(...) a computed value")
    if isinstance(timeout_ms, bool) or not hasattr(type(timeout_ms), "__index__"):
        raise TypeError(f"timeout_ms must be an int of milliseconds, got {timeout_ms!r}")
    if timeout_ms < 0:
        raise ValueError(f"timeout_ms must be >= 0, got {timeout_ms!r}")


def poll_limit(timeout_ms: Any, max_records: int | None, config: ConsumerConfig) -> int:
    """Check poll()'s arguments (before anything else happens); the record limit."""
    check_poll_timeout(timeout_ms)
    limit = config.max_poll_records if max_records is None else max_records
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"max_records must be an int >= 1, got {max_records!r}")
    return limit


# ------------------------------------------------------------------ the typed hook
#
# With value.format / key.format the consumer's takes decode each partition's chunk through
# its TypedValues plan (on the decode threads, where the chunk was taken) and hand back a
# TypedChunk; PollLoop.settle_typed then applies FAILFAST's rule before the result is built:
# the records before a bad one are returned and the partition's position stays on the bad
# record, so the next poll raises (the error names topic, partition and offset) until a seek
# moves past it. No record is skipped or lost either way.


@dataclass
class TypedChunk(Generic[T]):
    """One partition's chunk after its plan: ``out`` what is handed out (typed batches or
    records), ``rows`` how many rows that is, ``taken`` how many records were taken from the
    cursor (the budget and the position count these: a DROPMALFORMED chunk may hand out fewer,
    even none), ``error`` FAILFAST's first bad record (``out`` then holds those before it).
    ``parts``: a chunk of several partitions (a many-partitions take) as its partitions'
    chunks in order, which is what :meth:`PollLoop.settle_typed` reads."""

    out: T
    rows: int
    taken: int
    error: MalformedValueError | None = None
    parts: list[tuple[TopicPartition, TypedChunk[T]]] | None = None


def _apply_before(plan: TypedValues, batch: pa.RecordBatch, error: MalformedValueError
                  ) -> tuple[pa.RecordBatch | None, MalformedValueError]:
    """FAILFAST raised for ``batch`` (one partition's rows, in offset order): the typed rows
    before the first bad record, and the error naming it. The plan stops at the first bad
    row of the first column it decodes, so the rows before it are decoded again until none
    fails (an earlier bad row of the other column then becomes the error)."""
    while True:
        before = batch.filter(pc.less(batch.column("offset"), error.offset))
        if before.num_rows == 0:
            return None, error
        try:
            return plan.apply(before), error
        except MalformedValueError as e:
            error = e


def typed_arrow(plan: TypedValues, parts: Sequence[pa.RecordBatch],
                run: Callable[[list[Callable[[], pa.RecordBatch]]],
                              list[tuple[pa.RecordBatch | None, BaseException | None]]],
                keep_headers: bool) -> TypedChunk[list[pa.RecordBatch]]:
    """One partition's Arrow chunk (its parts in offset order: the runs of a parallel take)
    through the plan, the parts side by side on ``run`` (the decode threads). ``keep_headers``
    False: the headers column, read only for the plan's schema ids, is dropped after."""
    taken = sum(p.num_rows for p in parts)
    todo = [p for p in parts if p.num_rows]
    results = run([functools.partial(plan.apply, p) for p in todo])
    out: list[pa.RecordBatch] = []
    error: MalformedValueError | None = None
    for part, (batch, failed) in zip(todo, results):
        if failed is not None:
            if not isinstance(failed, MalformedValueError):
                raise failed
            batch, error = _apply_before(plan, part, failed)
        if batch is not None:
            out.append(_without_headers(batch, keep_headers))
        if error is not None:
            break                                 # the parts after it are fetched again
    return TypedChunk(out, sum(b.num_rows for b in out), taken, error)


def _without_headers(batch: pa.RecordBatch, keep_headers: bool) -> pa.RecordBatch:
    return batch if keep_headers or "headers" not in batch.schema.names \
        else batch.drop_columns(["headers"])


def _runs(segments: list[tuple[TopicPartition, int, int, int]], threads: int,
          batch: pa.RecordBatch) -> list[list[tuple[TopicPartition, int, int, int]]]:
    """The (partition, cursor index, first row, rows) segments of a many-partitions batch in
    groups that go through the plan in one call each: consecutive partitions of one topic
    (the plan reads a topic at a time), a large run cut at partition boundaries into about
    ``threads`` groups of about equal rows, so the decode threads share it."""
    runs: list[list[tuple[TopicPartition, int, int, int]]] = []
    for seg in segments:
        if runs and runs[-1][0][0].topic == seg[0].topic:
            runs[-1].append(seg)
        else:
            runs.append([seg])
    if threads < 2:
        return runs
    out: list[list[tuple[TopicPartition, int, int, int]]] = []
    for run in runs:
        rows = sum(seg[3] for seg in run)
        if len(run) < 2 or batch.slice(run[0][2], rows).nbytes < decode.min_bytes:
            out.append(run)
            continue
        target = -(-rows // threads)
        group: list[tuple[TopicPartition, int, int, int]] = []
        have = 0
        for seg in run:
            group.append(seg)
            have += seg[3]
            if have >= target:
                out.append(group)
                group, have = [], 0
        if group:
            out.append(group)
    return out


def _group_parts(group: list[tuple[TopicPartition, int, int, int]], piece: pa.RecordBatch,
                 typed: pa.RecordBatch
                 ) -> list[tuple[TopicPartition, TypedChunk[list[pa.RecordBatch]]]]:
    """A group's typed batch (its segments' rows in turn, some maybe dropped) as each
    segment's chunk: a slice of it (no copy) and its rows."""
    if len(group) == 1:
        return [(group[0][0], TypedChunk([typed], typed.num_rows, piece.num_rows))]
    if typed.num_rows == piece.num_rows:
        kept = [seg[3] for seg in group]
    else:
        # DROPMALFORMED dropped some: count what is left of each segment by its offsets (a
        # partition may have two segments: a response and the one prefetched behind it)
        partitions, offsets = typed.column("partition"), typed.column("offset")
        source = piece.column("offset")
        kept = []
        first = group[0][2]
        for seg in group:
            lo, hi = source[seg[2] - first].as_py(), source[seg[2] - first + seg[3] - 1].as_py()
            mine = pc.and_(pc.equal(partitions, seg[0].partition),
                           pc.and_(pc.greater_equal(offsets, lo), pc.less_equal(offsets, hi)))
            kept.append(pc.sum(mine.cast(pa.int64())).as_py() or 0)
    parts: list[tuple[TopicPartition, TypedChunk[list[pa.RecordBatch]]]] = []
    start = 0
    for seg, rows in zip(group, kept):
        parts.append((seg[0], TypedChunk([typed.slice(start, rows)], rows, seg[3])))
        start += rows
    return parts


def typed_arrow_many(plan: TypedValues, batch: pa.RecordBatch, cursors: list[CompletedFetch],
                     counts: list[int], run: decode.Runner, threads: int, keep_headers: bool
                     ) -> tuple[TypedChunk[list[pa.RecordBatch]], list[int]]:
    """Several partitions' rows in one batch (take_arrow_many's: ``counts[i]`` rows of
    ``cursors[i]`` in turn) through the plan, with exactly the rows, order and errors of each
    partition's own take (:func:`typed_arrow`): consecutive partitions of one topic go through
    it in one call (groups side by side on ``run``, the decode threads); a group whose call
    fails goes again partition by partition, as their own takes would (the plan counts only
    calls that succeed). The chunk's ``out`` is the groups' batches; its ``parts`` each
    partition's own chunk (:meth:`PollLoop.settle_typed` uses them when one stops or must be
    left out). With the records each cursor gave. A partition whose own take would raise a
    KafkaError ends the chunk before it (the drain takes it next, and raises there), or
    raises when it is the first."""
    segments: list[tuple[TopicPartition, int, int, int]] = []
    start = 0
    for i, (cursor, n) in enumerate(zip(cursors, counts)):
        if n:
            segments.append((TopicPartition(cursor.topic, cursor.partition), i, start, n))
        start += n
    groups = _runs(segments, threads, batch)
    pieces = [batch.slice(g[0][2], sum(seg[3] for seg in g)) for g in groups]
    results = run([functools.partial(plan.apply, p) for p in pieces])
    out: list[pa.RecordBatch] = []
    parts: list[tuple[TopicPartition, TypedChunk[list[pa.RecordBatch]]]] = []
    for group, piece, (typed, failed) in zip(groups, pieces, results):
        if failed is None:
            assert typed is not None
            typed = _without_headers(typed, keep_headers)
            out.append(typed)
            parts += _group_parts(group, piece, typed)
            continue
        for tp, i, first, n in group:
            try:
                chunk = typed_arrow(plan, [batch.slice(first, n)], run, keep_headers)
            except KafkaError:
                if not parts:
                    raise
                counts = counts[:i]
                break
            out += chunk.out
            parts.append((tp, chunk))
        else:
            continue
        break
    return TypedChunk(out, sum(c.rows for _, c in parts), sum(counts), None, parts), counts


def _records_batch(records: list[ConsumerRecord], plan: TypedValues, headers: bool
                   ) -> pa.RecordBatch:
    """poll()'s records of one partition (at least one) as the plan reads them: Spark's
    Kafka schema, with the raw bytes of the typed columns (an untyped column, maybe
    deserialized, is not read: nulls); the columns written from the records in one call."""
    schema = kafka_arrow_schema(headers)
    n = len(records)
    offsets, keys, values = records_columns(records, plan.key.decodes, plan.value.decodes)
    columns: dict[str, pa.Array] = {
        "key": pa.nulls(n, pa.binary()) if keys is None else keys,
        "value": pa.nulls(n, pa.binary()) if values is None else values,
        "topic": pa.repeat(strings([records[0].topic])[0], n),
        "partition": pa.repeat(int_scalar(records[0].partition, pa.int32()), n),
        "offset": offsets,
    }
    if headers:
        pairs = [pair for r in records for pair in r.headers]
        header_type = schema.field("headers").type
        entries = pa.StructArray.from_arrays(
            [strings([k for k, _ in pairs]), binaries([v for _, v in pairs])],
            fields=list(header_type.value_type))
        columns["headers"] = lists([len(r.headers) for r in records], entries, header_type)
    return pa.RecordBatch.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in schema],
        schema=schema)


def typed_records(plan: TypedValues, records: list[ConsumerRecord]
                  ) -> TypedChunk[list[ConsumerRecord]]:
    """poll()'s records of one partition through the plan: a typed key/value becomes its
    Python value (a dict for a struct, a str for a string; None for a bad one under
    PERMISSIVE, whose raw bytes only poll_arrow()'s corrupt column keeps), DROPMALFORMED
    leaves bad records out, FAILFAST stops before the first bad one."""
    if not records:
        return TypedChunk(records, 0, 0)
    batch = _records_batch(records, plan, plan.reads_headers)
    error: MalformedValueError | None = None
    try:
        typed: pa.RecordBatch | None = plan.apply(batch)
    except MalformedValueError as e:
        typed, error = _apply_before(plan, batch, e)
    out: list[ConsumerRecord] = []
    if typed is not None and typed.num_rows:
        # the typed rows' records, keys and values replaced, made in one call
        out = records_with(records, typed.column("offset").to_pylist(),
                           typed.column("key").to_pylist() if plan.key.decodes else None,
                           typed.column("value").to_pylist() if plan.value.decodes else None)
    return TypedChunk(out, len(out), len(records), error)


# ------------------------------------------------------------------ the collectors
#
# One per result shape; the facade makes one per call (with that call's headers setting) and
# hands it to PollLoop.run, whose drain asks it how to take (Collector.strategy).

#: the facade's poll_arrow() schema: Spark's Kafka schema (typed by the plan, if any) for
#: include_headers and the topics (None: the assigned ones)
ArrowSchema = Callable[[bool, set[str] | None], pa.Schema]


def _by_partition(chunks: list[tuple[TopicPartition, list[ConsumerRecord]]]
                  ) -> dict[TopicPartition, list[ConsumerRecord]]:
    out: dict[TopicPartition, list[ConsumerRecord]] = {}
    for tp, records in chunks:
        have = out.get(tp)
        if have is None:
            out[tp] = records           # a new list of its own: no copy
        else:
            have.extend(records)
    return out


class _OneByOne:
    """A shape taken one partition at a time (ConsumerRecord objects: no decode threads)."""

    strategy = Strategy.ONE_BY_ONE
    threads = 1

    def take_many(self, cursors: list[CompletedFetch], budgets: list[int]) -> tuple[Any, list[int]]:
        raise IllegalStateError(f"{type(self).__name__} takes one partition at a time")


class RecordsCollector(_OneByOne):
    """poll()'s result: each partition's ConsumerRecords, as the interceptors leave them."""

    def __init__(self, interceptors: ConsumerInterceptors) -> None:
        self._interceptors = interceptors

    def take(self, cursor: CompletedFetch, max_records: int) -> list[ConsumerRecord]:
        return cursor.take_records(max_records)

    def count(self, chunk: list[ConsumerRecord]) -> int:
        return len(chunk)

    def build(self, chunks: list[tuple[TopicPartition, list[ConsumerRecord]]]
              ) -> dict[TopicPartition, list[ConsumerRecord]]:
        return self._interceptors.on_consume(_by_partition(chunks))


class TypedRecordsCollector(_OneByOne):
    """poll()'s result with value.format / key.format: each partition's records through the
    plan (:func:`typed_records`), FAILFAST settled by the poll loop (``settle``)."""

    def __init__(self, plan: TypedValues, settle: PollLoop,
                 interceptors: ConsumerInterceptors) -> None:
        self._plan = plan
        self._settle = settle
        self._interceptors = interceptors

    def take(self, cursor: CompletedFetch, max_records: int
             ) -> TypedChunk[list[ConsumerRecord]]:
        return typed_records(self._plan, cursor.take_records(max_records))

    def count(self, chunk: TypedChunk[list[ConsumerRecord]]) -> int:
        return chunk.taken

    def build(self, chunks: list[tuple[TopicPartition, TypedChunk[list[ConsumerRecord]]]]
              ) -> dict[TopicPartition, list[ConsumerRecord]]:
        return self._interceptors.on_consume(_by_partition(self._settle.settle_typed(chunks)))


class ArrowCollector:
    """poll_arrow()'s result: one RecordBatch in Spark's Kafka schema. Buffered partitions
    that fit in the budget are written into one batch by one call (MANY: nothing to
    concatenate); a large compressed response is cut across the decode threads."""

    strategy = Strategy.MANY

    def __init__(self, threads: int, include_headers: bool, schema: ArrowSchema,
                 interceptors: ConsumerInterceptors, plan: TypedValues | None = None,
                 chooser: decode.SplitChooser | None = None) -> None:
        self.threads = threads
        #: whether a cuttable take is cut (decode.threads left to its default); None: always
        self._chooser = chooser
        self._include_headers = include_headers
        # Confluent Avro may name its schema in a header: read them for the plan, drop after
        self._read_headers = include_headers or (plan is not None and plan.reads_headers)
        self._schema = schema
        self._interceptors = interceptors
        self._plan = plan
        self.run: decode.Runner = functools.partial(decode.run, threads=threads)

    def take(self, cursor: CompletedFetch, max_records: int) -> list[pa.RecordBatch]:
        cursor.set_include_headers(self._read_headers)
        threads = self.threads
        if threads > 1:
            # compressed batches of one large response, decompressed on several cores
            parts = decode.take_arrow_split(cursor, max_records, threads, self.run,
                                            decode.min_bytes, self._chooser)
            if parts is not None:
                return parts
        return [cursor.take_arrow(max_records)]

    def count(self, chunk: list[pa.RecordBatch]) -> int:
        return sum(b.num_rows for b in chunk)

    def take_many(self, cursors: list[CompletedFetch], budgets: list[int]
                  ) -> tuple[list[pa.RecordBatch], list[int]]:
        # small partitions' records written into one batch: no batch each to concatenate
        batch, counts = take_arrow_many(cursors, budgets, self._read_headers)
        return [batch], counts

    def batch(self, chunks: list[tuple[TopicPartition, list[pa.RecordBatch]]]) -> pa.RecordBatch:
        """The chunks' rows as one batch (an empty one with the schema when there are none)."""
        batches = [b for _, parts in chunks for b in parts if b.num_rows]
        if not batches:
            return empty_batch(self._schema(self._include_headers, None))
        if len(batches) == 1:
            return batches[0]
        if self._plan is not None and len({b.schema for b in batches}) > 1:
            # topics whose readers differ: the plan's error says which and what to set
            self._schema(self._include_headers, {tp.topic for tp, _ in chunks})
        if hasattr(pa, "concat_batches"):
            return pa.concat_batches(batches)
        return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]

    def build(self, chunks: list[tuple[TopicPartition, list[pa.RecordBatch]]]) -> pa.RecordBatch:
        return self._interceptors.on_consume_arrow(self.batch(chunks))


class TypedArrowCollector:
    """poll_arrow()'s result with value.format / key.format: the Arrow takes through the plan
    on the decode threads (:func:`typed_arrow`; several partitions' one batch through
    :func:`typed_arrow_many`), FAILFAST settled by the poll loop (``settle``)."""

    strategy = Strategy.MANY

    def __init__(self, plan: TypedValues, settle: PollLoop, threads: int,
                 include_headers: bool, schema: ArrowSchema,
                 interceptors: ConsumerInterceptors) -> None:
        self._plan = plan
        self._settle = settle
        self._arrow = ArrowCollector(threads, include_headers, schema, interceptors, plan)
        self._include_headers = include_headers
        self._interceptors = interceptors
        self.threads = threads

    def take(self, cursor: CompletedFetch, max_records: int
             ) -> TypedChunk[list[pa.RecordBatch]]:
        # on a decode thread when partitions are taken side by side
        arrow = self._arrow
        return typed_arrow(self._plan, arrow.take(cursor, max_records), arrow.run,
                           self._include_headers)

    def count(self, chunk: TypedChunk[list[pa.RecordBatch]]) -> int:
        return chunk.taken

    def take_many(self, cursors: list[CompletedFetch], budgets: list[int]
                  ) -> tuple[TypedChunk[list[pa.RecordBatch]], list[int]]:
        arrow = self._arrow
        [batch], counts = arrow.take_many(cursors, budgets)
        return typed_arrow_many(self._plan, batch, cursors, counts, arrow.run, self.threads,
                                self._include_headers)

    def build(self, chunks: list[tuple[TopicPartition, TypedChunk[list[pa.RecordBatch]]]]
              ) -> pa.RecordBatch:
        return self._interceptors.on_consume_arrow(
            self._arrow.batch(self._settle.settle_typed(chunks)))


class PollLoop:
    """The poll loop of one consumer, built with its network client; it keeps what it learnt
    between calls (when the positions were last all settled, which metadata answer was last
    checked for unknown partitions)."""

    def __init__(self, config: ConsumerConfig, subscriptions: SubscriptionState, parts: Parts,
                 coordinator: ConsumerCoordinator | None, membership: Membership | None,
                 all_consumed: Callable[[], dict[TopicPartition, OffsetAndMetadata]],
                 joined: Callable[[], object]) -> None:
        self.config = config
        self._subscriptions = subscriptions
        self._parts = parts
        self._client, self._fetcher, self._offsets = parts()
        self._coordinator = coordinator
        self._membership = membership
        self._all_consumed = all_consumed
        self._joined = joined          # after each group step: group_metadata() sees a join
        #: metadata answers count last checked for assigned partitions it does not list
        self._unknown_checked = -1
        #: (metadata version, assignment id, moves) when every position was last found
        #: FETCHING: until one of them changes, poll() skips the positions pass
        self._positions_settled: tuple[int, int, int] | None = None
        #: (metadata version, assignment id, moves) after the last leader check: a partition's
        #: leader is looked at again only when one of them changed
        self._leaders_checked: tuple[int, int, int] | None = None

    # ------------------------------------------------------------------ positions

    def update_fetch_positions(self, deadline: float) -> bool:
        """Give every assigned partition a position: committed offsets first (with a
        group.id), then auto.offset.reset through ListOffsets in the background. False when
        the committed offsets could not be read before ``deadline``."""
        client, _, offsets = self._parts()
        offsets.raise_reset_error()
        subs = self._subscriptions
        key = (client.metadata.update_version, subs.assignment_id, subs.moves)
        if key == self._positions_settled:
            return True          # every position FETCHING, nothing changed since: no pass
        initializing = self._subscriptions.initializing_partitions()
        if initializing:
            if self._coordinator is not None:
                try:
                    committed = self._coordinator.fetch_committed(initializing, deadline)
                except KafkaTimeoutError:
                    return False
                for tp, om in committed.items():
                    st = self._subscriptions.state(tp) if self._subscriptions.is_assigned(tp) \
                        else None
                    if st is None or st.fetch_state is not FetchState.INITIALIZING:
                        continue           # unassigned or seeked meanwhile: the user wins
                    if om is None:
                        self._subscriptions.request_reset(tp)
                    else:
                        self._subscriptions.seek(tp, om.offset, om.leader_epoch)
                        log.info("setting offset for %s to the committed offset %d", tp,
                                 om.offset)
            else:
                for tp in initializing:
                    self._subscriptions.request_reset(tp)
        offsets.reset_positions_if_needed()
        self._validate_leaders(client)
        offsets.validate_positions_if_needed()
        self._positions_settled = (
            (client.metadata.update_version, subs.assignment_id, subs.moves)
            if subs.all_fetching() else None)
        return True

    def _validate_leaders(self, client: NetworkClient) -> None:
        """KIP-320: a position is checked again whenever its partition's leader or leader
        epoch changes in the metadata, not only after a seek."""
        metadata = client.metadata
        subs = self._subscriptions
        if (metadata.update_version, subs.assignment_id, subs.moves) == self._leaders_checked:
            return         # no new leader, no new position since the last pass: nothing to do
        for tp in subs.positioned_partitions():      # the others have nothing to check
            info = metadata.partition(tp)
            if info is not None:
                subs.maybe_validate_for_leader(tp, info.leader, info.leader_epoch)
        self._leaders_checked = (metadata.update_version, subs.assignment_id, subs.moves)

    def _roll_back(self, before: Mapping[TopicPartition, FetchPosition]) -> None:
        """Records were drained but never reached the caller (an exception, e.g. Ctrl-C, on
        the way out): put the positions back and drop the buffered data of those partitions,
        so the records are fetched and returned again and a commit never passes them."""
        subs = self._subscriptions
        moved = set()
        for tp, position in before.items():
            if subs.is_assigned(tp):
                st = subs.state(tp)
                if st.has_valid_position and st.position != position:
                    st.position = position
                    moved.add(tp)
        if moved:
            log.info("records of %s were not returned: positions rolled back",
                     sorted(map(str, moved)))
            self._fetcher.clear_buffered(keep=lambda tp: tp not in moved)
            self._fetcher.positions_moved(moved)      # set here, not through subscriptions

    def settle_typed(self, chunks: list[tuple[TopicPartition, TypedChunk[T]]]
                     ) -> list[tuple[TopicPartition, T]]:
        """What a typed poll hands out (called from ``build``, positions journaled). A chunk
        that stopped at a FAILFAST error gives the records before the bad one, its partition's
        position goes back to the bad record (later chunks of it are left out: fetched again
        from there), and the next poll raises. A partition whose first record in this poll
        is bad raises now: every position of the poll is rolled back (nothing is lost), so
        the error cannot wait forever behind other partitions' records."""
        out: list[tuple[TopicPartition, T]] = []
        stopped: dict[TopicPartition, int] = {}
        delivered: set[TopicPartition] = set()
        for tp, chunk in chunks:
            parts = chunk.parts
            if parts is not None and not any(
                    t in stopped or c.error is not None for t, c in parts):
                # several partitions' rows, every one handed out: as they are (listed by
                # partition when they span topics: the result's schema check names them)
                delivered.update(t for t, c in parts if c.rows)
                if len({t.topic for t, _ in parts}) == 1:
                    out.append((tp, chunk.out))
                else:
                    out += ((t, c.out) for t, c in parts)
            else:
                self._settle_each(parts or ((tp, chunk),), out, stopped, delivered)
        for tp, offset in stopped.items():
            self._hold(tp, offset)
        return out

    @staticmethod
    def _settle_each(chunks: Iterable[tuple[TopicPartition, TypedChunk[T]]],
                     out: list[tuple[TopicPartition, T]], stopped: dict[TopicPartition, int],
                     delivered: set[TopicPartition]) -> None:
        """settle_typed's rule for each partition's chunk in turn."""
        for tp, chunk in chunks:
            if tp in stopped:
                continue
            if chunk.error is not None:
                if not chunk.rows and tp not in delivered:
                    raise chunk.error
                assert chunk.error.offset is not None
                stopped[tp] = chunk.error.offset
            if chunk.rows:
                delivered.add(tp)
            out.append((tp, chunk.out))

    def _hold(self, tp: TopicPartition, offset: int) -> None:
        """Put ``tp``'s position back on ``offset`` (a record it took but did not hand out)
        and drop what is buffered of it: it is fetched again from there. The epoch stays the
        one of the last batch taken (never older than the record's: no false truncation)."""
        position = self._subscriptions.position(tp)
        assert position is not None
        self._subscriptions.advance(tp, offset, position.offset_epoch)
        log.info("%s: a bad record at offset %d (bad.records.mode=FAILFAST): the position "
                 "stays there, the next poll raises", tp, offset)
        self._fetcher.clear_buffered(keep=lambda t: t != tp)

    def _warn_unknown_partitions(self, client: NetworkClient) -> None:
        """An assigned partition the metadata does not list gets no data; the client keeps
        asking for metadata (Java waits for the partition too). Say so at WARNING, once per
        metadata answer that names its topic (as missing, or without that partition)."""
        metadata = client.metadata
        if metadata.answers == self._unknown_checked:
            return
        self._unknown_checked = metadata.answers
        # per topic, the assigned indexes the metadata lacks (set arithmetic: no Python step
        # per assigned partition the metadata lists, thousands on every answer)
        for topic, group in itertools.groupby(sorted(self._subscriptions.assigned_partitions()),
                                              key=_TOPIC):
            t = metadata.topics.get(topic)
            if t is not None:
                for index in sorted(set(map(_PARTITION, group)).difference(t.partitions)):
                    log.warning("partition %s does not exist in the metadata (topic %s has "
                                "%d partitions); retrying", TopicPartition(topic, index), topic,
                                len(t.partitions))
            elif metadata.topic_errors.get(topic) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                for tp in group:
                    log.warning("partition %s does not exist in the metadata (no topic %s); "
                                "retrying", tp, topic)

    # ------------------------------------------------------------------ the loop

    def run(self, timeout_ms: float, limit: int, collector: Collector[T, R]) -> R:
        """One poll: ``collector`` takes the records (see Fetcher.drain) and builds the result
        from them. Positions count as delivered only once its ``build`` returned: any
        exception before rolls them back. The arguments were checked with
        :func:`poll_limit`."""
        client, fetcher, offsets = self._parts()
        if self._subscriptions.subscription_type is SubscriptionType.NONE:
            raise IllegalStateError(
                "Consumer is not subscribed to any topics or assigned any partitions")
        deadline = time.monotonic() + timeout_ms / 1000.0
        membership = self._membership if self._subscriptions.has_auto_assignment else None
        if membership is not None:
            membership.on_poll(time.monotonic())
        coordinator = self._coordinator       # set with the membership (a group.id)
        final = False
        while True:
            client.run_deferred()
            if coordinator is not None:
                coordinator.invoke_completed_callbacks()
            if membership is not None:
                assert coordinator is not None
                membership.check_metadata()
                membership.ensure_active_group(deadline)
                self._joined()
                coordinator.lookup_if_needed(time.monotonic())
            if coordinator is not None:
                coordinator.maybe_auto_commit(self._all_consumed)
            self.update_fetch_positions(deadline)
            self._warn_unknown_partitions(client)
            if fetcher.has_available() and fetcher.prefetch_now():
                # prefetch: the next Fetch is on the wire before this data is decoded, so the
                # broker prepares it meanwhile
                client.poll(timeout_ms=0, wakeup=False)
            # the positions before this drain, of the partitions it moves only
            before = self._subscriptions.start_journal()
            try:
                chunks = fetcher.drain(limit, collector)
                if chunks or final:
                    # pipeline: the next fetch travels while the caller works on these (a
                    # wakeup() now is for the next call: these records are returned)
                    if chunks and fetcher.send_fetches():
                        client.poll(timeout_ms=0, wakeup=False)
                    return collector.build(chunks)
            except BaseException:
                self._roll_back(before)
                raise
            finally:
                self._subscriptions.stop_journal()
            fetcher.send_fetches()
            left = (deadline - time.monotonic()) * 1000.0
            if not self._subscriptions.has_all_fetch_positions() or (
                    membership is not None and membership.rejoin_needed):
                # a reset or a join waits for metadata or a backoff: come back to drive it
                left = min(left, self.config.retry_backoff_ms)
            # a leader in reconnect backoff: come back when it may be fetched again
            left = min(left, fetcher.retry_in_ms)
            resets, completions = offsets.resets_completed, fetcher.completions
            # positions to find and fetches to send wait for the metadata (the leaders): its
            # answer is news too (a seek() leaves no position to find, only a leader to learn)
            metadata = client.metadata.answers
            # wake for data, a finished reset (fetches can start then) or a fetch that ended
            # without data (failed: send it again at once, as Java); a wakeup() raises
            client.poll(timeout_ms=max(0.0, left),
                        until=functools.partial(self._wait_over, resets, completions, metadata))
            final = time.monotonic() >= deadline

    def _wait_over(self, resets: int, completions: int, metadata: int | None) -> bool:
        """A waiting poll() returns: data arrived, a reset finished (fetches can start), a
        fetch ended without data (failed: sent again at once, as Java), or the metadata
        answered while positions wait for it (their ListOffsets can go now)."""
        return (self._fetcher.has_available() or self._offsets.resets_completed != resets
                or self._fetcher.completions != completions
                or (metadata is not None
                    and self._client.metadata.answers != metadata)
                or (self._membership is not None and self._membership.attention()))


__all__ = ["ArrowCollector", "PollLoop", "RecordsCollector", "TypedArrowCollector",
           "TypedChunk", "TypedRecordsCollector", "check_poll_timeout", "poll_limit",
           "typed_arrow", "typed_arrow_many", "typed_records"]
