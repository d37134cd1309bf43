"""noida-db (a single-binary server that also speaks Kafka) as an out-of-process test broker.

The binary ships in the ``noida-db`` wheel (``noida_db/noida-db``). Only its Kafka service is
started. It is the one offline broker here whose ListOffsets by timestamp is right (Tansu
answers 0, librdkafka's mock -1), so it backs the timestamp tests; it also keeps commit
metadata. Its data lives in ``<data dir>/kafka.json``, written behind: a temporary data dir
is made for each broker unless one is given, and removed by :meth:`NoidaBroker.stop`.
Unlike Tansu it enforces ``retention.ms`` on record timestamps, so :meth:`create_topic` makes
topics that keep everything unless told otherwise.
"""
from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import time
import weakref
from pathlib import Path
from types import TracebackType
from typing import IO

from ._tansu import BrokerStartError, free_port, probe_api_versions, wait_for_topic

__all__ = ["NoidaBroker", "find_noida_binary"]

_live: "weakref.WeakSet[NoidaBroker]" = weakref.WeakSet()
_live_lock = threading.Lock()


def find_noida_binary() -> Path:
    """Path of the ``noida-db`` executable inside the installed noida-db package."""
    spec = importlib.util.find_spec("noida_db")
    if spec is None or not spec.submodule_search_locations:
        raise BrokerStartError(
            "noida-db broker not available: the 'noida-db' package is not installed "
            "(pip install noida-db, or pip install -e '.[test]')"
        )
    name = "noida-db.exe" if os.name == "nt" else "noida-db"
    for location in spec.submodule_search_locations:
        candidate = Path(location) / name
        if candidate.is_file():
            if not os.access(candidate, os.X_OK):
                # the wheel's own launcher (noida_db.cli) sets the bit the same way
                try:
                    candidate.chmod(0o755)
                except OSError as exc:
                    raise BrokerStartError(
                        f"noida-db binary is not executable: {candidate} ({exc})") from None
            return candidate
    raise BrokerStartError(
        f"noida-db binary not found in noida_db at {list(spec.submodule_search_locations)}"
    )


