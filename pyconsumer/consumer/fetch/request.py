"""Fetch requests: what to fetch, from which node, and when (the sending half of Java's
``Fetcher``).

At most one Fetch in flight per node. Prefetch (beyond Java): a partition whose buffered data
is one response of v2 batches is fetched again at once from the offset after its last complete
batch (its record-set index says), so the broker prepares the next response while this one is
decoded and handed out; a partition with more buffered, or data that does not say where it
ends, is not fetched again until drained (buffering is bounded to about two responses per
partition). When a partition of the node has nothing in hand and data waiting (it starves),
the prefetch goes as a full fetch listing the starving partitions first and the prefetched
ones last: a full fetch opens a new session in request order, so on Kafka the starving ones
are filled first; a broker that keeps its own order may give a partition its
prefetched response before the others get theirs, so a partition gets at most two responses
in a row. The prefetched data is used only if the position reaches exactly the offset it was
asked for (a seek, a pause or an error in between makes it stale, and stale data is dropped:
:mod:`.buffer`). A partition stuck on an incomplete batch is re-fetched once asking for the
whole batch (the buffer says which, in ``refetch``), placed first in its request.

Fetch sessions (KIP-227, :mod:`pyconsumer.consumer.fetch.session`): one session per node; after
a full fetch opens it, a request lists only the partitions added or changed and forgets those
no longer wanted, and a response lists only the partitions with news (one it leaves out is
unchanged). While a node's session is open, no fetch goes to it as long as it hosts buffered
partitions (Java, KAFKA-17182): a fetch without them would forget them in the session, and
with them it would bring their data again. A broker without sessions gets full fetches.

Follower fetching (KIP-392, :mod:`.replicas`): ``client.rack`` goes out as ``rack_id``; a
partition whose response names a ``preferred_read_replica`` is fetched from that node while
it is valid (an OFFSET_OUT_OF_RANGE from the replica is not acted on until the leader says so
too).

Every answered partition's record set is indexed here, once (:class:`RecordSetIndex`): the
buffer, the cursor and the metrics read it instead of walking the bytes again. The one-pass
decoder hands its indexes over keyed by where it read them (the topic's position in the
response, the partition number); each is taken with its partition as the response is walked
(a record set without one is indexed here), and travels with the partition from there. An answered partition the request
did not list is ignored (a debug line); one it listed that the answer leaves out has no data
this time and is asked for again.

Per-partition cost (issue 26): the poll()s between two responses ask only whether every
fetch node is busy (the nodes of the fetchable partitions are kept until the metadata, the
assignment, the fetchable set or a read replica changes), and a request's partition entries
are encoded once per (version, offset, leader epoch, max bytes) and joined, so a full fetch
of thousands of partitions re-encodes only those that moved. A send to an open session looks
only at what changed: the fetchable partitions' nodes, topic ids and leader epochs are kept as
a plan (rebuilt when the metadata, assignment, fetchable set, a non-drain move or a read
replica changes), and a session that holds its plan is sent the partitions answered with data
since (a drain moves their positions), prefetched or rolled back; everything else walks.
"""
from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, cast

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.fetch import decode
from pyconsumer.consumer.fetch.buffer import FetchBuffer, Fetched
from pyconsumer.consumer.fetch.replicas import ReadReplicas
from pyconsumer.consumer.fetch.session import (
    ZERO_UUID,
    FetchRequestData,
    FetchSessionHandler,
    PartitionData,
)
from pyconsumer.consumer.metrics import ConsumerMetrics
from pyconsumer.consumer.subscription import SubscriptionState
from pyconsumer.errors import ErrorCode, IllegalStateError, KafkaError, error_for_code
from pyconsumer.net.client import NetworkClient
from pyconsumer.net.connection import Response
from pyconsumer.net.future import Future
from pyconsumer.net.responses import body_of
from pyconsumer.protocol import (
    ApiKey,
    Encoded,
    StructCodec,
    encode_struct,
    encoded_array,
    is_flexible,
    request_struct,
    struct_packer,
)
from pyconsumer.records import RecordSetIndex
from pyconsumer.structs import TopicPartition, tuple_maker

if TYPE_CHECKING:  # types only
    from pyconsumer.protocol import bodies

log = logging.getLogger(__name__)
_new_data = tuple_maker(PartitionData)      # one per partition of a full send: made in C

_LAST_VERSION_BY_NAME = 12        # Fetch v13+ names topics by id only
# top-level errors that concern the fetch session only (the handler starts a new one)
_SESSION_ERRORS = {ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH}


