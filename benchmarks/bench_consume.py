"""End-to-end consume benchmark: records from a broker into Python, side by side.

One broker (Apache Kafka or Tansu, see brokers.py), one topic filled once by confluent-kafka,
then every contender reads the whole topic from the beginning with manual assignment, in
interleaved rounds:

* ``raw_fetch``     the broker ceiling: one blocking socket, a Metadata and a ListOffsets
                    (earliest) request as every client makes first, then one Fetch at a time
                    for every partition (the consumer's default fetch sizes), records counted
                    from the batch headers; no decoding, no Python object per record
* ``raw_arrow``     the same loop doing the least a consumer handing out the same Arrow must
                    do: each answer's record sets decoded (CRCs checked) by pyconsumer's
                    compiled take into batches of at most 100,000 rows, all of them before the
                    next Fetch: no pipelining, no consumer state (what poll_arrow's
                    machinery and overlap are judged against; issue 26)
* ``pc_arrow``      pyconsumer ``poll_arrow(max_records=100_000)`` (rows counted)
* ``pc_arrow_1t``   the same with ``decode.threads=1`` (decoding in the polling thread only)
* ``pc_poll``       pyconsumer ``poll()`` with max.poll.records 500 (ConsumerRecords; key,
                    value, offset, timestamp touched)
* ``pc_poll_large`` the same with max.poll.records 10,000
* ``ck_consume``    confluent-kafka ``Consumer.consume(10000)`` (same fields touched)
* ``ck_consume500`` confluent-kafka ``Consumer.consume(500)``
* ``kr_arrow``      kafkarrow (Rust over librdkafka, Arrow output): ``ConsumerManager`` from
                    the earliest offset, ``batch_size`` 100,000 (poll_arrow's max_records),
                    ``poll(timeout_ms=100)`` until every record came (rows counted)
* ``aio``           aiokafka ``getmany(max_records=500)`` (same fields touched)
* ``kp``            kafka-python ``poll(max_records=500)`` (same fields touched)

Rates are records/s over the whole read (connect and first fetch included); the table gives
the best round and the median ratio to confluent-kafka in the same round. ``measure`` is the
importable entry point (``python -m benchmarks`` runs it).

    python benchmarks/bench_consume.py --records 1000000 --partitions 4 --codec none --rounds 3 --broker kafka
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import socket
import statistics
import struct
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer._records import CompletedFetch, take_arrow_many
from pyconsumer.protocol import ApiKey, decode_response, encode_request

#: a contender reads ``n`` records of ``partitions`` partitions of a topic, returns how many
#: (bootstrap, topic, partitions, records) -> records read, or (records, seconds) when the
#: contender times itself (one run in a child process)
Contender = Callable[[str, str, int, int], int | tuple[int, float]]

def topic_partitions(topic: str, partitions: int) -> list[tuple[str, int]]:
    """Every (topic, partition) a contender reads: ``topic`` may name several topics joined by
    commas (the many-partition case), each with ``partitions`` partitions."""
    return [(t, p) for t in topic.split(",") for p in range(partitions)]


#: a read that makes no progress for this long is stuck (raise, never hang the suite)
STALL_S = 60.0


class _Progress:
    """Raises when a read loop has made no progress for STALL_S seconds."""

    def __init__(self, name: str, n: int) -> None:
        self.name, self.n, self.got = name, n, -1
        self.deadline = time.monotonic() + STALL_S

    def check(self, got: int) -> None:
        now = time.monotonic()
        if got != self.got:
            self.got, self.deadline = got, now + STALL_S
        elif now > self.deadline:
            raise RuntimeError(f"{self.name}: stuck at {got:,} of {self.n:,} records for {STALL_S:.0f} s")


def _value_pool(size: int) -> list[bytes]:
    # JSON-like events (as gen_data.py), not all alike: lz4 sees realistic bytes
    pool = []
    for i in range(4096):
        v = b'{"user":%d,"event":"click","page":"/p/%d","ts":%d}' % (i * 7919 % 99991, i % 977, i)
        pool.append((v * (size // len(v) + 1))[:size])
    return pool


def produce_bulk(bootstrap: str, topic: str, n: int, partitions: int,
                 value_of: Callable[[int], bytes], *, codec: str = "none",
                 timestamp_of: Callable[[int], int] | None = None, linger_ms: int = 20,
                 batch_messages: int = 1000, queue_messages: int = 1_000_000) -> None:
    """``n`` records (key ``k%09d``, value ``value_of(i)``) round-robin over the partitions,
    straight from confluent-kafka's Producer: big batches, no per-record delivery callback
    (only failures are reported). The benchmarks' one way to fill a topic."""
    from confluent_kafka import Producer

    failures: list[str] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "acks": 1,
                  "enable.idempotence": False, "linger.ms": linger_ms, "batch.size": 1_000_000,
                  "batch.num.messages": batch_messages,
                  "queue.buffering.max.messages": queue_messages,
                  "queue.buffering.max.kbytes": 1_048_576, "delivery.report.only.error": True,
                  "message.timeout.ms": 300_000})
    produce = p.produce
    for i in range(n):
        extra = {} if timestamp_of is None else {"timestamp": timestamp_of(i)}
        while True:
            try:
                produce(topic, value_of(i), b"k%09d" % i, partition=i % partitions,
                        on_delivery=on_delivery, **extra)
                break
            except BufferError:
                p.poll(0.05)
        if i & 0xFFFF == 0:
            p.poll(0)
    left = p.flush(300)
    if left or failures:
        raise RuntimeError(f"produce to {topic}: {left} records not delivered, {len(failures)} failed: "
                           f"{failures[:3]}")


