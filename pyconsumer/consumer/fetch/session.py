"""Incremental fetch sessions (KIP-227): one :class:`FetchSessionHandler` per broker, as Java's
``FetchSessionHandler``.

A full fetch (epoch 0) lists every partition wanted from the broker and asks it for a session;
a broker that opens one answers its id. Later fetches are incremental (epoch 1, 2, ...,
wrapping from 2**31-1 to 1): they list only the partitions added to the session or whose
fetch offset, leader epoch or max bytes changed, and name in ``forgotten_topics_data`` the
partitions no longer wanted. The broker keeps fetching every partition of the session; its
answer to an incremental fetch lists only the partitions with data, an error or new
watermarks, so a partition it leaves out is unchanged.

A session error (FETCH_SESSION_ID_NOT_FOUND: a new session; INVALID_FETCH_SESSION_EPOCH and
the others: close the session and ask for a new one), a failed request or a broker that
answers session id 0 (no room, no support, or Fetch < v7 which has no session fields) make
the next fetch a full one again. Epoch -1 is "no session": sent only to close one.

Two ways to build a request. :class:`FetchRequestBuilder` is Java's: it is given every
partition wanted from the broker and compares them with the session (a walk over all of them).
:meth:`FetchSessionHandler.build_changes` is given only the partitions whose fetch state may
have changed (the caller knows which: issue 26) and costs what they cost, whatever the size
of the session; it makes the same request the builder would from the same wants.
"""
from __future__ import annotations

import logging
import operator
import uuid
from collections.abc import Mapping
from typing import NamedTuple

from pyconsumer.errors import ErrorCode, error_for_code
from pyconsumer.structs import TopicPartition

log = logging.getLogger(__name__)
_TOPIC = operator.attrgetter("topic")
_TOPIC_ID = operator.attrgetter("topic_id")

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0       # a full fetch that opens (or re-opens) a session
FINAL_EPOCH = -1        # a full fetch without a session (closes the one named)
_MAX_EPOCH = 2**31 - 1
ZERO_UUID = uuid.UUID(int=0)


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: FINAL stays FINAL, the largest int32 wraps to 1 (0 would
    mean a new session)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_EPOCH else epoch + 1


class FetchMetadata(NamedTuple):
    """The session id and epoch a fetch request carries."""

    session_id: int
    epoch: int

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def close_existing(self) -> FetchMetadata:
        """Close the session and do not open another (the consumer is closing)."""
        return FetchMetadata(self.session_id, FINAL_EPOCH)

    def close_existing_attempt_new(self) -> FetchMetadata:
        """Close the session and ask for a new one in the same (full) fetch."""
        return FetchMetadata(self.session_id, INITIAL_EPOCH)

    def next_incremental(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, next_epoch(self.epoch))

    def __str__(self) -> str:
        sid = "none" if self.session_id == INVALID_SESSION_ID else str(self.session_id)
        epoch = {INITIAL_EPOCH: "initial", FINAL_EPOCH: "final"}.get(self.epoch, str(self.epoch))
        return f"(session={sid}, epoch={epoch})"


INITIAL = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)


def new_incremental(session_id: int) -> FetchMetadata:
    return FetchMetadata(session_id, next_epoch(INITIAL_EPOCH))


class PartitionData(NamedTuple):
    """What a fetch asks of one partition; a change of any field is sent again."""

    topic_id: uuid.UUID          # ZERO_UUID when the topic's id is not known
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int    # -1: unknown


class FetchRequestData(NamedTuple):
    """One built fetch request.

    ``session_partitions`` is the handler's own map when the request came from
    :meth:`FetchSessionHandler.build_changes` (no copy: that would cost a step per partition);
    it holds what the request left while the request is in flight, since a session is built
    on again only after its request was answered or failed (one Fetch in flight per node)."""

    #: the partitions the request lists, in request order (all of them in a full fetch)
    to_send: dict[TopicPartition, PartitionData]
    #: partitions removed from the session (with the topic id the session knew them by)
    to_forget: list[tuple[TopicPartition, uuid.UUID]]
    #: partitions whose topic id changed (topic re-created): forgotten under the old id, v13+
    to_replace: list[tuple[TopicPartition, uuid.UUID]]
    #: every partition of the session after this request: what the response may name
    session_partitions: dict[TopicPartition, PartitionData]
    metadata: FetchMetadata
    #: every topic has an id: the request may use Fetch v13+ (topics named by id)
    can_use_topic_ids: bool
    #: topic id -> name, to read a v13+ response
    topic_names: dict[uuid.UUID, str]

    def forgotten(self, version: int) -> list[tuple[TopicPartition, uuid.UUID]]:
        """The request's forgotten partitions at ``version`` (a replaced topic id is
        forgotten only where topics are named by id)."""
        return self.to_forget + self.to_replace if version >= 13 else self.to_forget

    def partitions_at(self, version: int) -> dict[TopicPartition, PartitionData]:
        """The partitions to list at ``version``: before v7 there are no sessions, so the
        request lists the session's every partition."""
        return self.to_send if version >= 7 or self.metadata.is_full else self.session_partitions