#: an answer with at least this many record bytes has its CRCs checked ahead on a decode
#: thread (below it, the hand-over costs more than the check saves)
CHECK_AHEAD_BYTES = 1 << 20

#: a Fetch request partition entry's fields, in the order _entry_packer's function takes them
_ENTRY_FIELDS = ("partition", "fetch_offset", "current_leader_epoch", "log_start_offset",
                 "partition_max_bytes")


@functools.cache
def _entry_packer(codec: StructCodec) -> Callable[..., Encoded | None] | None:
    """The packer of a Fetch version's partition entry from its fields' values (None: a
    version whose entry lacks one of them, encoded from the dict as before)."""
    return struct_packer(codec, _ENTRY_FIELDS)


#: one answered partition that was asked for: its part of the response, the index of its
#: record set, and what its request asked
Answered = tuple[TopicPartition, "bodies.PartitionData", RecordSetIndex, PartitionData]


#: the one-pass decoder's indexes: by (topic position in the response, partition number)
DecoderIndexes = Mapping[tuple[int, int], "RecordSetIndex | None"]


def _topics_with_indexes(body: bodies.FetchResponse
                         ) -> Iterator[tuple[bodies.FetchableTopicResponse,
                                             Iterable[RecordSetIndex | None]]]:
    """Each topic of the response with the decoder's indexes of its partitions, in the order
    of its partitions (None where the decoder gave none: a body from elsewhere, a repeated
    partition)."""
    indexes: DecoderIndexes | None = getattr(body, "indexes", None)
    for k, t in enumerate(body["responses"]):
        if indexes is None:
            yield t, (None,) * len(t["partitions"])
        else:
            yield t, [indexes.get((k, p["partition_index"])) for p in t["partitions"]]