class NoidaBroker:
    """One noida-db process on 127.0.0.1 serving only Kafka.

    >>> with NoidaBroker() as broker:
    ...     broker.create_topic("t", partitions=3)
    ...     broker.bootstrap  # "127.0.0.1:PORT"

    ``data_dir``: where noida keeps its data; by default a fresh temporary directory, made
    at start and removed by :meth:`stop`. A given directory is never removed.
    :meth:`restart` keeps the port and the data.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        start_timeout: float = 20.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.host = "127.0.0.1"
        self.port = port if port is not None else free_port(self.host)
        # an auto-picked port may be taken between free_port() and noida's bind: pick again
        self._may_repick_port = port is None
        self._given_data_dir = Path(data_dir) if data_dir is not None else None
        self._temp_data_dir: Path | None = None
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.binary = find_noida_binary()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._log_start = 0
        fd, log = tempfile.mkstemp(prefix=f"noida-{self.port}-", suffix=".log")
        os.close(fd)
        self.log_path = Path(log)
        self.api_versions: dict[int, tuple[int, int]] = {}

    # ------------------------------------------------------------------ properties

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def data_dir(self) -> Path | None:
        """The data directory in use (None before the first start of a temporary one)."""
        return self._given_data_dir or self._temp_data_dir

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, max_bytes: int = 4000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return "<no log>"
        return data[-max_bytes:].decode("utf-8", "replace")

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "NoidaBroker":
        if self.is_running():
            return self
        for attempt in range(5):
            try:
                self._start_once()
                break
            except BrokerStartError as exc:
                if not (self._may_repick_port and "already in use" in str(exc) and attempt < 4):
                    raise
                self.port = free_port(self.host)
        self._may_repick_port = False  # restart() must keep the port clients know
        return self

    def _start_once(self) -> None:
        data_dir = self.data_dir
        if data_dir is None:
            data_dir = self._temp_data_dir = Path(tempfile.mkdtemp(prefix="noida-data-"))
        data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            str(self.binary), "start",
            "--only", "kafka",
            "--host", self.host,
            "--kafka-port", str(self.port),
            "--data-dir", str(data_dir),
        ]
        self._log_file = open(self.log_path, "ab")
        self._log_start = self._log_file.tell()
        self._log_file.write(f"\n=== start {' '.join(cmd)}\n".encode())
        self._log_file.flush()
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT,
            env={**os.environ, "NO_COLOR": "1"},
        )
        with _live_lock:
            _live.add(self)
        try:
            self._wait_ready()
        except BaseException:
            self._terminate()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            assert self._proc is not None
            code = self._proc.poll()
            if code is not None:
                raise BrokerStartError(
                    f"noida-db exited with code {code} while starting on {self.bootstrap}; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            # noida prints "kafka <host>:<port>" once it listens; requiring it (and our
            # process alive after the probe) keeps another listener from passing for noida
            if self._logged_ready():
                try:
                    versions = probe_api_versions(self.host, self.port, timeout=1.0)
                    if self._proc.poll() is None:
                        self.api_versions = versions
                        return
                except (OSError, ConnectionError, struct.error) as exc:
                    last_error = exc
            time.sleep(0.02)
        raise BrokerStartError(
            f"noida-db on {self.bootstrap} did not answer ApiVersions within "
            f"{self.start_timeout} s (last error: {last_error!r}); log {self.log_path}:\n"
            f"{self.log_tail()}"
        )

    def _logged_ready(self) -> bool:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_start)
                text = f.read()
        except OSError:
            return False
        return any(line.split() == [b"kafka", self.bootstrap.encode()]
                   for line in text.splitlines())

    def _terminate(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL), keeping the data directory."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=self.stop_timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=self.stop_timeout)
            else:
                proc.wait()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        with _live_lock:
            _live.discard(self)

    def stop(self) -> None:
        """Stop the process; a temporary data directory is removed with all its data."""
        self._terminate()
        temp, self._temp_data_dir = self._temp_data_dir, None
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)

    def restart(self) -> "NoidaBroker":
        """Stop and start again on the same port with the same data. noida writes behind:
        what was acknowledged just before the stop may be lost."""
        self._terminate()
        return self.start()

    def __enter__(self) -> "NoidaBroker":
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop and delete the log file (use stop() to keep the log for inspection)."""
        self.stop()
        try:
            self.log_path.unlink()
        except OSError:
            pass

    def __del__(self) -> None:
        try:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait(timeout=self.stop_timeout)
            if self._temp_data_dir is not None:
                shutil.rmtree(self._temp_data_dir, ignore_errors=True)
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"NoidaBroker({self.bootstrap}, {state}, data={self.data_dir}, log={self.log_path})"

    # ------------------------------------------------------------------ admin

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        *,
        config: dict[str, str] | None = None,
        timeout: float = 15.0,
    ) -> str:
        """Create a topic with confluent-kafka's AdminClient; wait until metadata shows it.

        ``retention.ms`` is -1 (keep forever) unless ``config`` says otherwise: noida applies
        the 7-day default to record timestamps about a second after they are written, even
        in the active segment, so records with old explicit timestamps (sample_records'
        are from 2023) would vanish under a test."""
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # test dependency only

        if not self.is_running():
            raise BrokerStartError(f"noida-db on {self.bootstrap} is not running")
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        settings = {"retention.ms": "-1", **(config or {})}
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1, config=settings)],
            operation_timeout=timeout,
            request_timeout=timeout,
        )
        futures[name].result(timeout=timeout)
        wait_for_topic(admin, name, partitions, timeout)
        return name

    def delete_topic(self, name: str, *, timeout: float = 15.0) -> None:
        from confluent_kafka.admin import AdminClient  # test dependency only

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        admin.delete_topics([name], operation_timeout=timeout, request_timeout=timeout)[name].result(timeout=timeout)


@atexit.register
def _stop_all_brokers() -> None:
    with _live_lock:
        brokers = list(_live)
    for broker in brokers:
        try:
            broker.stop()
        except Exception:
            pass
