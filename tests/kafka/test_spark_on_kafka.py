"""The ``pyconsumer`` Spark source and ``pyconsumer ingest`` on real Apache Kafka (KRaft).

Data comes from confluent-kafka (``produce``, ``produce_transactions``); where the broker
decides a value (LogAppendTime timestamps, what compaction left) confluent-kafka's Consumer
reads the log as the independent oracle. Rows are compared in the order the DataFrame holds
them (one task per partition, in offset order), with every column: topic, partition, offset,
key, value, timestamp (ms), timestampType and headers.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.testing import CODECS, KafkaCluster, TestRecord, produce, produce_transactions, sample_records

from tests.spark.sparkdata import Row, expected_rows, table_rows

pytestmark = pytest.mark.spark

#: test data carries 2023 timestamps: without this, time retention (7 days) would delete it
#: at the broker's next retention check (every 5 minutes) if that came mid-test
KEEP = {"retention.ms": "-1"}


# ------------------------------------------------------------------------------- helpers


def _read(spark: Any, bootstrap: str, **options: str) -> Any:
    reader = spark.read.format("pyconsumer").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def rows(df: Any) -> list[Row]:
    """The DataFrame's rows in the order Spark returns them (tasks in topic-partition order)."""
    return table_rows(df.toArrow())


def _sorted(rs: Sequence[Row]) -> list[Row]:
    return sorted(rs, key=lambda r: (r[0], r[1], r[2]))


def oracle_rows(bootstrap: str, topic: str, partitions: int, *, headers: bool = True,
                isolation: str = "read_uncommitted") -> list[Row]:
    """Every record of ``topic`` as confluent-kafka's Consumer reads it (the independent view of
    what the broker stored: LogAppendTime timestamps, compaction survivors)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    from confluent_kafka import TopicPartition as CkTopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "oracle", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True})
    try:
        c.assign([CkTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out: list[Row] = []
        at_eof: set[int] = set()
        deadline = time.monotonic() + 60
        while len(at_eof) < partitions:
            assert time.monotonic() < deadline, f"oracle read of {topic} did not reach the end"
            msg: Any = c.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == -191:        # _PARTITION_EOF
                    at_eof.add(msg.partition())
                    continue
                raise AssertionError(f"oracle read of {topic}: {msg.error()}")
            at_eof.discard(msg.partition())
            ts_type, ts = msg.timestamp()
            hdrs = msg.headers()
            out.append((topic, msg.partition(), msg.offset(), msg.key(), msg.value(), ts,
                        ts_type - 1,      # librdkafka: 1 CreateTime, 2 LogAppendTime
                        [(k, v) for k, v in hdrs] if (headers and hdrs) else None))
        return _sorted(out)
    finally:
        c.close()


# ------------------------------------------------------------------------------- batch reads


def test_every_codec_headers_and_nulls_read_exactly(spark: Any, kafka: KafkaCluster,
                                                    make_kafka_topic: Callable[..., str]) -> None:
    """Partition p holds records compressed with CODECS[p]: with includeHeaders the DataFrame is
    exactly what was produced (null keys and values, empty values, repeated and null headers),
    without it the same rows and no headers column."""
    topic = make_kafka_topic(len(CODECS), config=KEEP)
    want: list[Row] = []
    for p, codec in enumerate(CODECS):
        records = sample_records(120, partitions=[p], seed=p)
        delivered = produce(kafka.bootstrap_servers, topic, records, compression=codec)
        want += expected_rows(topic, records, delivered, headers=True)
    want = _sorted(want)
    assert any(r[3] is None for r in want) and any(r[4] is None for r in want)
    df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true")
    assert rows(df) == want
    plain = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeheaders="false")
    assert "headers" not in plain.columns
    assert rows(plain) == [r[:7] + (None,) for r in want]


def test_log_append_time_topic_gives_the_brokers_timestamps(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """On a LogAppendTime topic the rows carry the broker's timestamps and timestampType 1, as
    confluent-kafka reads them, not the producer's CreateTime."""
    topic = make_kafka_topic(2, config={"message.timestamp.type": "LogAppendTime", **KEEP})
    records = sample_records(200, partitions=2, seed=7)
    before = int(time.time() * 1000)
    delivered = produce(kafka.bootstrap_servers, topic, records, compression="zstd")
    want = oracle_rows(kafka.bootstrap_servers, topic, 2)
    produced = expected_rows(topic, records, delivered, headers=True)
    # the oracle saw the produced records, with the broker's time in place of the producer's
    assert [r[:5] + r[7:] for r in want] == [r[:5] + r[7:] for r in produced]
    assert all(r[6] == 1 and r[5] >= before - 1000 for r in want)
    df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true")
    assert rows(df) == want


