"""Records as real Apache Kafka serves them, read by ``poll()`` and ``poll_arrow()``.

confluent-kafka (an independent producer) writes every codec, headers (several, repeated keys,
a null value), null keys and values and explicit CreateTime timestamps into a 3-partition topic;
a LogAppendTime topic gets the broker's timestamps. The consumer must give back exactly what was
written, per partition in offset order, whichever way the records are drained.
"""
from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.records import ConsumerRecord, kafka_arrow_schema
from pyconsumer.testing import CODECS, KafkaCluster, TestRecord, produce, sample_records

CREATE_TIME, LOG_APPEND_TIME = 0, 1
#: (offset, timestamp, timestamp type, key, value, headers)
Row = tuple[int, int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]
Rows = dict[int, list[Row]]


def consumer(kafka: KafkaCluster, **extra: Any) -> KafkaConsumer:
    return KafkaConsumer(**kafka.client_settings(auto_offset_reset="earliest", fetch_max_wait_ms=100, **extra))


def expected(records: list[TestRecord], delivered: list[tuple[int, int]], ts_type: int = CREATE_TIME) -> Rows:
    out: Rows = defaultdict(list)
    for rec, (part, off) in zip(records, delivered):
        assert rec.timestamp_ms is not None
        out[part].append((off, rec.timestamp_ms, ts_type, rec.key, rec.value, list(rec.headers or [])))
    return {p: sorted(rows, key=lambda r: r[0]) for p, rows in out.items()}


def record_row(r: ConsumerRecord) -> Row:
    return (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, list(r.headers))


def poll_rows(c: KafkaConsumer, topic: str, count: int, *, max_records: int | None = None,
              limit: int | None = None, timeout: float = 30.0) -> Rows:
    """poll() until ``count`` records came, at most ``limit`` (or ``max_records``) a call; each
    record's topic, partition, epoch and sizes checked."""
    limit = limit if limit is not None else max_records
    out: Rows = defaultdict(list)
    deadline = time.monotonic() + timeout
    got = 0
    while got < count:
        assert time.monotonic() < deadline, f"poll() gave {got} of {count} records"
        batch = c.poll(200, max_records)
        if limit is not None:
            assert sum(map(len, batch.values())) <= limit
        for tp, recs in batch.items():
            assert tp.topic == topic
            for r in recs:
                assert (r.topic, r.partition) == (topic, tp.partition)
                assert r.leader_epoch == 0           # a fresh single-replica topic
                assert r.serialized_key_size == (-1 if r.key is None else len(r.key))
                assert r.serialized_value_size == (-1 if r.value is None else len(r.value))
                out[tp.partition].append(record_row(r))
                got += 1
    assert c.poll(100) == {}                         # nothing more than was produced
    return dict(out)


def arrow_rows(c: KafkaConsumer, topic: str, count: int, *, max_records: int | None = None,
               timeout: float = 30.0) -> Rows:
    """poll_arrow(include_headers=True) until ``count`` rows came; the schema checked each time."""
    out: Rows = defaultdict(list)
    deadline = time.monotonic() + timeout
    got = 0
    while got < count:
        assert time.monotonic() < deadline, f"poll_arrow() gave {got} of {count} rows"
        batch = c.poll_arrow(200, max_records, include_headers=True)
        assert batch.schema == kafka_arrow_schema(True)
        assert batch.schema.names == ["key", "value", "topic", "partition", "offset", "timestamp",
                                      "timestampType", "headers"]
        if max_records is not None:
            assert batch.num_rows <= max_records
        cols = batch.to_pydict()
        micros = batch.column("timestamp").cast(pa.int64()).to_pylist()   # exact, no float round trip
        for i in range(batch.num_rows):
            assert cols["topic"][i] == topic
            assert micros[i] % 1000 == 0
            headers = [(h["key"], h["value"]) for h in (cols["headers"][i] or [])]
            if cols["headers"][i] is not None:
                assert headers                       # no headers is null, not an empty list
            out[cols["partition"][i]].append((cols["offset"][i], micros[i] // 1000, cols["timestampType"][i],
                                              cols["key"][i], cols["value"][i], headers))
        got += batch.num_rows
    assert c.poll_arrow(100, include_headers=True).num_rows == 0
    return dict(out)


def assign_all(c: KafkaConsumer, topic: str, partitions: int) -> list[TopicPartition]:
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    c.assign(tps)
    return tps


