"""An in-process scripted Kafka cluster for tests (in the spirit of franz-go's kfake), shipped
as :class:`pyconsumer.testing.FakeCluster` so code built on pyconsumer can be tested without a
broker, Java or Docker.

``FakeCluster(n_brokers)`` listens on 127.0.0.1 (one free port per broker, node ids 0..n-1),
decodes requests with pyconsumer.protocol and answers them with one handler per API, keeping
the state a broker keeps: topics (id, partitions, leader and leader epoch per partition), a log
per partition, committed offsets, a classic group coordinator per group
(JoinGroup/SyncGroup/Heartbeat/LeaveGroup, session expiry, static members, generation checks
on OffsetCommit) following Apache Kafka's GroupCoordinator, and a consumer protocol (KIP-848)
coordinator (:class:`ConsumerGroup`). Produce is not spoken (pyconsumer has no Produce
codec): tests append data with :meth:`FakeCluster.produce`, whose record batches are built by
aiokafka's independent encoder (the ``test`` extra, imported only then; without it produce()
raises MissingExtraError), or append their own batches with :meth:`FakeCluster.append_batch`.

Threads: one accept thread per broker, one thread per connection (requests on a connection
are answered in order, one at a time, as Kafka does) and a ticker for session and rebalance
timeouts. Handlers run under one cluster lock (a Condition); a handler that must wait
(JoinGroup until the rebalance completes, SyncGroup until the leader's assignment, Fetch until
data or max_wait_ms) waits on it, always with a deadline.

Fetch sessions (KIP-227) as Kafka's FetchManager keeps them, per broker: a full fetch with
epoch 0 opens one (``fetch_sessions=False``, or ``max_fetch_sessions`` reached, answers
session id 0), an incremental one must carry the session's epoch (else
INVALID_FETCH_SESSION_EPOCH; an unknown id gets FETCH_SESSION_ID_NOT_FOUND), adds or updates
the partitions it lists, drops its ``forgotten_topics_data`` and is answered with only the
partitions that have records, an error or new watermarks; every session partition is read,
in the session's order, a partition that returned records moving to its end. A full fetch
naming a session closes it (epoch -1: without opening another). :meth:`evict_fetch_sessions`
drops sessions as a full cache would. Follower fetching (KIP-392): :meth:`set_rack`,
:meth:`set_follower`; a leader asked by a consumer (Fetch v11+) whose ``rack_id`` is a
follower's rack answers that follower as ``preferred_read_replica`` with no records, and a
follower serves consumer fetches up to its own end offset (OFFSET_OUT_OF_RANGE past it).

Faults: :meth:`inject` (the next N requests of an API get an error), :meth:`delay`,
:meth:`drop_next` (close the connection instead of answering), :meth:`control` (a test's own
handler), :meth:`move_coordinator`, :meth:`move_leader`, :meth:`stop_broker` /
:meth:`start_broker`, :meth:`truncate`, :meth:`delete_records`. Every request is logged
(:attr:`requests`, :meth:`wait_for_request`). Exceptions inside the fake land in
:attr:`errors`; a test fixture should assert it stays empty. :data:`FAST_CONSUMER` holds
consumer settings with short timers (joins, retries and empty fetches take milliseconds).

Example::

    with FakeCluster(3, topics={"t": 4}) as cluster:        # t-i led by broker i % 3
        cluster.produce(TopicPartition("t", 0), [(b"key", b"value")])
        cluster.inject(ApiKey.HEARTBEAT, ErrorCode.REBALANCE_IN_PROGRESS, count=1)
        consumer = KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g")
        ...
        cluster.move_coordinator("g", 2)                    # broker 2 takes the group over
        join = cluster.wait_for_request(lambda r: r.api == ApiKey.JOIN_GROUP and r.broker == 2)
"""
from __future__ import annotations

import bisect
import dataclasses
import itertools
import socket
import struct
import threading
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from pyconsumer.errors import ErrorCode
from pyconsumer.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    api_versions_error_code,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from pyconsumer.structs import TopicPartition

from ._encode import aio_v2
from ._fake_group import ConsumerGroup

ZERO_UUID = uuid.UUID(int=0)
HOST = "127.0.0.1"
# consumer settings for tests on the fake: short timers, so joins, retries and empty fetches
# take milliseconds
FAST_CONSUMER: dict[str, Any] = dict(fetch_max_wait_ms=100, heartbeat_interval_ms=100,
                                     retry_backoff_ms=20, reconnect_backoff_ms=20,
                                     reconnect_backoff_max_ms=200, auto_offset_reset="earliest")
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3

Body = dict[str, Any]
RecordLike = tuple[Any, ...]   # (key, value[, headers[, timestamp]])


class _Hangup(Exception):
    """Close the connection without answering (broker stopped, drop_next)."""


@dataclasses.dataclass(frozen=True)
class Request:
    """One request as the fake received it."""

    broker: int
    api: ApiKey
    version: int
    correlation_id: int
    client_id: str | None
    body: Body
    at: float                       # time.monotonic() on arrival
    size: int = 0                   # bytes on the wire, size prefix included


@dataclasses.dataclass
class Batch:
    base: int
    last: int
    data: bytes
    timestamps: list[int]           # per record, for ListOffsets by time


class Partition:
    def __init__(self, leader: int) -> None:
        self.batches: list[Batch] = []
        self.log_start = 0
        self.end = 0                # log end offset; the high watermark (no followers)
        self.leader = leader
        self.epoch = 0
        self.epochs: list[tuple[int, int]] = [(0, 0)]   # leader epoch -> its start offset
        #: follower node -> its end offset (None: in sync with the leader)
        self.followers: dict[int, int | None] = {}

    def end_on(self, node: int) -> int:
        """The end offset (and high watermark) as broker ``node`` serves the partition."""
        if node == self.leader:
            return self.end
        lag = self.followers.get(node)
        return self.end if lag is None else min(lag, self.end)

    def read(self, offset: int, limit: int, min_one: bool, hard_limit: bool,
             upto: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset``, then a cut piece of the next up to
        ``limit`` bytes (Kafka slices the log file). The first batch goes out whole when
        ``min_one`` (KIP-74); a lone incomplete batch becomes nothing unless ``hard_limit``
        (Fetch < v3), as ReplicaManager does. A follower reads only batches below ``upto``."""
        i = bisect.bisect_left([b.last for b in self.batches], offset)
        out = bytearray()
        for b in self.batches[i:]:
            if upto is not None and b.last >= upto:
                break
            if len(out) + len(b.data) <= limit or (not out and min_one):
                out += b.data
                continue
            if out or hard_limit:
                out += b.data[:max(0, limit - len(out))]
            break
        return bytes(out)

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, as Kafka's LeaderEpochFileCache."""
        if epoch < 0 or not self.epochs:
            return -1, -1
        if epoch == self.epochs[-1][0]:
            return epoch, self.end
        higher = next((e for e in self.epochs if e[0] > epoch), None)
        if higher is None:
            return -1, -1
        floor = [e for e in self.epochs if e[0] <= epoch]
        return (floor[-1][0] if floor else epoch), higher[1]

    def epoch_at(self, offset: int) -> int:
        return max((e for e, start in self.epochs if start <= offset), default=-1)


@dataclasses.dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]


@dataclasses.dataclass
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    session_timeout: float          # seconds
    rebalance_timeout: float
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    last_heartbeat: float
    awaiting_join: bool = False
    awaiting_sync: bool = False
    join_result: Body | None = None     # the JoinGroup answer its waiting request takes
    last_join: Body | None = None       # resent to a rejoin during CompletingRebalance
    assignment: bytes = b""


@dataclasses.dataclass
class Committed:
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclasses.dataclass
class CachedPartition:
    """A partition of a fetch session: what the last request said of it, and the watermarks
    last answered (-1: answer it next time whatever happens)."""

    topic: str | None               # None when the session names topics by id
    topic_id: uuid.UUID
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int
    high_watermark: int = -1
    log_start_offset: int = -1


@dataclasses.dataclass
class FetchSession:
    """One incremental fetch session (Kafka's FetchSession) held by broker ``broker``."""

    session_id: int
    broker: int
    epoch: int                      # the epoch the next request must carry
    uses_topic_ids: bool
    #: (topic name or id, partition) -> cached partition, in the session's fetch order
    partitions: dict[tuple[Any, int], CachedPartition]


