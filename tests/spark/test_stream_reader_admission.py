"""The stream reader's admission control called directly, as Spark's stream runner calls it
(no query needed): minOffsetsPerTrigger with maxTriggerDelay, maxBytesPerTrigger, the
pre-4.2 latestOffset() call, and pickling (only the options travel)."""
from __future__ import annotations

import pickle
import time
from typing import Any
from collections.abc import Callable

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows  # noqa: E402

from pyconsumer.spark.options import parse_options  # noqa: E402
from pyconsumer.spark.source import KafkaStreamReader  # noqa: E402
from pyconsumer.testing import TansuBroker, TestRecord, produce  # noqa: E402


def _reader(bootstrap: str, topic: str, **extra: str) -> KafkaStreamReader:
    return KafkaStreamReader(parse_options(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
         "startingOffsets": "earliest", **extra}, streaming=True))


def _fill(tansu: TansuBroker, make_topic: Callable[..., str], sizes: dict[int, int],
          value_size: int = 10) -> str:
    topic = make_topic(len(sizes))
    produce(tansu.bootstrap, topic, [TestRecord(value=b"v" * value_size, partition=p)
                                     for p, n in sizes.items() for _ in range(n)])
    return topic


def test_min_offsets_wait_for_max_trigger_delay(tansu: TansuBroker,
                                                make_tansu_topic: Callable[..., str]) -> None:
    topic = _fill(tansu, make_tansu_topic, {0: 30})
    r = _reader(tansu.bootstrap, topic, minOffsetsPerTrigger="100", maxTriggerDelay="1s")
    start = r.initialOffset()
    assert start == {topic: {"0": 0}}
    # the first trigger is never held back (Spark's clock starts at 0)
    assert r.latestOffset(start, ReadAllAvailable()) == {topic: {"0": 30}}
    produce(tansu.bootstrap, topic, [TestRecord(value=b"v", partition=0)] * 10)
    at_30 = {topic: {"0": 30}}
    assert r.latestOffset(at_30, ReadAllAvailable()) == at_30         # 10 < 100: wait
    assert r.reportLatestOffset() == {topic: {"0": 40}}               # lag is still visible
    time.sleep(1.1)
    assert r.latestOffset(at_30, ReadAllAvailable()) == {topic: {"0": 40}}   # delay passed
    produce(tansu.bootstrap, topic, [TestRecord(value=b"v", partition=0)] * 100)
    assert r.latestOffset({topic: {"0": 40}}, ReadAllAvailable()) == {topic: {"0": 140}}


def test_max_bytes_per_trigger_shares_a_byte_budget(tansu: TansuBroker,
                                                    make_tansu_topic: Callable[..., str]) -> None:
    topic = _fill(tansu, make_tansu_topic, {0: 1000, 1: 1000}, value_size=100)
    r = _reader(tansu.bootstrap, topic, maxBytesPerTrigger="20000")
    start = r.initialOffset()
    end = r.latestOffset(start, r.getDefaultReadLimit())
    taken = {p: end[topic][p] - start[topic][p] for p in ("0", "1")}
    # about 100 bytes a record: 20000 bytes is ~100 records per partition, nowhere near all
    assert taken["0"] == taken["1"]
    assert 80 <= taken["0"] <= 110


def test_read_limit_from_options_and_old_api(tansu: TansuBroker,
                                             make_tansu_topic: Callable[..., str]) -> None:
    topic = _fill(tansu, make_tansu_topic, {0: 50, 1: 150})
    r = _reader(tansu.bootstrap, topic, maxOffsetsPerTrigger="40")
    assert r.getDefaultReadLimit() == ReadMaxRows(40)
    start = r.initialOffset()
    assert r.latestOffset(start, ReadMaxRows(40)) == {topic: {"0": 10, "1": 30}}
    assert r.latestOffset() == {topic: {"0": 50, "1": 150}}      # PySpark < 4.2: no limit
    r.prepareForTriggerAvailableNow()
    produce(tansu.bootstrap, topic, [TestRecord(value=b"v", partition=0)] * 10)
    # AvailableNow reads up to what existed when it was prepared, in limited steps
    assert r.latestOffset({topic: {"0": 50, "1": 150}}, ReadMaxRows(40)) == \
        {topic: {"0": 50, "1": 150}}


def test_reader_pickles_without_its_consumer(tansu: TansuBroker,
                                             make_tansu_topic: Callable[..., str]) -> None:
    topic = _fill(tansu, make_tansu_topic, {0: 5})
    r = _reader(tansu.bootstrap, topic)
    r.initialOffset()                                   # opens the driver consumer
    clone: Any = pickle.loads(pickle.dumps(r))
    assert clone.options == r.options
    assert clone._offsets._consumer is None
    assert [p.range for p in clone.partitions({topic: {"0": 1}}, {topic: {"0": 5}})] == \
        [p.range for p in r.partitions({topic: {"0": 1}}, {topic: {"0": 5}})]
    r.stop()
