"""The record decoder on bytes a real broker sends.

confluent-kafka (an independent producer) writes into Tansu; a raw Fetch over a plain
blocking socket (built with pyconsumer.protocol) returns the partition's record set; then
decode_records / decode_arrow / CompletedFetch must give back exactly what was produced,
and agree with kafka-python's reader (kafka.record.MemoryRecords) on the same bytes.
Tansu re-encodes batches (see test-brokers.md), so this covers batches a broker rewrote.
"""
from __future__ import annotations

import socket
import struct
import time
import uuid
from typing import Any
from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest

pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient  # noqa: E402
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords  # noqa: E402
from kafka.record.memory_records import MemoryRecords  # noqa: E402

from pyconsumer.protocol import SUPPORTED_VERSIONS, ApiKey, decode_response, encode_request  # noqa: E402
from pyconsumer.records import CompletedFetch, decode_arrow, decode_records  # noqa: E402
from pyconsumer.testing import (  # noqa: E402
    CODECS,
    KafkaCluster,
    TansuBroker,
    TestRecord,
    produce,
    produce_transactions,
    sample_records,
)

READ_UNCOMMITTED, READ_COMMITTED = 0, 1
CREATE_TIME = 0


# ---------------------------------------------------------------------------- raw client


class RawConnection:
    """One blocking socket to a broker: send a request, read its response. Nothing else."""

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation_id = 0

    def request(self, api_key: Any, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.correlation_id += 1
        frame = encode_request(api_key, version, self.correlation_id, "pyconsumer-it", body)
        self.sock.sendall(frame)
        (size,) = struct.unpack(">i", self._recv(4))
        payload = self._recv(size)
        cid, response = decode_response(api_key, version, payload)
        assert cid == self.correlation_id
        return response

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"broker closed the connection after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def topic_id_of(conn: RawConnection, topic: str) -> Any:
    md = conn.request(ApiKey.METADATA, 12, {
        "topics": [{"topic_id": uuid.UUID(int=0), "name": topic}],  # zero id: look up by name
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    })
    (t,) = [t for t in md["topics"] if t["name"] == topic]
    assert t["error_code"] == 0
    return t["topic_id"]


def fetch(
    conn: RawConnection,
    version: int,
    topic: str,
    partition: int,
    offset: int,
    *,
    isolation_level: int = READ_UNCOMMITTED,
    max_bytes: int = 50 << 20,
    topic_id: Any = None,
) -> dict[str, Any]:
    """One partition's section of a Fetch response (partition_index, high_watermark, records, ...)."""
    part = {
        "partition": partition,
        "current_leader_epoch": -1,
        "fetch_offset": offset,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
        "partition_max_bytes": max_bytes,
    }
    body: dict[str, Any] = {
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": isolation_level,
        "session_id": 0,
        "session_epoch": -1,
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    if version < 15:
        body["replica_id"] = -1
    if version >= 13:
        body["topics"] = [{"topic_id": topic_id, "partitions": [part]}]
    else:
        body["topics"] = [{"topic": topic, "partitions": [part]}]
    response = conn.request(ApiKey.FETCH, version, body)
    assert response["error_code"] == 0, response
    (t,) = response["responses"]
    if version >= 13:
        assert t["topic_id"] == topic_id
    else:
        assert t["topic"] == topic
    (p,) = t["partitions"]
    assert p["partition_index"] == partition
    assert p["error_code"] == 0, p
    return p


# ---------------------------------------------------------------------------- comparisons


def expected_rows(records: list[TestRecord], offsets: list[int]) -> list[tuple[Any, ...]]:
    return [
        (off, rec.timestamp_ms, CREATE_TIME, rec.key, rec.value, list(rec.headers or []))
        for rec, off in zip(records, offsets)
    ]


def decoded_rows(record_set: Any, topic: str, partition: int, **kw: Any) -> list[tuple[Any, ...]]:
    got = decode_records(record_set, topic, partition, **kw)
    assert all(r.topic == topic and r.partition == partition for r in got)
    for r in got:
        assert r.serialized_key_size == (-1 if r.key is None else len(r.key))
        assert r.serialized_value_size == (-1 if r.value is None else len(r.value))
    return [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, list(r.headers)) for r in got]


def arrow_rows(record_set: Any, topic: str, partition: int, **kw: Any) -> list[tuple[Any, ...]]:
    batch = decode_arrow(record_set, topic, partition, include_headers=True, **kw)
    cols = batch.to_pydict()
    assert set(cols["topic"]) <= {topic} and set(cols["partition"]) <= {partition}
    # exact integers: microseconds since the epoch -> ms (no float round trip)
    micros = batch.column("timestamp").cast(pa.int64()).to_pylist()
    rows = []
    for i in range(batch.num_rows):
        ms = micros[i] // 1000 if micros[i] is not None else None
        headers = [(h["key"], h["value"]) for h in (cols["headers"][i] or [])]
        rows.append((cols["offset"][i], ms, cols["timestampType"][i], cols["key"][i], cols["value"][i], headers))
    return rows


def kafka_python_rows(record_set: Any, fetch_offset: int = 0) -> list[tuple[Any, ...]]:
    """The same bytes read by kafka-python (skipping control batches and records below fetch_offset)."""
    rows = []
    mr = MemoryRecords(bytes(record_set))
    while True:
        batch = mr.next_batch()
        if batch is None:
            break
        if getattr(batch, "is_control_batch", False):
            continue
        for rec in batch:
            if rec.offset < fetch_offset:
                continue
            rows.append((rec.offset, rec.timestamp, rec.timestamp_type, rec.key, rec.value, list(rec.headers)))
    return rows


def aiokafka_rows(record_set: Any, fetch_offset: int = 0) -> list[tuple[Any, ...]]:
    """The same bytes read by aiokafka's (C-accelerated when built) reader."""
    rows = []
    mr = AioMemoryRecords(bytes(record_set))
    while mr.has_next():
        batch = mr.next_batch()
        if batch is None:
            break
        if batch.is_control_batch:
            continue
        for rec in batch:
            if rec.offset < fetch_offset:
                continue
            rows.append((rec.offset, rec.timestamp, rec.timestamp_type, rec.key, rec.value, list(rec.headers)))
    return rows


def batch_layout(record_set: Any) -> list[tuple[int, int, bool, bool, int]]:
    """(base_offset, last_offset, is_control, is_transactional, producer_id) per batch, via kafka-python."""
    out: list[tuple[int, int, bool, bool, int]] = []
    mr = MemoryRecords(bytes(record_set))
    while True:
        b = mr.next_batch()
        if b is None:
            return out
        out.append((b.base_offset, b.last_offset, b.is_control_batch, b.is_transactional, b.producer_id))


#: corner cases sample_records does not make: empty key, empty header key/value, many headers,
#: a big value, the smallest timestamp a producer can set (1 ms after the epoch)
EDGE_RECORDS = [
    TestRecord(b"", b"", [("", b"")], 0, 1_700_000_001_000),
    TestRecord(b"k", None, [(f"h{i}", bytes([i])) for i in range(40)], 0, 1_700_000_001_001),
    TestRecord(None, bytes(range(256)) * 400, None, 0, 1),
    TestRecord("ключ".encode(), "значение".encode(), [("ключ", None)], 0, 1_700_000_001_002),
    TestRecord(b"\x00", b"\x00", None, 0, 4_102_444_800_000),  # year 2100
]


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture
def conn(tansu: TansuBroker) -> Any:
    with RawConnection(tansu.bootstrap) as c:
        yield c


def highest_fetch_version(tansu: TansuBroker) -> int:
    """The newest Fetch both sides speak (17 for Tansu 0.6.0)."""
    return min(tansu.api_versions[1][1], SUPPORTED_VERSIONS[ApiKey.FETCH][1])


# ---------------------------------------------------------------------------- tests


@pytest.mark.parametrize("version", ["v12", "highest"])
@pytest.mark.parametrize("codec", CODECS)
def test_fetched_records_match_produced(
    tansu: TansuBroker, conn: RawConnection, make_tansu_topic: Callable[..., str], codec: str, version: str,
) -> None:
    v = 12 if version == "v12" else highest_fetch_version(tansu)
    topic = make_tansu_topic(1)
    records = sample_records(40, partitions=[0], seed=10 + CODECS.index(codec)) + EDGE_RECORDS
    offsets: list[int] = []
    for chunk in (records[:5], records[5:20], records[20:]):  # several batches
        offsets += [o for _, o in produce(tansu.bootstrap, topic, chunk, compression=codec, linger_ms=50)]
    assert offsets == list(range(45))
    tid = topic_id_of(conn, topic) if v >= 13 else None
    p = fetch(conn, v, topic, 0, 0, topic_id=tid)
    assert p["high_watermark"] == 45
    record_set = p["records"]
    assert isinstance(record_set, memoryview)  # a zero-copy slice of the response frame
    layout = batch_layout(record_set)
    assert len(layout) >= 3 and layout[0][0] == 0 and layout[-1][1] == 44

    want = expected_rows(records, offsets)
    assert decoded_rows(record_set, topic, 0) == want
    assert arrow_rows(record_set, topic, 0) == want
    assert kafka_python_rows(record_set) == want
    assert aiokafka_rows(record_set) == want

    cf = CompletedFetch(record_set, topic, 0, 0, include_headers=True)
    taken = cf.take_records(7) + cf.take_records(100)
    assert [r.offset for r in taken] == offsets
    assert cf.is_drained and cf.next_fetch_offset == 45


@pytest.mark.parametrize("codec", CODECS)
def test_fetch_from_mid_batch_skips_lower_offsets(
    tansu: TansuBroker, conn: RawConnection, tansu_topic: str, codec: str,
) -> None:
    records = sample_records(10, partitions=[0], seed=3)
    assert produce(tansu.bootstrap, tansu_topic, records, compression=codec, linger_ms=100) == [
        (0, i) for i in range(10)]
    p = fetch(conn, 12, tansu_topic, 0, 6)
    record_set = p["records"]
    # the broker returns the whole batch (base offset 0): skipping is the client's job
    assert batch_layout(record_set) == [(0, 9, False, False, -1)]
    want = expected_rows(records, list(range(10)))[6:]
    assert decoded_rows(record_set, tansu_topic, 0, fetch_offset=6) == want
    assert arrow_rows(record_set, tansu_topic, 0, fetch_offset=6) == want
    assert kafka_python_rows(record_set, fetch_offset=6) == want
    assert aiokafka_rows(record_set, fetch_offset=6) == want
    cf = CompletedFetch(record_set, tansu_topic, 0, 6)
    assert [r.offset for r in cf.take_records(3)] == [6, 7, 8]
    assert cf.next_fetch_offset == 9
    assert cf.take_arrow(10).column("offset").to_pylist() == [9]
    assert cf.next_fetch_offset == 10 and cf.is_drained


@pytest.mark.parametrize("codec", CODECS)
def test_large_batches(tansu: TansuBroker, conn: RawConnection, tansu_topic: str, codec: str) -> None:
    """A few big batches (thousands of records, ~1 MB) that the broker re-encoded."""
    records = sample_records(6000, partitions=[0], seed=20 + CODECS.index(codec), value_size=300)
    offsets = [o for _, o in produce(tansu.bootstrap, tansu_topic, records, compression=codec, linger_ms=200,
                                     batch_size=1_000_000, batch_num_messages=100_000)]
    assert offsets == list(range(6000))
    p = fetch(conn, 12, tansu_topic, 0, 0)
    layout = batch_layout(p["records"])
    assert layout[-1][1] == 5999 and len(layout) < 20  # big batches, not thousands of small ones
    want = expected_rows(records, offsets)
    assert decoded_rows(p["records"], tansu_topic, 0) == want
    assert arrow_rows(p["records"], tansu_topic, 0) == want
    assert aiokafka_rows(p["records"]) == want


def test_every_flexible_version_returns_the_same_bytes(
    tansu: TansuBroker, conn: RawConnection, tansu_topic: str,
) -> None:
    produce(tansu.bootstrap, tansu_topic, sample_records(30, partitions=[0], seed=4), compression="lz4")
    tid = topic_id_of(conn, tansu_topic)
    assert isinstance(tid, uuid.UUID) and tid != uuid.UUID(int=0)
    base = fetch(conn, 12, tansu_topic, 0, 0)
    assert base["high_watermark"] == 30
    assert len(decode_records(base["records"], tansu_topic, 0)) == 30
    for v in range(13, highest_fetch_version(tansu) + 1):  # topic ids from v13
        p = fetch(conn, v, tansu_topic, 0, 0, topic_id=tid)
        assert bytes(p["records"]) == bytes(base["records"]), v
        assert p["high_watermark"] == 30


def test_partitions_are_independent(tansu: TansuBroker, conn: RawConnection, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(3)
    records = sample_records(60, partitions=3, seed=6)
    delivered = produce(tansu.bootstrap, topic, records, compression="snappy")
    for part in range(3):
        mine = [(r, o) for r, (pp, o) in zip(records, delivered) if pp == part]
        p = fetch(conn, 12, topic, part, 0)
        assert p["high_watermark"] == 20
        assert decoded_rows(p["records"], topic, part) == expected_rows([r for r, _ in mine], [o for _, o in mine])


# ---------------------------------------------------------------------------- transactions

TXNS = [
    ([TestRecord(b"k0", b"c0", [("h", b"1")], 0, 1_700_000_000_000),
      TestRecord(None, b"c1", None, 0, 1_700_000_000_001)], True),
    ([TestRecord(b"k2", b"a0", None, 0, 1_700_000_000_002),
      TestRecord(b"k3", None, None, 0, 1_700_000_000_003)], False),
    ([TestRecord(b"k4", b"c2", None, 0, 1_700_000_000_004)], True),
]
COMMITTED = [(0, b"c0"), (1, b"c1"), (6, b"c2")]
EVERYTHING = [(0, b"c0"), (1, b"c1"), (3, b"a0"), (4, None), (6, b"c2")]


def _values(rows: list[tuple[Any, ...]]) -> list[tuple[int, Any]]:
    return [(r[0], r[4]) for r in rows]


@pytest.fixture
def txn_topic(tansu: TansuBroker, tansu_topic: str) -> str:
    assert produce_transactions(tansu.bootstrap, tansu_topic, TXNS, compression="gzip") == [
        [(0, 0), (0, 1)], [(0, 3), (0, 4)], [(0, 6)]]
    return tansu_topic


def test_transactional_batches_and_control_markers(conn: RawConnection, txn_topic: str) -> None:
    p = fetch(conn, 12, txn_topic, 0, 0, isolation_level=READ_UNCOMMITTED)
    layout = batch_layout(p["records"])
    pid = layout[0][4]
    assert pid >= 0
    assert layout == [
        (0, 1, False, True, pid), (2, 2, True, True, pid),
        (3, 4, False, True, pid), (5, 5, True, True, pid),
        (6, 6, False, True, pid), (7, 7, True, True, pid),
    ]
    assert p["high_watermark"] == 8
    # read_uncommitted: every data record, never a control record
    assert _values(decoded_rows(p["records"], txn_topic, 0)) == EVERYTHING
    assert _values(arrow_rows(p["records"], txn_topic, 0)) == EVERYTHING
    cf = CompletedFetch(p["records"], txn_topic, 0, 0)
    assert [r.offset for r in cf.take_records(100)] == [0, 1, 3, 4, 6]
    assert cf.next_fetch_offset == 8  # past the last commit marker


def test_read_committed_with_the_aborted_range(conn: RawConnection, txn_topic: str) -> None:
    """read_committed decoding on Tansu's bytes, with the aborted range a correct broker would send."""
    p = fetch(conn, 12, txn_topic, 0, 0, isolation_level=READ_COMMITTED)
    pid = batch_layout(p["records"])[0][4]
    aborted = [(pid, 3)]
    kw: dict[str, Any] = {"isolation_level": "read_committed", "aborted_transactions": aborted}
    assert _values(decoded_rows(p["records"], txn_topic, 0, **kw)) == COMMITTED
    assert _values(arrow_rows(p["records"], txn_topic, 0, **kw)) == COMMITTED
    cf = CompletedFetch(p["records"], txn_topic, 0, 0, **kw)
    assert [r.offset for r in cf.take_records(2)] == [0, 1]
    assert [r.offset for r in cf.take_records(2)] == [6]
    assert cf.next_fetch_offset == 8


@pytest.fixture
def txn_source(request: pytest.FixtureRequest) -> Iterator[tuple[RawConnection, str]]:
    """(raw connection, topic holding TXNS) on Tansu or on Apache Kafka (the partition's leader)."""
    if request.param == "tansu":
        yield request.getfixturevalue("conn"), request.getfixturevalue("txn_topic")
        return
    kafka: KafkaCluster = request.getfixturevalue("kafka")
    topic = request.getfixturevalue("make_kafka_topic")(1)
    assert produce_transactions(kafka.bootstrap, topic, TXNS, compression="gzip") == [
        [(0, 0), (0, 1)], [(0, 3), (0, 4)], [(0, 6)]]
    with RawConnection(kafka.address_of(kafka.leaders(topic)[0])) as c:
        # the commit markers are written after commit_transaction() returns: wait for the LSO
        deadline = time.monotonic() + 30
        while fetch(c, 12, topic, 0, 0, isolation_level=READ_COMMITTED)["last_stable_offset"] != 8:
            assert time.monotonic() < deadline, "the last commit marker was not written in 30 s"
            time.sleep(0.05)
        yield c, topic


@pytest.mark.parametrize("txn_source", [
    pytest.param("tansu", marks=[pytest.mark.tansu, pytest.mark.xfail(strict=True, reason=(
        "Tansu 0.6.0 sends an empty aborted_transactions list in Fetch responses (read_committed), "
        "so the aborted records a0 and the null value come back"))]),
    pytest.param("kafka", marks=pytest.mark.kafka)], indirect=True)
def test_read_committed_with_the_brokers_aborted_transactions(txn_source: tuple[RawConnection, str]) -> None:
    """The broker's own aborted ranges (Apache Kafka fills them) drop exactly the aborted records.

    Fetched as a consumer does, from each response's next fetch offset to the end: Kafka 4.2
    answers a fetch at 0 with the first batch only (0-1), the rest with a fetch at 2."""
    conn, txn_topic = txn_source
    rows: list[tuple[Any, ...]] = []
    position = 0
    while position < 8:
        p = fetch(conn, 12, txn_topic, 0, position, isolation_level=READ_COMMITTED)
        aborted = [(a["producer_id"], a["first_offset"]) for a in (p["aborted_transactions"] or [])]
        kw: dict[str, Any] = {"isolation_level": "read_committed", "aborted_transactions": aborted}
        rows += decoded_rows(p["records"], txn_topic, 0, fetch_offset=position, **kw)
        cf = CompletedFetch(p["records"], txn_topic, 0, position, **kw)
        cf.take_records(1 << 30)
        assert cf.next_fetch_offset > position, "the fetch loop does not advance"
        position = cf.next_fetch_offset
    assert _values(rows) == COMMITTED


# ---------------------------------------------------------------------------- fetch loops


def fetch_all(
    conn: RawConnection, version: int, topic: str, partition: int, end: int, *, max_bytes: int, topic_id: Any = None,
) -> tuple[list[tuple[Any, ...]], list[int], int]:
    """Fetch from 0 until ``end`` the way a consumer does: each response decoded by a
    CompletedFetch, the next fetch at its next_fetch_offset. Returns (rows, fetch offsets, arrow rows)."""
    rows: list[tuple[Any, ...]] = []
    arrow_count = 0
    positions: list[int] = []
    position = 0
    while position < end:
        assert len(positions) < 1000, "fetch loop does not advance"
        positions.append(position)
        p = fetch(conn, version, topic, partition, position, max_bytes=max_bytes, topic_id=topic_id)
        cf = CompletedFetch(p["records"], topic, partition, position, include_headers=True)
        got = cf.take_records(1 << 30)
        assert cf.is_drained
        rows += [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, list(r.headers)) for r in got]
        arrow_count += decode_arrow(p["records"], topic, partition, fetch_offset=position).num_rows
        assert cf.next_fetch_offset > position
        position = cf.next_fetch_offset
    return rows, positions, arrow_count


def test_tansu_fetch_loop_with_small_max_bytes(tansu: TansuBroker, conn: RawConnection, tansu_topic: str) -> None:
    records = sample_records(300, partitions=[0], seed=12, value_size=2000)
    offsets: list[int] = []
    for i in range(0, 300, 50):  # six batches of ~45 KB
        offsets += [o for _, o in produce(tansu.bootstrap, tansu_topic, records[i:i + 50], linger_ms=50)]
    assert offsets == list(range(300))
    # Tansu hands out whole batches: at least one, and it stops once max_bytes is exceeded
    rows, positions, arrow_count = fetch_all(conn, 12, tansu_topic, 0, 300, max_bytes=60_000)
    assert rows == expected_rows(records, offsets)
    assert arrow_count == 300
    assert positions == [0, 100, 200]


@pytest.mark.mock
@pytest.mark.parametrize("version", [12, 16])
def test_mock_fetch_loop_one_batch_per_response(mock_cluster: Any, version: int) -> None:
    """The mock serves one batch per partition per Fetch, and does not rewrite batches."""
    topic = mock_cluster.create_topic("loop", 1)
    records = sample_records(40, partitions=[0], seed=13)
    offsets: list[int] = []
    for i, codec in zip(range(0, 40, 10), ("none", "gzip", "lz4", "zstd")):
        offsets += [o for _, o in produce(mock_cluster.bootstrap, topic, records[i:i + 10], compression=codec,
                                          linger_ms=50)]
    assert offsets == list(range(40))
    md = AdminClient({"bootstrap.servers": mock_cluster.bootstrap}).list_topics(topic, timeout=10)
    leader = md.topics[topic].partitions[0].leader
    b = md.brokers[leader]
    with RawConnection(f"{b.host}:{b.port}") as conn:
        tid = topic_id_of(conn, topic) if version >= 13 else None
        rows, positions, arrow_count = fetch_all(conn, version, topic, 0, 40, max_bytes=1 << 20, topic_id=tid)
    assert positions == [0, 10, 20, 30]
    assert rows == expected_rows(records, offsets)
    assert arrow_count == 40


def test_open_transaction_is_cut_at_the_last_stable_offset(
    tansu: TansuBroker, conn: RawConnection, tansu_topic: str,
) -> None:
    """read_committed Fetch during an open transaction stops at the LSO; read_uncommitted does not."""
    from confluent_kafka import Producer

    produce(tansu.bootstrap, tansu_topic, [TestRecord(b"k", b"plain0", partition=0), TestRecord(b"k", b"plain1",
                                                                                              partition=0)])
    producer = Producer({"bootstrap.servers": tansu.bootstrap, "transactional.id": f"open-{tansu_topic}",
                         "linger.ms": 0})
    try:
        producer.init_transactions(10)
        producer.begin_transaction()
        for i in range(3):
            producer.produce(tansu_topic, b"open%d" % i, b"k", partition=0)
        assert producer.flush(10) == 0
        committed = fetch(conn, 12, tansu_topic, 0, 0, isolation_level=READ_COMMITTED)
        uncommitted = fetch(conn, 12, tansu_topic, 0, 0, isolation_level=READ_UNCOMMITTED)
        assert committed["high_watermark"] == uncommitted["high_watermark"] == 5
        assert committed["last_stable_offset"] == 2  # the open transaction's first offset
        rc = decode_records(committed["records"], tansu_topic, 0, isolation_level="read_committed",
                            aborted_transactions=[])
        assert [(r.offset, r.value) for r in rc] == [(0, b"plain0"), (1, b"plain1")]
        ru = decode_records(uncommitted["records"], tansu_topic, 0)
        assert [(r.offset, r.value) for r in ru] == [
            (0, b"plain0"), (1, b"plain1"), (2, b"open0"), (3, b"open1"), (4, b"open2")]
        producer.commit_transaction(10)
        after = fetch(conn, 12, tansu_topic, 0, 0, isolation_level=READ_COMMITTED)
        assert after["last_stable_offset"] == after["high_watermark"] == 6
        assert [r.offset for r in decode_records(after["records"], tansu_topic, 0,
                                                 isolation_level="read_committed")] == [0, 1, 2, 3, 4]
    finally:
        del producer
