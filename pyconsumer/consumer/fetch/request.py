"""The Fetcher: Fetch requests to partition leaders, and draining what they bring back.

Java's ``Fetcher``/``FetchCollector``: at most one Fetch in flight per leader node. Prefetch
(beyond Java): a partition whose buffered data is one response of v2 batches is fetched again
at once from the offset after its last complete batch (its record-set index says), so the
broker prepares the next response while this one is decoded and handed out; a partition with
more buffered, or data that does not say where it ends, is not fetched again until drained
(buffering is bounded to about two responses per partition). When a partition of the node
has nothing in hand and data waiting (it starves), the prefetch goes as a full fetch listing
the starving partitions first and the prefetched ones last: a full fetch opens a new session in
request order, so on Kafka the starving ones are filled first; a broker that keeps its own
order (Tansu) may give a partition its prefetched response before the others get theirs, so a
partition gets at most two responses in a row. The prefetched data is used only
if the position reaches exactly the offset it was asked for (a seek, a pause or an error in
between makes it stale, and stale data is dropped). Responses are queued per partition as they arrive and turned into
:class:`pyconsumer.records.CompletedFetch` cursors only when drained, after checking the partition
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

Fetch sessions (KIP-227, :mod:`pyconsumer.consumer.fetch.session`): one session per node; after
a full fetch opens it, a request lists only the partitions added or changed and forgets those
no longer wanted, and a response lists only the partitions with news (one it leaves out is
unchanged). While a node's session is open, no fetch goes to it as long as it hosts buffered
partitions (Java, KAFKA-17182): a fetch without them would forget them in the session, and
with them it would bring their data again. A broker without sessions gets full fetches.

Follower fetching (KIP-392): ``client.rack`` goes out as ``rack_id``; a partition whose
response names a ``preferred_read_replica`` is fetched from that node until
``metadata.max.age.ms`` has passed, its leader changes, the node leaves the metadata, a fetch
to it fails, or it answers with an error (then the leader is asked again; an
OFFSET_OUT_OF_RANGE from the replica is not acted on until the leader says so too).
"""
from __future__ import annotations

import collections
import functools
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar, cast

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.fetch import decode
from pyconsumer.consumer.fetch.session import (
    ZERO_UUID,
    FetchRequestData,
    FetchSessionHandler,
    PartitionData,
)
from pyconsumer.consumer.subscription import SubscriptionState
from pyconsumer.errors import (
    ErrorCode,
    FetchProgressError,
    KafkaError,
    OffsetOutOfRangeError,
    error_for_code,
)
from pyconsumer.consumer.metrics import ConsumerMetrics
from pyconsumer.net.client import NetworkClient
from pyconsumer.net.connection import Response
from pyconsumer.net.future import Future
from pyconsumer.protocol import ApiKey
from pyconsumer.records import CompletedFetch, RecordSetIndex
from pyconsumer.structs import PartitionInfo, TopicPartition

log = logging.getLogger(__name__)

T = TypeVar("T")

_LAST_VERSION_BY_NAME = 12        # Fetch v13+ names topics by id only
# top-level errors that concern the fetch session only (the handler starts a new one)
_SESSION_ERRORS = {ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH}

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


class _ReadReplica(NamedTuple):
    """A preferred read replica (KIP-392) and what it is valid for."""

    node: int
    expires_at: float                     # monotonic seconds
    leader: tuple[int, int | None]        # the partition's (leader, leader epoch) then


class _Fetched:
    """One partition's part of a Fetch response, waiting in the queue."""

    __slots__ = ("tp", "fetch_offset", "max_bytes", "data", "version", "cursor", "error", "end",
                 "bound", "index")

    def __init__(self, tp: TopicPartition, fetch_offset: int, max_bytes: int,
                 data: dict[str, Any], version: int) -> None:
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