def fill(bootstrap: str, topic: str, n: int, partitions: int, value_size: int, codec: str) -> None:
    """``n`` records (10-byte keys, ``value_size``-byte JSON-like values, timestamps a
    millisecond apart) for the end-to-end cases."""
    pool = _value_pool(value_size)
    ts0 = 1_700_000_000_000
    produce_bulk(bootstrap, topic, n, partitions, lambda i: pool[i & 4095], codec=codec,
                 timestamp_of=lambda i: ts0 + i)


# ------------------------------------------------------------------ the broker ceiling

class RawFetcher:
    """One blocking socket, one Fetch (v12, by topic name, no session) at a time for all
    partitions. Counts records from batch headers; the response buffer is reused."""

    def __init__(self, bootstrap: str, *, max_bytes: int = 52_428_800,
                 partition_max_bytes: int = 1_048_576, max_wait_ms: int = 500) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30.0)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.max_bytes, self.partition_max_bytes, self.max_wait_ms = max_bytes, partition_max_bytes, max_wait_ms
        self.buf = bytearray(1 << 20)
        self.cid = 0

    def close(self) -> None:
        self.sock.close()

    def _round_trip(self, api_key: ApiKey, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.cid += 1
        self.sock.sendall(encode_request(api_key, version, self.cid, "bench-raw", body))
        head = bytearray(4)
        self._recv_into(memoryview(head))
        frame = bytearray(struct.unpack(">i", head)[0])
        self._recv_into(memoryview(frame))
        cid, response = decode_response(api_key, version, frame)
        if cid != self.cid:
            raise RuntimeError(f"{api_key.name}: correlation id {cid} (sent {self.cid})")
        return dict(response)

    def start_offsets(self, topic: str, partitions: int) -> dict[tuple[str, int], int]:
        """What any client does before its first Fetch: a Metadata request for ``topic`` (one
        name, or several joined by commas, ``partitions`` each; checked: every partition led by
        the node this socket reaches, which the loop assumes) and a ListOffsets (earliest) for
        their partitions; {(topic, partition): log start}."""
        names = topic.split(",")
        meta = self._round_trip(ApiKey.METADATA, 12, {
            "topics": [{"name": name} for name in names], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False})
        nodes: set[int] = set()
        for t in meta["topics"]:
            leaders = {p["partition_index"]: p["leader_id"] for p in t["partitions"]}
            nodes.update(leaders.values())
            if t["error_code"] or len(leaders) != partitions:
                raise RuntimeError(f"Metadata of {t['name']}: error {t['error_code']}, {len(leaders)} of "
                                   f"{partitions} partitions")
        if len(meta["topics"]) != len(names) or len(nodes) != 1:
            raise RuntimeError(f"Metadata of {topic}: {len(meta['topics'])} of {len(names)} topics, "
                               f"leaders {sorted(nodes)} (one node expected)")
        listed = self._round_trip(ApiKey.LIST_OFFSETS, 7, {
            "replica_id": -1, "isolation_level": 0, "timeout_ms": 30_000,
            "topics": [{"name": name, "partitions": [
                {"partition_index": p, "current_leader_epoch": -1, "timestamp": -2, "max_num_offsets": 1}
                for p in range(partitions)]} for name in names]})
        out = {}
        for lt in listed["topics"]:
            for p in lt["partitions"]:
                if p["error_code"]:
                    raise RuntimeError(f"ListOffsets of {lt['name']}-{p['partition_index']}: "
                                       f"error {p['error_code']}")
                out[(lt["name"], p["partition_index"])] = p["offset"]
        if len(out) != partitions * len(names):
            raise RuntimeError(f"ListOffsets of {topic}: {len(out)} of {partitions * len(names)} "
                               "partitions answered")
        return out

    def _recv_into(self, view: memoryview) -> None:
        got = 0
        while got < len(view):
            k = self.sock.recv_into(view[got:])
            if not k:
                raise ConnectionError(f"broker closed the connection after {got} of {len(view)} bytes")
            got += k

    def fetch(self, positions: dict[tuple[str, int], int], decode: bool = False
              ) -> dict[tuple[str, int], tuple[int, int, int]]:
        """{(topic, partition): (records, next position, high watermark)} of one Fetch.
        ``decode``: every record set is also decoded into Arrow (:func:`take_arrow`) and the
        rows must be the records counted."""
        self.cid += 1
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (t, p), off in positions.items():
            by_topic.setdefault(t, []).append((p, off))
        body = {"replica_id": -1, "max_wait_ms": self.max_wait_ms, "min_bytes": 1,
                "max_bytes": self.max_bytes, "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": t, "partitions": [
                    {"partition": p, "current_leader_epoch": -1, "fetch_offset": off, "last_fetched_epoch": -1,
                     "log_start_offset": -1, "partition_max_bytes": self.partition_max_bytes}
                    for p, off in parts]} for t, parts in by_topic.items()],
                "forgotten_topics_data": [], "rack_id": ""}
        self.sock.sendall(encode_request(ApiKey.FETCH, 12, self.cid, "bench-raw", body))
        head = memoryview(self.buf)[:4]
        self._recv_into(head)
        (size,) = struct.unpack(">i", head)
        if size > len(self.buf):
            self.buf = bytearray(size)
        view = memoryview(self.buf)[:size]
        self._recv_into(view)
        cid, response = decode_response(ApiKey.FETCH, 12, view)
        if cid != self.cid or response["error_code"]:
            raise RuntimeError(f"Fetch of {', '.join(by_topic)}: correlation id {cid} (sent {self.cid}), "
                               f"error {response['error_code']}")
        out: dict[tuple[str, int], tuple[int, int, int]] = {}
        indexes = response.indexes if decode else None
        cursors: list[tuple[CompletedFetch, int]] = []
        for k, t in enumerate(response["responses"]):
            for part in t["partitions"]:
                tp = (t["topic"], part["partition_index"])
                if part["error_code"]:
                    raise RuntimeError(f"Fetch of {tp[0]}-{tp[1]} at offset {positions[tp]}: "
                                       f"error {part['error_code']}")
                n, nxt = count_batches(part["records"], positions[tp])
                out[tp] = (n, nxt, part["high_watermark"])
                if indexes is not None:
                    index = indexes[(k, part["partition_index"])]
                    index.set_fetch_offset(positions[tp])
                    if index.bound:
                        cursors.append((CompletedFetch(part["records"], tp[0], tp[1], positions[tp],
                                                       index=index), index.bound))
        if indexes is not None:
            rows, counted = take_arrow(cursors), sum(n for n, _, _ in out.values())
            if rows != counted:
                raise RuntimeError(f"Fetch of {', '.join(by_topic)}: {rows} rows decoded, {counted} counted")
        return out


