"""ListOffsets: offsets by timestamp, log start/end offsets, and position resets.

Java's ``OffsetFetcher``: requests go to each partition's leader, one per leader node; a
partition whose leader is unknown or whose answer is a retriable error (leader moved, not
available, unknown topic) is retried after a metadata refresh until the caller's deadline.
Position resets (``auto.offset.reset``, ``seek_to_beginning``/``seek_to_end``) run in the
background of ``poll()`` and are applied only if the partition still awaits that very reset.
"""
from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from pyconsumer.config import ConsumerConfig, OffsetResetStrategy
from pyconsumer.consumer.partition_errors import PartitionAction, classify
from pyconsumer.consumer.subscription import FetchState, SubscriptionState
from pyconsumer.errors import (
    KafkaError,
    KafkaTimeoutError,
    LogTruncationError,
    NoOffsetForPartitionError,
    error_for_code,
)
from pyconsumer.net.client import NetworkClient
from pyconsumer.net.connection import Response
from pyconsumer.net.deadline import Retry, deadline_after, remaining_ms, retry_until
from pyconsumer.net.future import Future
from pyconsumer.net.responses import body_of
from pyconsumer.protocol import ApiKey
from pyconsumer.protocol.bodies import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
)
from pyconsumer.structs import TopicPartition

if TYPE_CHECKING:
    from pyconsumer.protocol.bodies import OffsetForLeaderEpochResponseEpochEndOffset

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1


class OffsetAndTimestamp(NamedTuple):
    """Java ``OffsetAndTimestamp``: the first offset whose timestamp is >= the one asked."""

    offset: int
    timestamp: int
    leader_epoch: int | None = None


class ListedOffset(NamedTuple):
    offset: int
    timestamp: int
    leader_epoch: int | None


def strategy_timestamp(strategy: OffsetResetStrategy, now_ms: int | None = None) -> int:
    if strategy.kind == "earliest":
        return EARLIEST_TIMESTAMP
    if strategy.kind == "latest":
        return LATEST_TIMESTAMP
    if strategy.kind == "by_duration":
        assert strategy.duration_ms is not None
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        return now_ms - strategy.duration_ms
    raise ValueError(f"no timestamp for reset strategy {strategy.kind}")


class _Outcome:
    """What one round of ListOffsets requests gave: offsets, partitions to retry, a fatal error."""

    def __init__(self) -> None:
        self.offsets: dict[TopicPartition, ListedOffset | None] = {}
        self.retry: set[TopicPartition] = set()
        #: of ``retry``: no leader known, nothing was sent (waits for the metadata, not a backoff)
        self.no_leader: set[TopicPartition] = set()
        self.error: KafkaError | None = None
        self.last_retriable: KafkaError | None = None


class _LeaderRequest:
    """The partitions of one ListOffsets request (one leader): their entries grouped by topic
    as the request lists them, and each topic's partitions by index, to read the answer
    without making a TopicPartition per answered partition."""

    __slots__ = ("asked", "entries", "by_topic")

    def __init__(self) -> None:
        self.asked: dict[TopicPartition, int] = {}
        self.entries: dict[str, list[ListOffsetsPartition]] = {}
        self.by_topic: dict[str, dict[int, TopicPartition]] = {}

    def add(self, tp: TopicPartition, timestamp: int, epoch: int) -> None:
        self.asked[tp] = timestamp
        entries = self.entries.get(tp.topic)
        if entries is None:
            entries = self.entries[tp.topic] = []
            self.by_topic[tp.topic] = {}
        entries.append({"partition_index": tp.partition, "timestamp": timestamp,
                        "current_leader_epoch": epoch, "max_num_offsets": 1})
        self.by_topic[tp.topic][tp.partition] = tp


