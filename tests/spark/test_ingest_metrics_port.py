"""``pyconsumer ingest --metrics-port``: a continuous table run scraped while it runs, on
127.0.0.1, with prometheus-client's parser: records, bytes, rounds, the offsets reached and the
lag equal what was produced."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.ingest.lag import PartitionLag
from pyconsumer.ingest.metrics import IngestMetrics
from pyconsumer.testing import TansuBroker, TestRecord, produce

from tests.unit.test_ingest_metrics import scrape

pytestmark = pytest.mark.spark

pytest.importorskip("prometheus_client")


def _records(partition: int, n: int, first: int = 0) -> list[TestRecord]:
    # 14 bytes of key and value each: 4-byte keys, 10-byte values
    return [TestRecord(key=b"k%03d" % (first + i), value=b"v" * 10, partition=partition,
                       timestamp_ms=1_000 + first + i) for i in range(n)]


def test_scrape_during_a_continuous_table_run(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path
) -> None:
    from pyconsumer.ingest import TableTarget, open_table, plan_table_read, source_options
    from pyconsumer.ingest.prometheus import serve_ingest_metrics
    from pyconsumer.ingest.tables import run_table_ingest_continuous
    from pyconsumer.spark.options import parse_options

    topic = make_tansu_topic(2)
    produce(tansu.bootstrap, topic, _records(0, 60) + _records(1, 40))
    source = parse_options(source_options(
        bootstrap=tansu.bootstrap, topics=[topic], starting_offsets="earliest",
        ending_offsets=None, options={"maxOffsetsPerTrigger": "40"}, kafka={}), streaming=True)
    read = plan_table_read(source, [topic])
    table = str(tmp_path / "table")
    sink = open_table(TableTarget("parquet", table), read.schema)
    metrics = IngestMetrics()
    stop = threading.Event()
    result: list[Any] = []
    p0, p1 = (("partition", "0"), ("topic", topic)), (("partition", "1"), ("topic", topic))

    def until(records: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            got = scrape(server.url)
            if got[("pyconsumer_ingest_records_total", ())] >= records:
                return got
            time.sleep(0.2)
        raise AssertionError(f"no {records} records in the scrape: {got}")

    with serve_ingest_metrics(metrics, 0) as server:
        run = threading.Thread(target=lambda: result.append(run_table_ingest_continuous(
            spark, sink, read, output=table, trigger_ms=300, stop=stop, metrics=metrics)))
        run.start()
        try:
            got = until(100)
            # 40 offsets a round shared 60:40 -> 24+16, 24+16, 12+8: three rounds
            want = {("pyconsumer_ingest_records_total", ()): 100.0,
                    ("pyconsumer_ingest_bytes_total", ()): 1400.0,
                    ("pyconsumer_ingest_micro_batches_total", ()): 3.0,
                    ("pyconsumer_ingest_rejected_records_total", ()): 0.0,
                    ("pyconsumer_ingest_offset", p0): 60.0, ("pyconsumer_ingest_offset", p1): 40.0,
                    ("pyconsumer_ingest_records_lag", p0): 0.0,
                    ("pyconsumer_ingest_records_lag", p1): 0.0,
                    ("pyconsumer_ingest_bytes_lag", p0): 0.0,
                    ("pyconsumer_ingest_bytes_lag", p1): 0.0}
            assert {k: v for k, v in got.items() if k in want} == want
            assert got[("pyconsumer_ingest_records_per_second", ())] > 0

            produce(tansu.bootstrap, topic, _records(0, 10, first=60))    # while it runs
            got = until(110)
            assert got[("pyconsumer_ingest_records_total", ())] == 110.0
            assert got[("pyconsumer_ingest_bytes_total", ())] == 1540.0
            assert got[("pyconsumer_ingest_micro_batches_total", ())] == 4.0
            assert got[("pyconsumer_ingest_offset", p0)] == 70.0
            assert got[("pyconsumer_ingest_records_lag", p0)] == 0.0
        finally:
            stop.set()
            run.join(120)
    assert not run.is_alive()
    [summary] = result
    assert summary.records == 110 and summary.micro_batches == 4
    assert summary.lag == [PartitionLag(topic, 0, 0, 0), PartitionLag(topic, 1, 0, 0)]