BASE = 1_700_000_000_000


def _first_at(want: Sequence[Row], partition: int, ts: int, end: int) -> int:
    """Kafka's ListOffsets by timestamp: the first offset, in log order, whose timestamp is at
    or after ``ts``; ``end`` when there is none."""
    return min((r[2] for r in want if r[1] == partition and r[5] >= ts), default=end)


def test_offsets_and_timestamps_bound_the_rows_exactly(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """startingOffsets / endingOffsets as JSON (with -2 and -1) and earliest/latest, then
    startingTimestamp / endingTimestamp and their per-partition JSON: Kafka answers ListOffsets
    by timestamp with the first offset in log order at or after it, also inside a batch whose
    timestamps zig-zag (partition 1), and the rows are exactly those between."""
    topic = make_kafka_topic(2, config=KEEP)
    records = [TestRecord(f"k{i}".encode(), f"v{i}".encode(), partition=p,
                          timestamp_ms=BASE + i * 10 + (500 if p == 1 and i % 2 else 0))
               for p in (0, 1) for i in range(100)]
    delivered = produce(kafka.bootstrap_servers, topic, records, linger_ms=50)
    want = expected_rows(topic, records, delivered)
    assert [r[2] for r in want] == list(range(100)) * 2
    bootstrap = kafka.bootstrap_servers

    def between(start: dict[int, int], end: dict[int, int]) -> list[Row]:
        return [r for r in want if start[r[1]] <= r[2] < end[r[1]]]

    def per_partition(values: dict[int, int]) -> str:
        return json.dumps({topic: {str(p): v for p, v in values.items()}})

    assert rows(_read(spark, bootstrap, subscribe=topic)) == want     # earliest .. latest
    assert rows(_read(spark, bootstrap, subscribe=topic, startingOffsets="earliest",
                      endingOffsets="latest")) == want
    df = _read(spark, bootstrap, subscribe=topic, startingOffsets=per_partition({0: 10, 1: -2}),
               endingOffsets=per_partition({0: 20, 1: -1}))
    assert rows(df) == between({0: 10, 1: 0}, {0: 20, 1: 100})

    # one timestamp for every partition: p0 rises, p1 zig-zags (odd records 500 ms ahead)
    start_ts, end_ts = BASE + 255, BASE + 700
    start = {p: _first_at(want, p, start_ts, 100) for p in (0, 1)}
    end = {p: _first_at(want, p, end_ts, 100) for p in (0, 1)}
    assert start == {0: 26, 1: 1} and end == {0: 70, 1: 21}
    df = _read(spark, bootstrap, subscribe=topic, startingTimestamp=str(start_ts),
               endingTimestamp=str(end_ts))
    assert rows(df) == between(start, end)

    # per partition; an ending timestamp after every record means the latest offset
    start_ts_of = {0: BASE + 990, 1: BASE + 1000}
    end_ts_of = {0: BASE + 5000, 1: BASE + 1481}
    start = {p: _first_at(want, p, t, 100) for p, t in start_ts_of.items()}
    end = {p: _first_at(want, p, t, 100) for p, t in end_ts_of.items()}
    assert start == {0: 99, 1: 51} and end == {0: 100, 1: 99}
    df = _read(spark, bootstrap, subscribe=topic,
               startingOffsetsByTimestamp=per_partition(start_ts_of),
               endingOffsetsByTimestamp=per_partition(end_ts_of))
    assert rows(df) == between(start, end)

    # a starting timestamp after every record: an error naming the partitions (strategy
    # "error", the default), or the latest offset (strategy "latest": no rows)
    late = str(BASE + 10_000)
    with pytest.raises(Exception) as info:
        _read(spark, bootstrap, subscribe=topic, startingTimestamp=late).collect()
    assert (f"No offset matched the starting timestamp for {topic}-0 (timestamp {late}), "
            f"{topic}-1 (timestamp {late})") in str(info.value)
    assert rows(_read(spark, bootstrap, subscribe=topic, startingTimestamp=late,
                      startingOffsetsByTimestampStrategy="latest")) == []


def _committed_and_aborted(bootstrap: str, topic: str
                           ) -> tuple[list[Row], list[Row]]:
    """Three transactions on partition 0: 30 committed (offsets 0-29, marker 30), 30 aborted
    (31-60, marker 61), 30 committed (62-91, marker 92). (committed rows, every data row)."""
    recs = [sample_records(30, partitions=[0], seed=s) for s in (1, 2, 3)]
    delivered = produce_transactions(bootstrap, topic, [(recs[0], True), (recs[1], False),
                                                        (recs[2], True)], compression="gzip")
    assert [[o for _, o in d] for d in delivered] == [
        list(range(0, 30)), list(range(31, 61)), list(range(62, 92))]
    committed = expected_rows(topic, recs[0] + recs[2], delivered[0] + delivered[2], headers=True)
    everything = expected_rows(topic, [r for rs in recs for r in rs],
                               [d for ds in delivered for d in ds], headers=True)
    return committed, everything


def test_read_committed_ranges_ending_in_transactions_and_on_markers(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """Kafka fills a read_committed Fetch's aborted_transactions: read_committed rows are exactly
    the committed records below the range's end, whether it ends on a commit or abort marker,
    inside the aborted or a committed transaction, or at the log end; read_uncommitted
    rows are every data record (markers never show)."""
    topic = make_kafka_topic(1, config=KEEP)
    committed, everything = _committed_and_aborted(kafka.bootstrap_servers, topic)
    for end in (92, 61, 45, 30):
        df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true",
                   endingOffsets=json.dumps({topic: {"0": end}}),
                   **{"kafka.isolation.level": "read_committed"})
        assert rows(df) == [r for r in committed if r[2] < end], end
    latest = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true",
                   **{"kafka.isolation.level": "read_committed"})
    assert rows(latest) == committed
    df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true",
               endingOffsets=json.dumps({topic: {"0": 45}}))
    assert rows(df) == [r for r in everything if r[2] < 45]
    assert rows(_read(spark, kafka.bootstrap_servers, subscribe=topic,
                      includeHeaders="true")) == everything
    # a range starting on the abort marker reads on from the next committed record
    df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true",
               startingOffsets=json.dumps({topic: {"0": 61}}),
               endingOffsets=json.dumps({topic: {"0": 64}}),
               **{"kafka.isolation.level": "read_committed"})
    assert rows(df) == [r for r in committed if 61 <= r[2] < 64]