class OffsetsClient:
    def __init__(self, client: NetworkClient, config: ConsumerConfig,
                 subscriptions: SubscriptionState) -> None:
        self.client = client
        self.config = config
        self.subscriptions = subscriptions
        self._isolation = 1 if config.isolation_level == "read_committed" else 0
        self._resets_in_flight: set[TopicPartition] = set()
        self._reset_error: KafkaError | None = None
        #: bumped whenever a background reset or validation round completes (poll waits on it)
        self.resets_completed = 0
        self._validations_in_flight: set[TopicPartition] = set()

    # ------------------------------------------------------------------ one round

    def _send_round(self, timestamps: Mapping[TopicPartition, int],
                    on_done: Callable[[_Outcome], None]) -> list[Future[Response]]:
        """Send one ListOffsets per leader for ``timestamps``; ``on_done`` gets the outcome
        when every request has completed (or at once if nothing could be sent).

        One pass over the partitions: each one's leader and epoch are looked up once and its
        entry goes straight into its leader's request, grouped by topic (issue 26)."""
        outcome = _Outcome()
        by_node: dict[int, _LeaderRequest] = {}
        topics_of = self.client.metadata.topics
        for tp, ts in timestamps.items():
            t = topics_of.get(tp.topic)
            info = None if t is None else t.partitions.get(tp.partition)
            if info is None or info.leader < 0:
                outcome.retry.add(tp)
                outcome.no_leader.add(tp)
                self.client.metadata.request_update()
                continue
            req = by_node.get(info.leader)
            if req is None:
                req = by_node[info.leader] = _LeaderRequest()
            req.add(tp, ts, -1 if info.leader_epoch is None else info.leader_epoch)
        futures: list[Future[Response]] = []
        pending = [len(by_node)]
        if not by_node:
            on_done(outcome)
            return futures

        for node, req in by_node.items():
            fut = self.client.send(node, ApiKey.LIST_OFFSETS, self._body(req))

            def handle(f: Future[Response], req: _LeaderRequest = req) -> None:
                if f.failed():
                    assert f.exception is not None
                    outcome.retry.update(req.asked)
                    if isinstance(f.exception, KafkaError):
                        outcome.last_retriable = f.exception
                    self.client.metadata.request_update()
                else:
                    assert f.value is not None
                    self._parse(f.value, req, outcome)
                pending[0] -= 1
                if pending[0] == 0:
                    on_done(outcome)

            fut.add_callback(handle)
            futures.append(fut)
        return futures

    def _body(self, req: _LeaderRequest) -> Callable[[int], ListOffsetsRequest]:
        topics: list[ListOffsetsTopic] = [{"name": t, "partitions": ps} for t, ps in req.entries.items()]
        timeout = self.config.request_timeout_ms

        def body(version: int) -> ListOffsetsRequest:
            return {"replica_id": -1, "isolation_level": self._isolation, "timeout_ms": timeout,
                    "topics": topics}
        return body

    def _parse(self, response: Response, req: _LeaderRequest, outcome: _Outcome) -> None:
        seen: set[TopicPartition] = set()
        asked_in = req.by_topic
        offsets = outcome.offsets
        for t in body_of(response, ApiKey.LIST_OFFSETS)["topics"]:
            asked = asked_in.get(t["name"])
            if asked is None:
                continue
            for p in t["partitions"]:
                tp = asked.get(p["partition_index"])
                if tp is None:
                    continue
                seen.add(tp)
                code = p["error_code"]
                action = PartitionAction.NONE if not code else classify(ApiKey.LIST_OFFSETS,
                                                                        code)
                if action is PartitionAction.NONE:
                    if response.version == 0:
                        olds = p.get("old_style_offsets") or []
                        offset, ts = (olds[0] if olds else -1), -1
                    else:
                        offset, ts = p["offset"], p["timestamp"]
                    epoch = p.get("leader_epoch", -1)
                    offsets[tp] = (None if offset < 0 else
                                   ListedOffset(offset, ts, None if epoch < 0 else epoch))
                elif action is PartitionAction.NO_OFFSET:
                    offsets[tp] = None           # pre-0.10 data: no timestamp search
                elif action is PartitionAction.FATAL:
                    outcome.error = error_for_code(code, f"topic {tp.topic}")
                else:                            # REFRESH_METADATA: every other code
                    err = error_for_code(code, f"ListOffsets for {tp}")
                    assert err is not None
                    log.debug("ListOffsets for %s: %s; retrying", tp, err)
                    outcome.last_retriable = err
                    outcome.retry.add(tp)
                    self.client.metadata.request_update()
        if len(seen) != len(req.asked):
            outcome.retry.update(tp for tp in req.asked if tp not in seen)

    # ------------------------------------------------------------------ blocking lookups

    def list_offsets(self, timestamps: Mapping[TopicPartition, int], timeout_ms: float
                     ) -> dict[TopicPartition, ListedOffset | None]:
        """Offsets for ``{tp: timestamp}`` (-2 earliest, -1 latest), retried until
        ``timeout_ms``; raises :class:`KafkaTimeoutError` naming the partitions left."""
        remaining = dict(timestamps)
        result: dict[TopicPartition, ListedOffset | None] = {}
        deadline = deadline_after(timeout_ms)
        self._watch_topics(tp.topic for tp in remaining)

        def attempt() -> dict[TopicPartition, ListedOffset | None]:
            nonlocal remaining
            done: list[_Outcome] = []
            for fut in self._send_round(remaining, done.append):
                self.client.poll(timeout_ms=remaining_ms(deadline), future=fut)
            if not done:
                raise Retry(None)
            outcome = done[0]
            if outcome.error is not None:
                raise outcome.error
            result.update(outcome.offsets)
            remaining = {tp: remaining[tp] for tp in outcome.retry}
            if remaining:
                # let the metadata refresh (leader moved...) land, then ask again
                raise Retry(outcome.last_retriable)
            return result

        def timeout(last: KafkaError | None) -> KafkaTimeoutError:
            names = ", ".join(sorted(str(tp) for tp in remaining))
            return KafkaTimeoutError(f"offsets for {names} not received within {timeout_ms:.0f} ms"
                                     + (f" (last error: {last})" if last else ""))

        return retry_until(deadline, attempt, wait=lambda ms: self.client.poll(timeout_ms=ms),
                           backoff_ms=self.config.retry_backoff_ms,
                           backoff_max_ms=self.config.retry_backoff_max_ms, timeout=timeout)

    def _watch_topics(self, topics: Iterable[str]) -> None:
        watched = self.client.metadata_topics
        new = set(topics) - (watched or set())
        if watched is not None and new:
            watched.update(new)
            self.client.metadata.request_update()

    # ------------------------------------------------------------------ resets (async)

    def reset_positions_if_needed(self) -> None:
        """Start ListOffsets for partitions awaiting a reset (raises for strategy none)."""
        if self._resets_in_flight and self.subscriptions.all_unsettled_in(self._resets_in_flight):
            return      # every partition waiting for a position has its ListOffsets out
        now = time.monotonic()
        needing = [tp for tp in self.subscriptions.partitions_needing_reset(now)
                   if tp not in self._resets_in_flight]
        if not needing:
            return
        default = self.subscriptions.default_reset
        state = self.subscriptions.state
        strategies = {tp: state(tp).reset_strategy or default for tp in needing}
        no_strategy = [tp for tp, s in strategies.items() if s.kind == "none"]
        if no_strategy:
            names = ", ".join(str(tp) for tp in no_strategy)
            raise NoOffsetForPartitionError(
                f"Undefined offset with no reset policy for partitions: {names} "
                "(auto.offset.reset=none)", no_strategy)
        topics_of = self.client.metadata.topics
        if not any(tp.topic in topics_of for tp in needing):
            # no leader can be known yet (the consumer's first polls, before any metadata):
            # nothing to send, and a round would only mark every partition to retry (the
            # metadata's answer wakes the poll, which comes back here)
            self.client.metadata.request_update()
            return
        timestamps = {tp: strategy_timestamp(s) for tp, s in strategies.items()}
        self._resets_in_flight.update(timestamps)

        def done(outcome: _Outcome) -> None:
            self.resets_completed += 1
            self._resets_in_flight.difference_update(timestamps)
            retry_at = time.monotonic() + self.config.retry_backoff_ms / 1000.0
            topics_of = self.client.metadata.topics
            seek = self.subscriptions.maybe_seek_unvalidated
            logged = log.isEnabledFor(logging.INFO)   # asked once, not per partition
            for tp, listed in outcome.offsets.items():
                strategy = strategies[tp]
                if listed is None:
                    if strategy.kind == "by_duration":
                        # no record at or after that time: Java falls back to latest
                        self.subscriptions.request_reset(tp, OffsetResetStrategy("latest"))
                    else:
                        outcome.retry.add(tp)
                    continue
                t = topics_of.get(tp.topic)
                info = None if t is None else t.partitions.get(tp.partition)
                leader, epoch = (None, None) if info is None or info.leader < 0 \
                    else (info.leader, info.leader_epoch)
                if seek(tp, listed.offset, strategy, epoch, leader) and logged:
                    log.info("reset the offset of %s to %d (%s)", tp, listed.offset,
                             strategy.kind)
            for tp in outcome.retry:
                if self.subscriptions.is_assigned(tp):
                    # a partition whose leader was unknown asked nothing: it goes as soon as
                    # the metadata names one (poll() wakes for that), not a backoff later
                    self.subscriptions.state(tp).next_retry_time = (
                        None if tp in outcome.no_leader else retry_at)
            if outcome.error is not None:
                self._reset_error = outcome.error

        self._send_round(timestamps, done)

    # ------------------------------------------------------------------ validation (KIP-320)

    def validate_positions_if_needed(self) -> None:
        """Check positions in AWAIT_VALIDATION against their leader with OffsetForLeaderEpoch
        (v3+): the epoch of the last record consumed must still end at or after the position,
        or the log was truncated under us. A leader that cannot answer (no v3) is trusted, as
        in Java."""
        subs = self.subscriptions
        now = time.monotonic()
        metadata = self.client.metadata
        by_node: dict[int, dict[TopicPartition, tuple[int, int, int]]] = defaultdict(dict)
        for tp in subs.partitions_needing_validation(now):
            if tp in self._validations_in_flight:
                continue
            st = subs.state(tp)
            position = st.position
            info = metadata.partition(tp)
            if position is None or position.offset_epoch is None:
                subs.complete_validation(tp)
                continue
            if info is None or info.leader < 0:
                metadata.request_update()
                continue
            if not self.client.ready(info.leader):
                continue                      # connecting: its versions are not known yet
            conn = self.client.connection(info.leader)
            assert conn is not None
            theirs = conn.broker_versions.get(int(ApiKey.OFFSET_FOR_LEADER_EPOCH))
            if theirs is None or theirs[1] < 3:
                subs.complete_validation(tp)  # the broker cannot tell: trust the position
                continue
            current = -1 if info.leader_epoch is None else info.leader_epoch
            by_node[info.leader][tp] = (position.offset, position.offset_epoch, current)
        for node, part in by_node.items():
            self._send_validation(node, part)

    def _send_validation(self, node: int, part: dict[TopicPartition, tuple[int, int, int]]
                         ) -> None:
        topics: dict[str, list[OffsetForLeaderPartition]] = defaultdict(list)
        for tp, (_, epoch, current) in part.items():
            topics[tp.topic].append({"partition": tp.partition, "current_leader_epoch": current,
                                     "leader_epoch": epoch})
        body: OffsetForLeaderEpochRequest = {
            "replica_id": -1, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
        self._validations_in_flight.update(part)
        fut = self.client.send(node, ApiKey.OFFSET_FOR_LEADER_EPOCH, body)

        def done(f: Future[Response]) -> None:
            self.resets_completed += 1
            self._validations_in_flight.difference_update(part)
            retry_at = time.monotonic() + self.config.retry_backoff_ms / 1000.0
            subs = self.subscriptions
            answered: set[TopicPartition] = set()
            if f.succeeded():
                assert f.value is not None
                for t in body_of(f.value, ApiKey.OFFSET_FOR_LEADER_EPOCH)["topics"]:
                    for p in t["partitions"]:
                        tp = TopicPartition(t["topic"], p["partition"])
                        if tp in part:
                            answered.add(tp)
                            self._apply_validation(tp, part[tp][0], p)
            else:
                self.client.metadata.request_update()
            for tp in set(part) - answered:
                if subs.is_assigned(tp):
                    subs.state(tp).next_retry_time = retry_at

        fut.add_callback(done)

    def _apply_validation(self, tp: TopicPartition, asked_offset: int,
                          p: OffsetForLeaderEpochResponseEpochEndOffset) -> None:
        subs = self.subscriptions
        if not subs.is_assigned(tp):
            return
        st = subs.state(tp)
        if st.fetch_state is not FetchState.AWAIT_VALIDATION or st.position is None \
                or st.position.offset != asked_offset:
            return                            # moved meanwhile (a seek wins)
        code = p["error_code"]
        action = classify(ApiKey.OFFSET_FOR_LEADER_EPOCH, code)
        if action is not PartitionAction.NONE:
            err = error_for_code(code, f"OffsetForLeaderEpoch for {tp}")
            assert err is not None
            if action is PartitionAction.REFRESH_METADATA:
                self.client.metadata.request_update()
                st.next_retry_time = time.monotonic() + self.config.retry_backoff_ms / 1000.0
            else:
                self._reset_error = err
            return
        end_offset, epoch = p.get("end_offset", -1), p.get("leader_epoch", -1)
        if end_offset < 0 or epoch < 0:
            # the leader knows nothing of that epoch (log start moved past it): reset
            log.info("%s: the leader has no end offset for epoch %s; resetting", tp,
                     st.position.offset_epoch)
            subs.request_reset(tp)
        elif end_offset < asked_offset:
            if subs.default_reset.kind != "none":
                log.warning("truncation detected for %s: position %d is past the end (%d) of "
                            "leader epoch %d; resetting to the first offset known to diverge",
                            tp, asked_offset, end_offset, epoch)
                subs.seek_validated(tp, end_offset, epoch)
            else:
                self._reset_error = LogTruncationError(
                    f"Truncated partition detected: {tp} was fetched up to {asked_offset} but "
                    f"the leader's epoch {epoch} ends at {end_offset} (auto.offset.reset=none)",
                    {tp: OffsetAndTimestamp(end_offset, -1, epoch)})
        else:
            subs.complete_validation(tp)

    def raise_reset_error(self) -> None:
        """A fatal error of a background reset (e.g. authorization), raised once by poll."""
        err, self._reset_error = self._reset_error, None
        if err is not None:
            raise err


__all__ = ["EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "ListedOffset", "OffsetAndTimestamp",
           "OffsetsClient", "strategy_timestamp"]
