"""The poll loop: what one ``poll()`` / ``poll_arrow()`` call does between the facade and the
wings (Java ``KafkaConsumer.poll`` / ``updateAssignmentMetadataIfNeeded``).

Each round runs deferred callbacks and completed commits' callbacks, drives the group
membership (join, reconcile, metadata checks) and auto-commit, gives every assigned partition
a position (committed offsets, then ``auto.offset.reset`` and leader validation), prefetches,
drains what the fetch wing buffered, and otherwise sends fetches and waits for news: data, a
finished reset, a failed fetch, a metadata answer or group work. Positions count as delivered
only once the caller's ``build`` returned; any exception before rolls them back.
"""
from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.fetch import Fetcher
from pyconsumer.consumer.group.coordinator import ConsumerCoordinator
from pyconsumer.consumer.group.membership import Membership
from pyconsumer.consumer.offsets import OffsetsClient
from pyconsumer.consumer.subscription import (
    FetchPosition,
    FetchState,
    SubscriptionState,
    SubscriptionType,
)
from pyconsumer.errors import ErrorCode, IllegalStateError, KafkaTimeoutError
from pyconsumer.net.client import NetworkClient
from pyconsumer.records import CompletedFetch
from pyconsumer.structs import OffsetAndMetadata, TopicPartition

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger(__name__)

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
        #: metadata update_version last checked for assigned partitions it does not list
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
        for tp in subs.assigned_partitions():
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

    def _warn_unknown_partitions(self, client: NetworkClient) -> None:
        """An assigned partition the metadata does not list gets no data; the client keeps
        asking for metadata (Java waits for the partition too). Say so at WARNING, once per
        metadata answer that names its topic (as missing, or without that partition)."""
        metadata = client.metadata
        if metadata.update_version == self._unknown_checked:
            return
        self._unknown_checked = metadata.update_version
        # each topic's partitions looked up once: a scan per assigned partition is quadratic
        known: dict[str, tuple[int, set[int]] | None] = {}
        for tp in sorted(self._subscriptions.assigned_partitions()):
            if tp.topic not in known:
                listed = metadata.partitions_for(tp.topic)
                known[tp.topic] = None if listed is None else (
                    len(listed), {p.partition for p in listed})
            parts = known[tp.topic]
            if parts is not None:
                if tp.partition not in parts[1]:
                    log.warning("partition %s does not exist in the metadata (topic %s has "
                                "%d partitions); retrying", tp, tp.topic, parts[0])
            elif metadata.topic_errors.get(tp.topic) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                log.warning("partition %s does not exist in the metadata (no topic %s); "
                            "retrying", tp, tp.topic)

    # ------------------------------------------------------------------ the loop

    def run(self, timeout_ms: float, limit: int,
            take: Callable[[CompletedFetch, int], T], count: Callable[[T], int],
            build: Callable[[list[tuple[TopicPartition, T]]], R], threads: int = 1) -> R:
        """One poll: ``build`` shapes what was drained into the result. Positions count as
        delivered only once ``build`` returned: any exception before rolls them back.
        ``threads``: how many cursors ``take`` may run on at once (see Fetcher.drain). The
        arguments were checked with :func:`poll_limit`."""
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
                chunks = fetcher.drain(limit, take, count, threads=threads)
                if chunks or final:
                    # pipeline: the next fetch travels while the caller works on these (a
                    # wakeup() now is for the next call: these records are returned)
                    if chunks and fetcher.send_fetches():
                        client.poll(timeout_ms=0, wakeup=False)
                    return build(chunks)
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
            metadata = client.metadata.update_version
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
                    and self._client.metadata.update_version != metadata)
                or (self._membership is not None and self._membership.attention()))


__all__ = ["PollLoop", "check_poll_timeout", "poll_limit"]
