"""The benchmark suite's tables case without a broker or a JVM: bench_tables.py's round and
memory lines become one table per data set (records/s, the ratio of each Arrow-writer row to
Spark's own route into the same format and to format('pyconsumer') into Spark's Delta writer,
the peak memory in its notes) and the issue's three targets per data set."""
from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

OUTPUT = """\
pyspark 4.2.0, pyarrow 26.0.1, ...
spark kafka connector: 4.2.0 (PySpark 4.2.0)
dataset bytes: 300,000 records over 6 partitions of bench-tables-bytes
dataset avro_typed: 100,000 records over 6 partitions of bench-tables-avro_typed
round 0 bytes arrow_delta                 300,000 records    0.60 s       500 krec/s   CPU s: ...
memory round 0 bytes arrow_delta: worker 264 MB, jvm 955 MB
round 0 bytes kafka_delta                 300,000 records    6.00 s        50 krec/s   CPU s: ...
memory round 0 bytes kafka_delta: worker 257 MB, jvm 1066 MB
round 0 bytes pyconsumer_delta            300,000 records    3.00 s       100 krec/s   CPU s: ...
memory round 0 bytes pyconsumer_delta: worker 257 MB, jvm 1087 MB
round 0 bytes poll_arrow                  300,000 records    0.10 s     3,000 krec/s   CPU s: ...
round 1 bytes arrow_delta                 300,000 records    1.00 s       300 krec/s   CPU s: ...
memory round 1 bytes arrow_delta: worker 300 MB, jvm 900 MB
round 1 bytes kafka_delta                 300,000 records    5.00 s        60 krec/s   CPU s: ...
memory round 1 bytes kafka_delta: worker 257 MB, jvm 1066 MB
round 1 bytes pyconsumer_delta            300,000 records    3.00 s       100 krec/s   CPU s: ...
memory round 1 bytes pyconsumer_delta: worker 257 MB, jvm 1087 MB
round 1 bytes poll_arrow                  300,000 records    0.30 s     1,000 krec/s   CPU s: ...
round 0 avro_typed arrow_delta            100,000 records    0.40 s       250 krec/s   CPU s: ...
round 0 avro_typed kafka_delta            100,000 records    5.00 s        20 krec/s   CPU s: ...
round 0 avro_typed pyconsumer_delta       100,000 records    2.00 s        50 krec/s   CPU s: ...
round 0 avro_typed poll_arrow             100,000 records    0.05 s     2,000 krec/s   CPU s: ...
"""


def test_one_table_per_set_with_ratios_memory_and_targets(suite: ModuleType, tmp_path: Path) -> None:
    bytes_case, avro_case = suite.tables_cases(OUTPUT, "kafka")
    assert bytes_case.name == "tables-bytes-kafka"
    assert bytes_case.title == "Broker -> tables, 300,000 x 100 B over 6 partitions (local[2])"
    assert bytes_case.rates["arrow_delta"] == [500_000.0, 300_000.0]
    # medians of per-round ratios: 10x and 5x -> 7.5x; 5x and 3x -> 4x
    assert bytes_case.peer_ratio("arrow_delta") == pytest.approx(7.5)
    assert bytes_case.ratio("arrow_delta", "pyconsumer_delta") == pytest.approx(4.0)
    assert bytes_case.ratio("arrow_delta", "poll_arrow") == pytest.approx((1 / 6 + 0.3) / 2)
    assert bytes_case.peers == {"arrow_delta": "kafka_delta", "pyconsumer_delta": "kafka_delta"}
    assert any(n.startswith("peak resident memory") and "arrow_delta worker 300 MB, JVM 955 MB" in n
               for n in bytes_case.notes)
    assert avro_case.name == "tables-avro_typed-kafka" and "Avro" in avro_case.title

    rows = {(label, got, met) for label, _, _, got, met in
            suite.targets({c.name: c for c in (bytes_case, avro_case)}) if label.startswith("Tables")}
    assert rows == {
        ("Tables, 100 B: Arrow writer into Delta vs format('kafka') into Spark's Delta writer", "7.50x", "met"),
        ("Tables, 100 B: Arrow writer into Delta vs format('pyconsumer') into Spark's Delta writer", "4.00x", "met"),
        ("Tables, 100 B: Arrow writer into Delta vs poll_arrow in the driver", "0.23x", "missed"),
        ("Tables, Avro: Arrow writer into Delta vs format('kafka') into Spark's Delta writer", "12.50x", "met"),
        ("Tables, Avro: Arrow writer into Delta vs format('pyconsumer') into Spark's Delta writer", "5.00x", "met"),
        ("Tables, Avro: Arrow writer into Delta vs poll_arrow in the driver", "0.12x", "missed"),
    }
    out = tmp_path / "RESULTS.md"
    suite.write_results(out, [bytes_case, avro_case], [], "python -m benchmarks --cases tables", 60.0, False, [])
    text = out.read_text()
    assert "x format('kafka') into the same format" in text
    assert "x format('pyconsumer') into Spark's Delta" in text


def test_tables_runs_only_when_asked_for_with_quick(suite: ModuleType) -> None:
    assert "tables" in suite.chosen_cases(None, False)
    assert "tables" not in suite.chosen_cases(None, True)
    assert suite.chosen_cases(["tables"], True) == ["tables"]