class Fetcher:
    #: fetch again behind buffered data (see the module's docstring); off, Java's behaviour
    prefetch = True

    def __init__(self, client: NetworkClient, config: ConsumerConfig,
                 subscriptions: SubscriptionState, metrics: ConsumerMetrics | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.metrics = ConsumerMetrics(config) if metrics is None else metrics
        self._clock = clock
        self.config = config
        self.subscriptions = subscriptions
        self._completed: collections.deque[_Fetched] = collections.deque()
        self._next_in_line: _Fetched | None = None
        self._nodes_in_flight: set[int] = set()
        self._read_committed = config.isolation_level == "read_committed"
        #: bumped whenever a Fetch completes, answered or failed (a waiting poll re-sends)
        self.completions = 0
        #: fetch node of each fetchable partition, valid while the key (completions, metadata
        #: version, assignment) holds: the every-poll check that nothing can be sent
        self._nodes_key: tuple[int, int, int] = (-1, -1, -1)
        self._nodes_of: dict[TopicPartition, int] = {}
        self._prefetched_at = -1                   # self.completions at the last prefetch
        #: ms until a leader skipped for its reconnect backoff may be fetched again (inf: none)
        self.retry_in_ms = float("inf")
        self._refetch: dict[TopicPartition, _Refetch] = {}
        #: the offset each partition's last empty answer was fetched at: a prefetch from the
        #: end of buffered data that came back empty is not sent again while it is buffered
        self._empty_at: dict[TopicPartition, int] = {}
        #: the fetch session with each node
        self.sessions: dict[int, FetchSessionHandler] = {}
        #: partitions to fetch from a replica other than the leader (KIP-392)
        self._read_replicas: dict[TopicPartition, _ReadReplica] = {}

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

    def _all_in_flight(self) -> bool:
        """Every fetchable partition's node has a Fetch in flight, so nothing can be sent:
        the common case on the poll()s between two responses, checked without the full
        scheduling pass (which costs more than a poll of 500 records' other work)."""
        in_flight = self._nodes_in_flight
        if not in_flight:
            return False
        metadata = self.client.metadata
        key = (self.completions, metadata.update_version, self.subscriptions.assignment_id)
        if key != self._nodes_key:
            self._nodes_key, self._nodes_of = key, {}
        nodes_of = self._nodes_of
        now = -1.0
        for tp in self.subscriptions.fetchable_partitions():
            node = nodes_of.get(tp)
            if node is None:
                info = metadata.partition(tp)
                if info is None or info.leader < 0:
                    return False
                if now < 0:
                    now = self._clock()
                node = nodes_of[tp] = self._fetch_node(tp, info, now)
            if node not in in_flight:
                return False
        return True

    def send_fetches(self) -> int:
        """Queue one Fetch per node that has fetchable partitions and no Fetch in flight."""
        if self._all_in_flight():
            self.retry_in_ms = float("inf")
            return 0
        buffered = self._buffered_partitions()
        metadata = self.client.metadata
        subs = self.subscriptions
        now = self._clock()
        per_node: dict[int, dict[TopicPartition, tuple[int, int]]] = {}
        caught_up: dict[int, bool] = {}
        self.retry_in_ms = float("inf")
        if self._read_replicas:
            self._read_replicas = {tp: r for tp, r in self._read_replicas.items()
                                   if subs.is_assigned(tp)}
        ahead = self._prefetchable(buffered) if buffered and self.prefetch else {}
        # nodes with a partition that has nothing in hand and data waiting: their fetch is a
        # full one with those partitions first and the prefetched ones last, which puts them
        # first in the broker's order too (a session keeps the order of the full fetch that
        # opened it; a sessionless broker fills in request order)
        starving = self._starving_nodes(ahead, now) if ahead else set()
        if ahead:
            buffered = buffered - ahead.keys()
        fetchable = subs.fetchable_partitions()
        if ahead:
            # partitions with nothing buffered ask first: brokers fill a response in request
            # order, and one with data in hand must not take a small fetch.max.bytes from them
            fetchable = [tp for tp in fetchable if tp not in ahead] + \
                [tp for tp in fetchable if tp in ahead]
        for tp in fetchable:
            if tp in buffered:
                continue
            info = metadata.partition(tp)
            if info is None or info.leader < 0:
                metadata.request_update()
                continue
            node = self._fetch_node(tp, info, now)
            if node in self._nodes_in_flight:
                continue
            delay = self.client.connection_delay_ms(node)
            if delay > 0:
                self.retry_in_ms = min(self.retry_in_ms, delay)
                continue
            offset = ahead.get(tp)
            if offset is None:
                position = subs.position(tp)
                assert position is not None
                offset = position.offset
            epoch = -1 if info.leader_epoch is None else info.leader_epoch
            per_node.setdefault(node, {})[tp] = (offset, epoch)
            hw = subs.state(tp).high_watermark
            caught_up[node] = caught_up.get(node, True) and hw is not None and offset >= hw
        busy = self._nodes_with_buffered(buffered, now) if buffered and per_node else set()
        for node in [n for n in per_node if n in busy]:
            handler = self.sessions.get(node)
            if handler is not None and handler.has_session:
                # an incremental fetch without the buffered partitions would forget them in
                # the session, one with them would bring their data again: wait (KAFKA-17182)
                del per_node[node]
            elif caught_up.get(node):
                # Hold back a fetch that would only long-poll caught-up partitions while other
                # partitions of the same node still have data buffered: it would sit at the
                # broker for fetch.max.wait.ms and, one fetch per node, keep those partitions
                # from being fetched again the moment they drain. They go together instead.
                del per_node[node]
        for node, partitions in per_node.items():
            self._send(node, partitions, full=node in starving and any(
                tp in ahead for tp in partitions))
        return len(per_node)

    def _prefetchable(self, buffered: set[TopicPartition]) -> dict[TopicPartition, int]:
        """The buffered partitions to fetch again now, each with the offset to fetch from: one
        response buffered (being drained or waiting), without error, that says where it ends,
        with the position inside it (else it is stale and will be dropped)."""
        held: dict[TopicPartition, list[_Fetched]] = {}
        nil = self._next_in_line
        if nil is not None and self._pending(nil):
            held[nil.tp] = [nil]
        for f in self._completed:
            held.setdefault(f.tp, []).append(f)
        out: dict[TopicPartition, int] = {}
        subs = self.subscriptions
        for tp, fs in held.items():
            if len(fs) != 1 or tp not in buffered or tp in self._refetch \
                    or not subs.is_fetchable(tp):        # unassigned or paused since
                continue
            f = fs[0]
            if f.end is None or f.error is not None or f.data["error_code"] \
                    or self._empty_at.get(tp) == f.end:   # prefetched already: nothing there
                continue
            position = subs.position(tp)
            if position is not None and f.fetch_offset <= position.offset < f.end:
                out[tp] = f.end
        return out

    def prefetch_now(self) -> int:
        """send_fetches once per completed Fetch, before its data is decoded (the prefetch
        moment); later calls until the next completion would find nothing new to send."""
        if not self.prefetch or self._prefetched_at == self.completions:
            return 0
        self._prefetched_at = self.completions
        return self.send_fetches()

    def _leader_node(self, tp: TopicPartition, now: float) -> int | None:
        info = self.client.metadata.partition(tp)
        return None if info is None or info.leader < 0 else self._fetch_node(tp, info, now)

    def _starving_nodes(self, ahead: dict[TopicPartition, int], now: float) -> set[int]:
        """Nodes with a fetchable partition that has no records in hand and records waiting
        at the broker (or not known to be caught up): their fetch is a full one, the starving
        partitions first. Brokers fill a response in their own order (a session's, not the
        request's), so an incremental prefetch could keep a small fetch.max.bytes from them."""
        subs = self.subscriptions
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
        out = set()
        for tp in subs.fetchable_partitions():
            if tp in ahead or tp in served:
                continue
            position, hw = subs.position(tp), seen_hw.get(tp, subs.state(tp).high_watermark)
            if hw is None or hw < 0 or position is None or position.offset < hw:
                node = self._leader_node(tp, now)
                if node is not None:
                    out.add(node)
        return out

    def _nodes_with_buffered(self, buffered: set[TopicPartition], now: float) -> set[int]:
        """The nodes the buffered partitions that are still to be fetched (assigned, not
        paused, no error waiting for a seek) would be fetched from."""
        nodes = set()
        nil = self._next_in_line
        for tp in buffered:
            if not self.subscriptions.is_fetchable(tp) or (
                    nil is not None and nil.tp == tp and nil.error is not None):
                continue
            info = self.client.metadata.partition(tp)
            if info is not None and info.leader >= 0:
                nodes.add(self._fetch_node(tp, info, now))
        return nodes

    def _fetch_node(self, tp: TopicPartition, info: PartitionInfo, now: float) -> int:
        """Java selectReadReplica: the preferred read replica while it is valid, else the
        leader."""
        replica = self._read_replicas.get(tp)
        if replica is None:
            return info.leader
        if now >= replica.expires_at or replica.leader != (info.leader, info.leader_epoch):
            del self._read_replicas[tp]               # expired, or a new leader
            return info.leader
        if replica.node not in self.client.metadata.brokers \
                or replica.node in info.offline_replicas:
            log.debug("read replica %d of %s is offline or unknown; fetching from the leader",
                      replica.node, tp)
            del self._read_replicas[tp]
            self.client.metadata.request_update()
            return info.leader
        return replica.node

    def _set_read_replica(self, tp: TopicPartition, node: int) -> None:
        """A response named ``node`` the replica to fetch ``tp`` from; it holds for
        metadata.max.age.ms from the first time it was named (Java)."""
        old = self._read_replicas.get(tp)
        if old is not None and old.node == node:
            return
        info = self.client.metadata.partition(tp)
        if info is None or info.leader < 0:
            return
        log.debug("fetching %s from read replica %d (leader %d)", tp, node, info.leader)
        self._read_replicas[tp] = _ReadReplica(
            node, self._clock() + self.config.metadata_max_age_ms / 1000.0,
            (info.leader, info.leader_epoch))

    def _clear_read_replica(self, tp: TopicPartition) -> bool:
        """Fetch ``tp`` from its leader again; True if a read replica was set."""
        return self._read_replicas.pop(tp, None) is not None

    def _send(self, node: int, partitions: dict[TopicPartition, tuple[int, int]],
              full: bool = False) -> None:
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
        max_bytes = max(config.fetch_max_bytes, grown)
        handler = self.sessions.get(node)
        if handler is None:
            handler = self.sessions[node] = FetchSessionHandler(node)
        builder = handler.new_builder()
        for tp in order:
            offset, epoch = partitions[tp]
            t = metadata.topics.get(tp.topic)
            topic_id = ZERO_UUID if t is None or t.topic_id is None else t.topic_id
            builder.add(tp, PartitionData(topic_id, offset, asks[tp], epoch))
        # a session keeps the broker's own order: a re-fetch needs a full fetch to go first
        data = builder.build(full=full or bool(again))
        # the request may wait fetch.max.wait.ms at the broker before it is even late
        timeout = self.config.request_timeout_ms + self.config.fetch_max_wait_ms
        fut = self.client.send(
            node, ApiKey.FETCH, lambda version: self._request_body(data, version, max_bytes),
            timeout_ms=timeout,
            max_version=None if data.can_use_topic_ids else _LAST_VERSION_BY_NAME)
        self._nodes_in_flight.add(node)
        self.metrics.fetch_sent(node, fut)
        fut.add_callback(lambda f: self._on_response(f, node, data))

    def _request_body(self, data: FetchRequestData, version: int, max_bytes: int,
                      max_wait_ms: int | None = None) -> dict[str, Any]:
        """The Fetch body for ``data`` at ``version`` (chosen when it goes on the wire)."""
        config = self.config
        topics: dict[str, tuple[uuid.UUID, list[dict[str, Any]]]] = {}
        for tp, p in data.partitions_at(version).items():
            topics.setdefault(tp.topic, (p.topic_id, []))[1].append({
                "partition": tp.partition, "fetch_offset": p.fetch_offset,
                "current_leader_epoch": p.current_leader_epoch, "log_start_offset": -1,
                "partition_max_bytes": p.max_bytes})
        forgotten: dict[tuple[str, uuid.UUID], list[int]] = {}
        if version >= 7:
            for tp, topic_id in data.forgotten(version):
                forgotten.setdefault((tp.topic, topic_id), []).append(tp.partition)
        return {
            "replica_id": -1,
            "max_wait_ms": config.fetch_max_wait_ms if max_wait_ms is None else max_wait_ms,
            "min_bytes": config.fetch_min_bytes,
            "max_bytes": max_bytes,
            "isolation_level": 1 if self._read_committed else 0,
            "session_id": data.metadata.session_id,
            "session_epoch": data.metadata.epoch,
            "topics": [{"topic": name, "topic_id": topic_id, "partitions": ps}
                       for name, (topic_id, ps) in topics.items()],
            "forgotten_topics_data": [{"topic": name, "topic_id": topic_id, "partitions": ps}
                                      for (name, topic_id), ps in forgotten.items()],
            "rack_id": config.client_rack or "",
        }

    def _on_response(self, fut: Future[Response], node: int, data: FetchRequestData) -> None:
        self._nodes_in_flight.discard(node)
        self.completions += 1
        handler = self.sessions.get(node)
        if fut.failed():
            log.debug("fetch from node %d failed: %s", node, fut.exception)
            if handler is not None:
                handler.handle_error()
            for tp in data.session_partitions:
                self._clear_read_replica(tp)
            return
        assert fut.value is not None
        response = fut.value
        body = response.body
        code = body.get("error_code", 0)
        if not code:
            self.metrics.fetch_answered(node, response, data.topic_names)
        by_name = response.version <= _LAST_VERSION_BY_NAME
        parts: list[tuple[TopicPartition, dict[str, Any]]] = []
        unknown_ids = 0
        for t in body["responses"]:
            name = t["topic"] if by_name else data.topic_names.get(t["topic_id"])
            if name is None:
                unknown_ids += 1
                continue
            parts.extend((TopicPartition(name, p["partition_index"]), p) for p in t["partitions"])
        if handler is None or not handler.handle_response(
                code, body.get("session_id", 0), {tp for tp, _ in parts}, unknown_ids):
            if code and code not in _SESSION_ERRORS:
                log.warning("fetch from node %d: %s", node, error_for_code(code))
                self.client.metadata.request_update()
            return
        for tp, p in parts:
            asked = data.session_partitions.get(tp)
            if asked is not None:     # an incremental answer leaves out what did not change
                if not p["error_code"] and not p.get("records"):
                    # nothing to hand out: take its news now rather than queue it behind
                    # other partitions' data, where it would keep its partition from being
                    # fetched again until that data drained (brokers that cap a response
                    # answer the partitions past the cap this way)
                    self._apply_answer(tp, asked.fetch_offset, p)
                    self._empty_at[tp] = asked.fetch_offset
                    continue
                fetched = _Fetched(tp, asked.fetch_offset, asked.max_bytes, p, response.version)
                if not p["error_code"]:
                    index = fetched.index = RecordSetIndex(p.get("records"), asked.fetch_offset)
                    fetched.bound = index.bound
                    if self.prefetch:
                        fetched.end = index.end
                self._completed.append(fetched)

    def close_sessions(self, timeout_ms: float) -> None:
        """Close the open fetch sessions (a full fetch of nothing with epoch -1 to each node
        that holds one and has no Fetch in flight), waiting at most ``timeout_ms``; brokers
        free them at once instead of when they expire. Best effort: failures are logged."""
        futures: list[Future[Response]] = []
        for node, handler in self.sessions.items():
            if not handler.has_session or node in self._nodes_in_flight \
                    or not self.client.is_ready(node):
                continue
            handler.notify_close()
            data = handler.new_builder().build()

            def body(version: int, d: FetchRequestData = data) -> dict[str, Any]:
                return self._request_body(d, version, self.config.fetch_max_bytes, max_wait_ms=0)

            futures.append(self.client.send(node, ApiKey.FETCH, body, timeout_ms=timeout_ms))
        if not futures:
            return
        try:
            self.client.poll(timeout_ms=timeout_ms, until=lambda: all(f.done for f in futures))
        except KafkaError as e:
            log.debug("closing fetch sessions: %s", e)

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
                if not self._apply_answer(tp, fetched.fetch_offset, data):
                    return None
                aborted = [(a["producer_id"], a["first_offset"])
                           for a in data.get("aborted_transactions") or ()]
                cursor = CompletedFetch(
                    data.get("records"), tp.topic, tp.partition, fetched.fetch_offset,
                    check_crcs=self.config.check_crcs,
                    isolation_level=self.config.isolation_level,
                    aborted_transactions=aborted,
                    key_deserializer=self.config.key_deserializer,
                    value_deserializer=self.config.value_deserializer,
                    index=fetched.index)
                if fetched.has_bytes and cursor.is_drained:
                    # bytes, yet drained before a single record: the first batch is incomplete
                    err = self._stuck(fetched, cursor)
                    if err is not None:
                        raise err
                    return None
                return cursor
            if code in _REFRESH_METADATA:
                log.debug("fetch of %s: %s; refreshing metadata", tp, error_for_code(code))
                self._clear_read_replica(tp)
                self.client.metadata.request_update()
            elif code == ErrorCode.UNKNOWN_LEADER_EPOCH:
                log.debug("fetch of %s: unknown leader epoch", tp)
            elif code in _UNKNOWN_TOPIC:
                log.warning("fetch of %s: %s", tp, error_for_code(code))
                self._clear_read_replica(tp)
                self.client.metadata.request_update()
            elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                position = subs.position(tp)
                if self._clear_read_replica(tp):
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

    def _apply_answer(self, tp: TopicPartition, fetch_offset: int, data: dict[str, Any]) -> bool:
        """What an error-free partition answer says of the log (high watermark, log start,
        last stable offset, read replica), if it is still current: the partition is
        fetchable and its position is where the fetch started. False for a stale one."""
        subs = self.subscriptions
        position = subs.position(tp) if subs.is_fetchable(tp) else None
        if position is None or position.offset != fetch_offset:
            log.debug("discarding stale fetch response for %s at offset %d", tp, fetch_offset)
            return False
        replica = data.get("preferred_read_replica", -1)
        if replica is not None and replica >= 0:
            self._set_read_replica(tp, replica)
        st = subs.state(tp)
        if data["high_watermark"] >= 0:
            st.high_watermark = data["high_watermark"]
        if data.get("log_start_offset", -1) >= 0:
            st.log_start_offset = data["log_start_offset"]
        if data.get("last_stable_offset", -1) >= 0:
            st.last_stable_offset = data["last_stable_offset"]
        return True

    def _take(self, fetched: _Fetched, n: int, take: Callable[[CompletedFetch, int], T],
              count: Callable[[T], int]) -> tuple[T, int] | None:
        if not self._takeable(fetched):
            return None
        assert fetched.cursor is not None
        return self._took(fetched, take(fetched.cursor, n), count)

    def _takeable(self, fetched: _Fetched) -> bool:
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

    def _took(self, fetched: _Fetched, chunk: T, count: Callable[[T], int]
              ) -> tuple[T, int] | None:
        """Move the position past what a take returned; (chunk, records) or None if empty."""
        cursor = fetched.cursor
        assert cursor is not None
        tp = fetched.tp
        subs = self.subscriptions
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

    def _drain_side_by_side(self, remaining: int, take: Callable[[CompletedFetch, int], T],
                            count: Callable[[T], int], out: list[tuple[TopicPartition, T]],
                            threads: int) -> int | None:
        """Take the buffered responses at the head of the queue whose records all fit in
        ``remaining`` (known from their batch headers) on up to ``threads`` threads at once;
        the records taken, or None when fewer than two qualify (the caller goes one by one).
        Same result as taking them in turn: positions move in queue order, and the first one
        that does not end cleanly (an error after some rows) becomes next in line, with the
        responses after it put back untouched."""
        group: list[tuple[_Fetched, int]] = []
        budget = remaining
        size = 0
        for fetched in self._completed:
            if len(group) == threads or fetched.data["error_code"] or not fetched.has_bytes:
                break
            bound = fetched.bound
            if bound is None or bound > budget:
                break
            group.append((fetched, bound))
            budget -= bound
            size += len(fetched.data["records"])
        if len(group) < 2 or size < decode.min_bytes:
            return None
        jobs: list[tuple[_Fetched, int]] = []
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

    def _hold(self, fetched: _Fetched, rest: list[tuple[_Fetched, int]]) -> None:
        """``fetched`` becomes next in line; ``rest`` go back to the head of the queue with
        fresh cursors to come (what their takes did is undone: no position moved for them)."""
        self._next_in_line = fetched
        for f, _ in reversed(rest):
            assert f.cursor is not None
            f.cursor.discard()
            f.cursor = None
            self._completed.appendleft(f)

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
              count: Callable[[T], int], *, threads: int = 1) -> list[tuple[TopicPartition, T]]:
        """Up to ``max_records`` records from the buffered responses, as ``take`` shapes them
        (a list of ConsumerRecords, an Arrow batch), in fetch order, per partition.
        ``threads`` > 1: ``take`` releases the GIL and is safe to run on several cursors at
        once (the Arrow path); buffered partitions that all fit in the budget are then taken
        side by side, with exactly the result of taking them one after another."""
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
                    if threads > 1 and len(self._completed) > 1:
                        got = self._drain_side_by_side(remaining, take, count, out, threads)
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
