"""The cluster metadata cache: brokers, topics, partitions, leaders and leader epochs.

Filled from Metadata responses (Java ``Metadata`` + ``MetadataCache``). A partition whose new
leader epoch is older than the cached one is kept as it was: the answering broker has not yet
heard of the newer leader (KIP-320), and trusting it would send fetches back to a stale leader.
The cache is refreshed when older than ``metadata.max.age.ms`` or when someone asked for an
update (a NOT_LEADER error, a disconnect, a new subscription), but never sooner than the
refresh backoff after the previous attempt (Java ``Metadata.timeToAllowUpdate``, KIP-580):
``retry.backoff.ms``, doubling up to ``retry.backoff.max.ms`` while attempts fail or answers
change nothing. Without it a client whose brokers are down, or whose answer still lacks a
leader, would ask again on every turn of its loop.
"""
from __future__ import annotations

import hashlib
import marshal
import time
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pyconsumer.errors import ErrorCode, KafkaError, error_for_code
from pyconsumer.net.backoff import ExponentialBackoff
from pyconsumer.structs import BrokerInfo, PartitionInfo, TopicPartition, tuple_maker

if TYPE_CHECKING:
    from pyconsumer.protocol.bodies import MetadataResponse

_ZERO_UUID = uuid.UUID(int=0)
_new_info = tuple_maker(PartitionInfo)      # thousands per answer: made in C


class TopicMetadata:
    __slots__ = ("name", "topic_id", "is_internal", "partitions", "digest")

    def __init__(self, name: str, topic_id: uuid.UUID | None, is_internal: bool,
                 partitions: dict[int, PartitionInfo], digest: bytes | None = None) -> None:
        self.name = name
        self.topic_id = topic_id
        self.is_internal = is_internal
        self.partitions = partitions
        #: digest of the answer's partitions these were built from, when every one of them
        #: was taken as answered (none kept back as stale): the same answer again is known
        #: without looking at each partition
        self.digest = digest

    def __repr__(self) -> str:
        return f"TopicMetadata({self.name!r}, {len(self.partitions)} partitions)"


def _digest(partitions: list[Any]) -> bytes | None:
    """A digest of a topic's decoded partitions (dicts of ints and int lists), None when they
    hold something marshal cannot write. Equal digests mean equal answers: marshal's bytes
    read back to the value, and 128 bits make a collision out of reach. (Its references
    depend on the objects' sharing, so equal answers may digest differently: that only costs
    a rebuild.) About 0.3 us a partition, where building them costs about 1 us."""
    try:
        return hashlib.blake2b(marshal.dumps(partitions), digest_size=16).digest()
    except ValueError:
        return None