#: the rows of one Arrow batch (poll_arrow's max_records in the pc_arrow contender)
ARROW_ROWS = 100_000


def take_arrow(cursors: list[tuple[CompletedFetch, int]]) -> int:
    """Every record of ``cursors`` (each with its index's bound) decoded into Arrow batches of
    at most ARROW_ROWS rows, as poll_arrow's drain groups them (take_arrow_many over the
    cursors whose bounds fit, the last one taken in part); the rows decoded."""
    bounds = [bound for _, bound in cursors]      # what each may still give, as rows are taken
    rows, i = 0, 0
    while i < len(cursors):
        group, budgets, left = [], [], ARROW_ROWS
        for (cursor, _), bound in zip(cursors[i:], bounds[i:]):
            group.append(cursor)
            budgets.append(min(max(bound, 1), left))    # 1: a look past the last whole batch
            left -= budgets[-1]
            if left <= 0:
                break
        batch, taken = take_arrow_many(group, budgets)
        for j, k in enumerate(taken):
            bounds[i + j] -= k
        rows += batch.num_rows
        before = i
        for cursor in group:
            if not cursor.is_drained:
                if cursor.pending_error is not None:
                    raise cursor.pending_error
                break
            i += 1
        if i == before and not batch.num_rows:
            raise RuntimeError(f"take_arrow: {group[0]!r} gives no rows and is not drained")
    return rows


