"""The consumer's side of the group coordinator: discovery, committed offsets, commits.

Java's ``ConsumerCoordinator`` (offset part) over ``AbstractCoordinator`` (discovery):

* the coordinator is found with FindCoordinator (key = group.id) on the least loaded broker and
  reached over its own connection (node id ``2**31 - 1 - broker id``, as Java keeps the
  coordinator link apart from the fetch links); NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
  a disconnect mark it unknown and the next call finds it again;
* committed offsets are read with OffsetFetch (require_stable, KIP-447);
* commits are OffsetCommit with the current generation and member id (-1 and "" outside a
  group: a consumer that uses assign() commits as a standalone member), synchronous with
  retries until a deadline, or asynchronous with a callback run from poll()/commit(), in order;
* auto-commit every auto.commit.interval.ms from poll(), and once more on close.

The group membership is attached once (:meth:`attach`, seen here only as a
:class:`~pyconsumer.consumer.group.seams.GroupMember`): it owns the member's identity, and
this coordinator registers with it as its
:class:`~pyconsumer.consumer.group.seams.MemberStateListener` to hear the generation or member
epoch and member id commits carry (Java's commit manager hears the membership manager the
same way); it says whether a commit may be made now and hears what commits' answers say about
the generation. The membership sees this class as a
:class:`~pyconsumer.consumer.group.seams.GroupCoordinator`.
"""
from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.subscription import SubscriptionState
from pyconsumer.consumer.group.errors import GroupAction, classify
from pyconsumer.consumer.group.seams import (
    NO_GENERATION,
    NO_MEMBER_ID,
    GroupMember,
    GroupRequest,
)
from pyconsumer.consumer.partition_errors import PartitionAction
from pyconsumer.consumer.partition_errors import classify as partition_action
from pyconsumer.errors import (
    BrokerResponseError,
    CommitFailedError,
    ErrorCode,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    RebalanceInProgressError,
    error_for_code,
)
from pyconsumer.consumer.metrics import ConsumerMetrics
from pyconsumer.net.client import NetworkClient
from pyconsumer.net.connection import Response
from pyconsumer.net.deadline import Retry, remaining_ms, retry_until
from pyconsumer.net.future import Future
from pyconsumer.net.responses import body_of
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import BrokerInfo, OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from pyconsumer.protocol.bodies import (
        Coordinator,
        FindCoordinatorRequest,
        FindCoordinatorResponse,
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetFetchRequest,
        OffsetFetchRequestTopics,
        OffsetFetchResponseTopic,
        OffsetFetchResponseTopics,
    )

log = logging.getLogger(__name__)

COORDINATOR_ID_BASE = 2**31 - 1


CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata], KafkaError | None], Any]


