"""KafkaConsumer with value.format / key.format on the in-process FakeCluster: poll_arrow() and
poll() hand out typed keys and values through the one TypedValues plan, with exact records, in
every bad-record mode; FAILFAST returns the records before a bad one, keeps the position on it
and raises until a seek moves past it (nothing skipped, nothing lost, nothing twice); a
DROPMALFORMED chunk that keeps no row still moves on; decode.threads 1 and 2 give the same
batches, the plan running on the decode threads; bad settings fail at construction, naming
the setting. The same on Apache Kafka with a real registry: tests/kafka/test_typed_consumer_on_kafka.py."""
from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.fetch import decode
from pyconsumer.errors import ConfigurationError
from pyconsumer.metrics import find
from pyconsumer.records import kafka_arrow_schema
from pyconsumer.testing import FakeCluster
from pyconsumer.values import MalformedValueError

T0 = 1_700_000_000_000
VALUE = pa.struct([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    c = FakeCluster(1)
    yield c
    c.close()
    assert c.errors == [], c.errors


def consumer(cluster: FakeCluster, **settings: Any) -> KafkaConsumer:
    return KafkaConsumer(**{"bootstrap_servers": cluster.bootstrap, "auto_offset_reset": "earliest",
                            "value_format": "json", "value_schema": "id BIGINT, name STRING",
                            "key_format": "string", "fetch_max_wait_ms": 50, **settings})


def json_value(i: int) -> bytes:
    return b'{"id": %d, "name": "n%d"}' % (i, i)


def produce(cluster: FakeCluster, tp: TopicPartition, count: int, bad: frozenset[int] | set[int] = frozenset(),
            start: int = 0) -> None:
    """Records start..start+count-1 of ``tp``: key k<i>, value JSON (``b"{bad"`` at ``bad``),
    timestamp T0 + i."""
    cluster.produce(tp, [(b"k%d" % i, b"{bad" if i in bad else json_value(i), [], T0 + i)
                         for i in range(start, start + count)])


def ts(i: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp((T0 + i) / 1000, datetime.timezone.utc)


def arrow_until(c: KafkaConsumer, rows: int, timeout: float = 10.0, **kw: Any) -> list[pa.RecordBatch]:
    out: list[pa.RecordBatch] = []
    deadline = time.monotonic() + timeout
    while sum(b.num_rows for b in out) < rows:
        assert time.monotonic() < deadline, f"got {sum(b.num_rows for b in out)} of {rows} rows"
        out.append(c.poll_arrow(200, **kw))
    return [b for b in out if b.num_rows]


def rows(batches: list[pa.RecordBatch], *names: str) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for b in batches:
        out += zip(*(b.column(n).to_pylist() for n in names))
    return out


def expected(p: int, offsets: range | list[int]) -> list[tuple[Any, ...]]:
    return [(p, o, f"k{o}", {"id": o, "name": f"n{o}"}, ts(o)) for o in offsets]


COLS = ("partition", "offset", "key", "value", "timestamp")


def test_poll_arrow_typed_schema_records_and_corrupt_columns(cluster: FakeCluster) -> None:
    cluster.create_topic("t", 1)
    tp = TopicPartition("t", 0)
    with consumer(cluster) as c:
        c.assign([tp])
        empty = c.poll_arrow(0)                 # nothing yet: the typed schema all the same
        assert empty.num_rows == 0
        assert empty.schema.names == ["key", "value", "topic", "partition", "offset", "timestamp",
                                      "timestampType", "_corrupt_record", "_corrupt_record_key"]
        assert empty.schema.field("value").type == VALUE
        assert empty.schema.field("key").type == pa.string()
        produce(cluster, tp, 5, bad={2})
        batches = arrow_until(c, 5, include_headers=True)
        assert all(b.schema == batches[0].schema for b in batches)
        assert batches[0].schema.names[-3:] == ["headers", "_corrupt_record", "_corrupt_record_key"]
        assert rows(batches, *COLS, "_corrupt_record", "headers") == [
            (*r, None, None) for r in expected(0, [0, 1])] + [
            (0, 2, "k2", None, ts(2), b"{bad", None)] + [
            (*r, None, None) for r in expected(0, [3, 4])]
        assert c.position(tp) == 5
        m = c.metrics()
        assert (find(m, "records-decoded-total"), find(m, "records-malformed-total"),
                find(m, "records-dropped-total"), find(m, "schema-ids-seen")) == (5.0, 1.0, 0.0, 0.0)


def test_poll_gives_python_values_through_the_same_plan(cluster: FakeCluster) -> None:
    cluster.create_topic("t", 1)
    tp = TopicPartition("t", 0)
    produce(cluster, tp, 4, bad={1})
    for mode, want in (("PERMISSIVE", [(0, "k0", {"id": 0, "name": "n0"}), (1, "k1", None),
                                       (2, "k2", {"id": 2, "name": "n2"}),
                                       (3, "k3", {"id": 3, "name": "n3"})]),
                       ("DROPMALFORMED", [(0, "k0", {"id": 0, "name": "n0"}),
                                          (2, "k2", {"id": 2, "name": "n2"}),
                                          (3, "k3", {"id": 3, "name": "n3"})])):
        with consumer(cluster, bad_records_mode=mode) as c:
            c.assign([tp])
            got: list[Any] = []
            deadline = time.monotonic() + 10
            while c.position(tp) < 4:
                assert time.monotonic() < deadline
                got += c.poll(200).get(tp, [])
            assert [(r.offset, r.key, r.value) for r in got] == want, mode
            assert [(r.timestamp, r.headers, r.serialized_value_size) for r in got][:1] == [
                (T0, [], len(json_value(0)))]


@pytest.mark.parametrize("arrow", [True, False], ids=["poll_arrow", "poll"])
def test_failfast_returns_the_records_before_stays_on_the_bad_one_until_a_seek(
        cluster: FakeCluster, arrow: bool) -> None:
    cluster.create_topic("t", 1)
    tp = TopicPartition("t", 0)
    produce(cluster, tp, 6, bad={3})

    def poll(c: KafkaConsumer) -> list[tuple[int, Any]]:
        if arrow:
            return rows([c.poll_arrow(2000)], "offset", "value")
        return [(r.offset, r.value) for r in c.poll(2000).get(tp, [])]

    with consumer(cluster, bad_records_mode="FAILFAST") as c:
        c.assign([tp])
        assert poll(c) == [(o, {"id": o, "name": f"n{o}"}) for o in range(3)]
        assert c.position(tp) == 3
        for _ in range(2):                                # and again: never skipped
            with pytest.raises(MalformedValueError) as info:
                poll(c)
            e = info.value
            assert (e.topic, e.partition, e.offset) == ("t", 0, 3)
            assert str(e).startswith("topic t partition 0 offset 3: ")
            assert c.position(tp) == 3
        c.seek(tp, 4)
        assert poll(c) == [(o, {"id": o, "name": f"n{o}"}) for o in (4, 5)]
        assert c.position(tp) == 6


def test_failfast_on_a_first_record_rolls_the_whole_poll_back(cluster: FakeCluster) -> None:
    """p0's first record is bad: the poll raises, and p1's records drained in the same poll are
    handed out later, once p0 is sought past: each exactly once."""
    cluster.create_topic("t", 2)
    p0, p1 = TopicPartition("t", 0), TopicPartition("t", 1)
    produce(cluster, p0, 3, bad={0})
    produce(cluster, p1, 3)
    with consumer(cluster, bad_records_mode="FAILFAST") as c:
        c.assign([p0, p1])
        got: list[pa.RecordBatch] = []
        deadline = time.monotonic() + 10
        while True:
            assert time.monotonic() < deadline
            try:
                got.append(c.poll_arrow(200))
            except MalformedValueError as e:
                assert (e.topic, e.partition, e.offset) == ("t", 0, 0)
                break
        assert c.position(p0) == 0
        c.seek(p0, 1)
        got += arrow_until(c, 5 - sum(b.num_rows for b in got))
        assert sorted(rows(got, *COLS)) == expected(0, [1, 2]) + expected(1, range(3))
        assert (c.position(p0), c.position(p1)) == (3, 3)


def test_dropmalformed_chunk_that_keeps_no_row_moves_on(cluster: FakeCluster) -> None:
    cluster.create_topic("t", 1)
    tp = TopicPartition("t", 0)
    produce(cluster, tp, 3, bad={0, 1, 2})
    with consumer(cluster, bad_records_mode="DROPMALFORMED") as c:
        c.assign([tp])
        deadline = time.monotonic() + 10
        while c.position(tp) < 3:
            assert time.monotonic() < deadline
            batch = c.poll_arrow(200)
            assert batch.num_rows == 0 and batch.schema.field("value").type == VALUE
        produce(cluster, tp, 2, start=3)
        assert rows(arrow_until(c, 2), *COLS) == expected(0, [3, 4])
        m = c.metrics()
        assert (find(m, "records-decoded-total"), find(m, "records-malformed-total"),
                find(m, "records-dropped-total")) == (2.0, 3.0, 3.0)


def test_decode_threads_1_and_2_give_equal_batches_decoded_on_the_decode_threads(
        cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode, "min_bytes", 0)             # small data goes side by side too
    cluster.create_topic("t", 4)
    tps = [TopicPartition("t", p) for p in range(4)]
    for tp in tps:
        produce(cluster, tp, 50, bad={7, 20})
    results: dict[int, list[pa.RecordBatch]] = {}
    threads_seen: set[str] = set()
    for threads in (1, 2):
        with consumer(cluster, decode_threads=threads) as c:
            c.assign(tps)
            plan = c._typed
            assert plan is not None
            apply = plan.apply
            meet = threading.Barrier(2, timeout=10) if threads == 2 else None

            def spy(batch: pa.RecordBatch, apply: Callable[[pa.RecordBatch], pa.RecordBatch] = apply,
                    meet: threading.Barrier | None = meet) -> pa.RecordBatch:
                threads_seen.add(threading.current_thread().name)
                if meet is not None and meet.n_waiting < 2 and not meet.broken:
                    try:
                        meet.wait()                        # two applies at once: two threads
                    except threading.BrokenBarrierError:
                        pass
                return apply(batch)

            monkeypatch.setattr(plan, "apply", spy)
            # produced before the assignment: the first Fetch response holds every partition
            results[threads] = arrow_until(c, 200)
    flat = {t: pa.Table.from_batches(b).combine_chunks() for t, b in results.items()}
    assert flat[1].equals(flat[2])
    assert flat[1].num_rows == 200
    assert sorted(rows(results[2], "partition", "offset", "_corrupt_record"))[:8] == [
        (0, o, b"{bad" if o in (7, 20) else None) for o in range(8)]
    assert any(name.startswith("pyconsumer-decode") for name in threads_seen), threads_seen


def test_bad_settings_fail_at_construction_naming_the_setting() -> None:
    def refused(**settings: Any) -> str:
        with pytest.raises(ConfigurationError) as info:
            KafkaConsumer(bootstrap_servers="127.0.0.1:9", **settings)
        return str(info.value)

    assert refused(value_format="json", value_schema="id BIGINT,").startswith(
        "value.schema is not a usable JSON schema")
    assert refused(value_format="json").startswith("value.format=json needs value.schema")
    assert refused(value_format="avro").startswith(
        "value.format=avro (Confluent framing) needs schema.registry.url")
    assert refused(value_format="avro", value_avro_framing="none",
                   value_schema='{"type": "record", "name": "r", "fields": [{"name": "a", '
                                '"type": "nope"}]}').startswith("value.schema is not a usable Avro")
    assert refused(key_format="avro", schema_registry_url="localhost:8081").startswith(
        "schema.registry.* settings: ")
    assert refused(value_format="string", value_deserializer="StringDeserializer") == (
        "value.format=string and value.deserializer are both set: the format decodes the "
        "values; drop one of them")
    assert "setting bad.records.mode" in refused(value_format="string", bad_records_mode="LAX")
    assert "setting value.format" in refused(value_format="thrift")
    assert refused(key_schema="a INT") == "key.schema is set but key.format is binary"
    assert refused(value_format="string", corrupt_record_column="topic").startswith(
        "the corrupt record column (corrupt.record.column) 'topic' is already a column")
    # binary (the default) is the untyped consumer: the Kafka schema, no plan
    with KafkaConsumer(bootstrap_servers="127.0.0.1:9") as c:
        assert c._typed is None
        assert c._arrow_schema(False) == kafka_arrow_schema(False)
