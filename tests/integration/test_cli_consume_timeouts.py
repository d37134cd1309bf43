"""``pyconsumer consume`` against a port that accepts TCP connections and never answers (a
listening socket on 127.0.0.1 that reads nothing and writes nothing): --timeout-ms bounds the
wait for a broker at the start too, in every mode (exit 1 and one line naming the broker and
what it did), and without --timeout-ms the warnings say what the connection attempts really do
(each gets socket.connection.setup.timeout.ms again: the timeout grows only while attempts
fail before TCP is up) before default.api.timeout.ms ends the command."""
from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from pyconsumer.cli import main


class SilentListener:
    """Accepts every connection on 127.0.0.1 and keeps it open without a byte either way."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.port: int = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-listener", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def silent() -> Iterator[SilentListener]:
    listener = SilentListener()
    yield listener
    listener.close()


@pytest.mark.parametrize("mode", [["-t", "t"], ["--pattern", "t"], ["-t", "t", "-g", "g"],
                                  ["--pattern", "t", "-g", "g"]],
                         ids=["topic", "pattern", "group", "group-pattern"])
def test_timeout_ms_bounds_the_wait_for_a_broker(capsys: pytest.CaptureFixture[str],
                                                 silent: SilentListener, mode: list[str]) -> None:
    started = time.monotonic()
    code = main(["consume", "-b", f"127.0.0.1:{silent.port}", *mode, "--timeout-ms", "1000"])
    took = time.monotonic() - started
    captured = capsys.readouterr()
    where = f"127.0.0.1:{silent.port}"
    assert (code, captured.out) == (1, "")
    assert captured.err == (
        f"pyconsumer consume: no broker of {where} answered within 1000 ms (--timeout-ms): "
        f"node -1 ({where}): connection still negotiating; {where} accepted the connection and "
        f"has not answered ApiVersions (the first Kafka request) yet\n")
    assert silent.accepted                  # it did connect: the silence is the broker's
    assert 1.0 <= took < 1.0 + 4.0          # a bound, far below default.api.timeout.ms (60 s)


def test_without_timeout_ms_the_warnings_say_what_the_attempts_do(
        silent: SilentListener) -> None:
    """Each attempt times out after socket.connection.setup.timeout.ms (+-20 % jitter) and the
    next gets as long again, since TCP was up; the warnings say that (they said the timeout
    doubled per failed attempt) and read as the command's own lines."""
    where = f"127.0.0.1:{silent.port}"
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pyconsumer", "consume", "-b", where, "-t", "t",
         "-X", "default.api.timeout.ms=2500", "-X", "socket.connection.setup.timeout.ms=400",
         "-X", "socket.connection.setup.timeout.max.ms=3000", "-X", "reconnect.backoff.ms=50",
         "-X", "reconnect.backoff.max.ms=50"],
        capture_output=True, text=True, timeout=30)
    took = time.monotonic() - started
    assert (proc.returncode, proc.stdout) == (1, "")
    lines = proc.stderr.splitlines()
    warning = re.compile(
        rf"pyconsumer consume: warning: cannot connect to any of bootstrap.servers \({where}\); "
        rf"retrying: connection setup to node -1 \({where}\) did not finish within "
        rf"socket.connection.setup.timeout.ms=400 \(negotiating\); this attempt had "
        rf"(?P<ms>[0-9]+) ms \(the timeout grows only while attempts fail before TCP and TLS "
        rf"are up\); {where} accepted the connection but did not answer ApiVersions \(the "
        rf"first Kafka request\): is it a Kafka listener\?")
    matches = [warning.fullmatch(x) for x in lines[:-1]]
    assert all(matches) and len(matches) >= 3, proc.stderr
    # what the text says is what happened: every attempt had 400 ms +-20 %, none doubled
    assert all(320 <= int(m["ms"]) <= 480 for m in matches if m), proc.stderr
    assert lines[-1].startswith(f"pyconsumer consume: no broker of {where} could be reached "
                                f"within 2500 ms ("), proc.stderr
    assert took < 2.5 + 8.0
