"""The benchmark suite's spark_scale case (issue 26) without a broker or a JVM: bench_spark.py's
round, planning and first-stage lines become one target-free table (records/s, the ratio to
format('kafka') per workload, the planning times in its notes), the case runs only when asked
for with --quick, and the first stage is found from Spark's status tracker."""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]



@pytest.fixture(scope="module")
def bench_spark(suite: ModuleType) -> ModuleType:
    pytest.importorskip("pyspark")
    return importlib.import_module("bench_spark")


SCALE_OUTPUT = """\
pyspark 4.3.0, pyarrow 26.0.1, ...
spark kafka connector: 4.2.0 (PySpark 4.3.0)
filled scale: 1,000,000 records, 100 B values on average, 1000 partitions, in 30.0 s
dataset scale: 1,000,000 records over 1000 partitions of bench-spark-scale
round 0 scale kafka noop             1,000,000 records    4.00 s       250 krec/s   CPU s: ...
first stage round 0 scale kafka noop: 0.500 s after the action's start
round 0 scale pyconsumer noop        1,000,000 records    2.00 s       500 krec/s   CPU s: ...
first stage round 0 scale pyconsumer noop: 0.900 s after the action's start
round 0 scale kafka count            1,000,000 records    5.00 s       200 krec/s   CPU s: ...
first stage round 0 scale kafka count: 0.600 s after the action's start
round 0 scale pyconsumer count       1,000,000 records    4.00 s       250 krec/s   CPU s: ...
first stage round 0 scale pyconsumer count: not seen in Spark's status tracker
plan round 0 scale kafka: 0.400 s, 1000 tasks
plan round 0 scale pyconsumer: 0.800 s, 1000 tasks
round 1 scale kafka noop             1,000,000 records    2.00 s       500 krec/s   CPU s: ...
first stage round 1 scale kafka noop: 0.300 s after the action's start
round 1 scale pyconsumer noop        1,000,000 records    2.00 s       500 krec/s   CPU s: ...
first stage round 1 scale pyconsumer noop: 0.700 s after the action's start
round 1 scale kafka count            1,000,000 records    5.00 s       200 krec/s   CPU s: ...
first stage round 1 scale kafka count: 0.400 s after the action's start
round 1 scale pyconsumer count       1,000,000 records    2.50 s       400 krec/s   CPU s: ...
first stage round 1 scale pyconsumer count: 0.800 s after the action's start
plan round 1 scale kafka: 0.200 s, 1000 tasks
plan round 1 scale pyconsumer: 0.300 s, 1000 tasks
"""


def test_scale_set_is_one_target_free_table_with_planning_notes(suite: ModuleType, tmp_path: Path) -> None:
    """Rates and per-workload ratios to format('kafka') as in the spark case, the title names
    the partitions, no target row, and the notes give each source's planning (median, rounds,
    tasks, pyconsumer's time over Spark's) and the time to the first stage per row (medians;
    an action the tracker never showed is counted, not averaged in)."""
    [case] = suite.spark_cases(SCALE_OUTPUT, "kafka")
    assert case.name == "spark-scale-kafka"
    assert case.title == ("Broker -> Spark, 1,000,000 x 100 B over 1,000 partitions "
                          "(local[2], Spark's Kafka connector 4.2.0 in PySpark 4.3.0)")
    assert case.rates == {"kafka noop": [250_000.0, 500_000.0], "pyconsumer noop": [500_000.0, 500_000.0],
                          "kafka count": [200_000.0, 200_000.0], "pyconsumer count": [250_000.0, 400_000.0]}
    assert case.peer_ratio("pyconsumer noop") == 1.5           # rounds 2.0 and 1.0
    assert case.peer_ratio("pyconsumer count") == 1.625        # rounds 1.25 and 2.0
    assert case.references == []
    assert suite.targets({case.name: case}) == []
    assert case.notes[2:] == [
        "no target: issue 26 asks for the numbers (records/s and planning time on a many-partition topic)",
        "planning, median of a planning-only action per source and round (from just before load() until "
        "df.rdd.getNumPartitions() returns: the schema, every partition's offsets, the tasks planned, the RDD "
        "built; no task runs): format('kafka') 0.300 s (rounds: 0.400, 0.200), 1,000 tasks; "
        "format('pyconsumer') 0.550 s (rounds: 0.800, 0.300), 1,000 tasks; format('pyconsumer') takes 1.75x "
        "format('kafka')'s time (median of per-round ratios; above 1: slower to plan)",
        "time to the first stage inside each timed action, median (from just before load() to the submission "
        "of the action's first stage in Spark's status tracker: the planning above plus the DAG scheduler's, "
        "as the rates pay it): kafka noop 0.400 s, pyconsumer noop 0.800 s, kafka count 0.500 s, "
        "pyconsumer count 0.800 s (1 action(s) whose first stage the tracker never showed)",
    ]
    out = tmp_path / "RESULTS.md"
    suite.write_results(out, [case], [], "python -m benchmarks --cases spark_scale", 60.0, False, [])
    lines = out.read_text().splitlines()
    assert "| contender | what | records/s best | records/s median | x format('kafka'), same workload |" \
        in lines
    assert "| pyconsumer count | spark.read.format('pyconsumer'), count() | 400,000 | 325,000 | 1.62 |" in lines
    assert "| kafka noop | Spark's own source, spark.read.format('kafka'), write.format('noop') | 500,000 | " \
           "375,000 | 1.00 |" in lines
    assert "## Targets (issues 14, 25 and 26)" not in lines


