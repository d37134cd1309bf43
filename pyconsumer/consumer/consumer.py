"""KafkaConsumer: the public entry point (Java ``KafkaConsumer`` semantics).

It connects lazily; lists topics and partitions; reads manually assigned partitions with
``poll()`` (ConsumerRecords) or ``poll_arrow()`` (one Arrow batch in Spark's Kafka schema),
pipelining the next Fetch before it returns; moves positions with seek/seek_to_beginning/
seek_to_end (resets resolved with ListOffsets, ``auto.offset.reset`` when a partition has no
position); looks up beginning/end offsets and offsets by time. Group membership (subscribe,
committed offsets) builds on the same network client and subscription state. What one
poll() does is :mod:`pyconsumer.consumer.poll`; this module is the facade.

Threads: see :mod:`pyconsumer.threads`. Every public method but ``wakeup()`` runs under the
access guard (one application thread at a time) and the client lock.
"""
from __future__ import annotations

import functools
import logging
import re
import time
import weakref
from types import TracebackType
from typing import Any

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import ParamSpec, TypeVar

import pyarrow as pa

from pyconsumer.config import ConsumerConfig, OffsetResetStrategy
from pyconsumer.consumer.group.coordinator import CommitCallback, ConsumerCoordinator
from pyconsumer.consumer.fetch import Collector, Fetcher, decode
from pyconsumer.consumer.interceptors import ConsumerInterceptors
from pyconsumer.consumer.group.classic import GroupMembership
from pyconsumer.consumer.group.consumer_protocol import ConsumerProtocolMembership
from pyconsumer.consumer.group.membership import Membership
from pyconsumer.consumer.offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    OffsetAndTimestamp,
    OffsetsClient,
)
from pyconsumer.consumer.poll import (
    ArrowCollector,
    PollLoop,
    RecordsCollector,
    TypedArrowCollector,
    TypedRecordsCollector,
    poll_limit,
)
from pyconsumer.consumer.subscription import SubscriptionState
from pyconsumer.errors import (
    ErrorCode,
    BrokerResponseError,
    ConfigurationError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
)
from pyconsumer.consumer.metrics import ConsumerMetrics
from pyconsumer.metrics import MetricName
from pyconsumer.metrics.polls import PollListener
from pyconsumer.net.client import NetworkClient
from pyconsumer.net.transport import (
    canonical_bootstrap_servers,
    resolve_bootstrap_servers,
    unresolved_text,
)
from pyconsumer.net.deadline import Retry, deadline_after, remaining_ms, retry_until
from pyconsumer.config.ssl import check_security
from pyconsumer.records import ConsumerRecord, kafka_arrow_schema
from pyconsumer.structs import (
    ConsumerGroupMetadata,
    OffsetAndMetadata,
    PartitionInfo,
    TopicPartition,
)
from pyconsumer.threads import AccessGuard, ClientLock
from pyconsumer.values import TypedValues

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")

log = logging.getLogger(__name__)


def _exclusive(method: Callable[P, R]) -> Callable[P, R]:
    """A public consumer call: one application thread at a time, under the client lock."""
    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        self: KafkaConsumer = args[0]  # type: ignore[assignment]
        self._guard.acquire()
        try:
            return method(*args, **kwargs)
        finally:
            self._guard.release()
    return call



