"""The benchmark suite's machinery (not its timings): `python -m benchmarks` against Tansu
writes RESULTS.md with a row per contender that ran and a PNG chart per case."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.tansu


def test_the_suite_writes_its_tables_and_charts(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--cases", "e2e1", "--only", "pc_arrow", "pc_poll",
         "--records", "20000", "--rounds", "2", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = (tmp_path / "RESULTS.md").read_text()
    assert "Command: `python -m benchmarks --cases e2e1 --only pc_arrow pc_poll --records 20000" in text
    assert "Broker -> Python, 20,000 x 100 B over 1 partition (Tansu" in text
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| (\w+) \| [^|]* \| ([\d,]+) \|.*$", text, re.M)}
    # the chosen contenders and the case's references (raw Fetch ceiling, confluent-kafka), no others
    assert set(rows) == {"raw_fetch", "pc_arrow", "pc_poll", "ck_consume"}, text
    # raw_fetch is its own reference: 1.00 in its column; every rate is a positive number
    assert re.search(r"^\| raw_fetch \|.*\| 1\.00 \| [\d.]+ \|$", text, re.M), text
    for row in rows.values():
        best = int(row.split("|")[3].strip().replace(",", ""))
        assert best > 0, row
    assert "| poll_arrow vs the raw Fetch loop, 1 partition(s) | >= 1x |" in text
    png = tmp_path / "results" / "e2e1.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![" in text and "(results/e2e1.png)" in text
    # two rounds ran, each contender once per round
    assert len(re.findall(r"round \d pc_arrow ", proc.stdout)) == 2, proc.stdout


def test_an_unknown_case_is_refused() -> None:
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--cases", "nope"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "invalid choice: 'nope'" in proc.stderr