def test_latest_under_read_committed_is_the_last_stable_offset(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """With a transaction left open, Kafka's ListOffsets(latest) answers the LSO under
    read_committed and the high watermark otherwise, and the source's confirming Fetch (a
    workaround for Tansu's ListOffsets) keeps them: read_committed stops before the open
    transaction, read_uncommitted reads its records too; a read_committed range ending inside
    the open transaction gives the committed rows or a data-loss error per failOnDataLoss."""
    from confluent_kafka import Producer

    from pyconsumer import TopicPartition
    from pyconsumer.spark.offsets import OffsetReader
    from pyconsumer.spark.options import parse_options

    topic = make_kafka_topic(1, config=KEEP)
    committed, everything = _committed_and_aborted(kafka.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers,
                         "transactional.id": f"open-{topic}", "linger.ms": 5})
    producer.init_transactions(30)
    producer.begin_transaction()
    try:
        open_recs = [TestRecord(f"open{i}".encode(), b"pending", partition=0,
                                timestamp_ms=BASE + i) for i in range(5)]
        for i, rec in enumerate(open_recs):
            producer.produce(topic, key=rec.key, value=rec.value, partition=0,
                             timestamp=BASE + i)
        assert producer.flush(30) == 0                    # in the log, not committed
        tp = TopicPartition(topic, 0)
        for isolation, end in (("read_committed", 93), ("read_uncommitted", 98)):
            options = parse_options({"kafka.bootstrap.servers": kafka.bootstrap_servers,
                                     "subscribe": topic, "kafka.isolation.level": isolation},
                                    streaming=False)
            reader = OffsetReader(options)
            try:
                assert reader.consumer.end_offsets([tp]) == {tp: end}      # ListOffsets
                assert reader.latest([tp]) == {tp: end}                    # after the Fetch
            finally:
                reader.close()
        df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true",
                   **{"kafka.isolation.level": "read_committed"})
        assert rows(df) == committed
        df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true")
        assert rows(df) == everything + expected_rows(topic, open_recs,
                                                      [(0, o) for o in range(93, 98)])
        # a read_committed range ending inside the open transaction: the offsets past the LSO
        # are not readable (Spark: out of the available range), reported per failOnDataLoss
        into_open = {"endingOffsets": json.dumps({topic: {"0": 96}}),
                     "kafka.isolation.level": "read_committed"}
        df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true",
                   failOnDataLoss="false", **into_open)
        assert rows(df) == committed
        with pytest.raises(Exception) as info:
            _read(spark, kafka.bootstrap_servers, subscribe=topic, **into_open).collect()
        assert (f"DataLossError: Cannot read {topic}-0 offsets 93 to 95: the log now ends at 93"
                in str(info.value))
    finally:
        producer.abort_transaction(30)