class ConsumerCoordinator:
    def __init__(self, client: NetworkClient, config: ConsumerConfig,
                 subscriptions: SubscriptionState, metrics: ConsumerMetrics | None = None
                 ) -> None:
        assert config.group_id is not None
        self.client = client
        self.metrics = ConsumerMetrics(config) if metrics is None else metrics
        self.config = config
        self.subscriptions = subscriptions
        self.group_id: str = config.group_id
        #: what commits carry: (generation or member epoch, member id), as the membership
        #: last said (one tuple: read whole from any thread)
        self._commit_identity: tuple[int, str] = (NO_GENERATION, NO_MEMBER_ID)
        self.coordinator: int | None = None
        self._find: Future[Response] | None = None
        self._last_find_error: KafkaError | None = None
        self._next_lookup = 0.0
        self._completed_commits: collections.deque[
            tuple[CommitCallback | None, dict[TopicPartition, OffsetAndMetadata],
                  KafkaError | None]] = collections.deque()
        self._async_in_flight = 0
        interval = config.auto_commit_interval_ms / 1000.0
        self._next_auto_commit = time.monotonic() + interval
        #: the group membership (attach()): asked before a commit, told what group answers
        #: say about the generation and when the coordinator was found
        self._membership: GroupMember | None = None
        #: the interceptors' on_commit: hears the offsets of every successful commit
        self.on_commit: Callable[[dict[TopicPartition, OffsetAndMetadata]], None] | None = None

    def attach(self, membership: GroupMember) -> None:
        """The membership this coordinator serves; set once, before any request. The
        coordinator hears the membership's identity change from then on."""
        if self._membership is not None:
            raise ValueError(f"group {self.group_id}: the coordinator already has a membership")
        self._membership = membership
        membership.register_state_listener(self)

    def on_member_epoch_updated(self, epoch: int, member_id: str) -> None:
        """The membership's :class:`~pyconsumer.consumer.group.seams.MemberStateListener`:
        commits carry ``epoch`` and ``member_id`` from now on."""
        self._commit_identity = (epoch, member_id)

    @property
    def group_instance_id(self) -> str | None:
        return self._membership.group_instance_id if self._membership is not None \
            else self.config.group_instance_id

    def check_can_commit(self) -> None:
        """Raises when a commit cannot be made now (the membership says why)."""
        if self._membership is not None:
            self._membership.check_can_commit()

    def _on_group_error(self, action: GroupAction, err: KafkaError) -> None:
        if self._membership is not None:
            self._membership.on_group_error(action, err)

    # ------------------------------------------------------------------ discovery

    def coordinator_unknown(self) -> bool:
        if self.coordinator is None:
            return True
        conn = self.client.connection(self.coordinator)
        if conn is not None and conn.in_backoff():
            self.mark_coordinator_unknown("its connection failed")
            return True
        return False

    def mark_coordinator_unknown(self, reason: str) -> None:
        """Forget the coordinator (it moved, its broker is gone): the next group request or
        heartbeat step finds it again. Any thread."""
        if self.coordinator is not None:
            log.info("group %s: coordinator node %d marked unknown: %s", self.group_id,
                     COORDINATOR_ID_BASE - self.coordinator, reason)
            conn = self.client.connection(self.coordinator)
            if conn is not None:
                conn.close(KafkaConnectionError(f"coordinator of group {self.group_id} moved: "
                                                f"{reason}"))
            self.coordinator = None

    def _lookup(self) -> Future[Response]:
        if self._find is not None and not self._find.done:
            return self._find
        node = self.client.least_loaded_node()
        if node is None:
            fut: Future[Response] = Future()
            fut.failure(KafkaConnectionError("no broker available to find the coordinator"))
            return fut
        group = self.group_id

        def body(version: int) -> FindCoordinatorRequest:
            if version >= 4:
                return {"key_type": 0, "coordinator_keys": [group]}
            return {"key": group, "key_type": 0}

        self._find = self.client.send(node, ApiKey.FIND_COORDINATOR, body)
        self._find.add_callback(self._on_find, any_thread=True)
        return self._find

    def lookup_if_needed(self, now: float) -> None:
        """Non-blocking: start a FindCoordinator when the coordinator is unknown, at most once
        per retry.backoff.ms (the heartbeat step and poll() call this)."""
        if not self.coordinator_unknown() or now < self._next_lookup:
            return
        if self._find is not None and not self._find.done:
            return
        self._next_lookup = now + self.config.retry_backoff_ms / 1000.0
        self._lookup()

    def _on_find(self, fut: Future[Response]) -> None:
        self._last_find_error = self._find_error(fut)
        if self._last_find_error is not None:
            return
        assert fut.value is not None
        resp = fut.value
        body = body_of(resp, ApiKey.FIND_COORDINATOR)
        found: Coordinator | FindCoordinatorResponse = (
            [c for c in body["coordinators"] if c["key"] == self.group_id][0]
            if resp.version >= 4 else body)
        node_id = COORDINATOR_ID_BASE - found["node_id"]
        self.client.metadata.extra_nodes[node_id] = BrokerInfo(node_id, found["host"],
                                                               found["port"])
        self.coordinator = node_id
        log.info("group %s: coordinator is broker %d (%s:%d)", self.group_id,
                 found["node_id"], found["host"], found["port"])
        if self._membership is not None:
            self._membership.on_coordinator_found()

    def _find_error(self, fut: Future[Response]) -> KafkaError | None:
        if fut.failed():
            err = fut.exception
            return err if isinstance(err, KafkaError) else KafkaConnectionError(str(err))
        assert fut.value is not None
        resp = fut.value
        body = body_of(resp, ApiKey.FIND_COORDINATOR)
        if resp.version >= 4:
            entries = [c for c in body["coordinators"] if c["key"] == self.group_id]
            code = entries[0]["error_code"] if entries else ErrorCode.COORDINATOR_NOT_AVAILABLE
            message = entries[0].get("error_message") if entries else None
        else:
            code, message = body["error_code"], body.get("error_message")
        return error_for_code(code, f"FindCoordinator for group {self.group_id}"
                              + (f": {message}" if message else "")) if code else None

    def ensure_coordinator_ready(self, deadline: float) -> bool:
        """Find the coordinator, retrying until ``deadline``; False when time ran out."""
        def attempt() -> None:
            if not self.coordinator_unknown():
                return
            fut = self._lookup()
            self.client.poll(timeout_ms=remaining_ms(deadline), future=fut)
            if not fut.done:
                raise Retry(None)
            err = self._find_error(fut)
            if err is not None and not err.retriable:
                raise err
            if self.coordinator_unknown():
                log.debug("group %s: finding the coordinator failed: %s", self.group_id, err)
                raise Retry(err)

        try:
            retry_until(deadline, attempt, wait=self._backoff,
                        backoff_ms=self.config.retry_backoff_ms,
                        backoff_max_ms=self.config.retry_backoff_max_ms,
                        timeout=lambda last: KafkaTimeoutError(str(last)))
        except KafkaTimeoutError:
            return False
        return True

    def _backoff(self, ms: float) -> None:
        self.client.poll(timeout_ms=ms)

    # ------------------------------------------------------------------ one request, retried

    def send(self, api: ApiKey, body: GroupRequest | Callable[[int], GroupRequest],
             timeout_ms: float | None = None) -> Future[Response]:
        """Send to the coordinator, which must be known (the membership's requests)."""
        assert self.coordinator is not None
        return self.client.send(self.coordinator, api, body, timeout_ms=timeout_ms)

    def _call(self, api: ApiKey, body: Callable[[int], OffsetCommitRequest | OffsetFetchRequest],
              parse: Callable[[Response], Any], deadline: float, what: str) -> Any:
        """Send to the coordinator and parse, retrying retriable outcomes until ``deadline``."""
        def attempt() -> Any:
            if not self.ensure_coordinator_ready(deadline):
                raise Retry(self._last_find_error)
            assert self.coordinator is not None
            fut = self.client.send(self.coordinator, api, body)
            if api == ApiKey.OFFSET_COMMIT:
                self.metrics.commit_sent(fut)
            self.client.poll(timeout_ms=remaining_ms(deadline), future=fut)
            if not fut.done:
                raise Retry(None)
            return parse(self.response_or_retry(fut))

        def timeout(last: KafkaError | None) -> KafkaTimeoutError:
            return KafkaTimeoutError(f"{what} for group {self.group_id} did not complete in time"
                                     + (f" (last error: {last})" if last else ""))

        return retry_until(deadline, attempt, wait=self._backoff,
                           backoff_ms=self.config.retry_backoff_ms,
                           backoff_max_ms=self.config.retry_backoff_max_ms, timeout=timeout)

    def response_or_retry(self, fut: Future[Response]) -> Response:
        """The response of a completed request to the coordinator; a retriable failure marks
        the coordinator unknown and raises Retry, any other failure is raised as is."""
        if fut.failed():
            err = fut.exception
            if isinstance(err, KafkaError) and err.retriable:
                self.mark_coordinator_unknown(str(err))
                raise Retry(err)
            raise err  # type: ignore[misc]
        assert fut.value is not None
        return fut.value

    def group_error(self, api: ApiKey, code: int, what: str,
                    message: str | None = None
                    ) -> tuple[GroupAction, BrokerResponseError | None]:
        """Classify a group error code: retry and coordinator moves are raised as Retry here
        (the coordinator marked unknown first), fatal errors raised as they are; the other
        actions are returned with the error for the caller to act on."""
        action = classify(api, code)
        if action is GroupAction.NONE:
            return action, None
        err = error_for_code(code, f"{what} for group {self.group_id}"
                             + (f": {message}" if message else ""))
        assert err is not None
        if action is GroupAction.RETRY:
            raise Retry(err)
        if action is GroupAction.COORDINATOR_MOVED:
            self.mark_coordinator_unknown(err.message)
            raise Retry(err)
        if action is GroupAction.FATAL:
            self._on_group_error(action, err)
            raise err
        return action, err

    # ------------------------------------------------------------------ committed offsets

    def fetch_committed(self, partitions: Iterable[TopicPartition], deadline: float
                        ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        parts = list(dict.fromkeys(partitions))
        by_topic: dict[str, list[int]] = collections.defaultdict(list)
        for tp in parts:
            by_topic[tp.topic].append(tp.partition)
        group = self.group_id

        def body(version: int) -> OffsetFetchRequest:
            if version >= 8:
                topics: list[OffsetFetchRequestTopics] = [
                    {"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
                return {"groups": [{"group_id": group, "topics": topics}], "require_stable": True}
            return {"group_id": group, "require_stable": True,
                    "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]}

        def parse(resp: Response) -> dict[TopicPartition, OffsetAndMetadata | None]:
            body = body_of(resp, ApiKey.OFFSET_FETCH)
            topics: list[OffsetFetchResponseTopic] | list[OffsetFetchResponseTopics]
            if resp.version >= 8:
                g = body["groups"][0]
                code, topics = g["error_code"], g["topics"]
            else:
                code, topics = body.get("error_code", 0), body["topics"]
            _, err = self.group_error(ApiKey.OFFSET_FETCH, code, "OffsetFetch")
            if err is not None:
                raise err
            out: dict[TopicPartition, OffsetAndMetadata | None] = {}
            retry: list[tuple[TopicPartition, int]] = []
            for t in topics:
                for p in t["partitions"]:
                    tp = TopicPartition(t["name"], p["partition_index"])
                    code = p["error_code"]
                    action = partition_action(ApiKey.OFFSET_FETCH, code)
                    if action is PartitionAction.RETRY:
                        retry.append((tp, code))
                        continue
                    if action is not PartitionAction.NONE:
                        err = error_for_code(code, f"committed offset of {tp}")
                        assert err is not None
                        if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                            raise KafkaError(f"Topic or partition {tp} does not exist "
                                             f"(OffsetFetch for group {self.group_id})")
                        raise err
                    offset = p["committed_offset"]
                    epoch = p.get("committed_leader_epoch", -1)
                    out[tp] = None if offset < 0 else OffsetAndMetadata(
                        offset, p.get("metadata") or "", None if epoch < 0 else epoch)
            if retry:
                # UNSTABLE_OFFSET_COMMIT: a transaction is committing offsets: ask again
                err = error_for_code(retry[0][1], ", ".join(str(tp) for tp, _ in retry))
                assert err is not None
                raise Retry(err)
            return {tp: out.get(tp) for tp in parts}

        result: dict[TopicPartition, OffsetAndMetadata | None] = self._call(
            ApiKey.OFFSET_FETCH, body, parse, deadline, "OffsetFetch")
        return result

    # ------------------------------------------------------------------ commits

    def _commit_request(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]
                        ) -> tuple[Callable[[int], OffsetCommitRequest],
                                   Callable[[Response], None]]:
        """The OffsetCommit body (a function of the version) and its parser. The generation
        (the member epoch with the consumer protocol) is the one of the moment the commit was
        asked for; a STALE_MEMBER_EPOCH answer while a heartbeat brought the member a newer
        epoch (its acknowledgement crossed the commit) is retried at once with the new one, as
        Java does: the member still owns what it commits."""
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = collections.defaultdict(list)
        for tp, om in offsets.items():
            by_topic[tp.topic].append({
                "partition_index": tp.partition, "committed_offset": om.offset,
                "committed_leader_epoch": -1 if om.leader_epoch is None else om.leader_epoch,
                "commit_timestamp": -1, "committed_metadata": om.metadata})
        generation, member = self._commit_identity
        instance = self.group_instance_id
        sent = [generation]

        def body(version: int) -> OffsetCommitRequest:
            return {"group_id": self.group_id, "generation_id_or_member_epoch": sent[0],
                    "member_id": member, "group_instance_id": instance,
                    "retention_time_ms": -1,
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
        def parse(resp: Response) -> None:
            try:
                self._parse_commit(resp, sent[0])
            except Retry as r:
                if getattr(r.error, "errno", None) == ErrorCode.STALE_MEMBER_EPOCH:
                    sent[0] = self._commit_identity[0]
                raise
        return body, parse

    def _parse_commit(self, resp: Response, sent_generation: int) -> None:
        failed_topics: set[str] = set()
        for t in body_of(resp, ApiKey.OFFSET_COMMIT)["topics"]:
            for p in t["partitions"]:
                code = p["error_code"]
                if not code:
                    continue
                tp = TopicPartition(t["name"], p["partition_index"])
                if code == ErrorCode.STALE_MEMBER_EPOCH and \
                        0 < self._commit_identity[0] != sent_generation:
                    err = error_for_code(code, f"committing {tp} at member epoch "
                                         f"{sent_generation}")
                    raise Retry(err, backoff=False)
                if code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                    failed_topics.add(tp.topic)
                    continue
                action, err = self.group_error(ApiKey.OFFSET_COMMIT, code, f"committing {tp}")
                assert err is not None
                self._on_group_error(action, err)
                if action is GroupAction.LOST:
                    raise CommitFailedError(
                        f"Commit cannot be completed since the group {self.group_id} has "
                        f"already rebalanced and assigned the partitions to another member "
                        f"({err.message}); the offsets were not committed")
                if action is GroupAction.REJOIN:
                    raise RebalanceInProgressError(
                        f"Offset commit cannot be completed since the group {self.group_id} is "
                        "rebalancing: finish the rebalance by calling poll(), then commit the "
                        "offsets of the partitions still assigned")
                raise err
        if failed_topics:
            err = error_for_code(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                 f"topics {', '.join(sorted(failed_topics))}")
            assert err is not None
            raise err

    def commit_sync(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                    deadline: float) -> None:
        if not offsets:
            self.invoke_completed_callbacks()
            return
        self.check_can_commit()
        body, parse = self._commit_request(offsets)
        self._call(ApiKey.OFFSET_COMMIT, body, parse, deadline, "OffsetCommit")
        self._committed(dict(offsets))
        self.invoke_completed_callbacks()

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                     callback: CommitCallback | None) -> None:
        """Send a commit; ``callback(offsets, error)`` runs from a later poll()/commit()."""
        frozen = dict(offsets)
        if not frozen:
            self._completed_commits.append((callback, frozen, None))
            return
        try:
            self.check_can_commit()
        except KafkaError as e:
            self._completed_commits.append((callback, frozen, e))
            return

        body, parse = self._commit_request(frozen)

        def send() -> None:
            assert self.coordinator is not None
            fut = self.client.send(self.coordinator, ApiKey.OFFSET_COMMIT, body)
            self.metrics.commit_sent(fut)
            self._async_in_flight += 1
            fut.add_callback(done)

        def done(fut: Future[Response]) -> None:
            self._async_in_flight -= 1
            error: KafkaError | None = None
            if fut.failed():
                error = fut.exception if isinstance(fut.exception, KafkaError) else \
                    KafkaError(str(fut.exception))
                if error.retriable:
                    self.mark_coordinator_unknown(str(error))
            else:
                assert fut.value is not None
                try:
                    parse(fut.value)
                except Retry as r:
                    error = r.error
                except KafkaError as e:
                    error = e
            if error is not None:
                log.warning("group %s: async commit of %s failed: %s", self.group_id,
                            sorted(map(str, frozen)), error)
            self._completed_commits.append((callback, frozen, error))

        if self.coordinator_unknown():
            # Java: look the coordinator up first, then send; no blocking here
            lookup = self._lookup()

            def after_lookup(f: Future[Response]) -> None:
                if not self.coordinator_unknown():
                    send()
                else:
                    err = self._find_error(f) or KafkaConnectionError(
                        f"coordinator of group {self.group_id} unknown")
                    self._completed_commits.append((callback, frozen, err))

            lookup.add_callback(after_lookup)
        else:
            send()

    def invoke_completed_callbacks(self) -> None:
        while self._completed_commits:
            callback, offsets, error = self._completed_commits.popleft()
            if error is None and offsets:
                self._committed(offsets)
            if callback is not None:
                with self.client.lock.set_aside():      # user code: heartbeats go on
                    callback(offsets, error)

    def _committed(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        if self.on_commit is not None:
            with self.client.lock.set_aside():      # user code: heartbeats go on
                self.on_commit(offsets)

    def async_commits_pending(self) -> bool:
        return self._async_in_flight > 0 or (self._find is not None and not self._find.done)

    # ------------------------------------------------------------------ auto-commit

    def maybe_auto_commit(self, consumed: Callable[[], dict[TopicPartition, OffsetAndMetadata]]
                          ) -> None:
        if not self.config.enable_auto_commit:
            return
        now = time.monotonic()
        if now < self._next_auto_commit:
            return
        self._next_auto_commit = now + self.config.auto_commit_interval_ms / 1000.0
        try:
            self.check_can_commit()
        except KafkaError as e:
            log.debug("group %s: no auto-commit now: %s", self.group_id, e)
            return
        offsets = consumed()
        if offsets:
            self.commit_async(offsets, None)


__all__ = ["COORDINATOR_ID_BASE", "CommitCallback", "ConsumerCoordinator"]
