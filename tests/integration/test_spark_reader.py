"""The Spark source's worker and driver halves without Spark: read_range stops exactly at a
range's end, reuses cached consumers, and reports lost data per failOnDataLoss; the driver's
offset lookups see through a broker's wrong ListOffsets answer."""
from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest

from pyconsumer import TopicPartition
from pyconsumer.spark import reader as reader_mod
from pyconsumer.spark.offsets import DataLossError, OffsetReader
from pyconsumer.spark.options import parse_options
from pyconsumer.spark.planning import OffsetRange
from pyconsumer.spark.reader import read_range
from pyconsumer.testing import MockCluster, TansuBroker, produce, sample_records


def _options(bootstrap: str, topic: str, **extra: str):  # type: ignore[no-untyped-def]
    return parse_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic, **extra},
                         streaming=False)


def _offsets(batches: list[pa.RecordBatch]) -> list[int]:
    return [o for b in batches for o in b.column("offset").to_pylist()]


def test_ranges_stop_exactly_and_reuse_one_consumer(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(2)
    records = sample_records(400, partitions=2, seed=9)
    produce(tansu.bootstrap, topic, records, compression="zstd")
    options = _options(tansu.bootstrap, topic)
    reader_mod.close_cached_consumers()
    got = {}
    for r in [OffsetRange(topic, 0, 0, 57), OffsetRange(topic, 0, 57, 200),
              OffsetRange(topic, 1, 199, 200), OffsetRange(topic, 1, 3, 4)]:
        got[(r.partition, r.start)] = _offsets(list(read_range(r, options)))
        assert reader_mod.consumer_cache_size() == 1       # one consumer serves every task
    assert got == {(0, 0): list(range(57)), (0, 57): list(range(57, 200)),
                   (1, 199): [199], (1, 3): [3]}
    reader_mod.close_cached_consumers()


def test_latest_offsets_confirmed_by_the_fetch_watermark(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    """Tansu answers ListOffsets(latest) with its last batch's base offset + 1; the driver
    settles the end with the Fetch high watermark, which is right."""
    topic = make_tansu_topic(1)
    produce(tansu.bootstrap, topic, sample_records(300, partitions=[0], seed=1))
    reader = OffsetReader(_options(tansu.bootstrap, topic))
    try:
        tp = TopicPartition(topic, 0)
        assert reader.latest([tp]) == {tp: 300}
        assert reader.earliest([tp]) == {tp: 0}
    finally:
        reader.close()


@pytest.mark.parametrize("fail", [True, False])
def test_start_below_log_start_is_data_loss(mock_cluster: MockCluster, fail: bool) -> None:
    mock_cluster.create_topic("gone", 1)
    produce(mock_cluster.bootstrap, "gone", sample_records(50, partitions=[0]), linger_ms=0,
            batch_size=1)
    mock_cluster.delete_records("gone", 0, 20)
    options = _options(mock_cluster.bootstrap, "gone", failOnDataLoss=str(fail).lower())
    r = OffsetRange("gone", 0, 5, 30)
    if fail:
        with pytest.raises(DataLossError, match=r"gone-0 offsets 5 to 19.*log now starts at 20"):
            list(read_range(r, options))
    else:
        assert _offsets(list(read_range(r, options))) == list(range(20, 30))


@pytest.mark.parametrize("fail", [True, False])
def test_end_beyond_the_log_end_is_data_loss(mock_cluster: MockCluster, fail: bool) -> None:
    mock_cluster.create_topic("short", 1)
    produce(mock_cluster.bootstrap, "short", sample_records(10, partitions=[0]))
    options = _options(mock_cluster.bootstrap, "short", failOnDataLoss=str(fail).lower())
    r = OffsetRange("short", 0, 0, 25)
    if fail:
        with pytest.raises(DataLossError, match=r"short-0 offsets 10 to 24.*log now ends at 10"):
            list(read_range(r, options))
    else:
        assert _offsets(list(read_range(r, options))) == list(range(10))


@pytest.mark.parametrize("fail", [True, False])
def test_deleted_topic_is_data_loss(tansu: TansuBroker, make_tansu_topic: Callable[..., str],
                                    fail: bool) -> None:
    topic = make_tansu_topic(1)
    produce(tansu.bootstrap, topic, sample_records(10, partitions=[0]))
    options = _options(tansu.bootstrap, topic, failOnDataLoss=str(fail).lower(),
                       **{"kafka.allow.auto.create.topics": "false"})
    tansu.delete_topic(topic)
    r = OffsetRange(topic, 0, 0, 10)
    if fail:
        with pytest.raises(DataLossError, match=rf"{topic}.*(deleted|ends at)"):
            list(read_range(r, options))
    else:
        assert _offsets(list(read_range(r, options))) == []


def _by_partition(batches: list[pa.RecordBatch]) -> dict[int, list[int]]:
    got: dict[int, list[int]] = {}
    for b in batches:
        for p, o in zip(b.column("partition").to_pylist(), b.column("offset").to_pylist()):
            got.setdefault(p, []).append(o)
    return got


def test_grouped_ranges_each_stop_exactly_and_a_cached_consumer_reads_them_again(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    """One task's ranges of several partitions (minRecordsPerPartition grouping) are read
    together, each from its start to its end exactly, in offset order; the next task on the
    same cached consumer reads partitions the first one finished (and paused) again."""
    from pyconsumer.spark.reader import read_ranges

    topic = make_tansu_topic(4)
    produce(tansu.bootstrap, topic, sample_records(800, partitions=4, seed=3), compression="lz4")
    options = _options(tansu.bootstrap, topic)
    reader_mod.close_cached_consumers()
    first = [OffsetRange(topic, 0, 0, 57), OffsetRange(topic, 1, 10, 11),
             OffsetRange(topic, 2, 150, 200), OffsetRange(topic, 3, 0, 199)]
    assert _by_partition(list(read_ranges(first, options))) == {
        0: list(range(57)), 1: [10], 2: list(range(150, 200)), 3: list(range(199))}
    second = [OffsetRange(topic, 1, 11, 200), OffsetRange(topic, 2, 0, 3)]
    assert _by_partition(list(read_ranges(second, options))) == {
        1: list(range(11, 200)), 2: [0, 1, 2]}
    assert reader_mod.consumer_cache_size() == 1
    with pytest.raises(ValueError, match="distinct partitions of one topic"):
        list(read_ranges([OffsetRange(topic, 0, 0, 5), OffsetRange(topic, 0, 5, 9)], options))
    reader_mod.close_cached_consumers()


@pytest.mark.parametrize("fail", [True, False])
def test_data_loss_in_one_of_grouped_ranges(mock_cluster: MockCluster, fail: bool) -> None:
    """A start below the log start of one partition of a task: reported for that partition
    (failOnDataLoss), the others read whole."""
    from pyconsumer.spark.reader import read_ranges

    mock_cluster.create_topic("partly", 3)
    produce(mock_cluster.bootstrap, "partly", sample_records(90, partitions=3), linger_ms=0,
            batch_size=1)
    mock_cluster.delete_records("partly", 1, 20)
    options = _options(mock_cluster.bootstrap, "partly", failOnDataLoss=str(fail).lower())
    ranges = [OffsetRange("partly", 0, 0, 30), OffsetRange("partly", 1, 5, 30),
              OffsetRange("partly", 2, 3, 25)]
    if fail:
        with pytest.raises(DataLossError, match=r"partly-1 offsets 5 to 19.*log now starts at 20"):
            list(read_ranges(ranges, options))
    else:
        assert _by_partition(list(read_ranges(ranges, options))) == {
            0: list(range(30)), 1: list(range(20, 30)), 2: list(range(3, 25))}