def test_repeated_latest_lookups_are_exact_and_quiet(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        caplog: pytest.LogCaptureFixture) -> None:
    """A stream asks its driver-side reader for the latest offsets every micro-batch: each
    lookup exact, none warning (a confirming fetch, where a broker needs one, once waited out
    its 5 s on every lookup when a fetch session was kept between them)."""
    import logging

    from pyconsumer import TopicPartition
    from pyconsumer.spark.offsets import OffsetReader
    from pyconsumer.spark.options import parse_options

    topic = make_kafka_topic(2, config=KEEP)
    delivered = produce(kafka.bootstrap_servers, topic, sample_records(30, partitions=2))
    assert sorted(delivered)[-1] == (1, 14)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    reader = OffsetReader(parse_options({"kafka.bootstrap.servers": kafka.bootstrap_servers,
                                         "subscribe": topic}, streaming=True))
    caplog.set_level(logging.WARNING, logger="pyconsumer.spark.offsets")
    try:
        for _ in range(3):
            assert reader.partitions() == set(tps)
            assert reader.latest(tps) == {tps[0]: 15, tps[1]: 15}
    finally:
        reader.close()
    assert [r.getMessage() for r in caplog.records] == []


def test_fail_on_data_loss_over_deleted_records(spark: Any, kafka: KafkaCluster,
                                                make_kafka_topic: Callable[..., str]) -> None:
    """After DeleteRecords moved the log start to 40 (inside a batch of 25): failOnDataLoss=false
    gives exactly the records from 40 on (the batch's earlier records are not shown), also for
    a range wholly deleted (no rows); failOnDataLoss=true fails naming the topic-partition and
    the lost offsets; earliest now starts at 40."""
    topic = make_kafka_topic(1, config=KEEP)
    records = sample_records(100, partitions=[0], seed=5)
    delivered = produce(kafka.bootstrap_servers, topic, records, compression="snappy",
                        linger_ms=100, batch_num_messages=25)
    want = expected_rows(topic, records, delivered)
    kafka.delete_records([(topic, 0, 40)])
    bootstrap = kafka.bootstrap_servers
    from_10 = {"startingOffsets": json.dumps({topic: {"0": 10}})}
    df = _read(spark, bootstrap, subscribe=topic, failOnDataLoss="false", **from_10)
    assert rows(df) == want[40:]
    assert rows(_read(spark, bootstrap, subscribe=topic)) == want[40:]
    gone = _read(spark, bootstrap, subscribe=topic, failOnDataLoss="false",
                 endingOffsets=json.dumps({topic: {"0": 30}}), **from_10)
    assert rows(gone) == []
    with pytest.raises(Exception) as info:
        _read(spark, bootstrap, subscribe=topic, **from_10).collect()
    assert (f"DataLossError: Cannot read {topic}-0 offsets 10 to 39: the log now starts at 40."
            in str(info.value))
    assert 'set the source option "failOnDataLoss" to "false"' in str(info.value)


