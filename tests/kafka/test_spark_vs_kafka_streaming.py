"""Streaming, format("kafka") (Spark's own Kafka source, the reference) vs format("pyconsumer").

Each scenario runs the same query (Trigger.AvailableNow unless it says otherwise) through both
formats at the same time, into a Parquet file sink with a checkpoint each, on one topic with
uneven partitions, and asserts:

* the same micro-batches: the source offsets of every batch, read from the checkpoints
  (``<checkpoint>/offsets/<batchId>``: line 1 the version, line 2 the batch metadata, line 3
  the source's offsets JSON; batch N reads ``offsets/N-1`` .. ``offsets/N``, batch 0 from
  the start, which Spark's source also writes to ``sources/0/0``), and Spark's numbers are
  spelled out in the test (its rateLimit, worked by hand);
* the same rows, batch by batch: the file sink's log (``<out>/_spark_metadata/<batchId>``)
  names the files each batch wrote, so every batch's rows (every column) are compared with
  the records the producer put in that batch's offset range;
* a second run, after more records were produced, continues from the checkpoint with the same
  batches in both.

Where ours deliberately differs (minOffsetsPerTrigger under AvailableNow, where Spark's source
ends the query with data unread; maxBytesPerTrigger and commitOffsetsToKafka, which Spark's
source does not have and ignores as unknown options), the test says so and checks ours.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from pyconsumer.testing import KafkaCluster, produce, sample_records

from tests.spark.sparkdata import Row, expected_rows, parquet_rows

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

KEEP = {"retention.ms": "-1"}
FORMATS = ("kafka", "pyconsumer")

#: per batch, {partition: end offset} (one topic per scenario)
Ends = list[dict[int, int]]


# ------------------------------------------------------------------------------- helpers


def _start(spark: Any, fmt: str, bootstrap: str, out: Path, ck: Path,
           options: Mapping[str, str]) -> Any:
    reader = spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return (reader.load().writeStream.format("parquet").option("path", str(out))
            .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())


def run_both(spark: Any, bootstrap: str, where: Path, options: Mapping[str, str],
             extra: Mapping[str, Mapping[str, str]] | None = None) -> None:
    """One AvailableNow run of each format, both at once (they share the 2 cores), into
    ``where/<format>/out`` with checkpoint ``where/<format>/ck``; both must succeed."""
    queries = {fmt: _start(spark, fmt, bootstrap, where / fmt / "out", where / fmt / "ck",
                           {**options, **(extra or {}).get(fmt, {})}) for fmt in FORMATS}
    try:
        for fmt, q in queries.items():
            q.awaitTermination(240)
            assert not q.isActive, f"{fmt}: the AvailableNow query did not finish"
            assert q.exception() is None, f"{fmt}: {q.exception()}"
    finally:
        for q in queries.values():
            q.stop()


def checkpoint_ends(ck: Path, topic: str) -> Ends:
    """The end offsets of every batch in the checkpoint's offset log, in batch order."""
    files = sorted((p for p in (ck / "offsets").iterdir() if p.name.isdigit()),
                   key=lambda p: int(p.name))
    assert [int(p.name) for p in files] == list(range(len(files))), files
    out: Ends = []
    for path in files:
        lines = path.read_text().splitlines()
        assert lines[0] == "v1" and len(lines) == 3, (path, lines)
        offsets = json.loads(lines[2])
        assert list(offsets) == [topic], (path, offsets)
        out.append({int(p): off for p, off in offsets[topic].items()})
    return out


def initial_offsets(ck: Path, topic: str) -> dict[int, int]:
    """The starting offsets Spark's Kafka source wrote to ``<checkpoint>/sources/0/0``."""
    lines = (ck / "sources" / "0" / "0").read_text().lstrip("\x00").splitlines()
    assert lines[0] == "v1" and len(lines) == 2, lines
    offsets = json.loads(lines[1])
    assert list(offsets) == [topic], offsets
    return {int(p): off for p, off in offsets[topic].items()}