class FetchRequests:
    """Builds and sends the Fetch requests; queues what they bring back in ``buffer``."""

    #: fetch again behind buffered data (see the module's docstring); off, Java's behaviour
    prefetch = True
    #: send to an open session only what changed (:meth:`_send_changes`); off, every send
    #: walks the fetchable partitions and the session (Java's way)
    incremental_sends = True
    #: tests: check every incremental send against the walk (IllegalStateError if it differs)
    check_incremental = False

    def __init__(self, client: NetworkClient, config: ConsumerConfig,
                 subscriptions: SubscriptionState, metrics: ConsumerMetrics, buffer: FetchBuffer,
                 replicas: ReadReplicas, clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.metrics = metrics
        self._clock = clock
        self.config = config
        self.subscriptions = subscriptions
        self.buffer = buffer
        self.replicas = replicas
        self._nodes_in_flight: set[int] = set()
        self._read_committed = config.isolation_level == "read_committed"
        #: bumped whenever a Fetch completes, answered or failed (a waiting poll re-sends)
        self.completions = 0
        #: the fetch nodes of the fetchable partitions (None: one has no leader), valid while
        #: the key (metadata version, assignment, fetchable set, read replicas) holds: the
        #: every-poll check that nothing can be sent looks at nodes, not partitions
        self._nodes_key: tuple[int, int, int, int, int] = (-1, -1, -1, -1, -1)
        self._fetch_nodes: frozenset[int] | None = None
        self._prefetched_at = -1                   # self.completions at the last prefetch
        #: ms until a leader skipped for its reconnect backoff may be fetched again (inf: none)
        self.retry_in_ms = float("inf")
        #: the offset each partition's last empty answer was fetched at: a prefetch from the
        #: end of buffered data that came back empty is not sent again while it is buffered
        self._empty_at: dict[TopicPartition, int] = {}
        #: the fetch session with each node
        self.sessions: dict[int, FetchSessionHandler] = {}
        #: each partition's Fetch entry as last encoded, under (version, offset, leader epoch,
        #: max bytes): a request lists every partition of a full fetch, but only those that
        #: moved need encoding again. Off: every entry goes through the codec field by field.
        self.encode_template = True
        self._encoded: dict[TopicPartition, tuple[tuple[int, int, int, int], Encoded]] = {}
        self._encoded_for = -1                     # the assignment id it was pruned for
        #: the fetchable partitions of each fetch node, with (topic id, leader epoch), and
        #: each one's node: valid while _plan_key (see _key) holds; None: one has no leader
        self._plan: dict[int, dict[TopicPartition, tuple[uuid.UUID, int]]] | None = None
        self._node_of: dict[TopicPartition, int] = {}
        self._plan_key: tuple[int, ...] = ()
        #: node -> the _key under which its session last came to hold exactly its planned
        #: partitions, each as wanted then
        self._synced: dict[int, tuple[int, ...]] = {}
        #: partitions whose wants may differ from their session's since it was last in step:
        #: those answered with data (a drain moves their position; kept while they hold
        #: buffered data) and those whose position a poll rolled back
        self._touched: dict[TopicPartition, None] = {}
        #: partitions that may lag (high watermark unknown or above the position), a superset
        #: kept while the plan holds: the starving check looks at these only (an answer, a
        #: drain or a rollback adds a partition back)
        self._lagging: dict[TopicPartition, None] = {}
        #: the TopicPartition of each answered partition (see _partitions_of), per topic
        self._partitions: dict[str, dict[int, TopicPartition]] = {}
        self._partitions_for = -1                 # the assignment id they were made under
        self._decode_threads = decode.threads_for(config.decode_threads)

    def _buffered_partitions(self) -> set[TopicPartition]:
        return self.buffer.buffered_partitions()

    def _all_in_flight(self) -> bool:
        """Every fetchable partition's node has a Fetch in flight, so nothing can be sent:
        the common case on the poll()s between two responses, checked without the full
        scheduling pass (which costs more than a poll of 500 records' other work)."""
        in_flight = self._nodes_in_flight
        if not in_flight:
            return False
        metadata = self.client.metadata
        subs = self.subscriptions
        # with read replicas set, a node also depends on the time (expiry): recomputed once
        # per completed fetch then, as before
        key = (metadata.update_version, subs.assignment_id, subs.fetchable_version,
               self.replicas.version, self.completions if self.replicas else -1)
        if key != self._nodes_key:
            self._nodes_key, self._fetch_nodes = key, self._nodes_of_fetchable()
        nodes = self._fetch_nodes
        return nodes is not None and nodes <= in_flight

    def _nodes_of_fetchable(self) -> frozenset[int] | None:
        """The nodes the fetchable partitions are fetched from; None when one has no leader
        (the full pass asks for metadata)."""
        metadata = self.client.metadata
        now = self._clock()
        nodes = set()
        for tp in self.subscriptions.fetchable_partitions():
            info = metadata.partition(tp)
            if info is None or info.leader < 0:
                return None
            nodes.add(self.replicas.node_for(tp, info, now))
        return frozenset(nodes)

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
        behind: set[int] = set()             # nodes with a partition not caught up
        self.retry_in_ms = float("inf")
        self.replicas.keep(subs.is_assigned)
        ahead = self._prefetchable(buffered) if buffered and self.prefetch else {}
        # nodes with a partition that has nothing in hand and data waiting: their fetch is a
        # full one with those partitions first and the prefetched ones last, which puts them
        # first in the broker's order too (a session keeps the order of the full fetch that
        # opened it; a sessionless broker fills in request order)
        starving = self._starving_nodes(ahead, buffered, now) if ahead else set()
        held = buffered
        if ahead:
            buffered = buffered - ahead.keys()
        sent, walk = self._send_changes(held, buffered, ahead, starving, now)
        if not walk:
            return sent
        fetchable = subs.fetchable_partitions()
        if ahead:
            # partitions with nothing buffered ask first: brokers fill a response in request
            # order, and one with data in hand must not take a small fetch.max.bytes from them
            fetchable = [tp for tp in fetchable if tp not in ahead] + \
                [tp for tp in fetchable if tp in ahead]
        # this walk runs over every fetchable partition (1,000s): lookups inlined, what holds
        # per node (its connection's delay) asked once a walk, the leader taken as the node
        # while no read replica is set (ReadReplicas.node_for's answer then)
        replicas = self.replicas if self.replicas else None
        in_flight = self._nodes_in_flight
        topics = metadata.topics
        states = subs.states()
        delays: dict[int, float] = {}
        for tp in fetchable:
            if tp in buffered:
                continue
            t = topics.get(tp.topic)
            info = None if t is None else t.partitions.get(tp.partition)
            if info is None or info.leader < 0:
                metadata.request_update()
                continue
            node = info.leader if replicas is None else replicas.node_for(tp, info, now)
            if node in in_flight:
                continue
            delay = delays.get(node)
            if delay is None:
                delay = delays[node] = self.client.connection_delay_ms(node)
            if delay > 0:
                self.retry_in_ms = min(self.retry_in_ms, delay)
                continue
            st = states[tp]
            offset = ahead.get(tp)
            if offset is None:
                position = st.position
                assert position is not None
                offset = position.offset
            wants = per_node.get(node)
            if wants is None:
                wants = per_node[node] = {}
            wants[tp] = (offset, -1 if info.leader_epoch is None else info.leader_epoch)
            hw = st.high_watermark
            if hw is None or offset < hw:
                behind.add(node)
        busy = self._nodes_with_buffered(buffered, now) if buffered and per_node else set()
        for node in [n for n in per_node if n in busy]:
            handler = self.sessions.get(node)
            if handler is not None and handler.has_session:
                # an incremental fetch without the buffered partitions would forget them in
                # the session, one with them would bring their data again: wait (KAFKA-17182)
                del per_node[node]
            elif node not in behind:
                # Hold back a fetch that would only long-poll caught-up partitions while other
                # partitions of the same node still have data buffered: it would sit at the
                # broker for fetch.max.wait.ms and, one fetch per node, keep those partitions
                # from being fetched again the moment they drain. They go together instead.
                del per_node[node]
        for node, partitions in per_node.items():
            self._send(node, partitions, full=node in starving and any(
                tp in ahead for tp in partitions))
        self._note_walk(per_node, held, now)
        return sent + len(per_node)

    # ------------------------------------------------------------------ incremental sends

    def _key(self) -> tuple[int, ...]:
        """What the plan of fetch nodes depends on: the metadata (leaders, epochs, topic ids),
        the assignment, the fetchable set, positions moved other than by a drain, and the
        read replicas."""
        subs = self.subscriptions
        return (self.client.metadata.update_version, subs.assignment_id,
                subs.fetchable_version, subs.moves, self.replicas.version)

    def _note_walk(self, per_node: dict[int, dict[TopicPartition, tuple[int, int]]],
                   held: set[TopicPartition], now: float) -> None:
        """After a walk: the plan for the current key, the nodes whose session now holds all
        of their planned partitions, and the touched partitions those nodes no longer need
        to look at."""
        if not self.incremental_sends or self.replicas:
            return           # a read replica's node depends on the time too: always walk
        key = self._key()
        if key != self._plan_key:
            self._make_plan(now)
            self._plan_key = key
            # under a new plan: the partitions that lag now or hold data that may change that
            subs = self.subscriptions
            lagging: dict[TopicPartition, None] = {}
            for tp in self._node_of:
                st = subs.state(tp)
                hw, position = st.high_watermark, st.position
                if tp in held or hw is None or hw < 0 or position is None \
                        or position.offset < hw:
                    lagging[tp] = None
            self._lagging = lagging
        plan = self._plan
        if plan is None:
            return
        synced = set()
        for node, partitions in per_node.items():
            handler = self.sessions[node]
            # the walk's partitions of a node are among its planned ones: as many, the same
            if len(partitions) == len(plan.get(node, ())) \
                    and len(handler.session_partitions) == len(partitions):
                self._synced[node] = key
                synced.add(node)
            else:
                self._synced.pop(node, None)
        node_of = self._node_of
        self._touched = {tp: None for tp in self._touched
                         if tp in held or (tp in node_of and node_of[tp] not in synced)}

    def _make_plan(self, now: float) -> None:
        """The fetch node, topic id and leader epoch of every fetchable partition (a walk,
        once per change of the key)."""
        metadata = self.client.metadata
        plan: dict[int, dict[TopicPartition, tuple[uuid.UUID, int]]] = {}
        node_of: dict[TopicPartition, int] = {}
        for tp in self.subscriptions.fetchable_partitions():
            info = metadata.partition(tp)
            if info is None or info.leader < 0:
                self._plan, self._node_of = None, {}
                return
            node = self.replicas.node_for(tp, info, now)
            t = metadata.topics.get(tp.topic)
            topic_id = ZERO_UUID if t is None or t.topic_id is None else t.topic_id
            epoch = -1 if info.leader_epoch is None else info.leader_epoch
            plan.setdefault(node, {})[tp] = (topic_id, epoch)
            node_of[tp] = node
        self._plan, self._node_of = plan, node_of

    def positions_moved(self, partitions: Iterable[TopicPartition]) -> None:
        """Positions set other than by a drain or a SubscriptionState move (a poll's rollback):
        their next fetch looks at them again."""
        for tp in partitions:
            self._touched[tp] = None
            self._lagging[tp] = None

    def _send_changes(self, held: set[TopicPartition], buffered: set[TopicPartition],
                      ahead: dict[TopicPartition, int], starving: set[int], now: float
                      ) -> tuple[int, bool]:
        """Send incremental fetches listing only what changed (issue 26), to every node with
        an open session that holds its planned partitions as they were wanted when the plan's
        key was last seen: since then, a partition's wants moved only if it was touched or is
        prefetched. Returns (fetches sent, whether the walk must still run for other nodes).
        ``held``: the buffered partitions; ``buffered``: those of them not prefetched now."""
        plan = self._plan
        if not self.incremental_sends or plan is None or self.replicas or self.buffer.refetch \
                or self.buffer.stopped() is not None or self._key() != self._plan_key:
            return 0, True
        key = self._plan_key
        node_of = self._node_of
        # a node with an open session and buffered partitions waits for them to drain
        # (KAFKA-17182, as the walk)
        busy = {node_of[tp] for tp in buffered if tp in node_of}
        ahead_nodes = {node_of[tp] for tp in ahead if tp in node_of}
        changes: dict[int, dict[TopicPartition, PartitionData | None]] = {}
        walk = False
        for node in plan:
            if node in self._nodes_in_flight:
                continue
            delay = self.client.connection_delay_ms(node)
            if delay > 0:
                self.retry_in_ms = min(self.retry_in_ms, delay)
                continue
            handler = self.sessions.get(node)
            if handler is None or not handler.has_session:
                walk = True          # a full fetch: the walk
            elif node in busy:
                continue             # waits for its buffered partitions (as the walk does)
            elif self._synced.get(node) != key or (node in starving and node in ahead_nodes):
                walk = True          # a session out of step, or a full fetch: the walk
            else:
                changes[node] = {}
        if not changes:
            return 0, walk
        subs = self.subscriptions
        max_bytes = self.config.max_partition_fetch_bytes
        done = []
        for tp in (*self._touched, *ahead) if ahead else self._touched:
            at = node_of.get(tp)
            wants = changes.get(at) if at is not None else None
            if wants is None or at is None:
                continue
            topic_id, epoch = plan[at][tp]
            offset = ahead.get(tp)
            if offset is None:
                position = subs.position(tp)
                assert position is not None          # fetchable: it has one
                offset = position.offset
            wants[tp] = _new_data((topic_id, offset, max_bytes, epoch))
            if tp not in held:
                done.append(tp)                      # in step once sent, until touched again
        sent = 0
        for node, wants in changes.items():
            data = self.sessions[node].build_changes(wants)
            if data is None:                         # a change of naming: a full fetch
                walk = True
                continue
            if self.check_incremental:
                self._check_against_walk(node, buffered, ahead, now)
            self._dispatch(node, data, self.config.fetch_max_bytes)
            sent += 1
        for tp in done:
            if node_of[tp] in changes:
                self._touched.pop(tp, None)
        return sent, walk

    def _check_against_walk(self, node: int, buffered: set[TopicPartition],
                            ahead: dict[TopicPartition, int], now: float) -> None:
        """Tests: the session after an incremental send is what the walk would want."""
        metadata = self.client.metadata
        subs = self.subscriptions
        want: dict[TopicPartition, PartitionData] = {}
        for tp in subs.fetchable_partitions():
            info = metadata.partition(tp)
            if tp in buffered or info is None or info.leader < 0 \
                    or self.replicas.node_for(tp, info, now) != node:
                continue
            t = metadata.topics.get(tp.topic)
            position = subs.position(tp)
            assert position is not None
            want[tp] = PartitionData(
                ZERO_UUID if t is None or t.topic_id is None else t.topic_id,
                ahead.get(tp, position.offset), self.config.max_partition_fetch_bytes,
                -1 if info.leader_epoch is None else info.leader_epoch)
        session = self.sessions[node].session_partitions
        if session != want:
            wrong = sorted(str(tp) for tp in session.keys() | want.keys()
                           if session.get(tp) != want.get(tp))
            raise IllegalStateError(
                f"incremental fetch to node {node}: the session differs from the walk's wants "
                f"for {wrong[:10]} ({len(wrong)} partitions)")

    def _prefetchable(self, buffered: set[TopicPartition]) -> dict[TopicPartition, int]:
        """The buffered partitions to fetch again now, each with the offset to fetch from: one
        response buffered (being drained or waiting), without error, that says where it ends,
        with the position inside it (else it is stale and will be dropped)."""
        held = self.buffer.held()
        out: dict[TopicPartition, int] = {}
        subs = self.subscriptions
        refetch = self.buffer.refetch
        for tp, fs in held.items():
            if len(fs) != 1 or tp not in buffered or tp in refetch:
                continue
            st = subs.fetchable_state(tp)
            if st is None:                               # unassigned or paused since
                continue
            f = fs[0]
            if f.end is None or f.error is not None or f.data["error_code"] \
                    or self._empty_at.get(tp) == f.end:   # prefetched already: nothing there
                continue
            position = st.position
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
        return None if info is None or info.leader < 0 else self.replicas.node_for(tp, info, now)

    def _starving_nodes(self, ahead: dict[TopicPartition, int], held: set[TopicPartition],
                        now: float) -> set[int]:
        """Nodes with a fetchable partition that has no records in hand and records waiting
        at the broker (or not known to be caught up): their fetch is a full one, the starving
        partitions first. Brokers fill a response in their own order (a session's, not the
        request's), so an incremental prefetch could keep a small fetch.max.bytes from them.
        While the plan holds, only the partitions that may lag are looked at (``_lagging``)."""
        subs = self.subscriptions
        served, seen_hw = self.buffer.in_hand()
        planned = self.incremental_sends and self._plan is not None and not self.replicas \
            and self._key() == self._plan_key
        out = set()
        if planned:
            node_of = self._node_of
            lagging = self._lagging
            states = subs.states()
            for tp in list(lagging):
                node = node_of.get(tp)
                if node is None:
                    del lagging[tp]                  # not fetchable: back with a new plan
                    continue
                st = states[tp]                      # one lookup for position and hw
                position = st.position
                hw = seen_hw[tp] if tp in seen_hw else st.high_watermark
                if hw is None or hw < 0 or position is None or position.offset < hw:
                    if tp not in ahead and tp not in served:
                        out.add(node)
                elif tp not in held:
                    # caught up, and nothing buffered that could move its position or high
                    # watermark: looked at again when an answer or a rollback touches it
                    del lagging[tp]
            if not self.check_incremental:
                return out
        walked = set()
        for tp in subs.fetchable_partitions():
            if tp in ahead or tp in served:
                continue
            position, hw = subs.position(tp), seen_hw.get(tp, subs.state(tp).high_watermark)
            if hw is None or hw < 0 or position is None or position.offset < hw:
                node = self._leader_node(tp, now)
                if node is not None:
                    walked.add(node)
        if planned and walked != out:
            raise IllegalStateError(f"starving nodes {sorted(out)} from the partitions that "
                                    f"may lag, {sorted(walked)} from the walk")
        return walked

    def _nodes_with_buffered(self, buffered: set[TopicPartition], now: float) -> set[int]:
        """The nodes the buffered partitions that are still to be fetched (assigned, not
        paused, no error waiting for a seek) would be fetched from."""
        nodes = set()
        stopped = self.buffer.stopped()
        for tp in buffered:
            if not self.subscriptions.is_fetchable(tp) or tp == stopped:
                continue
            info = self.client.metadata.partition(tp)
            if info is not None and info.leader >= 0:
                nodes.add(self.replicas.node_for(tp, info, now))
        return nodes

    def _send(self, node: int, partitions: dict[TopicPartition, tuple[int, int]],
              full: bool = False) -> None:
        metadata = self.client.metadata
        config = self.config
        # every partition asks max.partition.fetch.bytes but one re-fetching a whole batch
        asks = dict.fromkeys(partitions, config.max_partition_fetch_bytes)
        again: list[TopicPartition] = []
        refetches = self.buffer.refetch
        if refetches:
            for tp, (offset, _) in partitions.items():
                refetch = refetches.get(tp)
                if refetch is not None and refetch.offset == offset:
                    asks[tp] = refetch.max_bytes
                    again.append(tp)
        # a re-fetch of an incomplete batch goes first (brokers fill a response in request
        # order) and the response may hold all of them
        order = again + [tp for tp in partitions if tp not in again]
        grown = sum(asks[tp] for tp in again)
        max_bytes = max(config.fetch_max_bytes, grown)
        handler = self.sessions.get(node)
        if handler is None:
            handler = self.sessions[node] = FetchSessionHandler(node)
        builder = handler.new_builder()
        ids: dict[str, uuid.UUID] = {}           # each topic's id looked up once
        for tp in order:
            offset, epoch = partitions[tp]
            topic_id = ids.get(tp.topic)
            if topic_id is None:
                t = metadata.topics.get(tp.topic)
                topic_id = ids[tp.topic] = \
                    ZERO_UUID if t is None or t.topic_id is None else t.topic_id
            builder.add(tp, _new_data((topic_id, offset, asks[tp], epoch)))
        # a session keeps the broker's own order: a re-fetch needs a full fetch to go first
        data = builder.build(full=full or bool(again))
        self._dispatch(node, data, max_bytes)

    def _dispatch(self, node: int, data: FetchRequestData, max_bytes: int) -> None:
        """Send a built request to ``node``; its answer goes to :meth:`_on_response`."""
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
                      max_wait_ms: int | None = None) -> bodies.FetchRequest:
        """The Fetch body for ``data`` at ``version`` (chosen when it goes on the wire). A
        partition entry, or a topic's whole array of them, may be an :class:`Encoded` standing
        in for the struct (written as is): the TypedDict's lists are cast to say so."""
        config = self.config
        topics: dict[str, tuple[uuid.UUID, list[bodies.FetchPartition | Encoded]]] = {}
        arrays: dict[str, tuple[uuid.UUID, Encoded]] = {}
        codec = request_struct(ApiKey.FETCH, version, ("topics", "partitions")) \
            if self.encode_template else None
        pack = None if codec is None else _entry_packer(codec)
        encoded = self._encoded
        if codec is not None and self._encoded_for != self.subscriptions.assignment_id:
            self._encoded_for = self.subscriptions.assignment_id    # forget unassigned ones
            encoded = self._encoded = {tp: e for tp, e in encoded.items()
                                       if self.subscriptions.is_assigned(tp)}
        for tp, p in data.partitions_at(version).items():
            entry: bodies.FetchPartition | Encoded | None = None
            if codec is not None:
                key = (version, p.fetch_offset, p.current_leader_epoch, p.max_bytes)
                kept = encoded.get(tp)
                if kept is not None and kept[0] == key:
                    entry = kept[1]
            if entry is None and pack is not None:
                entry = pack(tp.partition, p.fetch_offset, p.current_leader_epoch, -1,
                             p.max_bytes)
                if entry is not None:
                    encoded[tp] = (key, entry)
            if entry is None:
                entry = {"partition": tp.partition, "fetch_offset": p.fetch_offset,
                         "current_leader_epoch": p.current_leader_epoch,
                         "log_start_offset": -1, "partition_max_bytes": p.max_bytes}
                if codec is not None:
                    entry = encode_struct(codec, entry)
                    encoded[tp] = (key, entry)
            listed = topics.get(tp.topic)
            if listed is None:             # (not setdefault: its default is made every time)
                listed = topics[tp.topic] = (p.topic_id, [])
            listed[1].append(entry)
        forgotten: dict[tuple[str, uuid.UUID], list[int]] = {}
        if version >= 7:
            for tp, topic_id in data.forgotten(version):
                forgotten.setdefault((tp.topic, topic_id), []).append(tp.partition)
        if codec is not None:      # every entry encoded: each topic's array goes as one
            flexible = is_flexible(ApiKey.FETCH, version)
            arrays = {name: (topic_id, encoded_array(cast("list[Encoded]", entries), flexible))
                      for name, (topic_id, entries) in topics.items()}
        listed_topics: list[bodies.FetchTopic] = [
            {"topic": name, "topic_id": topic_id,
             "partitions": cast("list[bodies.FetchPartition]", ps)}
            for name, (topic_id, ps) in (arrays.items() if codec is not None else topics.items())]
        return {
            "replica_id": -1,
            "max_wait_ms": config.fetch_max_wait_ms if max_wait_ms is None else max_wait_ms,
            "min_bytes": config.fetch_min_bytes,
            "max_bytes": max_bytes,
            "isolation_level": 1 if self._read_committed else 0,
            "session_id": data.metadata.session_id,
            "session_epoch": data.metadata.epoch,
            "topics": listed_topics,
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
                self.replicas.clear(tp)
            return
        assert fut.value is not None
        response = fut.value
        body = body_of(response, ApiKey.FETCH)
        code = body.get("error_code", 0)
        by_name = response.version <= _LAST_VERSION_BY_NAME
        parts: list[Answered] = []
        named: set[TopicPartition] = set()
        topic_bytes: list[tuple[str | None, int]] = []
        unknown_ids = 0
        session_partitions = data.session_partitions
        for t, topic_indexes in _topics_with_indexes(body):
            name = t["topic"] if by_name else data.topic_names.get(t["topic_id"])
            known = None if name is None else self._partitions_of(name)
            size = 0
            for p, index in zip(t["partitions"], topic_indexes):
                # each partition's record set indexed once: the bytes counted here, the end
                # and bound for the buffer, the batches for its cursor
                at: TopicPartition | None = None
                if known is not None:
                    i = p["partition_index"]
                    at = known.get(i)
                    if at is None:                    # not assigned: made once and kept
                        assert name is not None
                        at = known[i] = TopicPartition(name, i)
                asked = None if at is None else session_partitions.get(at)
                offset = 0 if asked is None else asked.fetch_offset
                records = p.get("records")
                if index is None:             # no index from the decoder: indexed here
                    index = RecordSetIndex(records, offset)
                elif offset:                   # built at offset 0: judged again from its entries
                    index.set_fetch_offset(offset)
                size += index.size
                if at is None:
                    continue
                named.add(at)
                if asked is None:
                    # the request did not list it (Java refuses such an answer): no data
                    log.debug("fetch from node %d answered %s, which it did not ask for: "
                              "ignored", node, at)
                    continue
                parts.append((at, p, index, asked))
            topic_bytes.append((name, size))
            if name is None:
                unknown_ids += 1
        if not code:
            self.metrics.fetch_answered(node, topic_bytes)
        if handler is None or not handler.handle_response(
                code, body.get("session_id", 0), named, unknown_ids):
            if code and code not in _SESSION_ERRORS:
                log.warning("fetch from node %d: %s", node, error_for_code(code))
                self.client.metadata.request_update()
            return
        # a partition asked for but not answered has no data this time (a full fetch) or
        # none new (a session's incremental answer leaves out what did not change): its next
        # fetch asks again
        self._check_ahead(parts)
        apply_answer = self.buffer.apply_answer
        empty_at, lagging, touched = self._empty_at, self._lagging, self._touched
        for tp, p, index, asked in parts:
            if not p["error_code"] and not p.get("records"):
                # nothing to hand out: take its news now rather than queue it behind
                # other partitions' data, where it would keep its partition from being
                # fetched again until that data drained (brokers that cap a response
                # answer the partitions past the cap this way)
                st = apply_answer(tp, asked.fetch_offset, p)
                empty_at[tp] = asked.fetch_offset
                if st is None:               # stale: judged from its state as it is
                    st = self.subscriptions.state_or_none(tp)
                if st is not None:           # its high watermark may have moved
                    # it may lag now, or be caught up (then dropped from _lagging
                    # unless touched: data it holds may still move it)
                    hw, position = st.high_watermark, st.position
                    if hw is None or hw < 0 or position is None or position.offset < hw:
                        lagging[tp] = None
                    elif tp not in touched:
                        lagging.pop(tp, None)
                continue
            # its position moves as it drains, its high watermark when it is read
            touched[tp] = None
            lagging[tp] = None
            fetched = Fetched(tp, asked.fetch_offset, asked.max_bytes, p, response.version)
            if not p["error_code"]:
                fetched.index = index
                fetched.bound = index.bound
                if self.prefetch:
                    fetched.end = index.end
            self.buffer.add(fetched)

    def _check_ahead(self, parts: list[Answered]) -> None:
        """A large answer's batch CRCs checked on a decode thread as it arrives
        (RecordSetIndex.verify_crcs): the polling thread then reads each batch's bytes once,
        when it decodes it, instead of twice (check.crcs reads them all first). A batch not
        checked yet when its turn comes is checked there, as always; so is every batch of the
        answer's first partition with data (a one-partition answer is not checked ahead)."""
        if not self.config.check_crcs or self._decode_threads < 2:
            return
        work = [(index, records) for _, p, index, _ in parts
                if index.size and not p["error_code"] and (records := p.get("records")) is not None]
        # the first partition with data is left to the walker, which starts on it at once:
        # checked ahead too, the two would race over the same batches (one partition, 1 MB
        # answers: 156 -> 137 ms a 1M-record read; 6 partitions unchanged, 115 ms)
        work = work[1:]
        if not work or sum(index.size for index, _ in work) < CHECK_AHEAD_BYTES:
            return

        def check() -> None:
            for index, records in work:
                index.verify_crcs(records)
        decode.submit(check, self._decode_threads)

    def _partitions_of(self, topic: str) -> dict[int, TopicPartition]:
        """The TopicPartitions of an answered topic by index: the assignment's own objects
        (made once, not per partition of every answer, and found at once in every dict keyed
        by the assignment's objects: the same object needs no comparison of fields), and those
        made and kept for partitions not assigned. Renewed when the assignment changes; looked
        up once per topic of an answer."""
        subs = self.subscriptions
        if self._partitions_for != subs.assignment_id:
            self._partitions_for = subs.assignment_id
            self._partitions = {}
            for assigned in subs.assigned_partitions():
                self._partitions.setdefault(assigned.topic, {})[assigned.partition] = assigned
        by_index = self._partitions.get(topic)
        if by_index is None:
            by_index = self._partitions[topic] = {}
        return by_index

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

            def body(version: int, d: FetchRequestData = data) -> bodies.FetchRequest:
                return self._request_body(d, version, self.config.fetch_max_bytes, max_wait_ms=0)

            futures.append(self.client.send(node, ApiKey.FETCH, body, timeout_ms=timeout_ms))
        if not futures:
            return
        try:
            self.client.poll(timeout_ms=timeout_ms, until=lambda: all(f.done for f in futures))
        except KafkaError as e:
            log.debug("closing fetch sessions: %s", e)


__all__ = ["FetchRequests"]