def test_compaction_gaps_end_ranges_without_hanging(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """On a compacted topic (apache-kafka.md 5.5) the rows are exactly the records the cleaner
    left (as confluent-kafka reads them: the last of each key, a tombstone), for the whole log
    and for ranges that start or end on a removed offset or hold nothing but removed ones."""
    topic = make_kafka_topic(1, config={"cleanup.policy": "compact", "segment.ms": "100",
                                        "min.cleanable.dirty.ratio": "0.01",
                                        "delete.retention.ms": "0", "min.compaction.lag.ms": "0"})
    records = [TestRecord(f"u{i}".encode() if i % 4 == 0 else f"dup{i % 3}".encode(),
                          f"v{i}".encode(), [("i", str(i).encode())], 0, BASE + i)
               for i in range(60)]
    records.append(TestRecord(b"u8", None, None, 0, BASE + 60))       # a tombstone for u8
    delivered = produce(kafka.bootstrap_servers, topic, records, linger_ms=20)
    produced = expected_rows(topic, records, delivered, headers=True)
    last_of_key = {rec.key: off for rec, (_, off) in zip(records, delivered)}
    survivors = [r for r in produced if last_of_key[r[3]] == r[2]]
    # Kafka rolls by record time: a record segment.ms past the segment's first batch rolls it
    roller = TestRecord(b"roll", b"r", None, 0, BASE + 60_000)
    roll = expected_rows(topic, [roller], produce(kafka.bootstrap_servers, topic, [roller]),
                         headers=True)
    survivors += roll

    deadline = time.monotonic() + 90
    while (left := oracle_rows(kafka.bootstrap_servers, topic, 1)) != survivors:
        assert time.monotonic() < deadline, f"the cleaner did not compact {topic}: {left}"
        time.sleep(0.5)
    # gaps: 1-3, 5-7, ..., 53-55 and u8's record (8); the last dup0, dup1, dup2 (57-59), the
    # tombstone (60, kept for one more cleaning) and the roller (61) stay
    assert [r[2] for r in survivors] == [o for o in range(0, 57, 4) if o != 8] + [57, 58, 59,
                                                                                  60, 61]
    df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true")
    assert rows(df) == survivors
    for start, end in ((0, 2), (0, 55), (2, 55), (1, 4), (5, 12), (8, 9), (53, 57),
                       (55, 62)):
        df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true",
                   startingOffsets=json.dumps({topic: {"0": start}}),
                   endingOffsets=json.dumps({topic: {"0": end}}))
        assert rows(df) == [r for r in survivors if start <= r[2] < end], (start, end)


# ------------------------------------------------------------------------------- streaming