class Group:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # Kafka's state names: Empty, PreparingRebalance, CompletingRebalance, Stable
        self.state = "Empty"
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader: str | None = None
        self.members: dict[str, Member] = {}
        self.pending: dict[str, float] = {}     # member id given by MEMBER_ID_REQUIRED -> expiry
        self.static: dict[str, str] = {}        # group.instance.id -> member id
        self.pending_sync: set[str] = set()
        self.rebalance_deadline = 0.0
        self.join_not_before = 0.0
        self.sync_deadline = 0.0
        self.offsets: dict[TopicPartition, Committed] = {}

    def __repr__(self) -> str:
        return (f"Group({self.group_id!r}, {self.state}, generation={self.generation}, "
                f"leader={self.leader}, members={list(self.members)})")


@dataclasses.dataclass
class _Rule:
    kind: str                       # "error" | "delay" | "drop"
    api: ApiKey
    broker: int | None
    count: int | None               # None: forever
    error: int = 0
    seconds: float = 0.0

    def take(self, req: Request) -> bool:
        if self.api != req.api or (self.broker is not None and self.broker != req.broker):
            return False
        if self.count is not None:
            if self.count <= 0:
                return False
            self.count -= 1
        return True


Handler = Callable[["_Broker", Request], Body]
Control = Callable[[Request], "Body | None"]


class _Broker:
    """One listener: an accept thread and a thread per connection."""

    def __init__(self, cluster: FakeCluster, node_id: int) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.port = 0
        self.running = False
        self._server: socket.socket | None = None
        self._conns: set[socket.socket] = set()

    def start(self) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((HOST, self.port))
        server.listen(16)
        server.settimeout(0.05)
        self.port = server.getsockname()[1]
        self._server = server
        self.running = True
        threading.Thread(target=self._accept, args=(server,), daemon=True,
                         name=f"fake-broker-{self.node_id}").start()

    def _accept(self, server: socket.socket) -> None:
        while self.running and self._server is server:
            try:
                sock, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            sock.settimeout(None)
            self._conns.add(sock)
            threading.Thread(target=self._serve, args=(sock,), daemon=True,
                             name=f"fake-broker-{self.node_id}-conn").start()

    def _read(self, sock: socket.socket, n: int) -> bytes | None:
        out = bytearray()
        while len(out) < n:
            try:
                chunk = sock.recv(n - len(out))
            except OSError:
                return None
            if not chunk:
                return None
            out += chunk
        return bytes(out)

    def _serve(self, sock: socket.socket) -> None:
        try:
            while self.running:
                head = self._read(sock, 4)
                frame = None if head is None else self._read(sock, int.from_bytes(head, "big"))
                if frame is None:
                    return
                answer = self.cluster._handle(self, frame)
                if answer is None:
                    return
                sock.sendall(answer)
        except OSError:
            pass
        except BaseException as e:   # a bug in the fake or a test's handler: fail the test
            self.cluster.errors.append(e)
        finally:
            self._conns.discard(sock)
            sock.close()

    def drop_connections(self) -> None:
        for s in list(self._conns):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self) -> None:
        self.running = False
        server, self._server = self._server, None
        if server is not None:
            try:
                # stop listening now: a close() alone leaves the socket listening (and
                # accepting into its backlog) until the accept thread's wait ends
                server.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            server.close()
        self.drop_connections()


