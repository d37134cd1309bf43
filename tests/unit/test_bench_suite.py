"""The benchmark suite's bookkeeping without a broker: which brokers ``--broker`` picks, the
issue's targets per broker (met/missed at the exact threshold), the per-broker tables of
RESULTS.md, and kafkarrow as an end-to-end contender and reference (skipped, saying so, when
it is not installed)."""
from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest

ROOT = Path(__file__).resolve().parents[2]



@pytest.fixture(scope="module")
def brokers(suite: ModuleType) -> ModuleType:
    return importlib.import_module("brokers")


@pytest.fixture(scope="module")
def bench_consume(suite: ModuleType) -> ModuleType:
    return importlib.import_module("bench_consume")


def e2e_case(suite: ModuleType, name: str, broker: str, rates: dict[str, list[float]]) -> Any:
    return suite.Case(name, f"title of {name}", rates, ["raw_fetch", "ck_consume", "kr_arrow"],
                      {"raw_fetch": "the ceiling", "pc_arrow": "arrow"}, [], broker)


KAFKA_RATES: dict[str, list[float]] = {
    "raw_fetch": [100.0, 200.0],
    "pc_arrow": [150.0, 180.0],      # x raw 1.5, 0.9: median 1.2
    "pc_poll": [80.0, 150.0],        # x raw 0.8, 0.75: median 0.775
    "ck_consume": [50.0, 60.0],      # pc_arrow x ck 3.0, 3.0: exactly the target
    "kr_arrow": [30.0, 40.0],        # pc_arrow x kr 5.0, 4.5: median 4.75
}


def test_broker_choice_names_kafka_then_tansu(brokers: ModuleType) -> None:
    """``both`` runs Kafka first, then Tansu; one name runs that one; anything else is refused."""
    assert brokers.selected("both") == ["kafka", "tansu"]
    assert brokers.selected("kafka") == ["kafka"]
    assert brokers.selected("tansu") == ["tansu"]
    with pytest.raises(ValueError, match=r"^--broker 'redpanda': expected one of kafka, tansu, both$"):
        brokers.selected("redpanda")


def test_kafka_runs_with_the_brokers_default_threads_and_heap(brokers: ModuleType) -> None:
    """The benchmark's Kafka undoes the test fixtures' CPU savings: 3 network and 8 I/O threads
    (Kafka's defaults) and the start script's 1 GB heap."""
    assert brokers.KAFKA_BENCH_CONFIG == {"num.network.threads": "3", "num.io.threads": "8"}
    assert brokers.KAFKA_BENCH_HEAP == "1g"


