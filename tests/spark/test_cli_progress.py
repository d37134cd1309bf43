"""No long silence on a terminal: while Spark starts (and the demo's other long steps run),
``pyconsumer ingest`` and ``pyconsumer demo`` redraw a line with the seconds taken so far;
off a terminal nothing extra is written. The demo's last line reports only what is its own
in /tmp (its Delta table's folder removed)."""
from __future__ import annotations

import importlib.util
import io
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyconsumer.console import StatusLine
from pyconsumer.demo import _left_by_the_demo, run_demo
from pyconsumer.testing import TansuBroker, produce, sample_records


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_ticking_redraws_the_seconds_on_a_terminal_only() -> None:
    term = Terminal()
    with StatusLine(term).ticking("starting Spark (local[*]) ...", interval=0.05):
        time.sleep(1.2)
    text = term.getvalue()
    assert text.startswith("\r\x1b[2Kstarting Spark (local[*]) ... 0 s")
    assert "\r\x1b[2Kstarting Spark (local[*]) ... 1 s" in text
    assert text.endswith("\r\x1b[2K")                       # cleared when done
    plain = io.StringIO()
    with StatusLine(plain).ticking("starting Spark (local[*]) ...", interval=0.05):
        time.sleep(0.2)
    assert plain.getvalue() == ""


def test_the_demo_reports_only_its_own_kind_of_files_in_tmp() -> None:
    new = {"lk", "spark-4f1e", "blockmgr-2a", "tansu-4321-x", "pyconsumer-spark-9", "report.txt",
           "pyconsumer-kafka-x1",                # a test Kafka's folder: not the demo's
           "pyconsumer-demo-k3x9"}               # the demo's own (its Delta table's)
    assert _left_by_the_demo(new) == ["blockmgr-2a", "pyconsumer-demo-k3x9", "pyconsumer-spark-9",
                                      "spark-4f1e", "tansu-4321-x"]
    # a session the caller gave the demo keeps its own files; the demo's folder is its own
    assert _left_by_the_demo(new, started_spark=False) == ["pyconsumer-demo-k3x9", "tansu-4321-x"]


def test_the_demo_on_a_terminal_shows_each_long_step_as_it_runs(spark: Any) -> None:
    term = Terminal()
    before = set(os.listdir("/tmp"))
    assert run_demo(records=600, partitions=2, spark=spark, out=term) == 0
    text = term.getvalue()
    delta = importlib.util.find_spec("deltalake") is not None
    for step in ("starting a local Tansu broker", "producing 600 JSON records with "
                 "confluent-kafka", "the first query (it also starts Spark's Python workers)",
                 "df.count()", 'df.groupBy("partition")',
                 *(("writing the Delta table", "reading the Delta table back") if delta else ())):
        assert re.search(r"\r\x1b\[2K  " + re.escape(step) + r" \.\.\. \d+ s", text), step
    assert "nothing of the demo's left in /tmp" in text
    if delta:
        # the table in a folder of the demo's in /tmp, gone with the rest of the demo
        where = re.search(r"the Delta table at (/\S+/(pyconsumer-demo-[^/]+)/pyconsumer-demo) "
                          r"\(removed at the end\) holds 600 records, every record produced once: "
                          r'read it with deltalake\.DeltaTable\("\1"\)\.to_pyarrow_table\(\)', text)
        assert where is not None, text
        assert where.group(2) not in set(os.listdir("/tmp")) - before
        assert not os.path.exists(where.group(1))
        assert "cleaned up: broker stopped, the Delta table removed, " in text
    lines = [line for line in re.sub(r"\r\x1b\[2K[^\r\n]*", "", text).splitlines() if line]
    assert lines[-1].startswith("cleaned up: broker stopped, ")


def test_ingest_on_a_terminal_counts_the_seconds_of_spark_s_start(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path) -> None:
    topic = make_tansu_topic(2)
    produce(tansu.bootstrap, topic, sample_records(40, partitions=2, seed=8))
    main_fd, term_fd = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pyconsumer", "ingest", "-b", tansu.bootstrap,
                             "-t", topic, "--output", str(tmp_path / "out"),
                             "--master", "local[1]"],
                            stdout=subprocess.PIPE, stderr=term_fd, stdin=subprocess.DEVNULL)
    os.close(term_fd)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([main_fd], [], [], 120)
            if not ready:
                break
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:                  # the terminal's last writer has gone
                break
            if not chunk:
                break
            seen += chunk
        out, _ = proc.communicate(timeout=120)
    finally:
        os.close(main_fd)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = seen.decode("utf-8", "replace")
    assert proc.returncode == 0, text
    assert re.search(r"\r\x1b\[2Kstarting Spark \(local\[1\]\) \.\.\. \d+ s", text), text
    # then the batch: planning, or its tasks once Spark knows them
    assert re.search(r"\r\x1b\[2Kbatch: (planning the read|\[[#.]+\] tasks \d+/\d+ done)",
                     text), text
    assert b"total" in out
