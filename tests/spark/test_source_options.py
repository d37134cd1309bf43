"""Rejected options through real Spark: each bad setting or combination fails with an error
that names it, at the point where Spark surfaces it; and option keys are case-insensitive.

Where the errors surface (measured with PySpark 4.3): the options are parsed when Spark asks
the source for a reader, not when it asks for the schema. So

* batch: ``load()`` succeeds (it only takes the schema); ``collect()`` raises an
  AnalysisException carrying our ConfigurationError (about 1 s per case, most of it the
  Python process that plans the read);
* streaming: ``load()`` and ``start()`` succeed; the query thread fails at once and
  ``awaitTermination()`` raises a StreamingQueryException carrying it (about 2 s per case). PySpark's streaming runner then also reports an
  UnboundLocalError of its own (its ``finally: reader.stop()`` runs with no reader); our
  message stays in the text above it.

(Spark's own Kafka source checks these at ``load()``.) Nothing here needs a broker except
the case-insensitivity test: every rejected case fails before any connection is made.
"""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.testing import MockCluster, produce, sample_records

from tests.spark.sparkdata import df_rows, expected_rows

pytestmark = pytest.mark.spark

# nothing listens there: a case that got past the checks would fail differently (and slowly)
BASE = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "orders"}

#: (case, options replacing/adding to BASE (None removes a key), words the error must contain)
BATCH_CASES: list[tuple[str, dict[str, str | None], list[str]]] = [
    ("auto.offset.reset", {"kafka.auto.offset.reset": "earliest"},
     ["kafka.auto.offset.reset", "startingOffsets"]),
    ("key.deserializer", {"kafka.key.deserializer": "x.StringDeserializer"},
     ["kafka.key.deserializer", "bytes"]),
    ("value.deserializer", {"kafka.value.deserializer": "x.StringDeserializer"},
     ["kafka.value.deserializer", "bytes"]),
    ("enable.auto.commit", {"kafka.enable.auto.commit": "true"},
     ["kafka.enable.auto.commit", "checkpoint"]),
    ("interceptor.classes", {"kafka.interceptor.classes": "x.Interceptor"},
     ["kafka.interceptor.classes"]),
    ("no bootstrap.servers", {"kafka.bootstrap.servers": None},
     ["kafka.bootstrap.servers", "must be specified"]),
    ("subscribe and assign", {"assign": json.dumps({"orders": [0]})},
     ["Only one of", "subscribe", "assign"]),
    ("no strategy", {"subscribe": None}, ["One of", "subscribe", "subscribePattern", "assign"]),
    ("latest as a batch start", {"startingOffsets": "latest"},
     ["startingOffsets", "latest", "batch"]),
    ("earliest as a batch end", {"endingOffsets": "earliest"},
     ["endingOffsets", "earliest", "batch"]),
    ("bad boolean includeHeaders", {"includeHeaders": "yes"}, ["includeHeaders", "'yes'"]),
    ("bad JSON startingOffsets", {"startingOffsets": '{"orders": {"0": 5'},
     ["startingOffsets", "JSON"]),
]

STREAM_CASES: list[tuple[str, dict[str, str | None], list[str]]] = [
    ("endingOffsets in streaming", {"endingOffsets": "latest"},
     ["endingOffsets", "streaming"]),
    ("min > max per trigger", {"minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"},
     ["minOffsetsPerTrigger", "maxOffsetsPerTrigger", "higher"]),
]


def _options(change: dict[str, str | None]) -> dict[str, str]:
    opts: dict[str, str | None] = {**BASE, **change}
    return {k: v for k, v in opts.items() if v is not None}


def _problems(case: str, text: str, words: list[str]) -> list[str]:
    out = []
    if "ConfigurationError" not in text:
        out.append(f"{case}: not our ConfigurationError: {text[:300]!r}")
    out += [f"{case}: {w!r} not in the error: {text[:600]!r}" for w in words if w not in text]
    return out


def _batch_case(spark: Any, case: str, change: dict[str, str | None], words: list[str]
                ) -> list[str]:
    from pyspark.errors import AnalysisException

    df = spark.read.format("pyconsumer").options(**_options(change)).load()   # no error here
    try:
        df.collect()
    except AnalysisException as exc:
        return _problems(case, str(exc), words)
    return [f"{case}: collect() did not fail"]


def test_rejected_options_name_the_setting(spark: Any, tmp_path: Path) -> None:
    """Every case of BATCH_CASES fails at collect(), every case of STREAM_CASES fails the
    query after start(); each error names the setting. One test: the streaming queries fail
    in their own threads while the batch cases run (about 1 s each, mostly a Python planner
    process), four at a time."""
    from pyspark.errors import StreamingQueryException

    started = time.monotonic()
    queries = []
    for i, (case, change, words) in enumerate(STREAM_CASES):
        df = spark.readStream.format("pyconsumer").options(**_options(change)).load()
        q = (df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / str(i)))
             .start())                                                  # no error here either
        queries.append((case, words, q))

    with ThreadPoolExecutor(4) as pool:
        problems = [p for found in pool.map(lambda c: _batch_case(spark, *c), BATCH_CASES)
                    for p in found]

    for case, words, q in queries:
        try:
            q.awaitTermination(60)
        except StreamingQueryException as exc:
            problems += _problems(case, str(exc), words)
        else:
            q.stop()
            problems.append(f"{case}: the query did not fail (active: {q.isActive})")
    assert not problems, "\n".join(problems)
    # a case that got past the checks would try to connect, and take far longer
    assert time.monotonic() - started < 60


def test_option_keys_are_case_insensitive(spark: Any, mock_cluster: MockCluster) -> None:
    # the in-process mock: no broker process to start or stop for this one read
    mock_cluster.create_topic("cases", 2)
    records = sample_records(60, partitions=2, seed=5)
    delivered = produce(mock_cluster.bootstrap, "cases", records)
    df = (spark.read.format("pyconsumer")
          .option("KAFKA.BOOTSTRAP.SERVERS", mock_cluster.bootstrap)
          .option("SUBSCRIBE", "cases")
          .option("includeheaders", "TRUE")
          .option("STARTINGOFFSETS", json.dumps({"cases": {"0": 10, "1": -2}}))
          .option("endingoffsets", json.dumps({"cases": {"0": 20, "1": -1}}))
          .load())
    assert df.schema.fieldNames()[-1] == "headers"
    want = [r for r in expected_rows("cases", records, delivered, headers=True)
            if r[1] == 1 or 10 <= r[2] < 20]
    assert len(want) == 10 + 30
    assert df_rows(df) == want
    # a rejected option is rejected whatever its case
    from pyspark.errors import AnalysisException
    with pytest.raises(AnalysisException, match="kafka.auto.offset.reset"):
        (spark.read.format("pyconsumer").option("kafka.bootstrap.servers", mock_cluster.bootstrap)
         .option("subscribe", "cases").option("KAFKA.Auto.Offset.Reset", "earliest")
         .load().collect())