def test_every_codec_headers_nulls_and_create_times_over_three_partitions(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """Batches in every codec, one after another in each of 3 partitions: poll(), poll_arrow()
    and a poll() of 7 records at a time (draining across batch and codec boundaries) all give
    exactly the produced rows (offsets, CreateTime timestamps, keys, values, headers) in order."""
    topic = make_kafka_topic(3)
    records: list[TestRecord] = []
    delivered: list[tuple[int, int]] = []
    for i, codec in enumerate(CODECS):
        recs = sample_records(40, partitions=3, seed=i, value_size=300)
        delivered += produce(kafka.bootstrap_servers, topic, recs, compression=codec, linger_ms=50)
        records += recs
    # the mix is really there: null keys and values, empty values, a null header value, repeated keys
    assert any(r.key is None for r in records) and any(r.value is None for r in records)
    assert any(r.value == b"" for r in records)
    assert any(r.headers and ("null-header", None) in r.headers for r in records)
    assert any(r.headers and [k for k, _ in r.headers].count("h1") == 2 for r in records)
    want = expected(records, delivered)
    assert sorted(want) == [0, 1, 2]
    assert all([r[0] for r in rows] == list(range(len(rows))) for rows in want.values())

    with consumer(kafka) as c:
        assign_all(c, topic, 3)
        assert poll_rows(c, topic, len(records)) == want
    with consumer(kafka) as c:
        assign_all(c, topic, 3)
        assert arrow_rows(c, topic, len(records)) == want
    with consumer(kafka, max_poll_records=7) as c:
        tps = assign_all(c, topic, 3)
        assert poll_rows(c, topic, len(records), limit=7) == want
        assert {tp: c.position(tp) for tp in tps} == {TopicPartition(topic, p): len(want[p]) for p in range(3)}
    with consumer(kafka) as c:
        assign_all(c, topic, 3)
        assert arrow_rows(c, topic, len(records), max_records=9) == want


def test_log_append_time_topic_gives_the_brokers_timestamps(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """On a LogAppendTime topic every record carries timestamp type 1 and the broker's append time:
    inside the produce window, one time per batch, never the producer's timestamp."""
    topic = make_kafka_topic(2, config={"message.timestamp.type": "LogAppendTime"})
    producer_ts = 1_600_000_000_000
    windows: list[tuple[int, int, list[tuple[int, int]]]] = []
    records: list[TestRecord] = []
    for b in range(2):                                # two produce calls: one batch per partition each
        recs = [TestRecord(f"k{b}-{i}".encode(), f"v{b}-{i}".encode(), [("n", str(i).encode())], i % 2,
                           producer_ts + i) for i in range(6)]
        before = int(time.time() * 1000)
        delivered = produce(kafka.bootstrap_servers, topic, recs, linger_ms=50)
        after = int(time.time() * 1000)
        windows.append((before, after, delivered))
        records += recs
    with consumer(kafka) as c:
        assign_all(c, topic, 2)
        polled = poll_rows(c, topic, len(records))
    with consumer(kafka) as c:
        assign_all(c, topic, 2)
        assert arrow_rows(c, topic, len(records)) == polled
    by_offset = {(p, r[0]): r for p, rows in polled.items() for r in rows}
    assert len(by_offset) == len(records)
    batch_times: list[int] = []
    for b, (before, after, delivered) in enumerate(windows):
        for part in (0, 1):
            rows = [by_offset[(p, o)] for p, o in delivered if p == part]
            assert [r[3] for r in rows] == [f"k{b}-{i}".encode() for i in range(part, 6, 2)]
            assert {r[2] for r in rows} == {LOG_APPEND_TIME}
            times = {r[1] for r in rows}
            assert len(times) == 1                   # the whole batch stamped once
            (t,) = times
            assert before <= t <= after and t != producer_ts
            batch_times.append(t)
    assert batch_times[0] <= batch_times[2] and batch_times[1] <= batch_times[3]   # later batch, later time


def test_seek_into_the_middle_of_a_compressed_batch(kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """A position inside a compressed batch: the broker sends the whole batch, the consumer
    returns only the records from the position on (poll and poll_arrow)."""
    topic = make_kafka_topic(1)
    recs = sample_records(12, partitions=[0], seed=9)
    delivered = produce(kafka.bootstrap_servers, topic, recs, compression="zstd", linger_ms=100)
    assert delivered == [(0, i) for i in range(12)]
    want = {0: expected(recs, delivered)[0][7:]}
    tp = TopicPartition(topic, 0)
    with consumer(kafka) as c:
        c.assign([tp])
        c.seek(tp, 7)
        assert poll_rows(c, topic, 5) == want
        assert c.position(tp) == 12
    with consumer(kafka) as c:
        c.assign([tp])
        c.seek(tp, 7)
        assert arrow_rows(c, topic, 5) == want
        assert c.position(tp) == 12