def count_batches(records: Any, position: int) -> tuple[int, int]:
    """(records at or past ``position``, next position) of a v2 record set, from batch headers
    only (baseOffset @0, batchLength @8, lastOffsetDelta @23, recordsCount @57); a trailing
    partial batch is left for the next fetch."""
    if records is None:
        return 0, position
    mv = memoryview(records)
    pos, end, n = 0, len(mv), 0
    unpack = struct.unpack_from
    while pos + 61 <= end:
        base, length = unpack(">qi", mv, pos)
        if pos + 12 + length > end:
            break
        (last_delta,) = unpack(">i", mv, pos + 23)
        (count,) = unpack(">i", mv, pos + 57)
        if base + last_delta >= position:
            n += count if base >= position else base + last_delta + 1 - position
            position = base + last_delta + 1
        pos += 12 + length
    return n, position


def _raw_loop(bootstrap: str, topic: str, partitions: int, n: int, decode: bool) -> int:
    f = RawFetcher(bootstrap)
    try:
        # the two round trips every client makes before it can fetch (leader, then start
        # offsets), timed as the clients' are: without them the ceiling skipped ~25-40 ms of
        # a 1,000-partition read that every contender pays
        positions = f.start_offsets(topic, partitions)
        got, progress = 0, _Progress("raw_arrow" if decode else "raw_fetch", n)
        while got < n:
            for tp, (k, nxt, _hw) in f.fetch(positions, decode=decode).items():
                got += k
                positions[tp] = nxt
            progress.check(got)
        return got
    finally:
        f.close()