def batch_rows(out: Path) -> list[list[Row]]:
    """Rows of each batch the file sink committed (its _spark_metadata log), in batch order,
    sorted by (topic, partition, offset)."""
    import pyarrow.parquet as pq

    from tests.spark.sparkdata import table_rows

    log = out / "_spark_metadata"
    files = sorted((p for p in log.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    assert [int(p.name) for p in files] == list(range(len(files))), files
    batches = []
    for path in files:
        lines = path.read_text().splitlines()
        assert lines[0] == "v1", (path, lines[:1])
        rows: list[Row] = []
        for entry in lines[1:]:
            data = unquote(urlparse(json.loads(entry)["path"]).path)
            rows += table_rows(pq.read_table(data))
        batches.append(sorted(rows, key=lambda r: (r[0], r[1], r[2])))
    return batches


def between(rows: Sequence[Row], start: Mapping[int, int], end: Mapping[int, int]) -> list[Row]:
    return [r for r in rows if start[r[1]] <= r[2] < end[r[1]]]


def assert_batches(where: Path, fmt: str, topic: str, want_rows: Sequence[Row],
                   start: Mapping[int, int], want_ends: Ends) -> None:
    """``fmt``'s checkpoint holds exactly the batches ``want_ends``, and its sink holds, per
    batch, exactly the produced rows of that batch's range."""
    ends = checkpoint_ends(where / fmt / "ck", topic)
    assert ends == want_ends, f"{fmt}: batch ends {ends}, want {want_ends}"
    if fmt == "kafka":
        # Spark's source keeps where it started (batch 0's start) in its own log; ours has
        # none, its batch 0 rows below show where it started
        assert initial_offsets(where / fmt / "ck", topic) == start
    per_batch = batch_rows(where / fmt / "out")
    assert len(per_batch) == len(ends), fmt
    for n, (got, end) in enumerate(zip(per_batch, ends)):
        begin = start if n == 0 else ends[n - 1]
        assert got == between(want_rows, begin, end), f"{fmt}: batch {n} rows"
    assert parquet_rows(str(where / fmt / "out")) == between(want_rows, start, ends[-1])


def assert_same_batches(where: Path, topic: str, want_rows: Sequence[Row],
                        start: Mapping[int, int], want_ends: Ends) -> None:
    """Both formats made exactly the batches ``want_ends`` (Spark's), with their rows."""
    for fmt in FORMATS:
        assert_batches(where, fmt, topic, want_rows, start, want_ends)


def _fill(kafka: KafkaCluster, topic: str, sizes: Mapping[int, int], seed: int) -> list[Row]:
    """``sizes[p]`` sample records (nulls, headers, unicode) into partition p; the rows."""
    records = [rec for p, n in sizes.items()
               for rec in sample_records(n, partitions=[p], seed=seed + p)]
    delivered = produce(kafka.bootstrap_servers, topic, records, compression="lz4")
    return expected_rows(topic, records, delivered, headers=True)


def _merge(*parts: Sequence[Row]) -> list[Row]:
    return sorted((r for rows in parts for r in rows), key=lambda r: (r[0], r[1], r[2]))


# ------------------------------------------------------------------------------- scenarios


def test_max_offsets_per_trigger_batches_match_and_resume(
        spark_kafka: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        tmp_path: Path) -> None:
    """startingOffsets=earliest, maxOffsetsPerTrigger=50 over partitions of 58, 35 and 7
    records. Spark's rateLimit gives each partition ``floor(limit * (size / total))`` (at least
    one offset): 50 * (58 / 100) is 28.999999999999996 in doubles, so 28, not 29. Then 52
    left (30, 18, 4): 28, 17, 3 more; then the last 4. The second run, after 40 more records
    in partition 0 and 30 in partition 2, goes on from (58, 35, 7): 70 left, 50 * (40 / 70)
    = 28.57 and 50 * (30 / 70) = 21.43 -> 28 and 21, then the rest."""
    topic = make_kafka_topic(3, config=KEEP)
    first = _fill(kafka, topic, {0: 58, 1: 35, 2: 7}, seed=100)
    options = {"subscribe": topic, "startingOffsets": "earliest", "includeHeaders": "true",
               "maxOffsetsPerTrigger": "50"}
    run_both(spark_kafka, kafka.bootstrap_servers, tmp_path, options)
    ends = [{0: 28, 1: 17, 2: 3}, {0: 56, 1: 34, 2: 6}, {0: 58, 1: 35, 2: 7}]
    assert_same_batches(tmp_path, topic, first, {0: 0, 1: 0, 2: 0}, ends)

    second = _fill(kafka, topic, {0: 40, 2: 30}, seed=200)
    run_both(spark_kafka, kafka.bootstrap_servers, tmp_path, options)
    ends += [{0: 86, 1: 35, 2: 28}, {0: 98, 1: 35, 2: 37}]
    assert_same_batches(tmp_path, topic, _merge(first, second), {0: 0, 1: 0, 2: 0}, ends)


def test_min_offsets_per_trigger_under_available_now_ours_reads_everything(
        spark_kafka: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        tmp_path: Path) -> None:
    """startingOffsets as JSON (an offset, -2 earliest, -1 latest: 10, 0, 7) with
    minOffsetsPerTrigger=40, maxTriggerDelay=1h and maxOffsetsPerTrigger=50, AvailableNow.

    The first batch is the same in both: 83 offsets available, rateLimit(50) admits 28 and
    21. Then ours deliberately differs: Spark's source applies minOffsetsPerTrigger under
    AvailableNow too, so with 34 < 40 offsets left (and maxTriggerDelay not passed) it admits
    nothing, and Spark ends the AvailableNow query with those 34 records unread, though
    AvailableNow is to read everything available when it starts. Ours ignores the minimum
    under AvailableNow and reads them in a second batch. The next run (20 more in partition 1,
    30 in partition 2) goes on from each checkpoint: Spark's first trigger is never held back
    (50 of 84: 11, 20, 17), then it stops again; ours reads the 50 new records."""
    topic = make_kafka_topic(3, config=KEEP)
    first = _fill(kafka, topic, {0: 58, 1: 35, 2: 7}, seed=300)
    options = {"subscribe": topic, "includeHeaders": "true",
               "startingOffsets": json.dumps({topic: {"0": 10, "1": -2, "2": -1}}),
               "minOffsetsPerTrigger": "40", "maxTriggerDelay": "1h",
               "maxOffsetsPerTrigger": "50"}
    start = {0: 10, 1: 0, 2: 7}
    run_both(spark_kafka, kafka.bootstrap_servers, tmp_path, options)
    spark_ends = [{0: 38, 1: 21, 2: 7}]
    ours_ends = [{0: 38, 1: 21, 2: 7}, {0: 58, 1: 35, 2: 7}]
    assert_batches(tmp_path, "kafka", topic, first, start, spark_ends)
    assert_batches(tmp_path, "pyconsumer", topic, first, start, ours_ends)

    rows = _merge(first, _fill(kafka, topic, {1: 20, 2: 30}, seed=400))
    run_both(spark_kafka, kafka.bootstrap_servers, tmp_path, options)
    spark_ends.append({0: 49, 1: 41, 2: 24})
    ours_ends.append({0: 58, 1: 55, 2: 37})
    assert_batches(tmp_path, "kafka", topic, rows, start, spark_ends)
    assert_batches(tmp_path, "pyconsumer", topic, rows, start, ours_ends)


def _wait_all(queries: Mapping[str, Any]) -> None:
    for fmt, q in queries.items():
        q.processAllAvailable()
        assert q.exception() is None, f"{fmt}: {q.exception()}"


def test_min_offsets_per_trigger_holds_back_small_batches_until_restart(
        spark_kafka: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        tmp_path: Path) -> None:
    """The default trigger with minOffsetsPerTrigger=1000 and maxTriggerDelay=1h. Spark's
    source never holds back the first trigger of a query (its clock starts at 0), so both
    read the 100 records there at once, in one batch; 5 more records stay unread while the
    query runs (5 < 1000 and the hour has not passed); after a restart from the checkpoint
    the first trigger reads them at once."""
    topic = make_kafka_topic(3, config=KEEP)
    rows = _fill(kafka, topic, {0: 58, 1: 35, 2: 7}, seed=500)
    options = {"subscribe": topic, "startingOffsets": "earliest", "includeHeaders": "true",
               "minOffsetsPerTrigger": "1000", "maxTriggerDelay": "1h"}

    def start_both() -> dict[str, Any]:
        return {fmt: (spark_kafka.readStream.format(fmt)
                      .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
                      .options(**options).load()
                      .writeStream.format("parquet").option("path", str(tmp_path / fmt / "out"))
                      .option("checkpointLocation", str(tmp_path / fmt / "ck")).start())
                for fmt in FORMATS}

    zero = {0: 0, 1: 0, 2: 0}
    ends = [{0: 58, 1: 35, 2: 7}]
    queries = start_both()
    try:
        _wait_all(queries)
        assert_same_batches(tmp_path, topic, rows, zero, ends)
        rows = _merge(rows, _fill(kafka, topic, {0: 3, 2: 2}, seed=600))
        _wait_all(queries)
        assert_same_batches(tmp_path, topic, rows, zero, ends)      # held back
    finally:
        for q in queries.values():
            q.stop()
    queries = start_both()
    try:
        _wait_all(queries)
    finally:
        for q in queries.values():
            q.stop()
    assert_same_batches(tmp_path, topic, rows, zero, ends + [{0: 61, 1: 35, 2: 9}])


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets (confluent-kafka's view); -1001: none."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CkTopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        asked = [CkTopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: tp.offset for tp in c.committed(asked, timeout=30)}
    finally:
        c.close()


def test_ours_only_max_bytes_per_trigger_and_commit_offsets_to_kafka(
        spark_kafka: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        tmp_path: Path) -> None:
    """Options only ours has; Spark's source ignores them as unknown options. Ours
    deliberately differs there: maxBytesPerTrigger=20k splits 80 records of ~1 KB into
    micro-batches of at most 20 KiB of keys and values (by its estimate), where Spark's source
    reads them in one batch; commitOffsetsToKafka commits each finished batch's end to
    kafka.group.id, where Spark's source commits nothing. The rows are the same, and a second
    run goes on from the checkpoint in both."""
    topic = make_kafka_topic(2, config=KEEP)
    bootstrap = kafka.bootstrap_servers

    def fill(sizes: Mapping[int, int], first: int) -> list[Row]:
        from pyconsumer.testing import TestRecord

        records = [TestRecord(b"k%04d" % (first + i), bytes([65 + i % 26]) * 1000,
                              [("n", b"%d" % i)], p, 1_700_000_000_000 + first + i)
                   for p, n in sizes.items() for i in range(n)]
        return expected_rows(topic, records, produce(bootstrap, topic, records), headers=True)

    groups = {fmt: f"{fmt}-{topic}" for fmt in FORMATS}
    options = {"subscribe": topic, "startingOffsets": "earliest", "includeHeaders": "true",
               "maxBytesPerTrigger": "20k", "commitOffsetsToKafka": "true"}
    extra = {fmt: {"kafka.group.id": groups[fmt]} for fmt in FORMATS}
    budget = 20 * 1024
    want: list[Row] = []
    zero = {0: 0, 1: 0}
    least = 0       # batches ours needs at least: each holds at most budget bytes
    for run, (sizes, first, end) in enumerate(((
            {0: 60, 1: 20}, 0, {0: 60, 1: 20}), ({0: 10, 1: 25}, 100, {0: 70, 1: 45})), 1):
        new = fill(sizes, first)
        want = _merge(want, new)
        least += -(-sum(len(r[3] or b"") + len(r[4] or b"") for r in new) // budget)
        run_both(spark_kafka, bootstrap, tmp_path, options, extra)
        spark_ends = checkpoint_ends(tmp_path / "kafka" / "ck", topic)
        assert len(spark_ends) == run and spark_ends[-1] == end      # one batch per run
        assert_batches(tmp_path, "kafka", topic, want, zero, spark_ends)
        ours = checkpoint_ends(tmp_path / "pyconsumer" / "ck", topic)
        assert ours[-1] == end and len(ours) >= least, ours
        assert_batches(tmp_path, "pyconsumer", topic, want, zero, ours)
        for n, batch in enumerate(batch_rows(tmp_path / "pyconsumer" / "out")):
            size = sum(len(r[3] or b"") + len(r[4] or b"") for r in batch)
            assert 0 < size <= budget, (n, size)
        assert _committed(bootstrap, groups["pyconsumer"], topic, 2) == end
        assert _committed(bootstrap, groups["kafka"], topic, 2) == {0: -1001, 1: -1001}
