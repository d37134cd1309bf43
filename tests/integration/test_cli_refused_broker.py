"""A broker that refuses the connection ends ``consume`` and ``ingest`` with one line: the
library's "cannot connect ...; retrying" warning, which the error line at once repeats, is not
printed too (warnings are held a second and dropped when the command ends first)."""
from __future__ import annotations

import io
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyconsumer.console import library_warnings
from pyconsumer.testing import free_port


@pytest.mark.parametrize("command", ["consume", "ingest"])
def test_a_refused_broker_is_one_line(command: str, tmp_path: Path) -> None:
    if command == "ingest":
        pytest.importorskip("pyspark")
    server = f"127.0.0.1:{free_port()}"          # nothing listens there: refused at once
    args = (["consume", "-b", server, "-t", "t", "--timeout-ms", "5000"] if command == "consume"
            else ["ingest", "-b", server, "-t", "t", "--output", str(tmp_path / "out")])
    done = subprocess.run([sys.executable, "-m", "pyconsumer", *args], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and done.stdout == ""
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"pyconsumer {command}: ")
    assert f"every bootstrap server refused the connection ({server})" in lines[0]
    assert not (tmp_path / "out").exists()


def test_held_warnings_are_written_only_when_the_block_outlives_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logging.getLogger(), "handlers", [])   # pytest's own capture
    log = logging.getLogger("pyconsumer.net.client")
    err = io.StringIO()
    with library_warnings(err, "consume", delay=0.2):
        log.warning("dropped: the block ends first")
    time.sleep(0.4)
    assert err.getvalue() == ""
    with library_warnings(err, "consume", delay=0.2):
        log.warning("still waiting for %s", "127.0.0.1:1")
        time.sleep(0.6)
    assert err.getvalue() == "pyconsumer consume: warning: still waiting for 127.0.0.1:1\n"