class FakeCluster:
    """A scripted Kafka cluster; see the module doc. A context manager."""

    def __init__(self, n_brokers: int = 1, *, topics: dict[str, int] | None = None,
                 max_versions: dict[ApiKey, int] | None = None,
                 min_session_timeout_ms: int = 1, max_session_timeout_ms: int = 1_800_000,
                 initial_rebalance_delay_ms: int = 0, fetch_wait_cap_s: float = 5.0,
                 auto_create_topics: bool = False, fetch_sessions: bool = True,
                 max_fetch_sessions: int = 1000) -> None:
        if not 1 <= n_brokers <= 9:
            raise ValueError(f"n_brokers must be 1..9, got {n_brokers}")
        self.cond = threading.Condition(threading.RLock())
        self.topics: dict[str, Topic] = {}
        self.groups: dict[str, Group] = {}
        #: consumer protocol (KIP-848) groups, see pyconsumer/testing/_fake_group.py
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        self.requests: list[Request] = []
        self.rejected: list[tuple[int, int, int]] = []   # (broker, api key, version) refused
        self.errors: list[BaseException] = []
        self.max_versions = dict(max_versions or {})
        self.min_session_ms, self.max_session_ms = min_session_timeout_ms, max_session_timeout_ms
        self.initial_rebalance_delay = initial_rebalance_delay_ms / 1000.0
        self.fetch_wait_cap = fetch_wait_cap_s
        self.auto_create_topics = auto_create_topics
        #: False: every fetch is sessionless (a broker whose session cache has no room)
        self.fetch_sessions = fetch_sessions
        self.max_fetch_sessions = max_fetch_sessions
        self.sessions: dict[int, FetchSession] = {}
        self._session_ids = itertools.count(1001)
        self.racks: dict[int, str] = {}
        self._coordinators: dict[str, int] = {}
        self._rules: list[_Rule] = []
        self._controls: list[tuple[ApiKey, Control]] = []
        self._data_version = 0          # bumped on every append / leader move: wakes fetches
        self._closed = threading.Event()
        self.handlers: dict[ApiKey, Handler] = {
            ApiKey.API_VERSIONS: self._api_versions, ApiKey.METADATA: self._metadata,
            ApiKey.FIND_COORDINATOR: self._find_coordinator, ApiKey.JOIN_GROUP: self._join_group,
            ApiKey.SYNC_GROUP: self._sync_group, ApiKey.HEARTBEAT: self._heartbeat,
            ApiKey.LEAVE_GROUP: self._leave_group, ApiKey.OFFSET_COMMIT: self._offset_commit,
            ApiKey.OFFSET_FETCH: self._offset_fetch, ApiKey.FETCH: self._fetch,
            ApiKey.LIST_OFFSETS: self._list_offsets,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self._offset_for_leader_epoch,
            ApiKey.DESCRIBE_GROUPS: self._describe_groups,
            ApiKey.CONSUMER_GROUP_HEARTBEAT: self._consumer_group_heartbeat,
        }
        self.brokers = [_Broker(self, i) for i in range(n_brokers)]
        for b in self.brokers:
            b.start()
        for name, n in (topics or {}).items():
            self.create_topic(name, n)
        self._ticker = threading.Thread(target=self._tick_loop, daemon=True, name="fake-ticker")
        self._ticker.start()

    # ================================================================== lifecycle

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{b.port}" for b in self.brokers)

    def close(self) -> None:
        self._closed.set()
        for b in self.brokers:
            b.stop()
        with self.cond:
            self.cond.notify_all()
        self._ticker.join(2)

    def __enter__(self) -> FakeCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stop_broker(self, node: int) -> None:
        """Close the listener and every connection of broker ``node``."""
        with self.cond:
            self.brokers[node].stop()
            self.cond.notify_all()

    def start_broker(self, node: int) -> None:
        """Listen again, on the same port."""
        with self.cond:
            if not self.brokers[node].running:
                self.brokers[node].start()

    def drop_connections(self, node: int) -> None:
        """Close broker ``node``'s connections; it keeps listening."""
        self.brokers[node].drop_connections()

    # ================================================================== data

    def create_topic(self, name: str, partitions: int = 1,
                     leaders: Iterable[int] | None = None) -> Topic:
        """Partition i led by ``leaders[i]`` (default: spread round-robin over the brokers)."""
        with self.cond:
            if name in self.topics:
                raise ValueError(f"topic {name!r} already exists")
            lead = list(leaders) if leaders is not None else \
                [i % len(self.brokers) for i in range(partitions)]
            if len(lead) != partitions:
                raise ValueError(f"{partitions} partitions but {len(lead)} leaders for {name!r}")
            topic = Topic(name, uuid.uuid4(), [Partition(n) for n in lead])
            self.topics[name] = topic
            return topic

    def partition(self, tp: TopicPartition) -> Partition:
        t = self.topics.get(tp.topic)
        if t is None or not 0 <= tp.partition < len(t.partitions):
            raise KeyError(f"no partition {tp} in the fake cluster")
        return t.partitions[tp.partition]

    def produce(self, tp: TopicPartition, records: Iterable[RecordLike], *,
                codec: str = "none", timestamp: int | None = None) -> list[int]:
        """Append one record batch of ``(key, value[, headers[, timestamp]])`` tuples; their
        offsets. Timestamps default to ``timestamp`` (now) plus the record's index."""
        recs = list(records)
        if not recs:
            raise ValueError("produce() needs at least one record")
        base_ts = int(time.time() * 1000) if timestamp is None else timestamp
        rows = []
        for i, r in enumerate(recs):
            key, value = r[0], r[1]
            headers = list(r[2]) if len(r) > 2 else []
            ts = r[3] if len(r) > 3 else base_ts + i
            rows.append((i, ts, key, value, headers))
        base = self.append_batch(tp, aio_v2(rows, codec, user="FakeCluster.produce"),
                                 [row[1] for row in rows])
        return list(range(base, base + len(recs)))

    def append_batch(self, tp: TopicPartition, batch: bytes,
                     timestamps: list[int] | None = None) -> int:
        """Append one magic-2 record batch as the leader would: its base offset and partition
        leader epoch are rewritten (both outside the CRC). Returns the base offset."""
        if len(batch) < 61 or batch[16] != 2:
            raise ValueError("append_batch() takes one magic v2 record batch")
        with self.cond:
            p = self.partition(tp)
            buf = bytearray(batch)
            struct.pack_into(">q", buf, 0, p.end)
            struct.pack_into(">i", buf, 12, p.epoch)
            count = struct.unpack_from(">i", buf, 23)[0] + 1
            max_ts = struct.unpack_from(">q", buf, 35)[0]
            base = p.end
            if not p.epochs or p.epochs[-1][0] != p.epoch:
                p.epochs.append((p.epoch, base))   # the epoch's first batch after a truncation
            p.batches.append(Batch(base, base + count - 1, bytes(buf),
                                   timestamps or [max_ts] * count))
            p.end += count
            self._data_version += 1
            self.cond.notify_all()
            return base

    def truncate(self, tp: TopicPartition, offset: int) -> None:
        """Cut the log at ``offset`` (a batch boundary), as an unclean leader election does;
        leader epochs starting at or past it are forgotten (Kafka's truncateFromEnd)."""
        with self.cond:
            p = self.partition(tp)
            if offset != p.end and offset not in {b.base for b in p.batches}:
                raise ValueError(f"{tp}: {offset} is not a batch boundary")
            p.batches = [b for b in p.batches if b.base < offset]
            p.end = offset
            p.epochs = [e for e in p.epochs if e[1] < offset]
            self._data_version += 1
            self.cond.notify_all()

    def delete_records(self, tp: TopicPartition, offset: int) -> None:
        """Move the log start offset (DeleteRecords / retention)."""
        with self.cond:
            p = self.partition(tp)
            if not p.log_start <= offset <= p.end:
                raise ValueError(f"{tp}: log start {offset} outside [{p.log_start}, {p.end}]")
            p.log_start = offset
            p.batches = [b for b in p.batches if b.last >= offset]

    def move_leader(self, tp: TopicPartition, node: int) -> int:
        """Make ``node`` the leader of ``tp`` with a new leader epoch (returned)."""
        with self.cond:
            p = self.partition(tp)
            p.followers.pop(node, None)
            p.leader = node
            p.epoch += 1
            p.epochs.append((p.epoch, p.end))
            self._data_version += 1
            self.cond.notify_all()
            return p.epoch

    def set_rack(self, node: int, rack: str | None) -> None:
        """Broker ``node``'s rack, in Metadata and for choosing read replicas."""
        with self.cond:
            if rack is None:
                self.racks.pop(node, None)
            else:
                self.racks[node] = rack

    def set_follower(self, tp: TopicPartition, node: int, end: int | None = None,
                     present: bool = True) -> None:
        """Make ``node`` a follower of ``tp`` holding the log up to ``end`` (None: all of
        it), or (``present=False``) no longer a replica."""
        with self.cond:
            p = self.partition(tp)
            if node == p.leader:
                raise ValueError(f"{node} leads {tp}")
            if present:
                p.followers[node] = end
            else:
                p.followers.pop(node, None)
            self._data_version += 1
            self.cond.notify_all()

    def fetch_sessions_of(self, broker: int | None = None) -> list[FetchSession]:
        """Copies of the open fetch sessions (of one broker, or all)."""
        with self.cond:
            return [dataclasses.replace(x, partitions=dict(x.partitions))
                    for x in self.sessions.values() if broker is None or x.broker == broker]

    def evict_fetch_sessions(self, broker: int | None = None) -> list[int]:
        """Drop the fetch sessions (of one broker, or all) as a full session cache evicts
        them; their next incremental fetch gets FETCH_SESSION_ID_NOT_FOUND. Their ids."""
        with self.cond:
            gone = [i for i, x in self.sessions.items() if broker is None or x.broker == broker]
            for i in gone:
                del self.sessions[i]
            return gone

    # ================================================================== groups

    def coordinator_of(self, group_id: str) -> int:
        with self.cond:
            node = self._coordinators.get(group_id)
            if node is None:
                node = zlib.crc32(group_id.encode()) % len(self.brokers)
            return node

    def move_coordinator(self, group_id: str, node: int) -> None:
        """From now on ``node`` coordinates the group; the old coordinator answers
        NOT_COORDINATOR (its waiting JoinGroup/SyncGroup requests too)."""
        with self.cond:
            self._coordinators[group_id] = node
            self.cond.notify_all()

    def group(self, group_id: str) -> Group | None:
        with self.cond:
            return self.groups.get(group_id)

    def committed(self, group_id: str) -> dict[TopicPartition, int]:
        with self.cond:
            g = self.groups.get(group_id)
            return {} if g is None else {tp: c.offset for tp, c in g.offsets.items()}

    def set_committed(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        with self.cond:
            g = self._group(group_id)
            for tp, offset in offsets.items():
                g.offsets[tp] = Committed(offset, -1, "")

    # ================================================================== faults, log

    def inject(self, api: ApiKey, error: int, count: int = 1, broker: int | None = None) -> None:
        """The next ``count`` requests of ``api`` (to ``broker``, or any) get ``error``
        instead of being handled."""
        with self.cond:
            self._rules.append(_Rule("error", api, broker, count, error=int(error)))

    def delay(self, api: ApiKey, seconds: float, count: int | None = None,
              broker: int | None = None) -> None:
        """Hold requests of ``api`` for ``seconds`` before handling them."""
        with self.cond:
            self._rules.append(_Rule("delay", api, broker, count, seconds=seconds))

    def drop_next(self, api: ApiKey, count: int = 1, broker: int | None = None) -> None:
        """Close the connection instead of answering the next ``count`` requests of ``api``."""
        with self.cond:
            self._rules.append(_Rule("drop", api, broker, count))

    def clear_faults(self) -> None:
        with self.cond:
            self._rules.clear()
            self._controls.clear()

    def control(self, api: ApiKey, fn: Control) -> Callable[[], None]:
        """``fn(request)`` answers ``api`` requests first (runs outside the cluster lock;
        None falls through to the default handler). Returns a function removing it."""
        entry = (api, fn)
        with self.cond:
            self._controls.append(entry)

        def remove() -> None:
            with self.cond:
                if entry in self._controls:
                    self._controls.remove(entry)
        return remove

    def default_answer(self, req: Request) -> Body:
        """What the fake itself answers to ``req`` (for a control() editing that answer)."""
        with self.cond:
            return self.handlers[req.api](self.brokers[req.broker], req)

    def mark(self) -> int:
        """The request log's length now: pass as ``after`` to look only at later requests."""
        with self.cond:
            return len(self.requests)

    def requests_of(self, api: ApiKey, after: int = 0) -> list[Request]:
        with self.cond:
            return [r for r in self.requests[after:] if r.api == api]

    def wait_for_request(self, match: ApiKey | Callable[[Request], bool], timeout: float = 5.0,
                         after: int = 0) -> Request:
        """The first logged request (from index ``after``) matching; waits up to ``timeout``."""
        pred = (lambda r: r.api == match) if isinstance(match, ApiKey) else match
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for r in self.requests[after:]:
                    if pred(r):
                        return r
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [f"{r.api.name} v{r.version} @{r.broker}" for r in self.requests[after:]]
                    raise AssertionError(f"no matching request within {timeout} s; seen: {seen}")
                self.cond.wait(min(left, 0.05))

    def wait_until(self, pred: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
        """Wait (under the cluster lock) until ``pred()`` holds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out after {timeout} s waiting for {what or pred}")
                self.cond.wait(min(left, 0.05))

    # ================================================================== dispatch

    def advertised(self) -> dict[ApiKey, tuple[int, int]]:
        out = {}
        for api in self.handlers:
            lo, hi = SUPPORTED_VERSIONS[api]
            hi = min(hi, self.max_versions.get(api, hi))
            if hi >= lo:
                out[api] = (lo, hi)
        return out

    def _handle(self, b: _Broker, frame: bytes) -> bytes | None:
        api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
        adv = self.advertised()
        if api_key == ApiKey.API_VERSIONS and version > adv[ApiKey.API_VERSIONS][1]:
            # KIP-511: refuse with a v0 body listing what we speak
            return encode_response(ApiKey.API_VERSIONS, 0, correlation_id, {
                "error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": self._api_keys()})
        known = adv.get(api_key)  # type: ignore[call-overload, unused-ignore]
        if known is None or not known[0] <= version <= known[1]:
            self.rejected.append((b.node_id, api_key, version))
            return None                  # Kafka closes a connection that sends what it lacks
        api, version, correlation_id, client_id, body = decode_request(frame)
        req = Request(b.node_id, api, version, correlation_id, client_id, body, time.monotonic(),
                      size=len(frame) + 4)
        with self.cond:
            self.requests.append(req)
            self.cond.notify_all()
            rules = {kind: next((r for r in self._rules if r.kind == kind and r.take(req)), None)
                     for kind in ("delay", "drop", "error")}
            controls = [fn for a, fn in self._controls if a == api]
        if rules["delay"] is not None:
            self._closed.wait(rules["delay"].seconds)
        if rules["drop"] is not None or not b.running:
            return None
        answer: Body | None = None
        if rules["error"] is not None:
            with self.cond:
                answer = self._error_body(b, req, rules["error"].error)
        try:
            for fn in controls:
                if answer is None:
                    answer = fn(req)
            if answer is None:
                with self.cond:
                    answer = self.handlers[api](b, req)
        except _Hangup:
            return None
        return encode_response(api, version, correlation_id, answer)

    def _wait(self, b: _Broker, pred: Callable[[], bool], timeout: float) -> bool:
        """Wait under the lock until ``pred()``; False at the timeout. A stopped broker or a
        closed cluster hangs up instead."""
        deadline = time.monotonic() + timeout
        while not pred():
            if not b.running or self._closed.is_set():
                raise _Hangup()
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.cond.wait(min(left, 0.05))
        return True

    def _tick_loop(self) -> None:
        while not self._closed.wait(0.01):
            with self.cond:
                try:
                    self._tick(time.monotonic())
                except BaseException as e:
                    self.errors.append(e)
                    return

    # ================================================================== errors

    def _error_body(self, b: _Broker, req: Request, code: int) -> Body:
        """A response to ``req`` carrying ``code`` where that API puts its errors."""
        api, v, body = req.api, req.version, req.body
        if api == ApiKey.JOIN_GROUP:
            return self._join_error(v, code, body["member_id"])
        if api in (ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.API_VERSIONS):
            return {"error_code": code}
        if api == ApiKey.CONSUMER_GROUP_HEARTBEAT:
            g = self.consumer_groups.get(body["group_id"])
            if g is not None and code in (ErrorCode.FENCED_MEMBER_EPOCH,
                                          ErrorCode.UNKNOWN_MEMBER_ID):
                if g.members.pop(body["member_id"], None) is not None:   # as a broker would
                    g.set_target(g.manual_target, self.topics)
            return {"error_code": code, "member_epoch": -1}
        if api == ApiKey.LEAVE_GROUP:
            return {"error_code": code, "members": []}
        if api == ApiKey.FIND_COORDINATOR:
            if v < 4:
                return {"error_code": code, "node_id": -1, "host": "", "port": -1}
            return {"coordinators": [{"key": k, "node_id": -1, "host": "", "port": -1,
                                      "error_code": code} for k in body["coordinator_keys"]]}
        if api == ApiKey.METADATA:
            out = self._metadata(b, req)
            for t in out["topics"]:
                t["error_code"], t["partitions"] = code, []
            return out
        if api == ApiKey.DESCRIBE_GROUPS:
            return {"groups": [{"error_code": code, "group_id": g} for g in body["groups"]]}
        if api == ApiKey.OFFSET_FETCH:
            if v >= 8:
                return {"groups": [{"group_id": g["group_id"], "topics": [], "error_code": code}
                                   for g in body["groups"]]}
            if v >= 2:
                return {"topics": [], "error_code": code}
            return {"topics": [{"name": t["name"], "partitions": [
                {"partition_index": p, "committed_offset": -1, "metadata": "", "error_code": code}
                for p in t["partition_indexes"]]} for t in body["topics"] or []]}
        if api == ApiKey.FETCH and code in (ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                                            ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                                            ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR):
            return {"error_code": code, "session_id": 0, "responses": []}
        # per-partition errors
        if api == ApiKey.FETCH:
            return {"responses": [{"topic": t["topic"], "topic_id": t["topic_id"], "partitions": [
                {"partition_index": p["partition"], "error_code": code, "high_watermark": -1,
                 "records": b""} for p in t["partitions"]]} for t in body["topics"]]}
        if api == ApiKey.LIST_OFFSETS:
            return {"topics": [{"name": t["name"], "partitions": [
                {"partition_index": p["partition_index"], "error_code": code,
                 "old_style_offsets": []}
                for p in t["partitions"]]} for t in body["topics"]]}
        if api == ApiKey.OFFSET_COMMIT:
            return {"topics": [{"name": t["name"], "partitions": [
                {"partition_index": p["partition_index"], "error_code": code}
                for p in t["partitions"]]} for t in body["topics"]]}
        if api == ApiKey.OFFSET_FOR_LEADER_EPOCH:
            return {"topics": [{"topic": t["topic"], "partitions": [
                {"partition": p["partition"], "error_code": code} for p in t["partitions"]]}
                for t in body["topics"]]}
        raise AssertionError(f"no error shape for {api.name}")

    # ================================================================== handlers: cluster

    def _api_keys(self) -> list[Body]:
        # Produce is listed though not spoken: librdkafka takes a broker without it for a
        # pre-0.10 one (old message formats, Fetch v0); a Produce request gets a hang-up
        keys = [{"api_key": 0, "min_version": 0, "max_version": 11}]
        return keys + [{"api_key": int(k), "min_version": lo, "max_version": hi}
                       for k, (lo, hi) in sorted(self.advertised().items())]

    def _api_versions(self, b: _Broker, req: Request) -> Body:
        return {"error_code": 0, "api_keys": self._api_keys()}

    def _lookup_topic(self, name: str | None, topic_id: uuid.UUID | None) -> Topic | None:
        if name is not None:
            return self.topics.get(name)
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def _metadata(self, b: _Broker, req: Request) -> Body:
        asked = req.body["topics"]
        if asked is None or (req.version == 0 and not asked):
            wanted: list[tuple[str | None, uuid.UUID | None]] = [(n, None) for n in self.topics]
        else:
            wanted = [(t["name"], t.get("topic_id")) for t in asked]
        topics: list[Body] = []
        for name, topic_id in wanted:
            t = self._lookup_topic(name, topic_id)
            if t is None and name is not None and self.auto_create_topics \
                    and req.body.get("allow_auto_topic_creation", True):
                t = self.create_topic(name, 1)
            if t is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if name is not None \
                    else ErrorCode.UNKNOWN_TOPIC_ID
                topics.append({"error_code": code, "name": name,
                               "topic_id": topic_id or ZERO_UUID, "partitions": []})
                continue
            topics.append({"error_code": 0, "name": t.name, "topic_id": t.topic_id,
                           "partitions": [
                               {"error_code": 0, "partition_index": i, "leader_id": p.leader,
                                "leader_epoch": p.epoch,
                                "replica_nodes": [p.leader, *p.followers],
                                "isr_nodes": [p.leader, *(f for f, end in p.followers.items()
                                                          if end is None)],
                                "offline_replicas": []}
                               for i, p in enumerate(t.partitions)]})
        return {"brokers": [{"node_id": x.node_id, "host": HOST, "port": x.port,
                             "rack": self.racks.get(x.node_id)}
                            for x in self.brokers],
                "cluster_id": "fake-cluster", "controller_id": 0, "topics": topics}

    def _consumer_group_heartbeat(self, b: _Broker, req: Request) -> Body:
        gid = req.body["group_id"]
        if self.coordinator_of(gid) != b.node_id:
            return {"error_code": ErrorCode.NOT_COORDINATOR, "member_epoch": -1}
        g = self.consumer_groups.get(gid)
        if g is None:
            g = self.consumer_groups[gid] = ConsumerGroup(gid)
        return g.heartbeat(req.body, self.topics, time.monotonic())

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        """The consumer protocol group (created empty if needed: set its timing first)."""
        with self.cond:
            g = self.consumer_groups.get(group_id)
            if g is None:
                g = self.consumer_groups[group_id] = ConsumerGroup(group_id)
            return g

    def _find_coordinator(self, b: _Broker, req: Request) -> Body:
        keys = [req.body["key"]] if req.version < 4 else req.body["coordinator_keys"]
        found = []
        for key in keys:
            node = self.coordinator_of(key)
            x = self.brokers[node]
            if x.running:
                found.append({"key": key, "node_id": node, "host": HOST, "port": x.port,
                              "error_code": 0, "error_message": None})
            else:
                found.append({"key": key, "node_id": -1, "host": "", "port": -1,
                              "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                              "error_message": f"broker {node} is down"})
        if req.version < 4:
            return {k: v for k, v in found[0].items() if k != "key"}
        return {"coordinators": found}

    # ================================================================== handlers: data

    def _partition_error(self, b: _Broker, topic: Topic | None, index: int,
                         current_epoch: int, unknown: int = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         follower_ok: bool = False) -> tuple[int, Partition | None]:
        """The leader checks every partition request goes through."""
        if topic is None or not 0 <= index < len(topic.partitions):
            return unknown, None
        p = topic.partitions[index]
        # Kafka's order (Partition.localLogWithEpochOrThrow): the epoch, then leadership
        if 0 <= current_epoch < p.epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, p
        if current_epoch > p.epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH, p
        if p.leader != b.node_id and not (follower_ok and b.node_id in p.followers):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, p
        return 0, p

    def _fetch(self, b: _Broker, req: Request) -> Body:
        body, v = req.body, req.version
        context = self._fetch_context(b, body, v)
        if isinstance(context, dict):
            return context                          # a session error
        session, topics = context
        deadline = time.monotonic() + min(body["max_wait_ms"] / 1000.0, self.fetch_wait_cap)
        while True:
            seen = self._data_version
            answer, size, failed = self._fetch_once(b, body, v, topics)
            if size >= max(1, body["min_bytes"]) or failed or time.monotonic() >= deadline:
                break
            left = deadline - time.monotonic()
            # the lambda runs within this iteration: binding ``seen`` late is fine
            self._wait(b, lambda: self._data_version != seen, left)  # noqa: B023
        if session is not None:
            self._session_answer(session, answer, v, full=body["session_epoch"] == 0)
        return answer

    def _fetch_context(self, b: _Broker, body: Body, v: int
                       ) -> Body | tuple[FetchSession | None, list[Body]]:
        """Kafka's FetchManager.newContext: the session (None: sessionless) and the topics to
        read, in order, or the top-level error answer."""
        sid, epoch = (body["session_id"], body["session_epoch"]) if v >= 7 else (0, -1)
        if epoch in (0, -1):                     # a full fetch
            if sid:
                self.sessions.pop(sid, None)     # a full fetch closes the session it names
            if epoch == -1 or not self.fetch_sessions \
                    or len(self.sessions) >= self.max_fetch_sessions:
                return None, body["topics"]
            opened = FetchSession(next(self._session_ids), b.node_id, 1, v >= 13, {})
            self._session_update(opened, body["topics"], [], v)
            self.sessions[opened.session_id] = opened
            return opened, body["topics"]
        session = self.sessions.get(sid)
        if session is None or session.broker != b.node_id:
            return {"error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "session_id": 0,
                    "responses": []}
        if session.epoch != epoch:
            return {"error_code": ErrorCode.INVALID_FETCH_SESSION_EPOCH, "session_id": 0,
                    "responses": []}
        if session.uses_topic_ids != (v >= 13):
            return {"error_code": ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, "session_id": 0,
                    "responses": []}
        self._session_update(session, body["topics"], body["forgotten_topics_data"], v)
        if not session.partitions:
            del self.sessions[sid]               # empty: closed, answered sessionless
            return None, body["topics"]
        session.epoch = 1 if epoch == 2**31 - 1 else epoch + 1
        topics: list[Body] = []
        for c in session.partitions.values():    # read in the session's order
            fp = {"partition": c.partition, "fetch_offset": c.fetch_offset,
                  "partition_max_bytes": c.max_bytes,
                  "current_leader_epoch": c.current_leader_epoch}
            if topics and (topics[-1]["topic"], topics[-1]["topic_id"]) == (c.topic, c.topic_id):
                topics[-1]["partitions"].append(fp)
            else:
                topics.append({"topic": c.topic, "topic_id": c.topic_id, "partitions": [fp]})
        return session, topics

    @staticmethod
    def _session_update(session: FetchSession, topics: list[Body], forgotten: list[Body],
                        v: int) -> None:
        """Kafka's FetchSession.update: listed partitions are added (at the end) or updated,
        then the forgotten ones removed."""
        for t in topics:
            name, tid = (t["topic"], t["topic_id"]) if v <= 12 else (None, t["topic_id"])
            for fp in t["partitions"]:
                key = (name if v <= 12 else tid, fp["partition"])
                c = session.partitions.get(key)
                if c is None:
                    session.partitions[key] = CachedPartition(
                        name, tid, fp["partition"], fp["fetch_offset"],
                        fp["partition_max_bytes"], fp["current_leader_epoch"])
                else:
                    c.fetch_offset, c.max_bytes = fp["fetch_offset"], fp["partition_max_bytes"]
                    c.current_leader_epoch = fp["current_leader_epoch"]
        for f in forgotten:
            for index in f["partitions"]:
                session.partitions.pop((f["topic"] if v <= 12 else f["topic_id"], index), None)

    @staticmethod
    def _session_answer(session: FetchSession, answer: Body, v: int, full: bool) -> None:
        """Note the answered watermarks in the session; an incremental answer keeps only the
        partitions Kafka must send (records, an error, new watermarks, a read replica), and
        those with records move to the end of the session's order."""
        answer["session_id"] = session.session_id
        for t in answer["responses"]:
            kept = []
            for out in t["partitions"]:
                key = (t["topic"] if v <= 12 else t["topic_id"], out["partition_index"])
                c = session.partitions[key]
                must = (bool(out["records"]) or out["error_code"] != 0
                        or out["high_watermark"] != c.high_watermark
                        or out.get("log_start_offset", -1) != c.log_start_offset
                        or out.get("preferred_read_replica", -1) >= 0)
                c.high_watermark = -1 if out["error_code"] else out["high_watermark"]
                c.log_start_offset = out.get("log_start_offset", -1)
                if out["records"] and not full:
                    del session.partitions[key]
                    session.partitions[key] = c
                if must or full:
                    kept.append(out)
            t["partitions"] = kept
        answer["responses"] = [t for t in answer["responses"] if t["partitions"]]

    def _read_replica(self, b: _Broker, p: Partition, offset: int, rack: str) -> int:
        """Kafka's findPreferredReadReplica, for a consumer in ``rack`` fetching from the
        leader: an in-rack running follower that holds ``offset`` (-1: none, or the leader
        is in that rack itself)."""
        if not rack or self.racks.get(b.node_id) == rack:
            return -1
        for node in p.followers:
            if self.racks.get(node) == rack and self.brokers[node].running \
                    and p.log_start <= offset <= p.end_on(node):
                return node
        return -1

    def _fetch_once(self, b: _Broker, body: Body, v: int, topics: list[Body]
                    ) -> tuple[Body, int, bool]:
        """One read of ``topics``: the answer, its record bytes, and whether it must go out
        now (an error or a read replica)."""
        budget = body["max_bytes"]
        min_one, size, failed = v >= 3, 0, False
        rack = body.get("rack_id") or "" if v >= 11 else ""
        responses = []
        for t in topics:
            topic = self._lookup_topic(t["topic"] if v <= 12 else None,
                                       None if v <= 12 else t["topic_id"])
            unknown = (ErrorCode.UNKNOWN_TOPIC_ID if v >= 13
                       else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            parts = []
            for fp in t["partitions"]:
                code, p = self._partition_error(b, topic, fp["partition"],
                                                fp["current_leader_epoch"], unknown,
                                                follower_ok=v >= 11)
                out: Body = {"partition_index": fp["partition"], "error_code": code,
                             "high_watermark": -1, "records": b"",
                             "aborted_transactions": [] if body["isolation_level"] else None}
                if p is not None:
                    end = p.end_on(b.node_id)
                    out.update(high_watermark=end, last_stable_offset=end,
                               log_start_offset=p.log_start)
                    if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                        out["current_leader"] = {"leader_id": p.leader, "leader_epoch": p.epoch}
                    offset = fp["fetch_offset"]
                    if not code and not p.log_start <= offset <= end:
                        code = out["error_code"] = ErrorCode.OFFSET_OUT_OF_RANGE
                    replica = -1 if code or p.leader != b.node_id \
                        else self._read_replica(b, p, offset, rack)
                    if replica >= 0:
                        out["preferred_read_replica"] = replica   # and no records
                        failed = True                             # answered at once
                    elif not code:
                        limit = max(0, min(fp["partition_max_bytes"], budget))
                        data = p.read(offset, limit, min_one, hard_limit=v < 3,
                                      upto=None if end == p.end else end)
                        if data:
                            min_one = False
                            budget -= len(data)
                            size += len(data)
                        out["records"] = data
                failed = failed or code != 0
                parts.append(out)
            responses.append({"topic": t["topic"], "topic_id": t["topic_id"], "partitions": parts})
        return {"error_code": 0, "session_id": 0, "responses": responses}, size, failed

    def _list_offsets(self, b: _Broker, req: Request) -> Body:
        topics = []
        for t in req.body["topics"]:
            topic = self.topics.get(t["name"])
            parts = []
            for lp in t["partitions"]:
                code, p = self._partition_error(b, topic, lp["partition_index"],
                                                lp["current_leader_epoch"])
                out: Body = {"partition_index": lp["partition_index"], "error_code": code,
                             "old_style_offsets": [], "timestamp": -1, "offset": -1}
                if not code and p is not None:
                    offset, ts = self._offset_for_time(p, lp["timestamp"])
                    out.update(offset=offset, timestamp=ts,
                               old_style_offsets=[offset] if offset >= 0 else [],
                               leader_epoch=p.epoch_at(offset) if offset >= 0 else -1)
                parts.append(out)
            topics.append({"name": t["name"], "partitions": parts})
        return {"topics": topics}

    @staticmethod
    def _offset_for_time(p: Partition, ts: int) -> tuple[int, int]:
        if ts == EARLIEST:
            return p.log_start, -1
        if ts == LATEST:
            return p.end, -1
        stamped = [(off, t) for b in p.batches for off, t in enumerate(b.timestamps, b.base)
                   if off >= p.log_start]
        if ts == MAX_TIMESTAMP:
            return max(stamped, key=lambda x: x[1], default=(-1, -1))
        return next(((off, t) for off, t in stamped if t >= ts), (-1, -1))

    def _offset_for_leader_epoch(self, b: _Broker, req: Request) -> Body:
        topics = []
        for t in req.body["topics"]:
            topic = self.topics.get(t["topic"])
            parts = []
            for op in t["partitions"]:
                code, p = self._partition_error(b, topic, op["partition"],
                                                op["current_leader_epoch"])
                epoch, end = p.end_offset_for(op["leader_epoch"]) \
                    if not code and p is not None else (-1, -1)
                parts.append({"error_code": code, "partition": op["partition"],
                              "leader_epoch": epoch, "end_offset": end})
            topics.append({"topic": t["topic"], "partitions": parts})
        return {"topics": topics}

    # ================================================================== handlers: offsets

    def _group(self, group_id: str) -> Group:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id)
        return g

    def _commit_error(self, b: _Broker, body: Body, v: int) -> int:
        """Kafka's group checks on OffsetCommit (GroupCoordinator.handleCommitOffsets)."""
        gid = body["group_id"]
        gen, mid = body["generation_id_or_member_epoch"], body["member_id"]
        iid = body["group_instance_id"]
        if self.coordinator_of(gid) != b.node_id:
            return int(ErrorCode.NOT_COORDINATOR)
        cg = self.consumer_groups.get(gid)
        if cg is not None:
            self._group(gid)                     # where the offsets are kept
            return cg.commit_error(mid, gen)
        g = self.groups.get(gid)
        if g is None:
            if gen < 0:
                self._group(gid)             # a group used only to store offsets
                return 0
            return int(ErrorCode.GROUP_ID_NOT_FOUND if v >= 9 else ErrorCode.ILLEGAL_GENERATION)
        if iid is not None and iid in g.static and g.static[iid] != mid:
            return int(ErrorCode.FENCED_INSTANCE_ID)
        if gen < 0 and g.state == "Empty":
            return 0
        if g.state == "CompletingRebalance":
            return int(ErrorCode.REBALANCE_IN_PROGRESS)
        if mid not in g.members:
            return int(ErrorCode.UNKNOWN_MEMBER_ID)
        if gen != g.generation:
            return int(ErrorCode.ILLEGAL_GENERATION)
        g.members[mid].last_heartbeat = time.monotonic()
        return 0

    def _offset_commit(self, b: _Broker, req: Request) -> Body:
        body = req.body
        group_code = self._commit_error(b, body, req.version)
        topics = []
        for t in body["topics"]:
            parts = []
            for cp in t["partitions"]:
                code = group_code
                if not code and t["name"] not in self.topics:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif not code and len(cp["committed_metadata"] or "") > 4096:
                    code = ErrorCode.OFFSET_METADATA_TOO_LARGE
                if not code:
                    self.groups[body["group_id"]].offsets[
                        TopicPartition(t["name"], cp["partition_index"])] = Committed(
                            cp["committed_offset"], cp["committed_leader_epoch"],
                            cp["committed_metadata"])
                parts.append({"partition_index": cp["partition_index"], "error_code": code})
            topics.append({"name": t["name"], "partitions": parts})
        return {"topics": topics}

    def _offset_fetch(self, b: _Broker, req: Request) -> Body:
        v, body = req.version, req.body
        asked = body["groups"] if v >= 8 else [{"group_id": body["group_id"],
                                                 "topics": body["topics"]}]
        groups = []
        for a in asked:
            gid = a["group_id"]
            code = 0 if self.coordinator_of(gid) == b.node_id else ErrorCode.NOT_COORDINATOR
            g = self.groups.get(gid)
            offsets = {} if g is None else g.offsets
            if a["topics"] is None:
                wanted: dict[str, list[int]] = {}
                for tp in offsets:
                    wanted.setdefault(tp.topic, []).append(tp.partition)
            else:
                wanted = {t["name"]: t["partition_indexes"] for t in a["topics"]}
            topics = []
            for name, indexes in wanted.items():
                parts = []
                for i in indexes:
                    c = offsets.get(TopicPartition(name, i)) if not code else None
                    parts.append({"partition_index": i, "error_code": code if v < 2 else 0,
                                  "committed_offset": -1 if c is None else c.offset,
                                  "committed_leader_epoch": -1 if c is None else c.leader_epoch,
                                  "metadata": "" if c is None else c.metadata})
                topics.append({"name": name, "partitions": parts})
            groups.append({"group_id": gid, "error_code": code,
                           "topics": [] if code and v >= 2 else topics})
        if v >= 8:
            return {"groups": groups}
        return {"topics": groups[0]["topics"], "error_code": groups[0]["error_code"]}

    # ================================================================== handlers: groups

    @staticmethod
    def _join_error(v: int, code: int, member_id: str) -> Body:
        return {"error_code": code, "generation_id": -1, "protocol_type": None,
                "protocol_name": None if v >= 7 else "", "leader": "", "member_id": member_id,
                "members": []}

    def _join_group(self, b: _Broker, req: Request) -> Body:
        body, v, now = req.body, req.version, time.monotonic()
        gid, mid = body["group_id"], body["member_id"]
        iid = body["group_instance_id"] if v >= 5 else None
        session = body["session_timeout_ms"]
        rebalance = body["rebalance_timeout_ms"] if v >= 1 else session
        protocols = [(p["name"], bytes(p["metadata"])) for p in body["protocols"]]

        def fail(code: int, member: str = mid) -> Body:
            return self._join_error(v, code, member)

        if not gid:
            return fail(ErrorCode.INVALID_GROUP_ID)
        if self.coordinator_of(gid) != b.node_id:
            return fail(ErrorCode.NOT_COORDINATOR)
        if not self.min_session_ms <= session <= self.max_session_ms:
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
        g = self._group(gid)
        ptype = body["protocol_type"]
        if not protocols or not ptype or (g.members and (
                ptype != g.protocol_type or not self._common_protocols(g, protocols))):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)

        def new_member(member_id: str) -> Member:
            m = Member(member_id, iid, req.client_id or "", session / 1000.0, rebalance / 1000.0,
                       ptype, protocols, now)
            g.members[member_id] = m
            if iid is not None:
                g.static[iid] = member_id
            g.protocol_type = ptype
            return m

        if not mid:
            new_id = f"{iid or req.client_id or 'member'}-{uuid.uuid4()}"
            old = g.static.get(iid) if iid is not None else None
            if old is not None and old in g.members:
                # a static member back with a new id: the old id is fenced
                m = g.members.pop(old)
                unchanged = m.protocols == protocols
                m.member_id, m.protocols, m.last_heartbeat = new_id, protocols, now
                g.members[new_id] = m
                g.static[iid] = new_id       # type: ignore[index]
                if g.leader == old:
                    g.leader = new_id
                if old in g.pending_sync:
                    g.pending_sync.discard(old)
                    g.pending_sync.add(new_id)
                if g.state == "Stable" and unchanged and g.leader != new_id:
                    return self._join_answer(g, m)
            elif iid is not None:
                m = new_member(new_id)
            elif v >= 4:
                g.pending[new_id] = now + session / 1000.0
                return fail(ErrorCode.MEMBER_ID_REQUIRED, new_id)
            else:
                m = new_member(new_id)
        elif mid in g.pending:
            del g.pending[mid]
            m = new_member(mid)
        elif mid not in g.members:
            return fail(ErrorCode.UNKNOWN_MEMBER_ID)
        elif iid is not None and g.static.get(iid) != mid:
            return fail(ErrorCode.FENCED_INSTANCE_ID)
        else:
            m = g.members[mid]
            unchanged = m.protocols == protocols
            m.protocols, m.last_heartbeat = protocols, now
            m.session_timeout, m.rebalance_timeout = session / 1000.0, rebalance / 1000.0
            if unchanged and g.state == "CompletingRebalance" and m.last_join is not None:
                return m.last_join
            if unchanged and g.state == "Stable" and mid != g.leader:
                return self._join_answer(g, m)
        if g.state != "PreparingRebalance":
            self._prepare_rebalance(g)
        m.awaiting_join, m.join_result = True, None
        self._maybe_complete_join(g)
        member_id = m.member_id
        self._wait(b, lambda: m.join_result is not None or g.members.get(member_id) is not m
                   or self.coordinator_of(gid) != b.node_id, m.rebalance_timeout + 5)
        if m.member_id != member_id:      # a static member took this id over meanwhile
            return fail(ErrorCode.FENCED_INSTANCE_ID, member_id)
        if m.join_result is not None:
            result, m.join_result = m.join_result, None
            return result
        if self.coordinator_of(gid) != b.node_id:
            return fail(ErrorCode.NOT_COORDINATOR, member_id)
        return fail(ErrorCode.UNKNOWN_MEMBER_ID, member_id)

    @staticmethod
    def _common_protocols(g: Group, protocols: list[tuple[str, bytes]]) -> list[str]:
        names = [n for n, _ in protocols]
        for m in g.members.values():
            theirs = {n for n, _ in m.protocols}
            names = [n for n in names if n in theirs]
        return names

    def _join_answer(self, g: Group, m: Member) -> Body:
        meta = {x.member_id: dict(x.protocols).get(g.protocol_name or "", b"")
                for x in g.members.values()}
        members = [{"member_id": x.member_id, "group_instance_id": x.instance_id,
                    "metadata": meta[x.member_id]} for x in g.members.values()]
        return {"error_code": 0, "generation_id": g.generation, "protocol_type": g.protocol_type,
                "protocol_name": g.protocol_name, "leader": g.leader or "",
                "member_id": m.member_id, "skip_assignment": False,
                "members": members if m.member_id == g.leader else []}

    def _prepare_rebalance(self, g: Group) -> None:
        now = time.monotonic()
        if g.state == "Empty" and self.initial_rebalance_delay:
            g.join_not_before = now + self.initial_rebalance_delay
        g.state = "PreparingRebalance"
        g.rebalance_deadline = now + max((m.rebalance_timeout for m in g.members.values()),
                                         default=0.0)
        self.cond.notify_all()       # waiting SyncGroups answer REBALANCE_IN_PROGRESS

    def _maybe_complete_join(self, g: Group, force: bool = False) -> None:
        if g.state != "PreparingRebalance" or time.monotonic() < g.join_not_before:
            return
        if force or (all(m.awaiting_join for m in g.members.values()) and not g.pending):
            self._complete_join(g)

    def _complete_join(self, g: Group) -> None:
        for m in [m for m in g.members.values() if not m.awaiting_join and m.instance_id is None]:
            self._remove(g, m)        # dynamic members that did not rejoin in time
        g.generation += 1
        g.pending_sync.clear()
        if not g.members:
            g.state, g.protocol_name, g.leader = "Empty", None, None
            self.cond.notify_all()
            return
        first = next(iter(g.members.values()))
        candidates = self._common_protocols(g, first.protocols)
        votes = Counter(next(n for n, _ in m.protocols if n in candidates)
                        for m in g.members.values())
        g.protocol_name = max(candidates, key=lambda n: votes[n])
        if g.leader not in g.members:
            g.leader = next((m.member_id for m in g.members.values() if m.awaiting_join),
                            first.member_id)
        g.state = "CompletingRebalance"
        now = time.monotonic()
        g.sync_deadline = now + max(m.rebalance_timeout for m in g.members.values())
        for m in g.members.values():
            m.assignment, m.last_heartbeat = b"", now
            g.pending_sync.add(m.member_id)
            m.last_join = self._join_answer(g, m)
            if m.awaiting_join:
                m.join_result, m.awaiting_join = m.last_join, False
        self.cond.notify_all()

    def _remove(self, g: Group, m: Member) -> None:
        del g.members[m.member_id]
        if m.instance_id is not None and g.static.get(m.instance_id) == m.member_id:
            del g.static[m.instance_id]
        g.pending_sync.discard(m.member_id)
        if g.leader == m.member_id:
            g.leader = None
        self.cond.notify_all()

    def _members_changed(self, g: Group) -> None:
        if g.state in ("Stable", "CompletingRebalance"):
            self._prepare_rebalance(g)
        self._maybe_complete_join(g)

    def _tick(self, now: float) -> None:
        for cg in self.consumer_groups.values():
            cg.expire(now, self.topics)
        for g in self.groups.values():
            changed = False
            for m in list(g.members.values()):
                if not (m.awaiting_join or m.awaiting_sync) \
                        and now - m.last_heartbeat > m.session_timeout:
                    self._remove(g, m)            # session expired
                    changed = True
            for pid in [p for p, t in g.pending.items() if now > t]:
                del g.pending[pid]                # may let a join complete (below)
            if g.pending_sync and g.state in ("CompletingRebalance", "Stable") \
                    and now > g.sync_deadline:
                for mid in list(g.pending_sync):  # no SyncGroup within the rebalance timeout
                    self._remove(g, g.members[mid])
                changed = True
            if changed:
                self._members_changed(g)
            if g.state == "PreparingRebalance":
                self._maybe_complete_join(g, force=now >= g.rebalance_deadline)

    @staticmethod
    def _member_error(g: Group | None, mid: str, iid: str | None, generation: int) -> int:
        """The checks Heartbeat and SyncGroup share (after the coordinator check)."""
        if g is None:
            return int(ErrorCode.UNKNOWN_MEMBER_ID)
        if iid is not None and iid in g.static and g.static[iid] != mid:
            return int(ErrorCode.FENCED_INSTANCE_ID)
        if mid not in g.members:
            return int(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != g.generation:
            return int(ErrorCode.ILLEGAL_GENERATION)
        return 0

    def _sync_group(self, b: _Broker, req: Request) -> Body:
        body, v = req.body, req.version
        gid, mid, gen = body["group_id"], body["member_id"], body["generation_id"]
        if self.coordinator_of(gid) != b.node_id:
            return {"error_code": ErrorCode.NOT_COORDINATOR}
        g = self.groups.get(gid)
        code = self._member_error(g, mid, body["group_instance_id"] if v >= 3 else None, gen)
        if code:
            return {"error_code": code}
        assert g is not None
        if v >= 5 and ((body["protocol_type"] not in (None, g.protocol_type))
                       or body["protocol_name"] not in (None, g.protocol_name)):
            return {"error_code": ErrorCode.INCONSISTENT_GROUP_PROTOCOL}
        m = g.members[mid]
        m.last_heartbeat = time.monotonic()
        if g.state == "PreparingRebalance":
            return {"error_code": ErrorCode.REBALANCE_IN_PROGRESS}
        g.pending_sync.discard(mid)
        if g.state == "CompletingRebalance":
            if mid == g.leader:
                given = {a["member_id"]: bytes(a["assignment"]) for a in body["assignments"]}
                for x in g.members.values():
                    x.assignment = given.get(x.member_id, b"")
                g.state = "Stable"
                self.cond.notify_all()
            else:
                m.awaiting_sync = True
                try:
                    self._wait(b, lambda: g.state != "CompletingRebalance" or g.generation != gen
                               or g.members.get(mid) is not m
                               or self.coordinator_of(gid) != b.node_id,
                               m.rebalance_timeout + 5)
                finally:
                    m.awaiting_sync = False
                if self.coordinator_of(gid) != b.node_id:
                    return {"error_code": ErrorCode.NOT_COORDINATOR}
                if m.member_id != mid:
                    return {"error_code": ErrorCode.FENCED_INSTANCE_ID}
                if g.members.get(mid) is not m:
                    return {"error_code": ErrorCode.UNKNOWN_MEMBER_ID}
                if g.generation != gen or g.state != "Stable":
                    return {"error_code": ErrorCode.REBALANCE_IN_PROGRESS}
        m.last_heartbeat = time.monotonic()
        return {"error_code": 0, "protocol_type": g.protocol_type,
                "protocol_name": g.protocol_name, "assignment": m.assignment}

    def _heartbeat(self, b: _Broker, req: Request) -> Body:
        body = req.body
        g = self.groups.get(body["group_id"])
        if self.coordinator_of(body["group_id"]) != b.node_id:
            return {"error_code": ErrorCode.NOT_COORDINATOR}
        code = self._member_error(g, body["member_id"],
                                  body["group_instance_id"] if req.version >= 3 else None,
                                  body["generation_id"])
        if code:
            return {"error_code": code}
        assert g is not None
        g.members[body["member_id"]].last_heartbeat = time.monotonic()
        if g.state == "PreparingRebalance":
            return {"error_code": ErrorCode.REBALANCE_IN_PROGRESS}
        return {"error_code": 0}

    def _leave_group(self, b: _Broker, req: Request) -> Body:
        body, v = req.body, req.version
        gid = body["group_id"]
        leaving = body["members"] if v >= 3 else [{"member_id": body["member_id"],
                                                   "group_instance_id": None}]
        if self.coordinator_of(gid) != b.node_id:
            return {"error_code": ErrorCode.NOT_COORDINATOR, "members": []}
        g = self.groups.get(gid)
        results = []
        for x in leaving:
            mid, iid = x["member_id"], x["group_instance_id"]
            code = 0
            if g is None:
                code = ErrorCode.UNKNOWN_MEMBER_ID
            elif iid is not None:
                known = g.static.get(iid)
                if known is None:
                    code = ErrorCode.UNKNOWN_MEMBER_ID
                elif mid and known != mid:
                    code = ErrorCode.FENCED_INSTANCE_ID
                else:
                    self._remove(g, g.members[known])
            elif mid in g.pending:
                del g.pending[mid]
            elif mid not in g.members:
                code = ErrorCode.UNKNOWN_MEMBER_ID
            else:
                self._remove(g, g.members[mid])
            results.append({"member_id": mid, "group_instance_id": iid, "error_code": code})
        if g is not None:
            self._members_changed(g)
        if v < 3:
            return {"error_code": results[0]["error_code"]}
        return {"error_code": 0, "members": results}

    def _describe_groups(self, b: _Broker, req: Request) -> Body:
        out = []
        for gid in req.body["groups"]:
            if self.coordinator_of(gid) != b.node_id:
                out.append({"error_code": ErrorCode.NOT_COORDINATOR, "group_id": gid})
                continue
            g = self.groups.get(gid)
            if g is None:
                out.append({"error_code": 0, "group_id": gid, "group_state": "Dead"})
                continue
            stable = g.state == "Stable"
            out.append({"error_code": 0, "group_id": gid, "group_state": g.state,
                        "protocol_type": g.protocol_type or "",
                        "protocol_data": (g.protocol_name or "") if stable else "",
                        "members": [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                                     "client_id": m.client_id, "client_host": f"/{HOST}",
                                     "member_metadata": dict(m.protocols).get(
                                         g.protocol_name or "", b"") if stable else b"",
                                     "member_assignment": m.assignment if stable else b""}
                                    for m in g.members.values()]})
        return {"groups": out}


class RawClient:
    """One blocking connection speaking exact protocol versions, for tests of the fake itself
    (no negotiation: the test picks each version). ``send``/``receive`` split a call whose
    answer the broker holds (JoinGroup, SyncGroup, Fetch)."""

    def __init__(self, cluster: FakeCluster, node: int = 0, client_id: str = "raw",
                 timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((HOST, cluster.brokers[node].port), timeout=timeout)
        self.client_id = client_id
        self._ids = itertools.count(1)
        self._sent: list[tuple[int, ApiKey, int]] = []

    def send(self, api: ApiKey, version: int, body: Body) -> None:
        cid = next(self._ids)
        self.sock.sendall(encode_request(api, version, cid, self.client_id, body))
        self._sent.append((cid, api, version))

    def receive(self) -> Body:
        """The answer to the oldest request sent; EOFError when the broker hung up."""
        cid, api, version = self._sent.pop(0)
        payload = self._read(int.from_bytes(self._read(4), "big"))
        if api == ApiKey.API_VERSIONS and \
                api_versions_error_code(payload) == ErrorCode.UNSUPPORTED_VERSION:
            version = 0                  # KIP-511: the refusal comes as a v0 body
        got, body = decode_response(api, version, payload)
        assert got == cid, f"correlation id {got}, expected {cid}"
        return body

    def call(self, api: ApiKey, version: int, body: Body) -> Body:
        self.send(api, version, body)
        return self.receive()

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise EOFError("the fake broker closed the connection")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["EARLIEST", "FAST_CONSUMER", "LATEST", "MAX_TIMESTAMP", "Batch", "CachedPartition",
           "Committed", "ConsumerGroup", "Control", "FakeCluster", "FetchSession", "Group",
           "Handler", "Member", "Partition", "RawClient", "RecordLike", "Request", "Topic"]