def test_available_now_with_max_offsets_per_trigger_into_memory(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """A Trigger.AvailableNow stream with maxOffsetsPerTrigger=180 over 3 x 100 records runs
    micro-batches ending at offsets 60 and 100 per partition (Spark's proration by backlog)
    and the memory sink holds exactly the produced records, each once."""
    topic = make_kafka_topic(3, config=KEEP)
    records = sample_records(300, partitions=3, seed=8)
    delivered = produce(kafka.bootstrap_servers, topic, records, compression="lz4")
    name = "on_kafka_" + topic.replace("-", "_")
    q = (spark.readStream.format("pyconsumer")
         .option("kafka.bootstrap.servers", kafka.bootstrap_servers).option("subscribe", topic)
         .option("startingOffsets", "earliest").option("includeHeaders", "true")
         .option("maxOffsetsPerTrigger", "180").load()
         .writeStream.format("memory").queryName(name).trigger(availableNow=True).start())
    try:
        assert q.awaitTermination(120) is True
        assert q.exception() is None, q.exception()
        progress = [p for p in q.recentProgress if p["sources"][0]["endOffset"] is not None]
        assert [p["numInputRows"] for p in progress] == [180, 120]
        assert [json.loads(p["sources"][0]["endOffset"]) for p in progress] == [
            {topic: {str(part): end for part in range(3)}} for end in (60, 100)]
        got = _sorted(rows(spark.table(name)))
        assert got == expected_rows(topic, records, delivered, headers=True)
    finally:
        q.stop()
        spark.catalog.dropTempView(name)


def _once_to_parquet(spark: Any, bootstrap: str, out: Path, ck: Path, **options: str) -> Any:
    """One Trigger.AvailableNow run into a Parquet file sink with a checkpoint."""
    reader = spark.readStream.format("pyconsumer").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    q = (reader.load().writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())
    try:
        q.awaitTermination(120)
    except Exception:     # a failed query: its exception() is what the test looks at
        pass
    assert not q.isActive
    return q


def _parquet(spark: Any, out: Path) -> list[Row]:
    return _sorted(rows(spark.read.parquet(str(out))))


def test_stream_stops_at_an_open_transaction_and_reads_it_once_committed(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        tmp_path: Path) -> None:
    """A read_committed AvailableNow stream into Parquet ends at the LSO while a transaction is
    open (its records are not written), and the next run, after the commit, writes exactly
    them."""
    from confluent_kafka import Producer

    topic = make_kafka_topic(1, config=KEEP)
    committed, _ = _committed_and_aborted(kafka.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers,
                         "transactional.id": f"open-{topic}", "linger.ms": 5})
    producer.init_transactions(30)
    producer.begin_transaction()
    late = [TestRecord(f"late{i}".encode(), f"v{i}".encode(), [("n", b"%d" % i)], 0, BASE + i)
            for i in range(5)]
    try:
        for i, rec in enumerate(late):
            producer.produce(topic, key=rec.key, value=rec.value, headers=[("n", b"%d" % i)],
                             partition=0, timestamp=BASE + i)
        assert producer.flush(30) == 0
        out, ck = tmp_path / "out", tmp_path / "ck"
        opts = {"subscribe": topic, "startingOffsets": "earliest", "includeHeaders": "true",
                "kafka.isolation.level": "read_committed"}
        q = _once_to_parquet(spark, kafka.bootstrap_servers, out, ck, **opts)
        assert q.exception() is None, q.exception()
        assert _parquet(spark, out) == committed
        producer.commit_transaction(30)
    except BaseException:
        producer.abort_transaction(30)
        raise
    q = _once_to_parquet(spark, kafka.bootstrap_servers, out, ck, **opts)
    assert q.exception() is None, q.exception()
    assert sum(p["numInputRows"] for p in q.recentProgress) == 5
    assert _parquet(spark, out) == committed + expected_rows(
        topic, late, [(0, o) for o in range(93, 98)], headers=True)


