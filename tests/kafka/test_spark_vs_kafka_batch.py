"""The batch differential: Spark's own Kafka source (``format("kafka")``) and ours
(``format("pyconsumer")``) read the same Apache Kafka topics with the same options and must give
the same DataFrame: an equal schema (names, types, nullability) and the same rows, every column
(topic, partition, offset, key, value, timestamp, timestampType, headers).

The data is written once per module by confluent-kafka: every codec, headers (repeated keys,
null values), null keys and values, explicit CreateTime timestamps (one partition zig-zags), a
LogAppendTime topic, committed and aborted transactions (markers and aborted records take
offsets), a compacted topic with gaps and a topic whose log start was moved by DeleteRecords.

Spark does not define the order of its input partitions (its ranges come from a Set), so rows
are compared sorted by (topic, partition, offset), after checking that within each side every
partition's offsets ascend. Each case also checks its row count against what was produced, so
two equally wrong sources cannot pass. Spark's connector is taken at
``pyconsumer.testing.spark_kafka_version()`` (the test tier pins PySpark 4.2.0, the newest
Spark whose connector Maven Central serves, so both sides run the same Spark).

Where ours deliberately differs, the test asserts both behaviours and says why:

* tasks: Spark plans one task per topic-partition even when its range is empty, ours none;
  Spark 4.2 sizes unresolved earliest/latest ranges before resolving them, so
  maxRecordsPerPartition alone splits only ranges given as offsets, ours always
  (test_same_rows_when_ranges_are_split);
* a resolved start past the resolved end fails Spark's batch read even with
  failOnDataLoss=false; ours skips that partition as lost data
  (test_ours_skips_a_start_past_the_end_when_failOnDataLoss_is_false);
* an assigned partition the topic does not have: Spark drops it, ours fails naming it
  (test_assigning_a_missing_partition_fails_ours).
"""
from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from pyconsumer.testing import (
    CODECS,
    KafkaCluster,
    TestRecord,
    produce,
    produce_transactions,
    sample_records,
)

from tests.conftest import unique_topic_name
from tests.kafka.test_spark_on_kafka import KEEP, oracle_rows
from tests.spark.sparkdata import Row, table_rows

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

BASE = 1_700_000_000_000
#: records per partition of the codecs topic
N = 40
#: reading past the log end, Spark's consumer waits this long (default 120 s, per task) for
#: records that never come before it reports the loss
PAST_END_POLL_MS = "5000"


@dataclass(frozen=True)
class Data:
    """The module's topics and what they hold."""

    prefix: str
    codecs: str            # len(CODECS) partitions, N records each, partition p in CODECS[p]
    ts: list[list[int]]    # codecs topic: the timestamp of offset i of partition p is ts[p][i]
    log_append: str        # 2 partitions x 25, LogAppendTime
    txn: str               # 2 partitions, per partition: 0-9 committed, 10 marker,
                           # 11-20 aborted, 21 marker, 22-31 committed, 32 marker
    compact: str           # 1 partition, compacted: survivors at `survivors`
    survivors: list[int]
    deleted: str           # 2 partitions x 50, log start 25 (p0) and 10 (p1)
    open_txn: str          # 1 partition: 10 plain records, then a transaction of 5 left open

    def first_at(self, p: int, t: int) -> int:
        """Kafka's ListOffsets by timestamp on the codecs topic: the first offset in log
        order whose timestamp is at or after ``t``; the log end when there is none."""
        return next((i for i, ts in enumerate(self.ts[p]) if ts >= t), N)


