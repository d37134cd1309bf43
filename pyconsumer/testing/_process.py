"""What the out-of-process test brokers share: :class:`BrokerProcess` and its helpers.

A subclass (:class:`~pyconsumer.testing.TansuBroker`, :class:`~pyconsumer.testing.NoidaBroker`)
says only how its broker differs: the command line, the line its log shows once it listens,
its name in messages, and any cleanup after a stop. Starting with a log file, waiting until
the broker answers ApiVersions, stop / restart, the context manager, cleanup of live brokers
at exit and topic admin through confluent-kafka live here.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from types import TracebackType
from typing import IO, ClassVar, TypeVar

__all__ = ["BrokerProcess", "BrokerStartError", "ProcessCluster", "free_port", "probe_api_versions",
           "remove_stale_folders", "wait_for_topic"]

from ._errors import BrokerStartError, require_module

_B = TypeVar("_B", bound="BrokerProcess")

_live: weakref.WeakSet[BrokerProcess] = weakref.WeakSet()
_live_lock = threading.Lock()



def _die_with_parent() -> None:
    """In the child before exec: be killed when the process that started it dies, so a test
    run killed with SIGKILL leaves no broker behind (Linux prctl PR_SET_PDEATHSIG)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)   # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


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


class BrokerProcess:
    """One broker process on 127.0.0.1, its output in a log file; a base for the test brokers.

    Subclasses set the class attributes and implement :meth:`_command` and
    :meth:`_ready_in_log`; :meth:`_env`, :meth:`_after_stop` and :meth:`_repr_extra` are optional.
    """

    #: the broker's name in messages ("Tansu", "noida-db"; a cluster's node may name itself)
    _name: str
    #: prefix of the temporary log file's name
    _log_prefix: ClassVar[str]
    #: text of a failed start that means the port was taken (an auto-picked port is picked again)
    _port_in_use_marker: ClassVar[str]

    def __init__(self, port: int | None, *, binary: Path, start_timeout: float, stop_timeout: float,
                 log_path: Path | None = None) -> None:
        self.host = "127.0.0.1"
        self.port = port if port is not None else free_port(self.host)
        # an auto-picked port may be taken between free_port() and the broker's bind: pick again
        self._may_repick_port = port is None
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.binary = binary
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._log_start = 0
        if log_path is None:
            fd, log = tempfile.mkstemp(prefix=f"{self._log_prefix}-{self.port}-", suffix=".log")
            os.close(fd)
            log_path = Path(log)
        self.log_path = log_path
        self.api_versions: dict[int, tuple[int, int]] = {}

    # ------------------------------------------------------------------ hooks

    def _command(self) -> list[str]:
        """The command line of one start (may prepare what it needs, e.g. a data directory)."""
        raise NotImplementedError

    def _ready_in_log(self, text: bytes) -> bool:
        """Whether the log written since this start shows the broker listening."""
        raise NotImplementedError

    def _env(self) -> dict[str, str]:
        return {**os.environ, "NO_COLOR": "1"}  # plain log lines in error messages

    def _after_stop(self) -> None:
        """Cleanup after :meth:`stop` (not after :meth:`restart`'s stop); also run by ``__del__``."""

    def _repr_extra(self) -> str:
        """Fields shown in repr() between the state and the log, each followed by ", "."""
        return ""

    # ------------------------------------------------------------------ properties

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

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

    def start(self: _B) -> _B:
        if self.is_running():
            return self
        for attempt in range(5):
            try:
                self._start_once()
                break
            except BrokerStartError as exc:
                if not (self._may_repick_port and self._port_in_use_marker in str(exc) and attempt < 4):
                    raise
                self.port = free_port(self.host)
        self._may_repick_port = False  # restart() must keep the port clients know
        return self

    def _start_once(self) -> None:
        self._spawn()
        try:
            self._wait_ready()
        except BaseException:
            self._terminate()
            raise

    def _spawn(self) -> None:
        """Start the process, not waiting for it (a cluster spawns its nodes, then waits)."""
        cmd = self._command()
        env = self._env()
        self._log_file = open(self.log_path, "ab")
        self._log_start = self._log_file.tell()
        self._log_file.write(f"\n=== start {' '.join(cmd)}\n".encode())
        self._log_file.flush()
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT, env=env,
            # PDEATHSIG follows the spawning *thread*: only the main thread lives as long as the run
            preexec_fn=_die_with_parent if threading.current_thread() is threading.main_thread() else None,
        )
        with _live_lock:
            _live.add(self)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            assert self._proc is not None
            code = self._proc.poll()
            if code is not None:
                raise BrokerStartError(
                    f"{self._name} exited with code {code} while starting on {self.bootstrap}; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            # requiring the broker's own ready line (and our process alive after the probe)
            # keeps another process listening on the port from passing for the broker
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
            f"{self._name} on {self.bootstrap} did not answer ApiVersions within {self.start_timeout} s "
            f"(last error: {last_error!r}); log {self.log_path}:\n{self.log_tail()}"
        )

    def _logged_ready(self) -> bool:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_start)
                text = f.read()
        except OSError:
            return False
        return self._ready_in_log(text)

    def _terminate(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL), without :meth:`_after_stop`."""
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

    def kill(self) -> None:
        """SIGKILL the process (a crash: no clean shutdown), without :meth:`_after_stop`."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=self.stop_timeout)
        self._terminate()

    def stop(self) -> None:
        self._terminate()
        self._after_stop()

    def restart(self: _B) -> _B:
        """Stop and start again on the same port."""
        self._terminate()
        # The old socket may linger briefly; start() retries the probe until the deadline.
        return self.start()

    def __enter__(self: _B) -> _B:
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
            self._after_stop()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"{type(self).__name__}({self.bootstrap}, {state}, {self._repr_extra()}log={self.log_path})"

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
        require_module(f"{type(self).__name__}.create_topic", "confluent_kafka")
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # test dependency only

        if not self.is_running():
            raise BrokerStartError(f"{self._name} on {self.bootstrap} is not running")
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
        require_module(f"{type(self).__name__}.delete_topic", "confluent_kafka")
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