class FetchSessionHandler:
    """The fetch session with one broker (Java FetchSessionHandler)."""

    def __init__(self, node: int) -> None:
        self.node = node
        #: what the next request carries
        self.next_metadata = INITIAL
        #: the session's partitions as the broker knows them after the last built request
        self.session_partitions: dict[TopicPartition, PartitionData] = {}
        self.session_topic_names: dict[uuid.UUID, str] = {}
        #: the session's partitions are named by topic id (each one's id known)
        self.session_uses_ids = True

    @property
    def session_id(self) -> int:
        return self.next_metadata.session_id

    @property
    def has_session(self) -> bool:
        """The next request continues an open session (an incremental fetch)."""
        return not self.next_metadata.is_full

    def new_builder(self) -> FetchRequestBuilder:
        return FetchRequestBuilder(self)

    def build_changes(self, changes: Mapping[TopicPartition, PartitionData | None]
                      ) -> FetchRequestData | None:
        """The next incremental request of the open session, given only the partitions whose
        wants may have changed (None: no longer wanted); every other partition of the session
        is wanted as the session holds it. Lists those added or altered (Java's order: added
        first), forgets the unwanted: the request :meth:`FetchRequestBuilder.build` makes from
        the session with these changes applied, at a cost proportional to ``changes``. None
        when it cannot be incremental (no open session, or a change of naming: a partition
        without a topic id in a session named by ids or the reverse); build in full then."""
        if self.next_metadata.is_full:
            return None
        session = self.session_partitions
        uses_ids = self.session_uses_ids
        for want in changes.values():
            if want is not None and (want.topic_id != ZERO_UUID) != uses_ids:
                return None
        added: dict[TopicPartition, PartitionData] = {}
        altered: dict[TopicPartition, PartitionData] = {}
        forget: list[tuple[TopicPartition, uuid.UUID]] = []
        replace: list[tuple[TopicPartition, uuid.UUID]] = []
        for tp, want in changes.items():
            prev = session.get(tp)
            if want is None:
                if prev is not None:
                    del session[tp]
                    forget.append((tp, prev.topic_id))
            elif prev is None:
                session[tp] = want
                added[tp] = want
            elif want != prev:
                if prev.topic_id != want.topic_id and uses_ids:
                    replace.append((tp, prev.topic_id))
                session[tp] = want
                altered[tp] = want
        # a forgotten topic's name stays in the map: a response naming it is read as that
        # partition, outside the session (the builder drops the name: an unknown id; both
        # end the session the same way)
        to_send = {**added, **altered}
        if uses_ids:
            names = self.session_topic_names
            for tp, want in to_send.items():
                if names.get(want.topic_id) != tp.topic:
                    # a new topic (or id) in the session: a new map, a request in flight
                    # keeps its own
                    self.session_topic_names = names = {**names, want.topic_id: tp.topic}
        if log.isEnabledFor(logging.DEBUG):
            log.debug("incremental fetch %s to node %d: %d added, %d altered, %d forgotten, "
                      "%d in the session", self.next_metadata, self.node, len(added),
                      len(altered), len(forget), len(session))
        return FetchRequestData(to_send, forget, replace, session,
                                self.next_metadata, uses_ids,
                                self.session_topic_names if uses_ids else {})

    # ------------------------------------------------------------------ answers

    def handle_response(self, error_code: int, session_id: int,
                        partitions: set[TopicPartition], unknown_topic_ids: int = 0) -> bool:
        """Move the session on after a response; False when its data must be dropped (a
        session error, or an incremental answer naming what the session does not hold).
        ``partitions`` are those the response names; ``unknown_topic_ids`` counts topic ids
        in it that no session topic has."""
        sent = self.next_metadata
        if error_code:
            log.info("node %d could not process the fetch with %s: %s", self.node, sent,
                     error_for_code(error_code))
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.next_metadata = INITIAL
            else:
                self.next_metadata = sent.close_existing_attempt_new()
            return False
        extra = partitions - self.session_partitions.keys()
        if sent.is_full:
            if extra or unknown_topic_ids:
                # partitions not asked for: ignored by the caller (Java drops the response;
                # the rest of it is still good data for what was asked)
                log.info("node %d answered a full fetch with partitions not asked for: %s",
                         self.node, sorted(map(str, extra)))
            if session_id == INVALID_SESSION_ID:
                self.next_metadata = INITIAL
            else:
                log.debug("node %d opened fetch session %d", self.node, session_id)
                self.next_metadata = new_incremental(session_id)
            return True
        if extra or unknown_topic_ids:
            log.info("node %d answered incremental fetch %s with partitions outside the "
                     "session: %s; opening a new session", self.node, sent,
                     sorted(map(str, extra)))
            self.next_metadata = sent.close_existing_attempt_new()
            return False
        if session_id == INVALID_SESSION_ID:
            log.debug("node %d closed fetch session %d", self.node, sent.session_id)
            self.next_metadata = INITIAL
        else:
            self.next_metadata = sent.next_incremental()
        return True

    def handle_error(self) -> None:
        """The request failed (disconnect, timeout): the next fetch is a full one that
        closes the session and asks for a new one."""
        log.debug("fetch %s to node %d failed; the next fetch is a full one",
                  self.next_metadata, self.node)
        self.next_metadata = self.next_metadata.close_existing_attempt_new()

    def notify_close(self) -> None:
        """The next request closes the session without opening another (consumer close)."""
        self.next_metadata = self.next_metadata.close_existing()


