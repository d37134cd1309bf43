"""Ctrl-C at any moment of ``pyconsumer ingest``'s start-up ends it with one line,
``pyconsumer ingest: interrupted``, exit 130: no py4j traceback (a call cut short, PySpark's
own SIGINT handler cancelling jobs through the connection a call is waiting on), no JVM left
running, no output folder left behind. Each run is its own process and JVM."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pyconsumer.testing import TansuBroker, produce, sample_records

#: seconds after the command's first line (the one that says Spark is starting): the JVM is
#: being launched, py4j connects, the SparkContext is built, the first job is planned and run
MOMENTS = (0.0, 0.7, 1.5, 3.0, 5.0, 8.0, 12.0)


def _ingest_jvms(app: str) -> list[str]:
    """Command lines of running processes that carry ``app`` (the ingest's Spark app)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if app in cmdline:
                found.append(cmdline)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the JVMs through /proc")
def test_ctrl_c_at_any_moment_of_the_start_up_prints_one_line(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path) -> None:
    topic = make_tansu_topic(3)
    produce(tansu.bootstrap, topic, sample_records(3000, partitions=3, seed=11))
    app = f"pyconsumer ingest {tmp_path.name}"    # this test's JVMs, not the suite's session
    outcomes = []
    for n, moment in enumerate(MOMENTS):
        out = tmp_path / f"out{n}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "pyconsumer", "ingest", "-b", tansu.bootstrap, "-t", topic,
             "--output", str(out), "--conf", f"spark.app.name={app}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # a terminal's process has SIGINT's default action; a test run in the background
            # without job control ignores it, and children inherit that
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            assert proc.stderr is not None
            first = proc.stderr.readline()
            time.sleep(moment)
            proc.send_signal(signal.SIGINT)
            rest_out, rest_err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        outcomes.append((moment, proc.returncode, rest_err, rest_out))
        assert first.startswith(f"ingest (batch): {topic} from {tansu.bootstrap} into {out}")
        assert first.rstrip().endswith("starting Spark (local[*])")
        if proc.returncode == 0:              # the run was done before the Ctrl-C came
            assert rest_err == "" and "total" in rest_out, (moment, rest_err)
            continue
        assert (proc.returncode, rest_err, rest_out) == (
            130, "pyconsumer ingest: interrupted\n", ""), f"Ctrl-C {moment} s after start-up"
        assert not out.exists(), f"Ctrl-C {moment} s after start-up left {out}"
        deadline = time.monotonic() + 10
        while _ingest_jvms(app) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _ingest_jvms(app) == [], f"Ctrl-C {moment} s after start-up left its JVM"
    # most moments land in the start-up, which takes longer than the first few
    assert sum(code == 130 for _, code, _, _ in outcomes) >= 4, outcomes
