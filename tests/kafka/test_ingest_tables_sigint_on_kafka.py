"""A continuous table ingest (``--table-format delta --trigger``) as users stop it: a real SIGINT
(Ctrl-C) to the ``pyconsumer ingest`` process, on Apache Kafka, while a producer keeps writing.
Each stop ends the process with exit 130 and the run's summary, no traceback and no JVM left;
the next start resumes from the table. After three such runs every record produced is in the
table exactly once (deltalake reads it) and the txn versions are the log ends."""
from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pyconsumer.testing import KafkaCluster, produce, sample_records

from tests.spark.sparkdata import Row, expected_rows, table_rows
from tests.spark.test_ingest_tables import _jvms

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

deltalake = pytest.importorskip("deltalake")

COMMITTED = re.compile(r"^round (\d+): read and wrote \d+ tasks? in [\d.]+ s, committed as version (\d+)")


class Run:
    """``pyconsumer ingest`` in its own process, its stderr lines in a queue as they come."""

    def __init__(self, args: list[str], app: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pyconsumer", "ingest", *args, "--master", "local[2]",
             "--conf", f"spark.app.name={app}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # a terminal's process has SIGINT's default action; a test run in the background
            # without job control ignores it, and children inherit that
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.lines: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line)
            self.lines.put(line)

    def wait_for_commit(self, timeout: float = 120.0) -> int:
        """The version of the next round that committed something."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None and self.lines.empty():
                raise AssertionError(f"no round committed; stderr:\n{''.join(self.err)}")
            try:
                line = self.lines.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            m = COMMITTED.match(line)
            if m:
                return int(m[2])

    def interrupt(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGINT)
        try:
            out, _ = self.proc.communicate(timeout=90)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        time.sleep(0.2)                  # the reader thread drains the pipe's last lines
        return self.proc.returncode, out, "".join(self.err)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the JVMs through /proc")
def test_sigint_stops_a_continuous_delta_run_and_the_next_resumes_exactly_once(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str], tmp_path: Path) -> None:
    topic = make_kafka_topic(3)
    table = str(tmp_path / "events")
    app = f"pyconsumer ingest sigint {tmp_path.name}"
    args = ["-b", kafka.bootstrap_servers, "-t", topic, "--output", table, "--table-format",
            "delta", "--trigger", "1s", "-o", "includeHeaders=true"]
    want: list[Row] = []

    def more(n: int, seed: int) -> None:
        records = sample_records(n, partitions=3, seed=seed)
        want.extend(expected_rows(topic, records, produce(kafka.bootstrap_servers, topic, records),
                                  headers=True))

    for restart in range(3):
        more(150 if restart == 0 else 45, 91 + 10 * restart)     # written while it was stopped
        run = Run(args, app)
        try:
            first = run.wait_for_commit()
            more(60, 92 + 10 * restart)               # written while the run goes on
            later = run.wait_for_commit()
            assert later > first
        finally:
            code, out, err = run.interrupt()
        assert code == 130, err
        assert "Traceback" not in err and "Exception" not in err, err
        assert re.search(r"^\s*total\s+[\d,]+\s", out, re.M), out
        deadline = time.monotonic() + 15
        while _jvms(app) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _jvms(app) == [], f"SIGINT left the run's JVM (restart {restart})"

    got = sorted(table_rows(deltalake.DeltaTable(table).to_pyarrow_table()),
                 key=lambda r: (r[0], r[1], r[2]))
    assert got == sorted(want, key=lambda r: (r[0], r[1], r[2]))
    ends = {p: max(r[2] for r in want if r[1] == p) + 1 for p in range(3)}
    t = deltalake.DeltaTable(table)
    assert {p: t.transaction_version(f"pyconsumer-{topic}-{p}") for p in range(3)} == ends