def test_an_unknown_broker_is_refused(suite: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    """``--broker`` takes kafka, tansu or both and nothing else (argparse exits 2, naming them)."""
    with pytest.raises(SystemExit) as exc:
        suite.main(["--broker", "redpanda"])
    assert exc.value.code == 2
    # argparse quotes the choices on some Python versions, not on others
    assert re.search(r"argument --broker: invalid choice: 'redpanda' \(choose from '?kafka'?, '?tansu'?, '?both'?\)$",
                     capsys.readouterr().err, re.M)


def test_targets_per_broker_met_or_missed_at_the_threshold(suite: ModuleType) -> None:
    """Each end-to-end target is one row per case and broker (Kafka's first), with the median
    of per-round ratios; exactly the wanted ratio is met; a missing contender gives no row."""
    cases = {
        "e2e1-kafka": e2e_case(suite, "e2e1-kafka", "kafka", KAFKA_RATES),
        "e2e6-tansu": e2e_case(suite, "e2e6-tansu", "tansu",
                               {"raw_fetch": [100.0], "pc_arrow": [100.0], "ck_consume": [40.0]}),
    }
    assert suite.targets(cases) == [
        ("poll_arrow vs the raw Fetch loop, 1 partition(s)", "Apache Kafka", ">= 1x", "1.20x", "met"),
        ("poll() vs the raw Fetch loop, 1 partition(s)", "Apache Kafka", ">= 0.8x", "0.78x", "missed"),
        ("poll_arrow vs confluent-kafka consume(10000), 1 partition(s)", "Apache Kafka", ">= 3x", "3.00x", "met"),
        ("poll_arrow vs kafkarrow, 1 partition(s)", "Apache Kafka", ">= 5x", "4.75x", "missed"),
        ("poll_arrow vs the raw Fetch loop, 6 partition(s)", "Tansu", ">= 1x", "1.00x", "met"),
        ("poll_arrow vs confluent-kafka consume(10000), 6 partition(s)", "Tansu", ">= 3x", "2.50x", "missed"),
    ]


def test_results_have_one_section_per_broker(suite: ModuleType, tmp_path: Path) -> None:
    """RESULTS.md: the targets with their broker, then each broker's own heading and tables with
    ratio columns to the raw loop, confluent-kafka and kafkarrow, and both brokers described."""
    kafka = e2e_case(suite, "e2e1-kafka", "kafka", KAFKA_RATES)
    tansu = e2e_case(suite, "e2e1-tansu", "tansu", {"raw_fetch": [10.0, 20.0], "pc_arrow": [20.0, 20.0],
                                                     "ck_consume": [5.0, 5.0], "kr_arrow": [4.0, 5.0]})
    out = tmp_path / "RESULTS.md"
    suite.write_results(out, [kafka, tansu], [], "python -m benchmarks --x", 90.0, False,
                        ["Apache Kafka 4.2.2 (KRaft) described", "Tansu described"])
    text = out.read_text()
    lines = text.splitlines()
    assert "| broker | Apache Kafka 4.2.2 (KRaft) described |" in lines
    assert "| broker | Tansu described |" in lines
    assert "| target | broker | wanted | measured | met |" in lines
    assert "| poll_arrow vs kafkarrow, 1 partition(s) | Apache Kafka | >= 5x | 4.75x | missed |" in lines
    assert "| poll_arrow vs kafkarrow, 1 partition(s) | Tansu | >= 5x | 4.50x | missed |" in lines
    on_kafka, on_tansu = lines.index("# On Apache Kafka"), lines.index("# On Tansu")
    assert on_kafka < lines.index("## title of e2e1-kafka") < on_tansu < lines.index("## title of e2e1-tansu")
    header = "| contender | what | records/s best | records/s median | x raw_fetch | x ck_consume | x kr_arrow |"
    assert lines.count(header) == 2
    # pc_arrow on Kafka: best 180, median 165; x raw 1.20, x ck 3.00, x kr 4.75
    assert "| pc_arrow | arrow | 180 | 165 | 1.20 | 3.00 | 4.75 |" in lines
    assert "| pc_arrow | arrow | 20 | 20 | 1.50 | 4.00 | 4.50 |" in lines


def test_kafkarrow_is_a_contender_and_a_reference(suite: ModuleType, bench_consume: ModuleType,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An end-to-end case runs kr_arrow (even when --only leaves it out: it is a reference), with
    the same records as the others, and divides by it."""
    calls = _fake_e2e(bench_consume, monkeypatch)
    monkeypatch.setattr(suite, "have_kafkarrow", lambda: True)
    broker, made = _fake_broker(suite)
    case = suite.run_e2e(broker, 6, True, 1, ["pc_arrow", "raw_fetch", "ck_consume", "kr_arrow"], 1000)
    assert made == [("bench-6p", 6)]
    assert calls["filled"] == [("bench-6p", 1000, 6, 100, "none")]
    assert calls["warmed"] == [("bench-6p", 6, 1000)]       # one uncounted raw read before the rounds
    assert calls["measured"] == [("bench-6p", 6, 1000, ["raw_fetch", "pc_arrow", "ck_consume", "kr_arrow"])]
    assert case.name == "e2e6-kafka" and case.broker == "kafka"
    assert case.title == "Broker -> Python, 1,000 x 100 B over 6 partitions (Apache Kafka 9.9, one KRaft node)"
    assert case.references == ["raw_fetch", "ck_consume", "kr_arrow"]
    assert case.notes == []
    assert bench_consume.CONTENDERS["kr_arrow"] is bench_consume.kr_arrow
    assert bench_consume.DESCRIPTIONS["kr_arrow"] == "kafkarrow ConsumerManager.poll(timeout_ms=100), batch_size 100000"


def test_without_kafkarrow_its_row_is_skipped_saying_so(suite: ModuleType, bench_consume: ModuleType,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the kafkarrow package the case runs without it and its notes say why."""
    calls = _fake_e2e(bench_consume, monkeypatch)
    monkeypatch.setattr(suite, "have_kafkarrow", lambda: False)
    broker, _ = _fake_broker(suite)
    case = suite.run_e2e(broker, 1, True, 1, None, 500)
    assert calls["measured"] == [("bench-1p", 1, 500, ["raw_fetch", "pc_arrow", "pc_arrow_1t", "pc_poll",
                                                       "pc_poll_large", "ck_consume", "aio", "kp"])]
    assert case.references == ["raw_fetch", "ck_consume"]
    assert case.notes == ["kafkarrow is not installed (pip install -e '.[bench]'): no kr_arrow row",
                          "aiokafka and kafka-python read the first 500 records only (rates are per record)"]


def _fake_broker(suite: ModuleType) -> tuple[Any, list[tuple[str, int]]]:
    """A BenchBroker that records the topics it is asked to make (nothing runs)."""
    brokers = importlib.import_module("brokers")
    made: list[tuple[str, int]] = []

    def create(name: str, partitions: int) -> str:
        made.append((name, partitions))
        return name

    return brokers.BenchBroker("kafka", "Apache Kafka 9.9", "described", "127.0.0.1:1", create), made


def _fake_e2e(bench_consume: ModuleType, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """bench_consume's fill, warm-up read and measure replaced by recorders (no broker)."""
    calls: dict[str, list[Any]] = {"filled": [], "warmed": [], "measured": []}

    def fill(bootstrap: str, topic: str, n: int, partitions: int, size: int, codec: str) -> None:
        calls["filled"].append((topic, n, partitions, size, codec))

    def raw_fetch(bootstrap: str, topic: str, partitions: int, n: int) -> int:
        calls["warmed"].append((topic, partitions, n))
        return n

    def measure(bootstrap: str, topic: str, partitions: int, n: int, contenders: dict[str, Callable[..., int]],
                rounds: int, **kw: Any) -> dict[str, list[float]]:
        calls["measured"].append((topic, partitions, n, list(contenders)))
        return {k: [1.0] * rounds for k in contenders}

    monkeypatch.setattr(bench_consume, "fill", fill)
    monkeypatch.setattr(bench_consume, "raw_fetch", raw_fetch)
    monkeypatch.setattr(bench_consume, "measure", measure)
    return calls


def test_measure_wants_every_record_exactly_once(bench_consume: ModuleType) -> None:
    """A contender that reads fewer records than the topic has, or more (a record handed over
    twice), fails the run, naming itself and the topic; aiokafka and kafka-python, which stop
    at the slow cap mid-fetch, may overshoot it."""
    def reads(k: int) -> Callable[[str, str, int, int], int]:
        return lambda bootstrap, topic, partitions, n: n + k

    with pytest.raises(RuntimeError, match=r"^pc_arrow read 1,001 records of t, expected 1,000$"):
        bench_consume.measure("b", "t", 1, 1000, {"pc_arrow": reads(1)}, 1)
    with pytest.raises(RuntimeError, match=r"^kr_arrow read 999 records of t, expected 1,000$"):
        bench_consume.measure("b", "t", 1, 1000, {"kr_arrow": reads(-1)}, 1)
    rates = bench_consume.measure("b", "t", 1, 1000, {"aio": reads(23), "pc_poll": reads(0)}, 2, slow_cap=100)
    assert list(rates) == ["aio", "pc_poll"] and [len(v) for v in rates.values()] == [2, 2]
    assert all(r > 0 for v in rates.values() for r in v)



def test_measure_times_each_read_with_the_harness_heap_frozen(bench_consume: ModuleType) -> None:
    """Every timed read runs with the objects that existed before it frozen (out of the
    collector's reach: the harness's modules and results), and the heap is unfrozen after it,
    also when the read fails."""
    import gc
    seen: list[int] = []

    def reads(bootstrap: str, topic: str, partitions: int, n: int) -> int:
        seen.append(gc.get_freeze_count())
        return n

    def fails(bootstrap: str, topic: str, partitions: int, n: int) -> int:
        raise OSError("broker gone")

    assert gc.get_freeze_count() == 0
    bench_consume.measure("b", "t", 1, 10, {"pc_arrow": reads, "raw_fetch": reads}, 2)
    assert len(seen) == 4 and all(count > 0 for count in seen)
    assert gc.get_freeze_count() == 0
    with pytest.raises(OSError, match="broker gone"):
        bench_consume.measure("b", "t", 1, 10, {"pc_arrow": fails}, 1)
    assert gc.get_freeze_count() == 0

SPARK_OUTPUT = """\
pyspark 4.3.0, pyarrow 26.0.1, ...
spark kafka connector: 4.2.0 (PySpark 4.3.0)
round 0 bytes kafka noop             1,000,000 records    2.00 s       500 krec/s   CPU s: ...
round 0 bytes pyconsumer noop        1,000,000 records    0.50 s     2,000 krec/s   CPU s: ...
round 0 bytes poll_arrow             1,000,000 records    0.25 s     4,000 krec/s   CPU s: ...
round 1 bytes kafka noop             1,000,000 records    1.00 s     1,000 krec/s   CPU s: ...
round 1 bytes pyconsumer noop        1,000,000 records    0.50 s     2,000 krec/s   CPU s: ...
round 1 bytes poll_arrow             1,000,000 records    0.40 s     2,500 krec/s   CPU s: ...
round 0 json kafka json                100,000 records    1.00 s       100 krec/s   CPU s: ...
round 0 json pyconsumer json           100,000 records    0.80 s       125 krec/s   CPU s: ...
round 1 json kafka json                100,000 records    1.00 s       100 krec/s   CPU s: ...
round 1 json pyconsumer json           100,000 records    0.50 s       200 krec/s   CPU s: ...
"""


def test_spark_cases_compare_each_workload_with_sparks_own_source(suite: ModuleType, tmp_path: Path) -> None:
    """bench_spark.py's round lines become one case per data set; each row's peer is the same
    workload on format("kafka"); the targets (pyconsumer / kafka per workload, source /
    poll_arrow) are met or missed at the median of per-round ratios; the connector is named."""
    cases = suite.spark_cases(SPARK_OUTPUT, "kafka")
    assert [c.name for c in cases] == ["spark-bytes-kafka", "spark-json-kafka"]
    bytes_case, json_case = cases
    assert bytes_case.rates == {"kafka noop": [500_000.0, 1_000_000.0],
                                "pyconsumer noop": [2_000_000.0, 2_000_000.0],
                                "poll_arrow": [4_000_000.0, 2_500_000.0]}
    assert bytes_case.peer_ratio("pyconsumer noop") == 3.0          # rounds 4.0 and 2.0
    assert bytes_case.peer_ratio("poll_arrow") is None
    assert "Spark's Kafka connector 4.2.0 in PySpark 4.3.0" in bytes_case.title
    assert suite.targets({c.name: c for c in cases}) == [
        ("Spark bytes: format('pyconsumer') vs format('kafka'), noop", "Apache Kafka", ">= 2x", "3.00x", "met"),
        ("Spark bytes: format('pyconsumer') noop vs poll_arrow in the driver", "Apache Kafka", ">= 0.8x",
         "0.65x", "missed"),
        ("Spark json: format('pyconsumer') vs format('kafka'), json", "Apache Kafka", ">= 1.5x", "1.62x", "met"),
    ]
    out = tmp_path / "RESULTS.md"
    suite.write_results(out, cases, [], "python -m benchmarks --cases spark", 60.0, False, [])
    lines = out.read_text().splitlines()
    assert ("| contender | what | records/s best | records/s median | x format('kafka'), same workload | "
            "x poll_arrow |") in lines
    assert ("| pyconsumer noop | spark.read.format('pyconsumer'), write.format('noop') | 2,000,000 | 2,000,000 | "
            "3.00 | 0.65 |") in lines
    # the json set ran no poll_arrow: no column for it
    assert ("| pyconsumer json | spark.read.format('pyconsumer'), from_json into 8 typed fields, "
            "groupBy(country) over all of them | 200,000 | 162,500 | 1.62 |") in lines


def test_merge_replaces_the_cases_run_and_keeps_the_others(suite: ModuleType, tmp_path: Path) -> None:
    """--merge: a run of the Kafka case only, merged into a run of both brokers' cases: the Kafka
    section and its target rows are the new run's, Tansu's section and rows the old run's, each
    once, under their broker's heading, with a line saying where the kept ones come from."""
    old_k = e2e_case(suite, "e2e1-kafka", "kafka", KAFKA_RATES)
    tansu = e2e_case(suite, "e2e1-tansu", "tansu", {"raw_fetch": [10.0, 20.0], "pc_arrow": [20.0, 20.0],
                                                     "ck_consume": [5.0, 5.0], "kr_arrow": [4.0, 5.0]})
    new_k = e2e_case(suite, "e2e1-kafka", "kafka", {**KAFKA_RATES, "pc_arrow": [400.0, 400.0]})
    old, new = tmp_path / "old.md", tmp_path / "new.md"
    suite.write_results(old, [old_k, tansu], [], "python -m benchmarks --all", 90.0, False, ["K", "T"])
    suite.write_results(new, [new_k], [], "python -m benchmarks --kafka", 30.0, False, ["K"])
    merged = suite.merge_results(old.read_text(), new.read_text(), "Merged: NOTE").splitlines()
    assert "Command: `python -m benchmarks --kafka` (0.5 min)" in merged and "Merged: NOTE" in merged
    assert merged.count("# On Apache Kafka") == 1 and merged.count("# On Tansu") == 1
    assert merged.count("## title of e2e1-kafka") == 1 and merged.count("## title of e2e1-tansu") == 1
    on_kafka, on_tansu = merged.index("# On Apache Kafka"), merged.index("# On Tansu")
    assert on_kafka < merged.index("## title of e2e1-kafka") < on_tansu < merged.index("## title of e2e1-tansu")
    kafka_rows = [ln for ln in merged if ln.startswith("| poll_arrow vs kafkarrow, 1 partition(s) | Apache Kafka |")]
    tansu_rows = [ln for ln in merged if ln.startswith("| poll_arrow vs kafkarrow, 1 partition(s) | Tansu |")]
    assert kafka_rows == [ln for ln in new.read_text().splitlines() if ln in kafka_rows] and len(kafka_rows) == 1
    assert "4.75x" not in kafka_rows[0]                 # the new run's ratio, not the old one's
    assert tansu_rows == ["| poll_arrow vs kafkarrow, 1 partition(s) | Tansu | >= 5x | 4.50x | missed |"]
    assert "| pc_arrow | arrow | 20 | 20 | 1.50 | 4.00 | 4.50 |" in merged          # Tansu's table kept
    assert not any(ln.startswith("| pc_arrow | arrow | 180 |") for ln in merged)   # old Kafka table gone
    assert sum(ln.startswith("|---|---|---|---|---|") for ln in merged) == 1


def test_merge_keeps_the_sections_without_a_broker_and_the_layout(suite: ModuleType, tmp_path: Path) -> None:
    """--merge of a run of one Kafka case into a full RESULTS.md keeps the cases that use no
    broker (decode, values: before the first broker heading) and the second Kafka group (the
    Spark cases, after Tansu's) where they were; the new section takes the old one's place."""
    decode = suite.Case("decode_none", "title of decode_none", {"aio_c": [1.0, 1.0], "pc_arrow": [8.0, 9.0]},
                        ["aio_c"], {"aio_c": "aiokafka"}, [])
    old_k = e2e_case(suite, "e2e1-kafka", "kafka", KAFKA_RATES)
    tansu = e2e_case(suite, "e2e1-tansu", "tansu", KAFKA_RATES)
    spark = e2e_case(suite, "spark-kafka", "kafka", KAFKA_RATES)
    new_k = e2e_case(suite, "e2e1-kafka", "kafka", {**KAFKA_RATES, "pc_arrow": [400.0, 400.0]})
    old, new = tmp_path / "old.md", tmp_path / "new.md"
    suite.write_results(old, [decode, old_k, tansu, spark], [], "all", 90.0, False, ["K", "T"])
    suite.write_results(new, [new_k], [], "kafka", 30.0, False, ["K"])
    merged = suite.merge_results(old.read_text(), new.read_text(), "Merged: NOTE").splitlines()
    order = [ln for ln in merged if ln.startswith(("# On ", "## title of"))]
    assert order == ["## title of decode_none", "# On Apache Kafka", "## title of e2e1-kafka",
                     "# On Tansu", "## title of e2e1-tansu", "# On Apache Kafka", "## title of spark-kafka"]
    old_lines = old.read_text().splitlines()
    decode_table = old_lines[old_lines.index("## title of decode_none"):old_lines.index("# On Apache Kafka")]
    while not decode_table[-1]:
        decode_table.pop()
    at = merged.index("## title of decode_none")
    assert merged[at:at + len(decode_table)] == decode_table                  # decode's section kept
    assert any(ln.startswith("| pc_arrow |") and "8.50" in ln for ln in decode_table)
    assert any(ln.startswith("| pc_arrow | arrow | 400 |") for ln in merged)  # the new Kafka one
    assert sum(ln.startswith("| pc_arrow | arrow | 180 |") for ln in merged) == 2   # Tansu's, Spark's
    # merged again with itself: nothing moves
    again = suite.merge_results("\n".join(merged), new.read_text(), "Merged: NOTE").splitlines()
    assert [ln for ln in again if ln.startswith(("# On ", "## title of"))] == order


def test_a_merge_of_a_merge_names_every_earlier_run(suite: ModuleType, tmp_path: Path) -> None:
    """The note of a merged RESULTS.md names the run that wrote the file it was merged into
    and, when that was a merge too, the runs that one named: the full run's sections stay
    attributed to it after any number of partial reruns."""
    case = e2e_case(suite, "e2e1-kafka", "kafka", KAFKA_RATES)
    full = tmp_path / "full.md"
    suite.write_results(full, [case], [], "python -m benchmarks --cases all", 90.0, False, ["K"])
    first = suite.merge_note(full.read_text())
    assert first.startswith("Merged (--merge): ") and "`python -m benchmarks --cases all` (" in first
    merged = suite.merge_results(full.read_text(), full.read_text().replace("--cases all", "--cases scale --merge"), first)
    second = suite.merge_note(merged)
    assert second.count("`python -m benchmarks --cases all` (") == 1
    assert second.index("--cases scale --merge") < second.index("--cases all")
    old_format = merged.replace(first, "Merged (--merge): the cases this command ran replace theirs; every other "
                                       "section and target row is from the earlier run `full run` (then, commit abc).")
    assert suite.merge_note(old_format).endswith("; `full run` (then, commit abc).")


def test_raw_arrows_take_decodes_every_record_once_in_batches_of_at_most_arrow_rows(
        bench_consume: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """raw_arrow's decode (issue 26): the cursors of an answer taken into batches of at most
    ARROW_ROWS rows, partitions one after another, a partition cut across batches where its
    rows do not fit; every record once, in order (offsets and values exact); a fetch offset
    inside a batch skips the records before it; a corrupt batch raises, naming the offset."""
    from pyconsumer.errors import CorruptRecordError
    from pyconsumer.records import CompletedFetch, RecordSetIndex
    from tests import recordsets as rs

    monkeypatch.setattr(bench_consume, "ARROW_ROWS", 7)
    taken: list[Any] = []
    real = bench_consume.take_arrow_many

    def spy(cursors: list[Any], budgets: list[int]) -> Any:
        batch, rows = real(cursors, budgets)
        taken.append(batch)
        return batch, rows
    monkeypatch.setattr(bench_consume, "take_arrow_many", spy)

    sets = {0: rs.aio_v2(rs.sample_records(5), "none", 0) + rs.aio_v2(rs.sample_records(6, 5), "lz4", 5),
            1: rs.aio_v2(rs.sample_records(3, 40), "none", 40),
            2: rs.aio_v2(rs.sample_records(9, 70), "zstd", 70)}
    start = {0: 0, 1: 41, 2: 70}          # partition 1 from inside its batch

    def cursors(data: dict[int, bytes]) -> list[tuple[Any, int]]:
        out = []
        for p, d in data.items():
            index = RecordSetIndex(d, start[p])
            out.append((CompletedFetch(d, "t", p, start[p], index=index), index.bound))
        return out

    assert bench_consume.take_arrow(cursors(sets)) == 11 + 2 + 9
    assert all(0 < b.num_rows <= 7 for b in taken) and len(taken) == 4
    got: dict[int, list[tuple[int, bytes | None]]] = {}
    for b in taken:
        for p, o, v in zip(b.column("partition").to_pylist(), b.column("offset").to_pylist(),
                           b.column("value").to_pylist()):
            got.setdefault(p, []).append((o, v))
    expected = {0: [(i, r[3]) for i, r in enumerate(rs.sample_records(5) + rs.sample_records(6, 5))],
                1: [(40 + i, r[3]) for i, r in enumerate(rs.sample_records(3, 40))][1:],
                2: [(70 + i, r[3]) for i, r in enumerate(rs.sample_records(9, 70))]}
    assert got == expected

    bad = bytearray(sets[2])
    bad[-3] ^= 0x40                                   # inside the CRC-covered bytes
    with pytest.raises(CorruptRecordError, match="CRC32C mismatch") as info:
        bench_consume.take_arrow(cursors({**sets, 2: bytes(bad)}))
    assert info.value.offset == 70


def test_the_scale_case_runs_more_rounds_where_its_targets_are_judged(
        suite: ModuleType, bench_consume: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 partitions of one topic (where issue 26's ratios are read) get at least
    SCALE_TARGET_ROUNDS interleaved rounds; every other size, and --quick, --rounds as given;
    raw_arrow runs beside raw_fetch and both are references."""
    calls = _fake_e2e(bench_consume, monkeypatch)
    rounds_of: dict[str, int] = {}
    real = bench_consume.measure

    def measure(bootstrap: str, topic: str, partitions: int, n: int, contenders: dict[str, Any],
                rounds: int, **kw: Any) -> dict[str, list[float]]:
        rounds_of[topic] = rounds
        return cast(dict[str, list[float]], real(bootstrap, topic, partitions, n, contenders, rounds, **kw))
    monkeypatch.setattr(bench_consume, "measure", measure)
    monkeypatch.setattr(bench_consume, "idle_poll", lambda bootstrap, topic, partitions: (10.0, 1000 * partitions, 0))
    monkeypatch.setattr(suite, "have_kafkarrow", lambda: False)
    broker, _ = _fake_broker(suite)
    cases = suite.run_scale(broker, False, 3, None, 100)
    assert rounds_of == {"scale-6p-1t-0": 3, "scale-100p-1t-0": 3, "scale-1000p-1t-0": suite.SCALE_TARGET_ROUNDS,
                         "scale-1000p-3t-0,scale-1000p-3t-1,scale-1000p-3t-2": 3, "scale-5000p-1t-0": 3}
    assert suite.SCALE_TARGET_ROUNDS > 3
    assert [len(c.rates["pc_arrow"]) for c in cases] == [3, 3, suite.SCALE_TARGET_ROUNDS, 3, 3]
    assert all(c.references == ["raw_fetch", "raw_arrow", "ck_consume"] for c in cases)
    assert calls["measured"][2][3] == ["raw_fetch", "raw_arrow", "pc_arrow", "pc_poll", "ck_consume"]
    rounds_of.clear()
    suite.run_scale(broker, True, 3, None, 100)
    assert set(rounds_of.values()) == {3}