def _naming(partitions: dict[TopicPartition, PartitionData]) -> tuple[dict[uuid.UUID, str], bool]:
    """({topic id: topic name} of the partitions with an id, whether every one has an id).
    This runs over every partition of a full fetch (1,000s): the distinct topic id objects
    are found in C (a topic's partitions share their id object; UUID's hash and == are
    Python code, so ids are told apart by identity first, then compared per distinct one)."""
    ids = list(map(_TOPIC_ID, partitions.values()))
    # id(object) -> (its topic, the object): the last partition's topic, as the walk kept
    distinct = dict(zip(map(id, ids), zip(map(_TOPIC, partitions), ids)))
    names: dict[uuid.UUID, str] = {}
    all_ids = True
    for topic, topic_id in distinct.values():
        if topic_id == ZERO_UUID:
            all_ids = False
        else:
            names[topic_id] = topic
    return names, all_ids


class FetchRequestBuilder:
    """The partitions wanted from one broker now, turned into a full or incremental request."""

    def __init__(self, handler: FetchSessionHandler) -> None:
        self._handler = handler
        self._next: dict[TopicPartition, PartitionData] = {}

    def add(self, tp: TopicPartition, data: PartitionData) -> None:
        self._next[tp] = data

    def build(self, full: bool = False) -> FetchRequestData:
        """The request; ``full`` forces a full fetch (closing an open session and asking for
        a new one), e.g. to put partitions first in the broker's order."""
        h = self._handler
        nxt, self._next = self._next, {}
        names, can_use_ids = _naming(nxt)
        if not h.next_metadata.is_full:
            # a session opened under one naming (ids or names) cannot go on under the other
            # the session's naming, kept as it was built (build_changes keeps it too)
            if full or (h.session_partitions and h.session_uses_ids != can_use_ids):
                h.next_metadata = h.next_metadata.close_existing_attempt_new()
        h.session_uses_ids = can_use_ids
        if h.next_metadata.is_full:
            h.session_partitions = dict(nxt)
            h.session_topic_names = names if can_use_ids else {}
            return FetchRequestData(dict(nxt), [], [], dict(nxt), h.next_metadata, can_use_ids,
                                    dict(names))
        to_send_added: dict[TopicPartition, PartitionData] = {}
        altered: dict[TopicPartition, PartitionData] = {}
        forget: list[tuple[TopicPartition, uuid.UUID]] = []
        replace: list[tuple[TopicPartition, uuid.UUID]] = []
        session = h.session_partitions
        for tp, prev in list(session.items()):
            want = nxt.get(tp)
            if want is None:
                del session[tp]                     # no longer wanted from this broker
                forget.append((tp, prev.topic_id))
            elif want != prev:
                if prev.topic_id != want.topic_id and ZERO_UUID not in (prev.topic_id,
                                                                        want.topic_id):
                    replace.append((tp, prev.topic_id))
                session[tp] = want
                altered[tp] = want
        for tp, want in nxt.items():
            if tp not in session:
                session[tp] = want                  # new in the session: at its end
                to_send_added[tp] = want
        h.session_topic_names = names if can_use_ids else {}
        # Java's order: the added partitions, then the altered ones
        to_send = {**to_send_added, **altered}
        log.debug("incremental fetch %s to node %d: %d added, %d altered, %d forgotten, "
                  "%d in the session", h.next_metadata, h.node, len(to_send_added),
                  len(altered), len(forget), len(session))
        return FetchRequestData(to_send, forget, replace, dict(session), h.next_metadata,
                                can_use_ids, dict(names))


__all__ = ["FINAL_EPOCH", "INITIAL", "INITIAL_EPOCH", "INVALID_SESSION_ID", "FetchMetadata",
           "FetchRequestBuilder", "FetchRequestData", "FetchSessionHandler", "PartitionData",
           "new_incremental", "next_epoch"]