@pytest.mark.parametrize("fail", [False, True])
def test_stream_resuming_over_deleted_records(spark: Any, kafka: KafkaCluster,
                                              make_kafka_topic: Callable[..., str],
                                              tmp_path: Path, fail: bool) -> None:
    """A stream checkpointed at offset 50 resumes after DeleteRecords moved the log start to
    80: with failOnDataLoss=false it writes exactly 80-99 next; with true the query fails
    naming the topic-partition and the lost offsets 50 to 79."""
    topic = make_kafka_topic(1, config=KEEP)
    records = sample_records(100, partitions=[0], seed=21)
    first = expected_rows(topic, records[:50], produce(kafka.bootstrap_servers, topic,
                                                       records[:50]))
    out, ck = tmp_path / "out", tmp_path / "ck"
    opts = {"subscribe": topic, "startingOffsets": "earliest",
            "failOnDataLoss": str(fail).lower()}
    q = _once_to_parquet(spark, kafka.bootstrap_servers, out, ck, **opts)
    assert q.exception() is None, q.exception()
    second = expected_rows(topic, records[50:], produce(kafka.bootstrap_servers, topic,
                                                        records[50:], linger_ms=50))
    kafka.delete_records([(topic, 0, 80)])
    q = _once_to_parquet(spark, kafka.bootstrap_servers, out, ck, **opts)
    if fail:
        assert q.exception() is not None
        assert (f"Cannot read {topic}-0 offsets 50 to 79: the log now starts at 80"
                in str(q.exception()))
        assert _parquet(spark, out) == first
    else:
        assert q.exception() is None, q.exception()
        assert _parquet(spark, out) == first + second[30:]


# ------------------------------------------------------------------------------- ingest


def test_ingest_to_parquet_batch_and_once(spark: Any, kafka: KafkaCluster,
                                          make_kafka_topic: Callable[..., str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """``pyconsumer ingest`` from Kafka: partition 0 plain zstd records, partition 1 three
    transactions (one aborted). A batch run with -X isolation.level=read_committed and
    -o includeHeaders=true writes exactly the committed records with their headers and prints
    the per-partition summary; a checkpointed --once run (Spark's file sink, AvailableNow,
    maxOffsetsPerTrigger) writes the same records."""
    from pyconsumer.cli import main
    from pyconsumer.ingest import run_ingest

    from tests.spark.sparkdata import parquet_rows

    topic = make_kafka_topic(2, config=KEEP)
    bootstrap = kafka.bootstrap_servers
    plain = sample_records(100, partitions=[0], seed=12)
    plain_rows = expected_rows(topic, plain,
                               produce(bootstrap, topic, plain, compression="zstd"), headers=True)
    txn = [sample_records(30, partitions=[1], seed=s) for s in (13, 14, 15)]
    done = produce_transactions(bootstrap, topic, [(txn[0], True), (txn[1], False), (txn[2], True)])
    assert done[2][-1] == (1, 91)
    committed = expected_rows(topic, txn[0] + txn[2], done[0] + done[2], headers=True)
    want = _sorted(plain_rows + committed)

    out = str(tmp_path / "batch")
    code = main(["ingest", "-b", bootstrap, "--topic", topic, "--output", out,
                 "-o", "includeHeaders=true", "-X", "isolation.level=read_committed"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert parquet_rows(out) == want
    assert re.search(rf"{topic}\s+0\s+0-99\s+100\s", captured.out)
    assert re.search(rf"{topic}\s+1\s+0-91\s+60\s", captured.out)
    assert re.search(r"total\s+160\s", captured.out)

    stream_out, ck = str(tmp_path / "stream"), str(tmp_path / "ck")
    settings = {"isolation.level": "read_committed"}
    options = {"includeHeaders": "true", "maxOffsetsPerTrigger": "120"}
    one = run_ingest(spark, output=stream_out, checkpoint=ck, once=True, bootstrap=bootstrap,
                     topics=[topic], options=options, kafka=settings)
    # 193 offsets (100 + 93 with markers), 120 per trigger: offsets 62 + 58, then the rest
    assert one.mode == "availableNow" and one.records == 160 and one.micro_batches == 2
    assert parquet_rows(stream_out) == want