def raw_fetch(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    return _raw_loop(bootstrap, topic, partitions, n, False)


def raw_arrow(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    return _raw_loop(bootstrap, topic, partitions, n, True)


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """Every partition's log end from a Fetch (Tansu 0.6's ListOffsets(latest) answers the last
    batch's base offset + 1, see bench_spark.py)."""
    # a wait above 0: Tansu answers a Fetch with max_wait_ms 0 with no partitions at all
    f = RawFetcher(bootstrap, partition_max_bytes=1, max_wait_ms=100)
    try:
        return {p: hw for (_, p), (_, _, hw) in f.fetch(dict.fromkeys(topic_partitions(topic, partitions), 0)).items()}
    finally:
        f.close()


# ------------------------------------------------------------------ the clients

def _pc_arrow(bootstrap: str, topic: str, partitions: int, n: int, threads: int) -> int:
    with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                       check_crcs=True, decode_threads=threads) as c:
        c.assign([TopicPartition(t, p) for t, p in topic_partitions(topic, partitions)])
        got, progress = 0, _Progress("pc_arrow", n)
        while got < n:
            got += c.poll_arrow(timeout_ms=1000, max_records=100_000).num_rows
            progress.check(got)
        return got


def pc_arrow(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    return _pc_arrow(bootstrap, topic, partitions, n, 0)       # decode.threads: one per core


def pc_arrow_1t(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    return _pc_arrow(bootstrap, topic, partitions, n, 1)


def _pc_poll(bootstrap: str, topic: str, partitions: int, n: int, max_poll_records: int) -> int:
    with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                       max_poll_records=max_poll_records) as c:
        c.assign([TopicPartition(t, p) for t, p in topic_partitions(topic, partitions)])
        got, progress = 0, _Progress("pc_poll", n)
        while got < n:
            for records in c.poll(timeout_ms=1000).values():
                for r in records:
                    r.key; r.value; r.offset; r.timestamp  # noqa: B018
                got += len(records)
            progress.check(got)
        return got


def pc_poll(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    return _pc_poll(bootstrap, topic, partitions, n, 500)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def idle_measure(bootstrap: str, topic: str, partitions: int, polls: int = 2000) -> tuple[float, int, int]:
    """(microseconds per ``poll(timeout_ms=0)``, RSS growth, Python heap growth in bytes) of a consumer assigned
    every partition of ``topic`` (one topic), each at its end (nothing to read: the per-partition cost of a poll
    alone). The growth is from before ``assign`` to after the seeks and 200
    polls have settled the fetch sessions; call it in a fresh process (see idle_poll)."""
    import gc
    import tracemalloc

    # the ends from a Fetch, not ListOffsets(latest): Tansu's answers short of the end
    ends = high_watermarks(bootstrap, topic, partitions)
    with KafkaConsumer(bootstrap_servers=bootstrap) as c:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        gc.collect()
        before = _rss()
        tracemalloc.start()         # only while the state is built: the timed polls run without it
        c.assign(tps)
        for tp in tps:
            c.seek(tp, ends[tp.partition])
        for _ in range(200):
            c.poll(timeout_ms=0)
        gc.collect()
        heap = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        grown = _rss() - before
        start = time.perf_counter()
        for _ in range(polls):
            if c.poll(timeout_ms=0):
                raise RuntimeError(f"idle poll of {topic}: records arrived on a topic that should be idle")
        return (time.perf_counter() - start) / polls * 1e6, grown, heap


_IDLE_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
import bench_consume
print(*bench_consume.idle_measure(sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


def idle_poll(bootstrap: str, topic: str, partitions: int) -> tuple[float, int, int]:
    """idle_measure in a fresh process (so RSS is this consumer's alone)."""
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", _IDLE_CHILD, here, bootstrap, topic, str(partitions)],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"idle poll of {topic}: exit {out.returncode}\n{out.stderr[-3000:]}")
    us, grown, heap = out.stdout.split()[-3:]
    return float(us), int(grown), int(heap)


def pc_poll_large(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    return _pc_poll(bootstrap, topic, partitions, n, 10_000)


def _ck_consume(bootstrap: str, topic: str, partitions: int, n: int, batch: int) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    from confluent_kafka import TopicPartition as CkTP

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-ck",
                  "enable.auto.commit": False, "fetch.queue.backoff.ms": 10,
                  "check.crcs": True})
    try:
        c.assign([CkTP(t, p, OFFSET_BEGINNING) for t, p in topic_partitions(topic, partitions)])
        got, progress = 0, _Progress("ck_consume", n)
        while got < n:
            # consume() waits for all it was asked for (or the timeout): never ask past the end
            for m in c.consume(min(batch, n - got), timeout=1.0):
                if m.error():
                    raise RuntimeError(m.error())
                m.key(); m.value(); m.offset(); m.timestamp()
                got += 1
            progress.check(got)
        return got
    finally:
        c.close()


def ck_consume(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    return _ck_consume(bootstrap, topic, partitions, n, 10_000)


def ck_consume500(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    return _ck_consume(bootstrap, topic, partitions, n, 500)


#: kafkarrow's batch: poll_arrow's max_records, so both hand over batches of the same size
KR_BATCH = 100_000
#: kafkarrow's poll waits out its whole timeout when the batch is not full (at the end of the
#: topic, or when a fetch brought fewer records); 100 ms rather than its README's 1000 keeps
#: that wait from dominating a read of a few seconds (measured on Kafka 4.2.2: 1000 ms read
#: 300k records at 60-120k rec/s, 100 ms at 150-470k rec/s)
KR_POLL_MS = 100


def kr_arrow(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    """kafkarrow: every partition of ``topic`` from the earliest offset (its SourceTopic takes
    the whole topic; ``partitions`` is what the topic has), Arrow RecordBatches of up to
    KR_BATCH rows, rows counted."""
    import kafkarrow

    m = kafkarrow.ConsumerManager(config={"bootstrap.servers": bootstrap},
                                  topics=[kafkarrow.SourceTopic.from_earliest(t) for t in topic.split(",")],
                                  batch_size=KR_BATCH)
    try:
        got, progress = 0, _Progress("kr_arrow", n)
        while got < n:
            got += m.poll(timeout_ms=KR_POLL_MS).num_rows
            progress.check(got)
        return got
    finally:
        del m           # no close(): its consumer goes when the object does


def aio(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as AioTP

    async def run() -> int:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", check_crcs=True)
        await c.start()
        try:
            tps = [AioTP(topic, p) for p in range(partitions)]
            c.assign(tps)
            await c.seek_to_beginning(*tps)
            got, progress = 0, _Progress("aio", n)
            while got < n:
                for records in (await c.getmany(timeout_ms=1000, max_records=500)).values():
                    for r in records:
                        r.key; r.value; r.offset; r.timestamp  # noqa: B018
                    got += len(records)
                progress.check(got)
            return got
        finally:
            await c.stop()

    return asyncio.run(run())


def kp(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    from kafka import KafkaConsumer as KpConsumer
    from kafka import TopicPartition as KpTP

    c = KpConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                   auto_offset_reset="earliest", check_crcs=True)
    try:
        tps = [KpTP(topic, p) for p in range(partitions)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        got, progress = 0, _Progress("kp", n)
        while got < n:
            for records in c.poll(timeout_ms=1000, max_records=500).values():
                for r in records:
                    r.key; r.value; r.offset; r.timestamp  # noqa: B018
                got += len(records)
            progress.check(got)
        return got
    finally:
        c.close()


CONTENDERS: dict[str, Contender] = {
    "raw_fetch": raw_fetch, "raw_arrow": raw_arrow, "ck_consume": ck_consume, "pc_arrow": pc_arrow,
    "pc_arrow_1t": pc_arrow_1t, "pc_poll": pc_poll,
    "pc_poll_large": pc_poll_large, "aio": aio, "kp": kp, "ck_consume500": ck_consume500,
    "kr_arrow": kr_arrow,
}
#: what each reads, for tables
DESCRIPTIONS: dict[str, str] = {
    "raw_fetch": "Metadata, ListOffsets, then a sequential raw Fetch loop counting batch headers (the broker ceiling)",
    "raw_arrow": "the same loop, each answer decoded into 100k-row Arrow batches (CRCs checked) before the next Fetch",
    "ck_consume": "confluent-kafka consume(10000), fields touched",
    "ck_consume500": "confluent-kafka consume(500), fields touched",
    "pc_arrow": "pyconsumer poll_arrow(max_records=100000)",
    "pc_arrow_1t": "the same, decode.threads=1 (no decode threads)",
    "pc_poll": "pyconsumer poll(), max.poll.records 500, fields touched",
    "pc_poll_large": "pyconsumer poll(), max.poll.records 10000, fields touched",
    "aio": "aiokafka getmany(max_records=500), fields touched",
    "kp": "kafka-python poll(max_records=500), fields touched",
    "kr_arrow": f"kafkarrow ConsumerManager.poll(timeout_ms={KR_POLL_MS}), batch_size {KR_BATCH}",
}
#: these read at most ``slow_cap`` records (rates are per record, so they stay comparable)
SLOW = {"aio", "kp"}


def measure(bootstrap: str, topic: str, partitions: int, n: int, contenders: dict[str, Contender],
            rounds: int, *, slow_cap: int = 200_000, rotate: bool = True,
            report: Callable[[int, str, int, float], None] | None = None) -> dict[str, list[float]]:
    """Per-round records/s of every contender, interleaved: each round runs each once (in an
    order rotated every round when ``rotate``). ``report(round, name, records, seconds)``."""
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    for rnd in range(rounds):
        for name in _rotated(list(contenders), rnd if rotate else 0):
            want = min(n, slow_cap) if name in SLOW else n
            with harness_heap_frozen():
                start = time.perf_counter()
                result = contenders[name](bootstrap, topic, partitions, want)
                elapsed = time.perf_counter() - start
            if isinstance(result, tuple):       # run in a child process, which timed itself
                got, elapsed = result
            else:
                got = result
            # every record exactly once: a contender stopping short, or one handed a record twice
            # (its loop stops at the topic's size, so nothing past it can pad the count)
            if got < want or (got != want and name not in SLOW):
                raise RuntimeError(f"{name} read {got:,} records of {topic}, expected {want:,}")
            rates[name].append(got / elapsed)
            if report is not None:
                report(rnd, name, got, elapsed)
    return rates


@contextlib.contextmanager
def harness_heap_frozen() -> Iterator[None]:
    """Run a timed read with the harness's own objects out of the cyclic collector's reach
    (gc.freeze after a collection; unfrozen after). The suite's process holds every peer
    client's modules, matplotlib and the results so far (~130k tracked objects, ~45k in a
    process that imports bench_consume alone), and every full collection a contender's
    allocations start walks them all: 47.5 ms a read at 1,000 partitions in the suite against
    8 ms in a lean process (HISTORY, issue 26). Frozen, each contender pays for the objects
    it makes, as in a process that runs only it; the same for every contender."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _rotated(names: Iterable[str], k: int) -> list[str]:
    names = list(names)
    k %= max(len(names), 1)
    return names[k:] + names[:k]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--codec", default="none")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=[k for k in CONTENDERS if k != "ck_consume500"],
                    choices=list(CONTENDERS))
    ap.add_argument("--broker", choices=["kafka", "tansu"], default="tansu")
    ap.add_argument("--slow-cap", type=int, default=200_000,
                    help="aiokafka and kafka-python read only this many records (rates stay per record)")
    args = ap.parse_args()

    def show(rnd: int, name: str, got: int, elapsed: float) -> None:
        print(f"round {rnd} {name:13s} {got:>10,} records {elapsed:7.2f} s "
              f"{got / elapsed / 1e3:10,.0f} krec/s", flush=True)

    import brokers

    with brokers.start(args.broker) as broker:
        topic = broker.create_topic("bench", args.partitions)
        t0 = time.perf_counter()
        fill(broker.bootstrap, topic, args.records, args.partitions, args.value_size, args.codec)
        print(f"filled {args.records:,} records ({args.value_size} B values, {args.codec}) in "
              f"{time.perf_counter() - t0:.1f} s")
        rates = measure(broker.bootstrap, topic, args.partitions, args.records,
                        {k: CONTENDERS[k] for k in args.only}, args.rounds, slow_cap=args.slow_cap,
                        rotate=False, report=show)
    print(f"\n{'contender':13s} {'krec/s best':>12s} {'x confluent (median)':>22s}")
    for name, rs in rates.items():
        ck = rates.get("ck_consume")
        med = f"{statistics.median(r / c for r, c in zip(rs, ck)):.2f}" if ck else "-"
        print(f"{name:13s} {max(rs) / 1e3:12,.0f} {med:>22s}")


if __name__ == "__main__":
    main()