def test_the_other_spark_sets_keep_six_partitions_and_no_planning_notes(suite: ModuleType) -> None:
    """Output without dataset lines (older runs) still titles a set over 6 partitions; the
    planning lines of the scale set do not leak into another set's notes."""
    out = SCALE_OUTPUT.replace("dataset scale", "dataset other") + \
        "round 0 bytes kafka noop             1,000,000 records    2.00 s       500 krec/s   CPU s: ...\n"
    cases = {c.name: c for c in suite.spark_cases(out, "kafka")}
    assert "over 6 partitions" in cases["spark-bytes-kafka"].title
    assert "over 6 partitions" in cases["spark-scale-kafka"].title
    assert not any(n.startswith(("planning", "time to the first stage")) for n in cases["spark-bytes-kafka"].notes)


def test_spark_scale_runs_alone_and_not_with_quick(suite: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    """--quick leaves both Spark cases out unless named; ``--cases spark_scale`` runs bench_spark.py's
    scale set alone on Apache Kafka (even with --broker both), with --records as its size."""
    assert "spark_scale" in suite.CASES
    assert not {"spark", "spark_scale"} & set(suite.chosen_cases(None, True))
    assert {"spark", "spark_scale"} <= set(suite.chosen_cases(None, False))
    assert suite.chosen_cases(["spark_scale"], True) == ["spark_scale"]
    calls: list[tuple[Any, ...]] = []

    def run_spark(quick: bool, rounds: int, broker: str, datasets: list[str] | None = None,
                  scale_records: int | None = None) -> list[Any]:
        calls.append((quick, rounds, broker, datasets, scale_records))
        return suite.spark_cases(SCALE_OUTPUT, broker)

    monkeypatch.setattr(suite, "run_spark", run_spark)
    monkeypatch.setattr(suite, "charts", lambda cases, out: [])
    assert suite.main(["--cases", "spark_scale", "--quick", "--records", "20000", "--out", str(tmp_path)]) == 0
    assert calls == [(True, 1, "kafka", ["scale"], 20000)]
    assert "## Broker -> Spark, 1,000,000 x 100 B over 1,000 partitions (local[2], Spark's Kafka connector " \
           "4.2.0 in PySpark 4.3.0)" in (tmp_path / "RESULTS.md").read_text().splitlines()


def test_bench_spark_scale_set_runs_two_sources_and_is_not_a_default(suite: ModuleType,
                                                                     bench_spark: ModuleType) -> None:
    """The scale set: format('kafka') and format('pyconsumer'), noop and count; without --datasets
    bench_spark.py runs every other set (the spark case) and not this one."""
    assert {(c, w) for c in bench_spark.CONTENDERS for w in bench_spark.WORKLOADS["scale"]
            if bench_spark.runs("scale", c, w)} == {("kafka", "noop"), ("kafka", "count"),
                                                    ("pyconsumer", "noop"), ("pyconsumer", "count")}
    assert bench_spark.DEFAULT_DATASETS == ("bytes", "json", "json_typed", "avro_typed", "protobuf_typed")
    assert suite.SPARK_SCALE_SET == bench_spark.SCALE_SET


def test_bench_sparks_lines_are_what_the_suite_parses(suite: ModuleType, bench_spark: ModuleType) -> None:
    """plan_line and first_stage_line, written by bench_spark.py, read back by the suite."""
    out = "\n".join([
        "spark kafka connector: 4.2.0 (PySpark 4.3.0)",
        "round 0 scale kafka noop             1,000 records    1.00 s         1 krec/s   CPU s: ...",
        bench_spark.first_stage_line(0, "scale", "kafka", "noop", 0.12345),
        bench_spark.first_stage_line(1, "scale", "kafka", "noop", None),
        bench_spark.plan_line(0, "scale", "kafka", 0.0504, 1000),
    ]) + "\n"
    assert bench_spark.first_stage_line(0, "scale", "kafka", "noop", 0.12345) == \
        "first stage round 0 scale kafka noop: 0.123 s after the action's start"
    assert bench_spark.plan_line(0, "scale", "kafka", 0.0504, 1000) == "plan round 0 scale kafka: 0.050 s, 1000 tasks"
    assert suite.spark_planning_notes(out, "scale") == [
        "planning, median of a planning-only action per source and round (from just before load() until "
        "df.rdd.getNumPartitions() returns: the schema, every partition's offsets, the tasks planned, the RDD "
        "built; no task runs): format('kafka') 0.050 s (rounds: 0.050), 1,000 tasks",
        "time to the first stage inside each timed action, median (from just before load() to the submission "
        "of the action's first stage in Spark's status tracker: the planning above plus the DAG scheduler's, "
        "as the rates pay it): kafka noop 0.123 s (1 action(s) whose first stage the tracker never showed)",
    ]


class FakeTracker:
    """Spark's status trackers (Python's for jobs, the JVM's for stage submission times) over a
    list of snapshots: each call of getJobIdsForGroup moves to the next (the listener bus catching up)."""

    def __init__(self, snapshots: list[dict[int, dict[int, int]]]) -> None:
        self.snapshots = snapshots      # job -> stage -> submissionTime (epoch ms; 0: not submitted)
        self.calls = 0
        self.groups: list[str] = []

    @property
    def now(self) -> dict[int, dict[int, int]]:
        return self.snapshots[min(self.calls - 1, len(self.snapshots) - 1)]

    def getJobIdsForGroup(self, group: str) -> list[int]:
        self.calls += 1
        self.groups.append(group)
        return list(self.now)

    def getJobInfo(self, job: int) -> Any:
        return SimpleNamespace(stageIds=list(self.now[job]))

    def getStageInfo(self, stage: int) -> Any:
        times = {s: t for stages in self.now.values() for s, t in stages.items()}
        return SimpleNamespace(submissionTime=lambda: times[stage])


def fake_spark(tracker: FakeTracker) -> Any:
    sc = SimpleNamespace(statusTracker=lambda: tracker, _jsc=SimpleNamespace(statusTracker=lambda: tracker))
    return SimpleNamespace(sparkContext=sc)


def test_first_stage_is_the_earliest_submitted_stage_of_the_group(bench_spark: ModuleType) -> None:
    """The earliest submission over every job and stage of the group (a stage never submitted,
    time 0, left out), in seconds after the action's start; asked again while the tracker shows
    none yet; None when it never does."""
    tracker = FakeTracker([{}, {3: {7: 0}}, {3: {7: 1_000_002_500, 8: 1_000_001_250}, 4: {9: 1_000_003_000}}])
    assert bench_spark.first_stage_delay(fake_spark(tracker), "bench-0-scale-kafka-noop", 1_000_000.5) == \
        pytest.approx(0.75)
    assert tracker.calls == 3 and set(tracker.groups) == {"bench-0-scale-kafka-noop"}
    never = FakeTracker([{}])
    assert bench_spark.first_stage_delay(fake_spark(never), "g", 0.0, wait_s=0.0) is None