def _wait_compacted(bootstrap: str, topic: str, survivors: list[int]) -> None:
    deadline = time.monotonic() + 90
    while [r[2] for r in oracle_rows(bootstrap, topic, 1)] != survivors:
        assert time.monotonic() < deadline, f"the cleaner did not compact {topic}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def data(kafka: KafkaCluster) -> Iterator[Data]:
    bootstrap = kafka.bootstrap_servers
    prefix = unique_topic_name("diff")

    # compaction first: the cleaner works while the other topics are written
    compact = kafka.create_topic(f"{prefix}-compact", 1, config={
        "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
        "min.compaction.lag.ms": "0"})
    recs = [TestRecord(f"u{i}".encode() if i % 4 == 0 else f"dup{i % 3}".encode(),
                       f"v{i}".encode(), [("i", str(i).encode())], 0, BASE + i)
            for i in range(40)]
    recs.append(TestRecord(b"u8", None, None, 0, BASE + 40))         # a tombstone for u8
    # Kafka rolls a segment by record time: this one closes the segment the rest is in
    recs.append(TestRecord(b"roll", b"r", None, 0, BASE + 60_000))
    delivered = produce(bootstrap, compact, recs[:-1], linger_ms=20)
    delivered += produce(bootstrap, compact, recs[-1:])
    last = {rec.key: off for rec, (_, off) in zip(recs, delivered)}
    survivors = sorted(last.values())

    codecs = kafka.create_topic(f"{prefix}-codecs", len(CODECS), config=KEEP)
    ts = [[0] * N for _ in CODECS]
    for p, codec in enumerate(CODECS):
        part = [dataclasses.replace(r, timestamp_ms=BASE + i * 10 + p * 3
                                    + (55 if p == 1 and i % 2 else 0))
                for i, r in enumerate(sample_records(N, partitions=[p], seed=p))]
        # batches of 8: ranges start and end inside compressed batches
        at = produce(bootstrap, codecs, part, compression=codec, linger_ms=50,
                     batch_num_messages=8)
        # a retried batch may land after a later one: the log order is what produce says
        for rec, (_, offset) in zip(part, at):
            assert rec.timestamp_ms is not None
            ts[p][offset] = rec.timestamp_ms

    log_append = kafka.create_topic(f"{prefix}-logappend", 2,
                                    config={"message.timestamp.type": "LogAppendTime", **KEEP})
    produce(bootstrap, log_append, sample_records(50, partitions=2, seed=9), compression="lz4")

    txn = kafka.create_topic(f"{prefix}-txn", 2, config=KEEP)
    batches = [sample_records(20, partitions=2, seed=s) for s in (1, 2, 3)]
    done = produce_transactions(bootstrap, txn, [(batches[0], True), (batches[1], False),
                                                 (batches[2], True)], compression="gzip")
    for p in (0, 1):
        assert [sorted(o for q, o in d if q == p) for d in done] == [
            list(range(0, 10)), list(range(11, 21)), list(range(22, 32))]

    deleted = kafka.create_topic(f"{prefix}-deleted", 2, config=KEEP)
    produce(bootstrap, deleted, sample_records(100, partitions=2, seed=4), compression="snappy",
            linger_ms=50, batch_num_messages=10)
    kafka.delete_records([(deleted, 0, 25), (deleted, 1, 10)])

    # a transaction open for the whole module: read_committed ends at its first offset (the
    # LSO), read_uncommitted reads it too
    from confluent_kafka import Producer

    open_txn = kafka.create_topic(f"{prefix}-open", 1, config=KEEP)
    produce(bootstrap, open_txn, sample_records(10, partitions=[0], seed=6))
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{prefix}-open",
                         "transaction.timeout.ms": 900_000, "linger.ms": 5})
    producer.init_transactions(30)
    producer.begin_transaction()
    try:
        for rec in sample_records(5, partitions=[0], seed=7):
            producer.produce(open_txn, key=rec.key, value=rec.value, headers=rec.headers,
                             partition=0, timestamp=rec.timestamp_ms or 0)
        assert producer.flush(30) == 0

        _wait_compacted(bootstrap, compact, survivors)
        yield Data(prefix, codecs, ts, log_append, txn, compact, survivors, deleted, open_txn)
    finally:
        producer.abort_transaction(30)


# ------------------------------------------------------------------------------- helpers


def _load(spark: Any, fmt: str, bootstrap: str, options: dict[str, str]) -> Any:
    reader = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _ascending(rows: Sequence[Row], who: str) -> None:
    """Within the DataFrame's own order, each topic-partition's offsets ascend."""
    last: dict[tuple[str, int], int] = {}
    for r in rows:
        tp = (r[0], r[1])
        assert r[2] > last.get(tp, -1), f"{who}: {tp} offset {r[2]} after {last[tp]}"
        last[tp] = r[2]