class KafkaConsumer:
    """A Kafka consumer. Settings by Java name (``**{"bootstrap.servers": ...}``) or snake_case
    (``bootstrap_servers=...``); validated here, so a bad setting fails at construction with
    a :class:`~pyconsumer.errors.ConfigurationError` naming it. No connection is opened until a
    call needs the cluster."""

    def __init__(self, *topics: str, **settings: Any) -> None:
        self.config = ConsumerConfig(**settings)
        check_security(self.config)
        self._client: NetworkClient | None = None
        self._closed = False
        self._lock = ClientLock()
        self._guard = AccessGuard()
        self._subscriptions = SubscriptionState(self.config.offset_reset_strategy)
        self._fetcher: Fetcher | None = None
        self._offsets: OffsetsClient | None = None
        self._coordinator: ConsumerCoordinator | None = None
        self._membership: Membership | None = None
        self._wakeup_pending = False         # wakeup() before the client existed
        self._metrics = ConsumerMetrics(self.config)
        self._interceptors = ConsumerInterceptors.from_config(self.config)
        #: how many partitions poll_arrow() decodes at once (decode.threads; 0: per core, <= 4)
        self._decode_threads = decode.threads_for(self.config.decode_threads)
        #: value.format / key.format: the one decoding plan of poll() and poll_arrow() (None:
        #: bytes as fetched); built now, so a bad schema or registry setting fails here
        self._typed = _typed_values(self.config)
        self._typed_schemas: dict[tuple[bool, tuple[str, ...]], pa.Schema] = {}
        if self._typed is not None:
            self._metrics.count_values(self._typed.snapshot)
        #: the bootstrap servers resolved here (bootstrap.resolve.timeout.ms=0), else None
        self._bootstrap = _resolve_bootstrap(self.config)
        self._poll_loop: PollLoop | None = None
        #: (generation, member id) of the last completed join, for group_metadata()
        self._last_generation: tuple[int, str] = (-1, "")
        if topics:
            self.subscribe(list(topics))

    # ------------------------------------------------------------------ plumbing

    def _network(self) -> NetworkClient:
        if self._closed:
            raise IllegalStateError("this consumer is closed")
        if self._client is None:
            self._client = NetworkClient(self.config, lock=self._lock, bootstrap=self._bootstrap)
            if self._wakeup_pending:
                self._wakeup_pending = False
                self._client.wakeup()
            self._fetcher = Fetcher(self._client, self.config, self._subscriptions,
                                    self._metrics)
            self._offsets = OffsetsClient(self._client, self.config, self._subscriptions)
            if self.config.group_id is not None:
                self._coordinator = ConsumerCoordinator(self._client, self.config,
                                                        self._subscriptions, self._metrics)
                if self._interceptors:
                    self._coordinator.on_commit = self._interceptors.on_commit
                kind = (ConsumerProtocolMembership if self.config.group_protocol == "consumer"
                        else GroupMembership)
                self._membership = kind(
                    self._coordinator, self._client, self.config, self._subscriptions,
                    _weak(self._on_unassigned), _weak(self._all_consumed))
                self._coordinator.attach(self._membership)
            self._poll_loop = PollLoop(self.config, self._subscriptions, _weak(self._parts),
                                       self._coordinator, self._membership,
                                       _weak(self._all_consumed), _weak(self._stable_generation))
        return self._client

    def _on_unassigned(self, partitions: set[TopicPartition]) -> None:
        if self._fetcher is not None:
            self._fetcher.clear_buffered(keep=lambda tp: tp not in partitions)

    def _parts(self) -> tuple[NetworkClient, Fetcher, OffsetsClient]:
        client = self._network()
        assert self._fetcher is not None and self._offsets is not None
        return client, self._fetcher, self._offsets

    def _timeout(self, timeout_ms: float | None) -> float:
        if timeout_ms is None:
            return float(self.config.default_api_timeout_ms)
        if timeout_ms < 0:
            raise ValueError(f"timeout_ms must not be negative, got {timeout_ms}")
        return float(timeout_ms)

    def _topic_metadata(self, topics: list[str] | None, timeout_ms: float | None
                        ) -> dict[str, list[PartitionInfo]]:
        """Java TopicMetadataFetcher: ask until no topic has a retriable error or time is up;
        unknown topics are left out, other topic errors raised."""
        client = self._network()
        budget = self._timeout(timeout_ms)
        deadline = deadline_after(budget)

        def attempt() -> dict[str, list[PartitionInfo]]:
            metadata = client.update_metadata(topics, timeout_ms=remaining_ms(deadline))
            names = list(metadata.topics) if topics is None else topics
            retry = []
            result: dict[str, list[PartitionInfo]] = {}
            for name in names:
                error = metadata.topic_error(name)
                if error is None:
                    parts = metadata.partitions_for(name)
                    if parts is not None:
                        result[name] = parts
                elif (isinstance(error, BrokerResponseError)
                      and error.errno == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    continue
                elif error.retriable:
                    retry.append(name)
                else:
                    raise error
            if topics is None:
                retry += [n for n, c in metadata.topic_errors.items()
                          if c != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and n not in metadata.topics]
            if retry:
                err = metadata.topic_error(retry[0])
                raise Retry(KafkaTimeoutError(f"metadata for topic(s) {', '.join(sorted(retry))} "
                                              f"still not available: {err}"))
            return result

        return retry_until(deadline, attempt, wait=lambda ms: client.poll(timeout_ms=ms),
                           backoff_ms=self.config.retry_backoff_ms,
                           backoff_max_ms=self.config.retry_backoff_max_ms,
                           timeout=lambda last: KafkaTimeoutError(f"{last} (after {budget:.0f} ms)"))

    # ------------------------------------------------------------------ public API

    @_exclusive
    def topics(self, timeout_ms: float | None = None) -> dict[str, list[PartitionInfo]]:
        """Every topic the cluster lists (internal ones included, as Java's ``listTopics``)
        -> its partitions, ordered by partition number. Raises
        :class:`~pyconsumer.errors.KafkaTimeoutError` after ``timeout_ms``
        (default.api.timeout.ms)."""
        return self._topic_metadata(None, timeout_ms)

    @_exclusive
    def partitions_for(self, topic: str, timeout_ms: float | None = None) -> list[PartitionInfo]:
        """Java ``partitionsFor``: the topic's partitions, or an empty list when it does not
        exist (it may be created if ``allow.auto.create.topics`` and the broker allow it)."""
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"topic must be a non-empty string, got {topic!r}")
        cached = None
        if self._client is not None and not self._client.metadata.update_requested():
            cached = self._client.metadata.partitions_for(topic)
        if cached:
            return cached
        return self._topic_metadata([topic], timeout_ms).get(topic, [])

    @_exclusive
    def partitions_for_topic(self, topic: str, timeout_ms: float | None = None) -> set[int] | None:
        """The topic's partition numbers, or None when the topic does not exist (the
        kafka-python/aiokafka convention; :meth:`partitions_for` gives Java's PartitionInfo
        list). Asks the cluster when the topic is not in the cached metadata.

        Asking may create the topic: the Metadata request carries ``allow.auto.create.topics``
        (true by default, as in Java), and a broker with ``auto.create.topics.enable=true``
        then creates a missing topic with its default partition count; this call waits until
        the new topic has leaders (or ``timeout_ms`` passes). With
        ``allow_auto_create_topics=False``, or a broker that does not auto-create, a missing
        topic gives None and nothing is created."""
        parts = self.partitions_for(topic, timeout_ms)
        return {p.partition for p in parts} if parts else None

    @_exclusive
    def negotiated_versions(self) -> dict[int, dict[str, int]]:
        """Node id -> {API name: version in use} for every broker connection that is up
        (bootstrap connections have negative node ids)."""
        if self._client is None:
            return {}
        return {n.node_id: self._client.negotiated_versions(n.node_id)
                for n in self._client.ready_nodes()}

    @_exclusive
    def finalized_features(self) -> dict[int, dict[str, int]]:
        """Node id -> {feature: finalized level} each connected broker advertised in its
        ApiVersions answer (Kafka's ``metadata.version`` and the like; empty for a broker that
        versions no features)."""
        if self._client is None:
            return {}
        return {n.node_id: self._client.finalized_features(n.node_id)
                for n in self._client.ready_nodes()}

    @_exclusive
    def list_topics(self, timeout_ms: float | None = None) -> dict[str, list[PartitionInfo]]:
        """Java's ``listTopics``: the same as :meth:`topics` (topic -> its partitions).
        kafka-python's ``topics()`` returns a set of names; ours returns this dict, whose keys
        are that set (``in``, iteration and ``len`` behave alike; ``set(consumer.topics())``
        gives the set itself)."""
        return self._topic_metadata(None, timeout_ms)

    @_exclusive
    def group_metadata(self) -> ConsumerGroupMetadata:
        """Java ``groupMetadata()``: the group id, the current generation and member id (-1
        and "" while there is no generation: before the first join completes, while
        rejoining, or with ``assign()``) and the ``group.instance.id``. Connects to nothing.
        Without a group.id: IllegalStateError (Java raises InvalidGroupIdException)."""
        if self._closed:
            raise IllegalStateError("this consumer is closed")
        group_id = self.config.group_id
        if group_id is None:
            raise IllegalStateError("group_metadata() needs a group.id: this consumer is not "
                                    "in a consumer group")
        generation, member_id = self._stable_generation()
        return ConsumerGroupMetadata(group_id, generation, member_id,
                                     self.config.group_instance_id)

    def _stable_generation(self) -> tuple[int, str]:
        """The generation and member id of the last completed join (Java updates its
        ConsumerGroupMetadata in onJoinComplete: a rebalance in progress still shows the
        previous generation); (-1, "") once the generation is lost or reset."""
        m = self._membership
        generation = (-1, "") if m is None else m.completed_generation()
        if generation is not None:
            self._last_generation = generation
        return self._last_generation

    @_exclusive
    def enforce_rebalance(self, reason: str | None = None) -> None:
        """Java ``enforceRebalance``: rejoin the group at the next poll(), which runs the
        rebalance (JoinGroup carries ``reason``, default "rebalance enforced by user", to
        brokers that take one, KIP-800). Returns at once. Does nothing for a consumer that
        uses ``assign()`` or has not subscribed yet; without a group.id: IllegalStateError
        (as Java)."""
        if self._closed:
            raise IllegalStateError("this consumer is closed")
        if self.config.group_id is None:
            raise IllegalStateError("enforce_rebalance() needs a group.id: this consumer is "
                                    "not in a consumer group")
        if reason is not None and not isinstance(reason, str):
            raise TypeError(f"reason must be a str or None, got {reason!r}")
        if self._membership is None or not self._subscriptions.has_auto_assignment:
            return
        self._membership.request_rejoin(reason or "rebalance enforced by user")

    # ------------------------------------------------------------------ assignment

    @_exclusive
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Read exactly these partitions (Java ``assign``); an empty list unassigns all.
        Partitions kept from the previous assignment keep their positions; buffered data of
        the others is dropped."""
        parts = [_as_tp(tp) for tp in partitions]
        client = self._network()
        if self._subscriptions.assign_from_user(parts):
            assert self._fetcher is not None
            assigned = set(parts)
            self._fetcher.clear_buffered(keep=lambda tp: tp in assigned)
            topics = {tp.topic for tp in parts}
            if topics - (client.metadata_topics or set()):
                client.metadata.request_update()
            client.metadata_topics = topics

    @_exclusive
    def subscribe(self, topics: Iterable[str] = (), pattern: str | re.Pattern[str] | None = None,
                  listener: Any = None) -> None:
        """Join the consumer group (group.id) and consume what it assigns: the given topics,
        or every topic whose whole name matches ``pattern``. ``listener`` may define
        ``on_partitions_revoked(set)``, ``on_partitions_assigned(set)`` and
        ``on_partitions_lost(set)`` (Java's ConsumerRebalanceListener); they run inside
        poll(). Mutually exclusive with assign()."""
        names = [topics] if isinstance(topics, str) else list(topics)
        if pattern is not None and names:
            raise ValueError("give topics or a pattern, not both")
        if pattern is None and not names:
            self.unsubscribe()
            return
        for t in names:
            if not isinstance(t, str) or not t.strip():
                raise ValueError(f"topic names must be non-empty strings, got {t!r}")
        if self.config.group_id is None:
            raise IllegalStateError("subscribe() needs a group.id: the group coordinator "
                                    "assigns the partitions")
        client = self._network()
        assert self._membership is not None
        if pattern is not None:
            compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
            if self.config.group_protocol == "consumer" and compiled.flags & ~re.UNICODE:
                # the broker evaluates the expression (RE2/J, as Java's SubscriptionPattern)
                raise ValueError(
                    f"pattern {compiled.pattern!r} has flags ({re.RegexFlag(compiled.flags)!r}): "
                    "with group.protocol=consumer the broker evaluates the regular expression "
                    "from its text alone; write them inline, e.g. '(?i)...'")
            # a classic member rejoins when the pattern's matches change (check_metadata)
            changed = False
            self._subscriptions.subscribe_pattern(compiled)
            client.metadata_topics = None            # watch every topic for matches
            client.metadata.request_update()
        else:
            changed = self._subscriptions.subscribe(names)
            client.metadata_topics = set(names)
            client.metadata.request_update()
        self._membership.on_subscribe(changed)
        self._membership.listener = listener
        self._membership.start_heartbeat_thread()

    @_exclusive
    def subscription(self) -> set[str]:
        """The subscribed topics (for a pattern: the topics it matches now)."""
        return set(self._subscriptions.subscription)

    @_exclusive
    def unsubscribe(self) -> None:
        """Leave the group (revoking the owned partitions) or drop a manual assignment."""
        if self._membership is not None and self._subscriptions.has_auto_assignment:
            self._leave("the consumer unsubscribed", time.monotonic() + 5)
        self._subscriptions.unsubscribe()
        if self._fetcher is not None:
            self._fetcher.clear_buffered()
        if self._client is not None:
            self._client.metadata_topics = set()

    def _leave(self, reason: str, deadline: float) -> None:
        m = self._membership
        if m is None:
            return
        owned = set(self._subscriptions.assigned_partitions())
        if owned:
            # Java onLeavePrepare: lost when the generation is already gone, else revoked
            method = "on_partitions_lost" if m.generation_lost() else "on_partitions_revoked"
            try:
                m.run_listener(method, owned)
            except Exception as e:   # the listener's error must not stop the leave
                log.warning("rebalance listener failed on leave: %s", e)
        m.stop_heartbeat_thread()
        m.maybe_leave(reason, deadline)

    @_exclusive
    def assignment(self) -> set[TopicPartition]:
        return set(self._subscriptions.assigned_partitions())

    # ------------------------------------------------------------------ positions

    def _assigned(self, partition: Any, what: str) -> TopicPartition:
        tp = _as_tp(partition)
        if not self._subscriptions.is_assigned(tp):
            raise IllegalStateError(f"No current assignment for partition {tp} ({what})")
        return tp

    @_exclusive
    def seek(self, partition: TopicPartition, offset: int | OffsetAndMetadata) -> None:
        """Fetch ``partition`` from ``offset`` on the next poll (Java ``seek``)."""
        epoch = None
        if isinstance(offset, OffsetAndMetadata):
            epoch = offset.leader_epoch
            offset = offset.offset
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"seek offset must be an int >= 0, got {offset!r}")
        tp = self._assigned(partition, "seek")
        leader_epoch = None
        if epoch is not None and self._client is not None:
            info = self._client.metadata.partition(tp)
            leader_epoch = None if info is None else info.leader_epoch
        self._subscriptions.seek(tp, offset, epoch, None, leader_epoch)

    @_exclusive
    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Move to the log start offset on the next poll or position() (all assigned
        partitions when none are given); evaluated lazily, as in Java."""
        self._seek_to(partitions, OffsetResetStrategy("earliest"))

    @_exclusive
    def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Move to the log end offset (the last stable offset under read_committed)."""
        self._seek_to(partitions, OffsetResetStrategy("latest"))

    def _seek_to(self, partitions: tuple[TopicPartition, ...], strategy: OffsetResetStrategy
                 ) -> None:
        parts = ([self._assigned(tp, "seek") for tp in partitions] if partitions
                 else self._subscriptions.assigned_partitions())
        for tp in parts:
            self._subscriptions.request_reset(tp, strategy)

    @_exclusive
    def position(self, partition: TopicPartition, timeout_ms: float | None = None) -> int:
        """The offset of the next record poll() will return for ``partition``, resolving a
        pending reset first (raises KafkaTimeoutError after ``timeout_ms``)."""
        tp = self._assigned(partition, "position")
        client, _, _ = self._parts()
        poll_loop = self._poll_loop
        assert poll_loop is not None
        deadline = deadline_after(self._timeout(timeout_ms))
        st = self._subscriptions.state(tp)

        def attempt() -> int:
            poll_loop.update_fetch_positions(deadline)
            if st.has_valid_position and st.position is not None:
                return st.position.offset
            # a reset or validation is in flight: wait for it (the loop's backoff is 0)
            client.poll(timeout_ms=min(remaining_ms(deadline), self.config.retry_backoff_ms),
                        until=lambda: st.has_valid_position)
            if st.has_valid_position and st.position is not None:
                return st.position.offset
            raise Retry(None, backoff=False)

        return retry_until(deadline, attempt, wait=lambda ms: None, backoff_ms=0,
                           timeout=lambda last: KafkaTimeoutError(
                               f"position of {tp} not determined within "
                               f"{self._timeout(timeout_ms):.0f} ms"))

    @_exclusive
    def current_lag(self, partition: TopicPartition) -> int | None:
        """Java ``currentLag``: high watermark (last stable offset under read_committed) minus
        the position, from the last fetch; None when not known yet."""
        tp = self._assigned(partition, "current_lag")
        st = self._subscriptions.state(tp)
        end = (st.last_stable_offset if self.config.isolation_level == "read_committed"
               else st.high_watermark)
        if end is None or st.position is None or not st.has_valid_position:
            return None
        return end - st.position.offset

    @_exclusive
    def highwater(self, partition: TopicPartition) -> int | None:
        """The high watermark of ``partition`` as the last fetch response reported it
        (kafka-python's ``highwater``); None before a fetch answered for it."""
        return self._subscriptions.state(self._assigned(partition, "highwater")).high_watermark

    @_exclusive
    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The last stable offset of ``partition`` as the last fetch response reported it
        (the end a read_committed consumer reads to); None before a fetch answered for it."""
        st = self._subscriptions.state(self._assigned(partition, "last_stable_offset"))
        return st.last_stable_offset

    @_exclusive
    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching these partitions until resume(); positions are kept."""
        for tp in partitions:
            self._subscriptions.pause(self._assigned(tp, "pause"))

    @_exclusive
    def resume(self, *partitions: TopicPartition) -> None:
        for tp in partitions:
            self._subscriptions.resume(self._assigned(tp, "resume"))

    @_exclusive
    def paused(self) -> set[TopicPartition]:
        return self._subscriptions.paused_partitions()

    # ------------------------------------------------------------------ offsets lookups

    @_exclusive
    def beginning_offsets(self, partitions: Iterable[TopicPartition],
                          timeout_ms: float | None = None) -> dict[TopicPartition, int]:
        """The log start offset of each partition."""
        return self._list(partitions, EARLIEST_TIMESTAMP, timeout_ms)

    @_exclusive
    def end_offsets(self, partitions: Iterable[TopicPartition],
                    timeout_ms: float | None = None) -> dict[TopicPartition, int]:
        """The log end offset (high watermark; last stable offset under read_committed)."""
        return self._list(partitions, LATEST_TIMESTAMP, timeout_ms)

    def _list(self, partitions: Iterable[TopicPartition], ts: int, timeout_ms: float | None
              ) -> dict[TopicPartition, int]:
        parts = [_as_tp(tp) for tp in partitions]
        _, _, offsets = self._parts()
        found = offsets.list_offsets({tp: ts for tp in parts}, self._timeout(timeout_ms))
        return {tp: (-1 if found.get(tp) is None else found[tp].offset)  # type: ignore[union-attr]
                for tp in parts}

    @_exclusive
    def offsets_for_times(self, timestamps: Mapping[TopicPartition, int],
                          timeout_ms: float | None = None
                          ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is >= the given one (ms since the epoch), per
        partition; None where no such record exists."""
        asked = {_as_tp(tp): ts for tp, ts in timestamps.items()}
        for tp, ts in asked.items():
            if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                raise ValueError(f"the timestamp for {tp} must be an int >= 0, got {ts!r}")
        _, _, offsets = self._parts()
        found = offsets.list_offsets(asked, self._timeout(timeout_ms))
        return {tp: (None if found.get(tp) is None else
                     OffsetAndTimestamp(*found[tp]))  # type: ignore[misc]
                for tp in asked}

    # ------------------------------------------------------------------ poll

    def wakeup(self) -> None:
        """Make the current (or next) blocking call raise WakeupError; the one method any
        thread may call."""
        client = self._client
        if client is not None:
            client.wakeup()
        else:
            self._wakeup_pending = True

    def _poll(self, timeout_ms: float, max_records: int | None,
              collector: Callable[[PollLoop], Collector[T, R]]) -> R:
        """The poll loop (:mod:`pyconsumer.consumer.poll`), once the arguments are checked,
        with the result shape ``collector`` makes for it."""
        limit = poll_limit(timeout_ms, max_records, self.config)
        self._network()
        poll_loop = self._poll_loop
        assert poll_loop is not None
        return poll_loop.run(timeout_ms, limit, collector(poll_loop))

    @_exclusive
    def poll(self, timeout_ms: int = 0, max_records: int | None = None
             ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records fetched for the assigned partitions, at most ``max_records``
        (max.poll.records), waiting up to ``timeout_ms`` for some; in offset order per
        partition, as the interceptors' ``on_consume`` left them. An empty result means no
        position moved (unless an interceptor filtered every record out).

        ``timeout_ms`` is an int of milliseconds (as kafka-python's): a float is refused
        with a TypeError, since ``poll(1.0)`` is confluent-kafka's "one second" and would
        otherwise wait 1 ms."""
        plan = self._typed
        interceptors = self._interceptors
        with self._metrics.poll_timer:
            if plan is None:
                return self._poll(timeout_ms, max_records,
                                  lambda _: RecordsCollector(interceptors))
            return self._poll(timeout_ms, max_records,
                              lambda loop: TypedRecordsCollector(plan, loop, interceptors))

    @_exclusive
    def poll_arrow(self, timeout_ms: int = 0, max_records: int | None = None, *,
                   include_headers: bool = False) -> pa.RecordBatch:
        """Like poll(), as one pyarrow.RecordBatch in Spark's Kafka source schema (rows of a
        partition in offset order, partitions one after another); no Python object per
        record. An empty batch (with the schema) when nothing arrived. Interceptors that define
        ``on_consume_arrow`` see the batch first; the others are skipped. ``timeout_ms`` is an
        int of milliseconds, as for poll().

        With ``value.format`` / ``key.format`` the columns are typed (a struct for json and
        avro, string for string), each partition's rows decoded on the decode threads, with
        the corrupt record column(s) of ``bad.records.mode`` PERMISSIVE after the others."""
        threads = self._decode_threads
        plan = self._typed
        interceptors = self._interceptors
        schema = self._arrow_schema
        with self._metrics.poll_timer:
            if plan is None:
                return self._poll(timeout_ms, max_records, lambda _: ArrowCollector(
                    threads, include_headers, schema, interceptors))
            return self._poll(timeout_ms, max_records, lambda loop: TypedArrowCollector(
                plan, loop, threads, include_headers, schema, interceptors))

    def _arrow_schema(self, include_headers: bool, topics: set[str] | None = None) -> pa.Schema:
        """poll_arrow()'s schema: Spark's Kafka schema, typed by the plan for ``topics`` (by
        default the assigned ones; an Avro reader from a subject may ask the registry once)."""
        base = kafka_arrow_schema(include_headers)
        plan = self._typed
        if plan is None:
            return base
        if topics is None:
            topics = {tp.topic for tp in self._subscriptions.assigned_partitions()} or set(
                self._subscriptions.subscription)
            if not topics and (plan.needs_topic("key") or plan.needs_topic("value")):
                # the reader is the subject of a topic, and no topic is known yet (a pattern
                # that matched none): there is no type to give, and no row either
                return base
        key = (include_headers, tuple(sorted(topics)))
        schema = self._typed_schemas.get(key)
        if schema is None:
            schema = self._typed_schemas[key] = plan.schema(base, key[1])
        return schema

    def metrics(self) -> dict[MetricName, float]:
        """The consumer's metrics now, by Java's names (Java ``metrics()``): MetricName(name,
        group, tags) -> value. See :mod:`pyconsumer.consumer.metrics` for what each one counts;
        ``pyconsumer.metrics.find(consumer.metrics(), "records-lag", partition="0")`` picks
        one. Any thread may call it, at any time (a monitoring thread while another polls,
        as Java allows): it reads without taking the consumer, so it never waits for a
        poll() in progress; values recorded at that very moment may or may not be in."""
        client = self._client
        return self._metrics.snapshot(self._subscriptions,
                                      0 if client is None else client.connection_count())

    def add_poll_listener(self, listener: PollListener) -> None:
        """Call ``listener.on_poll(event)`` at the end of every poll() and poll_arrow() from
        the next one on, with a :class:`~pyconsumer.metrics.polls.PollEvent` (the call's
        duration, the records it handed out per partition, what it raised). Any thread; the
        listener runs on the polling thread, and what it raises is logged, not raised. The
        hook of the exporters in :mod:`pyconsumer.metrics.otel`."""
        self._metrics.add_listener(listener)

    def remove_poll_listener(self, listener: PollListener) -> None:
        """Stop calling ``listener`` (ValueError if it was never added). Any thread."""
        self._metrics.remove_listener(listener)

    @property
    def group_id(self) -> str | None:
        """The ``group.id`` setting (None without one)."""
        return self.config.group_id

    def __iter__(self) -> Iterator[ConsumerRecord]:
        """Records forever (until wakeup() or close()), poll by poll."""
        while not self._closed:
            for records in self.poll(timeout_ms=self.config.fetch_max_wait_ms).values():
                yield from records

    # ------------------------------------------------------------------ commits

    def _group(self, what: str) -> ConsumerCoordinator:
        self._network()
        if self._coordinator is None:
            raise IllegalStateError(f"{what} needs a group.id: committed offsets belong to a "
                                    "consumer group")
        return self._coordinator

    def _all_consumed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The position of every assigned partition that has one (Java allConsumed)."""
        out = {}
        for tp in self._subscriptions.assigned_partitions():
            st = self._subscriptions.state(tp)
            if st.has_valid_position and st.position is not None:
                out[tp] = OffsetAndMetadata(st.position.offset, "", st.position.offset_epoch)
        return out

    def _offsets_arg(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None
                     ) -> dict[TopicPartition, OffsetAndMetadata]:
        if offsets is None:
            return self._all_consumed()
        out = {}
        for tp, om in offsets.items():
            tp = _as_tp(tp)
            if isinstance(om, int) and not isinstance(om, bool):
                om = OffsetAndMetadata(om)
            if not isinstance(om, OffsetAndMetadata) or om.offset < 0:
                raise ValueError(f"the offset to commit for {tp} must be an OffsetAndMetadata "
                                 f"or int >= 0, got {om!r}")
            out[tp] = om
        return out

    @_exclusive
    def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
               timeout_ms: float | None = None) -> None:
        """Commit ``offsets`` (default: the position of every assigned partition, i.e. what
        poll() has returned) and wait for the answer, retrying retriable errors until
        ``timeout_ms`` (default.api.timeout.ms). Java ``commitSync``."""
        coordinator = self._group("commit()")
        todo = self._offsets_arg(offsets)
        deadline = time.monotonic() + self._timeout(timeout_ms) / 1000.0
        coordinator.commit_sync(todo, deadline)

    @_exclusive
    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """Commit without waiting; ``callback(offsets, error_or_None)`` runs from a later
        poll(), commit() or close(), in the order the commits were made."""
        coordinator = self._group("commit_async()")
        coordinator.commit_async(self._offsets_arg(offsets), callback)
        assert self._client is not None
        self._client.poll(timeout_ms=0)

    @_exclusive
    def committed(self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
                  ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offset of each partition (None where there is none)."""
        parts = [_as_tp(tp) for tp in partitions]
        coordinator = self._group("committed()")
        deadline = time.monotonic() + self._timeout(timeout_ms) / 1000.0
        return coordinator.fetch_committed(parts, deadline)

    @_exclusive
    def close(self, timeout_ms: float | None = None) -> None:
        """Close the consumer: with enable.auto.commit, commit the consumed positions first
        (waiting at most ``timeout_ms``, 30 s by default as in Java); a subscribed member then
        revokes its partitions (listener) and leaves the group (a static member keeps its
        session); pending commit callbacks run; every connection closes. Idempotent."""
        if self._closed:
            return
        try:
            if self._coordinator is not None and self._client is not None:
                self._client.clear_wakeup()     # closing is not interrupted by a wakeup
                deadline = time.monotonic() + (30_000 if timeout_ms is None
                                               else timeout_ms) / 1000.0
                try:
                    if self.config.enable_auto_commit:
                        self._coordinator.commit_sync(self._all_consumed(), deadline)
                except KafkaError as e:
                    log.warning("closing: the final commit failed: %s", e)
                try:
                    if self._subscriptions.has_auto_assignment:
                        self._leave("the consumer is being closed", deadline)
                    coordinator = self._coordinator
                    if coordinator.async_commits_pending():
                        self._client.poll(
                            timeout_ms=max(0.0, (deadline - time.monotonic()) * 1000.0),
                            until=lambda: not coordinator.async_commits_pending())
                    coordinator.invoke_completed_callbacks()
                except KafkaError as e:
                    log.warning("closing: %s", e)
            if self._fetcher is not None and self._client is not None:
                try:                            # brokers free the fetch sessions at once
                    self._client.clear_wakeup()
                    self._fetcher.close_sessions(min(1000.0, self._timeout(timeout_ms)))
                except KafkaError as e:
                    log.debug("closing fetch sessions: %s", e)
        finally:
            self._closed = True
            self._interceptors.close()
            if self._membership is not None:
                self._membership.close()
            if self._client is not None:
                self._client.close()
                self._client = None

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> KafkaConsumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<KafkaConsumer client_id={self.config.client_id!r} {state}>"


def _weak(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` called through a weak reference to its consumer. The poll loop and the
    group membership live as long as the consumer; a bound method handed to them would tie
    them into a cycle with it, and every closed consumer's partition state (thousands of
    objects at thousands of partitions) would wait for the cyclic collector, whose full
    passes over a larger heap then cost tens of ms a read (issue 26)."""
    ref = weakref.WeakMethod(method)

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        bound = ref()
        if bound is None:
            raise IllegalStateError("the consumer these parts belonged to is gone")
        return bound(*args, **kwargs)

    return call


def _typed_values(config: ConsumerConfig) -> TypedValues | None:
    """The decoding plan of value.format / key.format (None when both are binary). Every
    setting is checked here, so a bad DDL, an Avro schema that does not parse or avro without
    schema.registry.url is a ConfigurationError naming it when the consumer is built."""
    settings: dict[str, Any] = {
        "value.format": config.value_format,
        "key.format": config.key_format,
        "value.schema": config.value_schema,
        "key.schema": config.key_schema,
        "value.subject": config.value_subject,
        "key.subject": config.key_subject,
        "value.avro.framing": config.value_avro_framing,
        "key.avro.framing": config.key_avro_framing,
        "value.protobuf.framing": config.value_protobuf_framing,
        "key.protobuf.framing": config.key_protobuf_framing,
        "value.protobuf.message": config.value_protobuf_message,
        "key.protobuf.message": config.key_protobuf_message,
        "value.protobuf.descriptor.file": config.value_protobuf_descriptor_file,
        "key.protobuf.descriptor.file": config.key_protobuf_descriptor_file,
        # False is the default: passed only when set, so the other formats see no option
        "value.protobuf.enums.as.ints": config.value_protobuf_enums_as_ints or None,
        "key.protobuf.enums.as.ints": config.key_protobuf_enums_as_ints or None,
        "value.protobuf.emit.default.values": config.value_protobuf_emit_default_values or None,
        "key.protobuf.emit.default.values": config.key_protobuf_emit_default_values or None,
        "value.subject.name.strategy": config.value_subject_name_strategy,
        "key.subject.name.strategy": config.key_subject_name_strategy,
        "bad.records.mode": config.bad_records_mode,
        "corrupt.record.column": config.corrupt_record_column,
        "schema.registry.url": config.schema_registry_url,
        "schema.registry.basic.auth.user.info": config.schema_registry_basic_auth_user_info,
        "schema.registry.basic.auth.credentials.source":
            config.schema_registry_basic_auth_credentials_source,
        "schema.registry.bearer.auth.token": config.schema_registry_bearer_auth_token,
        "schema.registry.bearer.auth.credentials.source":
            config.schema_registry_bearer_auth_credentials_source,
        "schema.registry.bearer.auth.issuer.endpoint.url": config.schema_registry_bearer_auth_issuer_endpoint_url,
        "schema.registry.bearer.auth.client.id": config.schema_registry_bearer_auth_client_id,
        "schema.registry.bearer.auth.client.secret": config.schema_registry_bearer_auth_client_secret,
        "schema.registry.bearer.auth.scope": config.schema_registry_bearer_auth_scope,
        "schema.registry.bearer.auth.scope.claim.name": config.schema_registry_bearer_auth_scope_claim_name,
        "schema.registry.bearer.auth.sub.claim.name": config.schema_registry_bearer_auth_sub_claim_name,
        "schema.registry.bearer.auth.logical.cluster": config.schema_registry_bearer_auth_logical_cluster,
        "schema.registry.bearer.auth.identity.pool.id": config.schema_registry_bearer_auth_identity_pool_id,
        "schema.registry.ssl.ca.location": config.schema_registry_ssl_ca_location,
        "schema.registry.ssl.certificate.location": config.schema_registry_ssl_certificate_location,
        "schema.registry.ssl.key.location": config.schema_registry_ssl_key_location,
        "schema.registry.ssl.key.password": config.schema_registry_ssl_key_password,
        "schema.registry.timeout": config.schema_registry_timeout,
        "schema.registry.max.retries": config.schema_registry_max_retries,
        "schema.registry.retries.wait.ms": config.schema_registry_retries_wait_ms,
        "schema.registry.retries.max.wait.ms": config.schema_registry_retries_max_wait_ms,
    }
    return TypedValues.from_settings(settings)


def _resolve_bootstrap(config: ConsumerConfig) -> list[tuple[str, int]] | None:
    """bootstrap.resolve.timeout.ms=0 (the default, Java's behaviour before KIP-909): the
    bootstrap hosts are resolved when the consumer is built. A host that does not resolve
    is dropped with a WARNING; none resolving is a ConfigurationError naming them (Java's
    ConfigException "No resolvable bootstrap urls"). > 0: None, the network client resolves
    them on first use, within that time."""
    if config.bootstrap_resolve_timeout_ms > 0:
        return None
    if config.client_dns_lookup == "resolve_canonical_bootstrap_servers_only":
        return canonical_bootstrap_servers(config.bootstrap_servers)
    resolved, failed = resolve_bootstrap_servers(config.bootstrap_servers)
    if not resolved:
        raise ConfigurationError(
            f"no bootstrap.servers entry resolves: {unresolved_text(failed)} (with "
            f"bootstrap.resolve.timeout.ms > 0 the consumer would keep trying for that long)")
    if failed:
        log.warning("bootstrap.servers: %s did not resolve and will not be used",
                    unresolved_text(failed))
    return resolved


def _as_tp(tp: Any) -> TopicPartition:
    if isinstance(tp, TopicPartition):
        return tp
    if isinstance(tp, tuple) and len(tp) == 2 and isinstance(tp[0], str) \
            and isinstance(tp[1], int) and not isinstance(tp[1], bool):
        return TopicPartition(tp[0], tp[1])
    raise TypeError(f"expected a TopicPartition, got {tp!r}")