# ------------------------------------------------------------------ clusters of processes


def remove_stale_folders(prefix: str, parent: Path | None = None) -> list[Path]:
    """Remove the ``prefix*`` folders whose owner process (``owner.pid``) is gone without
    closing them (a run ended by SIGTERM or SIGKILL: its processes die with it through
    PDEATHSIG, its folder would stay); returns the removed."""
    removed = []
    for folder in Path(parent or tempfile.gettempdir()).glob(prefix + "*"):
        try:
            pid = int((folder / "owner.pid").read_text())
        except (OSError, ValueError):
            continue                      # not ours, or still being made: leave it
        try:
            os.kill(pid, 0)
            continue                      # its process lives
        except ProcessLookupError:
            pass
        except PermissionError:
            continue                      # another user's live process
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


_C = TypeVar("_C", bound="ProcessCluster")
_live_clusters: weakref.WeakSet[ProcessCluster] = weakref.WeakSet()
_live_clusters_lock = threading.Lock()


class ProcessCluster:
    """The life of a helper that runs several processes in a folder of its own
    (:class:`KafkaCluster`, :class:`SparkStandaloneCluster`): :meth:`_make_folder` first
    removes the folders of dead runs, then makes one naming its owner process; :meth:`close`
    kills every process (:meth:`_kill_processes`) and removes the folder; whatever is still
    open when the interpreter exits is closed."""

    #: the folder name's prefix, one per kind of cluster (the stale-folder sweep keys on it)
    folder_prefix: ClassVar[str]
    folder: Path | None = None

    def start(self: _C) -> _C:
        raise NotImplementedError

    def _kill_processes(self) -> None:
        """Kill every process; best effort (close() removes the folder afterwards)."""
        raise NotImplementedError

    def _make_folder(self) -> Path:
        remove_stale_folders(self.folder_prefix)
        folder = Path(tempfile.mkdtemp(prefix=self.folder_prefix))
        (folder / "owner.pid").write_text(str(os.getpid()))
        self.folder = folder
        with _live_clusters_lock:
            _live_clusters.add(self)
        return folder

    def close(self) -> None:
        """Kill every process the cluster started and remove its folder. Idempotent."""
        self._kill_processes()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        with _live_clusters_lock:
            _live_clusters.discard(self)

    def __enter__(self: _C) -> _C:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never from a finalizer
            pass


@atexit.register
def _close_live_clusters() -> None:
    with _live_clusters_lock:
        clusters = list(_live_clusters)
    for cluster in clusters:
        try:
            cluster.close()
        except Exception:  # noqa: BLE001 - the others still go
            pass