def _sorted(rows: Sequence[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (r[0], r[1], r[2]))


def same_rows(spark: Any, bootstrap: str, options: dict[str, str]) -> tuple[list[Row], Any, Any]:
    """Both sources read with ``options``: equal schemas and rows. (The rows, sorted; Spark's
    DataFrame; ours.)"""
    theirs = _load(spark, "kafka", bootstrap, options)
    ours = _load(spark, "pyconsumer", bootstrap, options)
    assert ours.schema == theirs.schema
    their_rows = table_rows(theirs.toArrow())
    our_rows = table_rows(ours.toArrow())
    _ascending(their_rows, "format(kafka)")
    _ascending(our_rows, "format(pyconsumer)")
    assert _sorted(our_rows) == _sorted(their_rows)
    return _sorted(our_rows), theirs, ours


def _per_partition(topic: str, values: dict[int, int]) -> str:
    return json.dumps({topic: {str(p): v for p, v in values.items()}})


Case = Callable[[Data], tuple[dict[str, str], int]]


def _codecs_total() -> int:
    return N * len(CODECS)


def _between(d: Data, start: dict[int, int], end: dict[int, int]) -> int:
    return sum(max(0, end[p] - start[p]) for p in start)


# ------------------------------------------------------------------------------- the matrix

#: each case: the options (besides kafka.bootstrap.servers) and how many rows they must give
CASES = [
    pytest.param(lambda d: ({"subscribe": d.codecs, "includeHeaders": "true"}, _codecs_total()),
                 id="subscribe-one-topic-with-headers"),
    pytest.param(lambda d: ({"subscribe": d.codecs, "includeHeaders": "false",
                             "startingOffsets": "earliest", "endingOffsets": "latest"},
                            _codecs_total()),
                 id="subscribe-one-topic-without-headers-earliest-to-latest"),
    pytest.param(lambda d: ({"subscribe": f"{d.codecs},{d.log_append},{d.deleted}",
                             "includeHeaders": "true"}, _codecs_total() + 50 + 65),
                 id="subscribe-several-topics"),
    pytest.param(lambda d: ({"subscribePattern": f"{d.prefix}-.*", "includeHeaders": "true"},
                            _codecs_total() + 50 + 60 + len(d.survivors) + 65 + 15),
                 id="subscribePattern-every-topic"),
    pytest.param(lambda d: ({"assign": json.dumps({d.codecs: [0, 2, 4], d.deleted: [1]}),
                             "includeHeaders": "true"}, 3 * N + 40),
                 id="assign"),
    pytest.param(lambda d: ({"subscribe": d.codecs, "includeHeaders": "true",
                             "startingOffsets": _per_partition(
                                 d.codecs, {0: 5, 1: -2, 2: 39, 3: 0, 4: 17}),
                             "endingOffsets": _per_partition(
                                 d.codecs, {0: 30, 1: -1, 2: 40, 3: 1, 4: 17})},
                            25 + N + 1 + 1 + 0),
                 id="offsets-json-with-minus-2-and-minus-1"),
    pytest.param(lambda d: ({"subscribe": d.codecs,
                             "startingOffsets": _per_partition(
                                 d.codecs, {0: 13, 1: 8, 2: -2, 3: 39, 4: 40})},
                            27 + 32 + N + 1 + 0),
                 id="starting-json-to-latest"),
    pytest.param(lambda d: ({"subscribe": d.codecs,
                             "endingOffsets": _per_partition(
                                 d.codecs, {0: 3, 1: 0, 2: -1, 3: 39, 4: 8})},
                            3 + 0 + N + 39 + 8),
                 id="earliest-to-ending-json"),
    pytest.param(lambda d: ({"subscribe": d.codecs, "startingTimestamp": str(BASE + 155)},
                            _between(d, {p: d.first_at(p, BASE + 155) for p in range(5)},
                                     {p: N for p in range(5)})),
                 id="startingTimestamp-between"),
    pytest.param(lambda d: ({"subscribe": d.codecs, "startingTimestamp": str(BASE - 1000)},
                            _codecs_total()),
                 id="startingTimestamp-before-all"),
    pytest.param(lambda d: ({"subscribe": d.codecs, "startingTimestamp": str(BASE + 10_000),
                             "startingOffsetsByTimestampStrategy": "latest"}, 0),
                 id="startingTimestamp-after-all-strategy-latest"),
    pytest.param(lambda d: ({"subscribe": d.codecs, "endingTimestamp": str(BASE + 201)},
                            sum(d.first_at(p, BASE + 201) for p in range(5))),
                 id="endingTimestamp-between"),
    pytest.param(lambda d: ({"subscribe": d.codecs, "endingTimestamp": str(BASE - 1000)}, 0),
                 id="endingTimestamp-before-all"),
    pytest.param(lambda d: ({"subscribe": d.codecs, "endingTimestamp": str(BASE + 10_000)},
                            _codecs_total()),
                 id="endingTimestamp-after-all-is-latest"),
    pytest.param(lambda d: ({"subscribe": d.codecs, "includeHeaders": "true",
                             "startingTimestamp": str(BASE + 95),
                             "endingTimestamp": str(BASE + 301)},
                            _between(d, {p: d.first_at(p, BASE + 95) for p in range(5)},
                                     {p: d.first_at(p, BASE + 301) for p in range(5)})),
                 id="starting-and-endingTimestamp"),
    pytest.param(lambda d: ({"subscribe": d.codecs,
                             "startingOffsetsByTimestamp": _per_partition(d.codecs, {
                                 0: BASE - 5, 1: BASE + 100, 2: BASE + 392, 3: BASE + 10_000,
                                 4: BASE + 250}),
                             "startingOffsetsByTimestampStrategy": "latest"},
                            _between(d, {0: 0, 1: d.first_at(1, BASE + 100),
                                         2: d.first_at(2, BASE + 392), 3: N,
                                         4: d.first_at(4, BASE + 250)},
                                     {p: N for p in range(5)})),
                 id="startingOffsetsByTimestamp-strategy-latest"),
    pytest.param(lambda d: ({"subscribe": d.codecs,
                             "endingOffsetsByTimestamp": _per_partition(d.codecs, {
                                 0: BASE - 5, 1: BASE + 100, 2: BASE + 392, 3: BASE + 10_000,
                                 4: BASE + 250})},
                            0 + d.first_at(1, BASE + 100) + d.first_at(2, BASE + 392) + N
                            + d.first_at(4, BASE + 250)),
                 id="endingOffsetsByTimestamp"),
    pytest.param(lambda d: ({"subscribe": d.log_append, "includeHeaders": "true"}, 50),
                 id="log-append-time"),
    pytest.param(lambda d: ({"subscribe": d.txn, "includeHeaders": "true",
                             "kafka.isolation.level": "read_committed"}, 40),
                 id="read_committed"),
    pytest.param(lambda d: ({"subscribe": d.txn, "includeHeaders": "true",
                             "kafka.isolation.level": "read_uncommitted"}, 60),
                 id="read_uncommitted"),
    pytest.param(lambda d: ({"subscribe": d.txn, "kafka.isolation.level": "read_committed",
                             "startingOffsets": _per_partition(d.txn, {0: 10, 1: 5}),
                             "endingOffsets": _per_partition(d.txn, {0: 24, 1: 15})}, 2 + 5),
                 id="read_committed-ranges-from-marker-and-into-aborted"),
    pytest.param(lambda d: ({"subscribe": d.txn, "kafka.isolation.level": "read_uncommitted",
                             "startingOffsets": _per_partition(d.txn, {0: 10, 1: 5}),
                             "endingOffsets": _per_partition(d.txn, {0: 24, 1: 15})},
                            12 + 9),
                 id="read_uncommitted-ranges-from-marker-and-into-aborted"),
    pytest.param(lambda d: ({"subscribe": d.open_txn, "includeHeaders": "true",
                             "kafka.isolation.level": "read_committed"}, 10),
                 id="read_committed-ends-at-an-open-transaction"),
    pytest.param(lambda d: ({"subscribe": d.open_txn, "includeHeaders": "true",
                             "kafka.isolation.level": "read_uncommitted"}, 15),
                 id="read_uncommitted-reads-an-open-transaction"),
    pytest.param(lambda d: ({"subscribe": d.compact, "includeHeaders": "true"},
                            len(d.survivors)),
                 id="compacted"),
    pytest.param(lambda d: ({"subscribe": d.compact, "includeHeaders": "true",
                             "startingOffsets": _per_partition(d.compact, {0: 1}),
                             "endingOffsets": _per_partition(d.compact, {0: 35})},
                            len([o for o in d.survivors if 1 <= o < 35])),
                 id="compacted-range-between-gaps"),
    pytest.param(lambda d: ({"subscribe": d.deleted}, 65), id="deleted-records-earliest"),
    pytest.param(lambda d: ({"subscribe": d.deleted, "failOnDataLoss": "false",
                             "startingOffsets": _per_partition(d.deleted, {0: 5, 1: 2})}, 65),
                 id="deleted-records-failOnDataLoss-false"),
    pytest.param(lambda d: ({"subscribe": d.deleted, "failOnDataLoss": "false",
                             "startingOffsets": _per_partition(d.deleted, {0: 5, 1: 2}),
                             "endingOffsets": _per_partition(d.deleted, {0: 20, 1: 30})},
                            0 + 20),
                 id="deleted-records-failOnDataLoss-false-range-wholly-deleted"),
    pytest.param(lambda d: ({"subscribe": d.codecs, "failOnDataLoss": "false",
                             "kafkaConsumer.pollTimeoutMs": PAST_END_POLL_MS,
                             "startingOffsets": _all(d, 35),
                             "endingOffsets": _per_partition(d.codecs, {0: 45, 1: 40, 2: 40,
                                                                        3: 40, 4: 40})},
                            5 * 5),
                 id="ending-json-past-the-log-end-failOnDataLoss-false"),
    # Spark 4 looks topics up with Admin's listTopics and Scala's findFirstIn: the pattern
    # may match a part of the name (KafkaConsumer.subscribe(Pattern) matches the whole name)
    pytest.param(lambda d: ({"subscribePattern": f"{d.prefix}-co"},
                            _codecs_total() + len(d.survivors)),
                 id="subscribePattern-matches-inside-the-name"),
    pytest.param(lambda d: ({"subscribePattern": f"{d.prefix}-nothing.*"}, 0),
                 id="subscribePattern-matching-nothing"),
]


@pytest.mark.parametrize("case", CASES)
def test_same_rows(spark_kafka: Any, kafka: KafkaCluster, data: Data, case: Case) -> None:
    """format("kafka") and format("pyconsumer") give equal schemas and equal rows."""
    options, count = case(data)
    rows, _, _ = same_rows(spark_kafka, kafka.bootstrap_servers, options)
    assert len(rows) == count


def _all(d: Data, offset: int) -> str:
    return _per_partition(d.codecs, {p: offset for p in range(len(CODECS))})


def _with_an_empty_range(d: Data, **extra: str) -> dict[str, str]:
    """The codecs topic from offsets 5, -2 (earliest), 39, 0, 17 to 30, -1 (latest), 40, 1, 17:
    partition 4's range is empty."""
    return {"subscribe": d.codecs, **extra,
            "startingOffsets": _per_partition(d.codecs, {0: 5, 1: -2, 2: 39, 3: 0, 4: 17}),
            "endingOffsets": _per_partition(d.codecs, {0: 30, 1: -1, 2: 40, 3: 1, 4: 17})}


#: options, then the input partitions of format("kafka") and of ours
SPLIT_CASES = [
    # 5 ranges of 40, minPartitions 12: each gets round(40 / 200 * 12) = 2 tasks
    pytest.param(lambda d: {"subscribe": d.codecs, "minPartitions": "12"}, 10, 10,
                 id="minPartitions-above-the-partition-count"),
    pytest.param(lambda d: {"subscribe": d.codecs, "minPartitions": "3"}, 5, 5,
                 id="minPartitions-below-the-partition-count"),
    # ranges of 25, 40, 1, 1 and an empty one: 1 + 1 tasks for the small ones, the other 6
    # shared by size (2 + 4); the empty range gets none
    pytest.param(lambda d: _with_an_empty_range(d, minPartitions="8"), 8, 8,
                 id="minPartitions-with-an-empty-range"),
    # ours differs: Spark plans a task for a topic-partition with nothing to read, we don't,
    # and small ranges of a topic share a task (minRecordsPerPartition, default 100,000)
    pytest.param(lambda d: _with_an_empty_range(d), 5, 1, id="an-empty-range-is-no-task-of-ours"),
    pytest.param(lambda d: _with_an_empty_range(d, minRecordsPerPartition="1"), 5, 4,
                 id="an-empty-range-is-no-task-of-ours-a-task-per-range"),
    # 40 offsets in pieces of at most 15: 13, 13, 14
    pytest.param(lambda d: {"subscribe": d.codecs, "maxRecordsPerPartition": "15",
                            "startingOffsets": _all(d, 0), "endingOffsets": _all(d, N)},
                 15, 15, id="maxRecordsPerPartition-offsets-json"),
    # ours differs: Spark 4.2 sizes earliest/latest ranges before resolving them (-2 to -1
    # is "1 offset"), so maxRecordsPerPartition alone never splits them; we resolve first
    pytest.param(lambda d: {"subscribe": d.codecs, "maxRecordsPerPartition": "15"}, 5, 15,
                 id="maxRecordsPerPartition-earliest-to-latest"),
    pytest.param(lambda d: {"subscribe": d.codecs, "maxRecordsPerPartition": "15",
                            "startingOffsets": _all(d, 0)}, 5, 15,
                 id="maxRecordsPerPartition-offsets-json-to-latest"),
    # minPartitions makes Spark resolve the offsets, and then maxRecordsPerPartition applies:
    # 15 pieces of 13 or 14, each round(13 / 200 * 20) = 1 task
    pytest.param(lambda d: {"subscribe": d.codecs, "maxRecordsPerPartition": "15",
                            "minPartitions": "20"}, 15, 15,
                 id="maxRecordsPerPartition-and-minPartitions"),
    # two ranges of 33 offsets, 3 tasks each: tasks start on markers and inside the aborted
    # transaction
    pytest.param(lambda d: {"subscribe": d.txn, "kafka.isolation.level": "read_committed",
                            "includeHeaders": "true", "minPartitions": "6"}, 6, 6,
                 id="minPartitions-read_committed"),
    # 42 offsets in 9 pieces of 4 or 5, some of them wholly removed by compaction
    pytest.param(lambda d: {"subscribe": d.compact, "includeHeaders": "true",
                            "maxRecordsPerPartition": "5",
                            "startingOffsets": _per_partition(d.compact, {0: 0}),
                            "endingOffsets": _per_partition(d.compact, {0: 42})}, 9, 9,
                 id="maxRecordsPerPartition-compacted"),
]


@pytest.mark.parametrize(("case", "their_tasks", "our_tasks"), SPLIT_CASES)
def test_same_rows_when_ranges_are_split(spark_kafka: Any, kafka: KafkaCluster, data: Data,
                                         case: Callable[[Data], dict[str, str]],
                                         their_tasks: int, our_tasks: int) -> None:
    """minPartitions / maxRecordsPerPartition split ranges into more tasks: the rows stay
    equal, and so does the number of input partitions, except where ours deliberately
    differs: an empty range is no task of ours (Spark plans one per topic-partition), and
    maxRecordsPerPartition splits earliest/latest ranges, which Spark 4.2's batch planner
    sizes before resolving them and so never splits unless minPartitions is set too (its
    documentation promises no task over maxRecordsPerPartition records)."""
    options = case(data)
    rows, theirs, ours = same_rows(spark_kafka, kafka.bootstrap_servers, options)
    assert rows
    assert (theirs.rdd.getNumPartitions(), ours.rdd.getNumPartitions()) == (their_tasks,
                                                                            our_tasks)


def _raises(df: Any) -> str:
    with pytest.raises(Exception) as info:
        df.collect()
    return str(info.value)


#: options; what Spark's error says (a regex); what ours says (exactly this text)
FAILING_CASES = [
    pytest.param(lambda d: {"subscribe": d.deleted,
                            "startingOffsets": _per_partition(d.deleted, {0: 5, 1: 10})},
                 lambda d: (rf"Could not read records in offset \[5, 50\) for topic partition "
                            rf"{d.deleted}-0(?!\d)"),
                 lambda d: (f"DataLossError: Cannot read {d.deleted}-0 offsets 5 to 24: the log "
                            f"now starts at 25. "),
                 id="below-the-log-start-failOnDataLoss-true"),
    pytest.param(lambda d: {"subscribe": d.codecs, "startingOffsets": _all(d, 35),
                            "kafkaConsumer.pollTimeoutMs": PAST_END_POLL_MS,
                            "endingOffsets": _per_partition(d.codecs, {0: 45, 1: 40, 2: 40,
                                                                       3: 40, 4: 40})},
                 lambda d: (rf"Could not read records in offset \[40, 45\) for topic partition "
                            rf"{d.codecs}-0(?!\d)"),
                 lambda d: (f"DataLossError: Cannot read {d.codecs}-0 offsets 40 to 44: the log "
                            f"now ends at 40. "),
                 id="past-the-log-end-failOnDataLoss-true"),
    pytest.param(lambda d: {"subscribe": d.codecs, "startingOffsets": _per_partition(
                                d.codecs, {0: 45, 1: 0, 2: 0, 3: 0, 4: 0})},
                 lambda d: (rf"The resolved start offset 45 is greater than the resolved end "
                            rf"offset 40 for topic {d.codecs} partition 0\."),
                 lambda d: (f"DataLossError: Partition {d.codecs}-0's starting offset 45 is "
                            f"after its ending offset 40. "),
                 id="start-after-the-log-end-failOnDataLoss-true"),
    pytest.param(lambda d: {"subscribe": d.codecs, "startingTimestamp": str(BASE + 10_000)},
                 lambda d: (rf"No offset matched from request of topic-partition {d.codecs}-[0-4] "
                            rf"and timestamp {BASE + 10_000}\."),
                 lambda d: ("ConfigurationError: No offset matched the starting timestamp for "
                            + ", ".join(f"{d.codecs}-{p} (timestamp {BASE + 10_000})"
                                        for p in range(len(CODECS)))
                            + ": no record at or after it."),
                 id="startingTimestamp-after-all-strategy-error"),
    pytest.param(lambda d: {"subscribe": f"{d.codecs},{d.prefix}-missing"},
                 lambda d: "UnknownTopicOrPartitionException: This server does not host this "
                           "topic-partition.",
                 lambda d: f"Option 'subscribe': topic {d.prefix}-missing does not exist",
                 id="subscribe-a-missing-topic"),
    pytest.param(lambda d: {"assign": json.dumps({d.codecs: [0], f"{d.prefix}-missing": [0]})},
                 lambda d: "UnknownTopicOrPartitionException: This server does not host this "
                           "topic-partition.",
                 lambda d: f"Option 'assign': {d.prefix}-missing-0 does not exist",
                 id="assign-a-missing-topic"),
]


@pytest.mark.parametrize(("case", "theirs", "ours"), FAILING_CASES)
def test_both_fail(spark_kafka: Any, kafka: KafkaCluster, data: Data,
                   case: Callable[[Data], dict[str, str]], theirs: Callable[[Data], str],
                   ours: Callable[[Data], str]) -> None:
    """Both sources refuse the read; ours names the topic-partition and the offsets (or the
    timestamp) concerned."""
    options = case(data)
    bootstrap = kafka.bootstrap_servers
    their_error = _raises(_load(spark_kafka, "kafka", bootstrap, options))
    assert re.search(theirs(data), their_error), their_error
    our_error = _raises(_load(spark_kafka, "pyconsumer", bootstrap, options))
    assert ours(data) in our_error, our_error


#: options Spark refuses even with failOnDataLoss=false, and the same read without the
#: partition concerned (an empty range there), which ours must equal
LENIENT_CASES = [
    pytest.param(lambda d: ({"subscribe": d.codecs, "failOnDataLoss": "false",
                             "startingOffsets": _per_partition(
                                 d.codecs, {0: 45, 1: 0, 2: 0, 3: 0, 4: 0})},
                            {"subscribe": d.codecs, "startingOffsets": _per_partition(
                                d.codecs, {0: N, 1: 0, 2: 0, 3: 0, 4: 0})}),
                 lambda d: (rf"The resolved start offset 45 is greater than the resolved end "
                            rf"offset 40 for topic {d.codecs} partition 0\."),
                 id="start-after-the-log-end"),
    pytest.param(lambda d: ({"subscribe": d.deleted, "failOnDataLoss": "false",
                             "endingOffsets": _per_partition(d.deleted, {0: 20, 1: 30})},
                            {"subscribe": d.deleted,
                             "startingOffsets": _per_partition(d.deleted, {0: 20, 1: -2}),
                             "endingOffsets": _per_partition(d.deleted, {0: 20, 1: 30})}),
                 lambda d: (rf"The resolved start offset 25 is greater than the resolved end "
                            rf"offset 20 for topic {d.deleted} partition 0\."),
                 id="earliest-after-the-ending-offset"),
]


@pytest.mark.parametrize(("case", "theirs"), LENIENT_CASES)
def test_ours_skips_a_start_past_the_end_when_failOnDataLoss_is_false(
        spark_kafka: Any, kafka: KafkaCluster, data: Data,
        case: Callable[[Data], tuple[dict[str, str], dict[str, str]]],
        theirs: Callable[[Data], str]) -> None:
    """Ours deliberately differs: a range whose resolved start is past its resolved end (a
    start beyond the log end; earliest beyond an ending offset because records were deleted)
    fails Spark's batch read whatever failOnDataLoss says, while ours treats it as the data
    loss it is (as Spark's own streaming source does: partitionOffsetChanged): with
    failOnDataLoss=false that partition gives no rows, with a warning, and the rest is read.
    (With failOnDataLoss=true both fail: test_both_fail.)"""
    options, without = case(data)
    bootstrap = kafka.bootstrap_servers
    their_error = _raises(_load(spark_kafka, "kafka", bootstrap, options))
    assert re.search(theirs(data), their_error), their_error
    ours = table_rows(_load(spark_kafka, "pyconsumer", bootstrap, options).toArrow())
    expected, _, _ = same_rows(spark_kafka, bootstrap, without)
    assert expected
    assert _sorted(ours) == expected


def test_assigning_a_missing_partition_fails_ours(spark_kafka: Any, kafka: KafkaCluster,
                                                  data: Data) -> None:
    """Ours deliberately differs: Spark drops an assigned partition its topic does not have
    (AssignStrategy filters the topic's partitions by the assignment) and reads the rest;
    ours refuses the read, naming it, as it refuses a missing topic (where Spark fails too)."""
    bootstrap = kafka.bootstrap_servers
    options = {"assign": json.dumps({data.codecs: [0, 7]})}
    theirs = table_rows(_load(spark_kafka, "kafka", bootstrap, options).toArrow())
    alone, _, _ = same_rows(spark_kafka, bootstrap, {"assign": json.dumps({data.codecs: [0]})})
    assert len(alone) == N
    assert _sorted(theirs) == alone
    error = _raises(_load(spark_kafka, "pyconsumer", bootstrap, options))
    assert f"Option 'assign': {data.codecs}-7 does not exist" in error, error


def test_split_ranges_over_deleted_records(spark_kafka: Any, kafka: KafkaCluster,
                                           data: Data) -> None:
    """minPartitions=6 over ranges of 45 and 48 offsets starting below the log start, with
    failOnDataLoss=false: 3 tasks per partition for both sources (the first lie wholly below
    the log start and give nothing), and our rows are the unsplit read's.

    Spark's own rows are taken from the unsplit read: the split one fails about every other
    run in the 4.2.0 connector (in PySpark 4.3.0) with ConcurrentModificationException
    "KafkaConsumer is not safe for multi-threaded access", thrown from
    InternalKafkaConsumer.getAvailableOffsetRange (KafkaSourceRDD.resolveRange) while
    another task of the same topic-partition uses that consumer: two concurrent tasks of one
    topic-partition, after the data-loss skip, hold the same pooled consumer."""
    bootstrap = kafka.bootstrap_servers
    options = {"subscribe": data.deleted, "failOnDataLoss": "false",
               "startingOffsets": _per_partition(data.deleted, {0: 5, 1: 2})}
    split = {**options, "minPartitions": "6"}
    unsplit, _, _ = same_rows(spark_kafka, bootstrap, options)
    assert len(unsplit) == 65
    ours = _load(spark_kafka, "pyconsumer", bootstrap, split)
    our_rows = table_rows(ours.toArrow())
    _ascending(our_rows, "format(pyconsumer)")
    assert _sorted(our_rows) == unsplit
    theirs = _load(spark_kafka, "kafka", bootstrap, split)
    assert (theirs.rdd.getNumPartitions(), ours.rdd.getNumPartitions()) == (6, 6)