class ClusterMetadata:
    """What the client knows of the cluster. Times are monotonic seconds."""

    def __init__(self, bootstrap: Iterable[tuple[str, int]], max_age_ms: int = 300_000,
                 clock: Callable[[], float] = time.monotonic, *,
                 refresh_backoff_ms: float = 100, refresh_backoff_max_ms: float = 1000) -> None:
        #: bootstrap servers as nodes -1, -2, ... (Java's convention), used until the first
        #: Metadata response names the real brokers
        self.bootstrap_nodes = [BrokerInfo(-(i + 1), host, port)
                                for i, (host, port) in enumerate(bootstrap)]
        self.max_age_ms = max_age_ms
        self._clock = clock
        self.brokers: dict[int, BrokerInfo] = {}
        #: nodes reached outside the broker list, e.g. the group coordinator's own link
        self.extra_nodes: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicMetadata] = {}
        #: topic -> error code of the last response that named it (UNKNOWN_TOPIC..., auth...)
        self.topic_errors: dict[str, int] = {}
        self.cluster_id: str | None = None
        self.controller_id: int = -1
        self.last_refresh: float | None = None
        #: bumped when an answer changed what the cache holds (brokers, topics, their ids,
        #: partitions, leaders, epochs, errors, cluster id, controller): what per-partition
        #: state built from the metadata keys on, so an answer that changes nothing rebuilds
        #: nothing (issue 26)
        self.update_version = 0
        #: bumped on every answer applied, changed or not (what waits for an answer keys on)
        self.answers = 0
        self._update_requested = True
        self._refresh_backoff = ExponentialBackoff(refresh_backoff_ms, refresh_backoff_max_ms)
        #: consecutive failed attempts, and answers in a row that changed nothing (Java's
        #: attempts and equivalentResponseCount): both lengthen the refresh backoff
        self._failed_attempts = 0
        self._equivalent_answers = 0
        #: monotonic time before which a requested refresh waits (the refresh backoff)
        self._allowed_at = 0.0
        #: when the attempts that failed since the last answer began (None: the last attempt
        #: was answered)
        self.failing_since: float | None = None
        #: since a rebootstrap, until the next answer: the bootstrap servers are tried too
        self.rebootstrapping = False

    def set_bootstrap(self, servers: Iterable[tuple[str, int]]) -> None:
        """The bootstrap servers, once resolved (bootstrap.resolve.timeout.ms > 0)."""
        self.bootstrap_nodes = [BrokerInfo(-(i + 1), host, port)
                                for i, (host, port) in enumerate(servers)]

    def rebootstrap(self, servers: Iterable[tuple[str, int]]) -> None:
        """None of the known brokers could be reached: talk to ``servers`` (the bootstrap
        servers, looked up again) too, until an answer names the brokers anew (Java's
        rebootstrap). The brokers, topics and partitions stay known (a leader's id still names
        a node) until that answer replaces them; a refresh is wanted at once."""
        self.set_bootstrap(servers)
        self.rebootstrapping = True
        self.failing_since = None
        self._failed_attempts = 0
        self._update_requested = True
        self._allowed_at = 0.0

    # ------------------------------------------------------------------ queries

    @property
    def bootstrapped(self) -> bool:
        return self.last_refresh is not None

    def nodes(self) -> list[BrokerInfo]:
        """The brokers to talk to: the known ones (and the bootstrap list again after a
        rebootstrap), or the bootstrap list before the first response."""
        if not self.brokers:
            return list(self.bootstrap_nodes)
        known = list(self.brokers.values())
        return known + list(self.bootstrap_nodes) if self.rebootstrapping else known

    def node(self, node_id: int) -> BrokerInfo | None:
        if node_id in self.brokers:
            return self.brokers[node_id]
        if node_id in self.extra_nodes:
            return self.extra_nodes[node_id]
        for b in self.bootstrap_nodes:
            if b.node_id == node_id:
                return b
        return None

    def partitions_for(self, topic: str) -> list[PartitionInfo] | None:
        t = self.topics.get(topic)
        return None if t is None else [t.partitions[p] for p in sorted(t.partitions)]

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        t = self.topics.get(tp.topic)
        return None if t is None else t.partitions.get(tp.partition)

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The leader's node id, or None when unknown or there is no leader."""
        p = self.partition(tp)
        return None if p is None or p.leader < 0 else p.leader

    def topic_error(self, topic: str) -> KafkaError | None:
        code = self.topic_errors.get(topic, 0)
        return error_for_code(code, f"topic {topic!r}") if code else None

    # ------------------------------------------------------------------ refresh policy

    def request_update(self) -> None:
        self._update_requested = True

    def update_requested(self) -> bool:
        return self._update_requested

    def time_to_next_update_ms(self, now: float | None = None) -> float:
        """0 when an update is due: requested or older than metadata.max.age.ms, and the
        refresh backoff since the previous attempt is over."""
        now = self._clock() if now is None else now
        allowed = max(0.0, (self._allowed_at - now) * 1000.0)
        if self._update_requested or self.last_refresh is None:
            return allowed
        return max(allowed, self.max_age_ms - (now - self.last_refresh) * 1000.0)

    def _attempted(self, now: float) -> None:
        """Start the refresh backoff after an attempt (answered or failed)."""
        rounds = max(self._failed_attempts, self._equivalent_answers)
        self._allowed_at = now + self._refresh_backoff.backoff_ms(max(rounds - 1, 0)) / 1000.0

    # ------------------------------------------------------------------ update

    def update(self, body: MetadataResponse, requested_topics: Iterable[str] | None,
               now: float | None = None) -> None:
        """Apply a Metadata response. ``requested_topics`` None means it lists every topic
        (topics no longer listed are forgotten); otherwise only those topics are replaced."""
        now = self._clock() if now is None else now
        code = body.get("error_code", 0)
        if code:  # Metadata v13 top-level error (e.g. REBOOTSTRAP_REQUIRED)
            err = error_for_code(code, "Metadata response")
            assert err is not None
            raise err
        if not body["brokers"]:
            # a broker starting up, or the last one shutting down, may list none: as Java,
            # ignore the answer and ask again after the backoff, never forget every broker known
            self.failed_update(now)
            return
        brokers = {
            b["node_id"]: BrokerInfo(b["node_id"], b["host"], b["port"], b.get("rack"))
            for b in body["brokers"]
        }
        # "changed" is what the refresh backoff looks at (brokers, topic ids, partitions,
        # errors); cluster id, controller and internal flags only make a new update_version
        changed = brokers != self.brokers or self.last_refresh is None
        self.brokers = brokers
        cluster_id, controller_id = body.get("cluster_id"), body.get("controller_id", -1)
        other = cluster_id != self.cluster_id or controller_id != self.controller_id
        self.cluster_id, self.controller_id = cluster_id, controller_id
        errors_before = dict(self.topic_errors)
        seen: set[str] = set()
        stale = False
        for t in body["topics"]:
            name = t["name"]
            if name is None:  # v12+ may answer by id only; we always ask by name
                continue
            seen.add(name)
            if t["error_code"]:
                self.topic_errors[name] = t["error_code"]
                if t["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    if self.topics.pop(name, None) is not None:
                        changed = True
                continue
            self.topic_errors.pop(name, None)
            old = self.topics.get(name)
            topic_id = t.get("topic_id")
            topic_id = None if topic_id in (None, _ZERO_UUID) else topic_id
            internal = t.get("is_internal", False)
            raw = t["partitions"]
            digest = _digest(raw)
            if old is not None and digest is not None and digest == old.digest:
                # the same partitions as the answer this topic was built from: kept as is
                if old.topic_id != topic_id or old.is_internal != internal:
                    changed = changed or old.topic_id != topic_id
                    other = True
                    self.topics[name] = TopicMetadata(name, topic_id, internal,
                                                      old.partitions, digest)
                continue
            partitions: dict[int, PartitionInfo] = {}
            kept_back = False
            for p in raw:
                epoch = p.get("leader_epoch", -1)
                info = _new_info((
                    name, p["partition_index"], p["leader_id"],
                    tuple(p["replica_nodes"]), tuple(p["isr_nodes"]),
                    tuple(p.get("offline_replicas", ())), None if epoch < 0 else epoch,
                ))
                if old is not None:
                    prev = old.partitions.get(info.partition)
                    if (prev is not None and prev.leader_epoch is not None
                            and info.leader_epoch is not None
                            and info.leader_epoch < prev.leader_epoch):
                        info = prev              # stale answer: keep the newer leader
                        kept_back = True
                partitions[info.partition] = info
            stale = stale or kept_back
            if old is None or old.topic_id != topic_id or old.partitions != partitions:
                changed = True
            elif old.is_internal != internal:
                other = True
            self.topics[name] = TopicMetadata(name, topic_id, internal, partitions,
                                              None if kept_back else digest)
        if requested_topics is None:
            for name in list(self.topics):
                if name not in seen:
                    del self.topics[name]
                    changed = True
        changed = changed or self.topic_errors != errors_before
        # an answer asked for (not a periodic one) that changed nothing: the next requested
        # one waits longer, so a leader that stays unknown is not polled for at full speed
        expired = (self.last_refresh is None
                   or (now - self.last_refresh) * 1000.0 >= self.max_age_ms)
        if not changed and self._update_requested and not expired:
            self._equivalent_answers += 1
        else:
            self._equivalent_answers = 0
        self._failed_attempts = 0
        self.failing_since = None
        self.rebootstrapping = False
        self.last_refresh = now
        self.answers += 1
        if changed or other:
            self.update_version += 1
        self._update_requested = stale   # a stale answer: ask again (another broker may know)
        self._attempted(now)

    def failed_update(self, now: float | None = None) -> None:
        """A Metadata request failed; keep the cache and ask again after the backoff."""
        now = self._clock() if now is None else now
        self._update_requested = True
        self._failed_attempts += 1
        if self.failing_since is None:
            self.failing_since = now
        self._attempted(now)


__all__ = ["ClusterMetadata", "TopicMetadata"]
