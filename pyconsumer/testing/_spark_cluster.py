"""A Spark standalone cluster on loopback: :class:`SparkStandaloneCluster`.

One master and N workers, each a JVM started from PySpark's own launch classes
(``<pyspark>/bin/spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``),
so the cluster runs exactly the Spark the driver has. Executors are the workers' children and
run this interpreter's Python workers (``PYSPARK_PYTHON``), so ``pyconsumer`` imports there.
Logs, the workers' work folders (executor stdout/stderr) and scratch space live in one
temporary folder, removed by :meth:`SparkStandaloneCluster.close`.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any

from pyconsumer._install import install_hint

from ._errors import BrokerStartError
from ._maven import require_tool
from ._process import ProcessCluster, _die_with_parent, free_port
from ._process import remove_stale_folders as _remove_stale_folders

__all__ = ["SparkStandaloneCluster", "SparkClusterError", "pyspark_home"]

_FOLDER_PREFIX = "pyconsumer-spark-cluster-"

# Daemons and executors only need to start fast and hold a little data: C1 JIT, serial GC,
# no hsperfdata files in /tmp
_FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"


class SparkClusterError(BrokerStartError):
    """The cluster (or one of its processes) could not start or did not come up in time."""


def pyspark_home() -> Path:
    """The installed PySpark's folder (its ``bin/spark-class`` and ``jars/``)."""
    try:
        import pyspark
    except ImportError as exc:
        raise SparkClusterError(f"SparkStandaloneCluster needs pyspark: {install_hint('spark')}") from exc
    home = Path(pyspark.__file__).parent
    if not (home / "bin" / "spark-class").exists():
        raise SparkClusterError(f"PySpark at {home} has no bin/spark-class to start a cluster with")
    return home


def remove_stale_folders(parent: Path | None = None) -> list[Path]:
    """The folders of Spark clusters whose process died without closing them, removed."""
    return _remove_stale_folders(_FOLDER_PREFIX, parent)


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc; elsewhere none are found)."""
    out: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                # the command name may hold spaces and parentheses: the fields follow the last ")"
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.append(int(entry))
    return out


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = [pid]
    while todo:
        kids = _children(todo.pop())
        found += kids
        todo += kids
    return found


class _Daemon:
    """One master or worker JVM, its output in its own log file."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log_path: Path) -> None:
        self.name = name
        self.command = command
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def spawn(self) -> None:
        self._log = open(self.log_path, "ab")
        self._log.write(f"\n=== start {' '.join(self.command)}\n".encode())
        self._log.flush()
        self.proc = subprocess.Popen(
            self.command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            env=self.env,
            # spark-class execs the JVM, which keeps PDEATHSIG: a killed test run leaves no
            # daemon (only the main thread lives as long as the run)
            preexec_fn=_die_with_parent if threading.current_thread() is threading.main_thread() else None)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, max_bytes: int = 4000) -> str:
        try:
            return self.log_path.read_bytes()[-max_bytes:].decode("utf-8", "replace")
        except OSError:
            return "<no log>"

    def check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise SparkClusterError(f"the Spark {self.name} exited with code {self.proc.returncode} "
                                    f"while starting; log {self.log_path}:\n{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL the JVM and everything under it (the executors and their Python workers:
        a crashed machine takes them all)."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                victims = _descendants(proc.pid)
                proc.kill()
                for pid in victims:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


class SparkStandaloneCluster(ProcessCluster):
    """A Spark standalone master and ``workers`` workers on 127.0.0.1, each its own JVM.

    >>> with SparkStandaloneCluster(workers=2) as cluster:
    ...     spark = SparkSession.builder.master(cluster.master_url).getOrCreate()
    ...     cluster.kill_worker(0); cluster.restart_worker(0)

    Each worker offers ``cores`` cores and ``memory`` to executors (ask for less than that
    with ``spark.executor.memory``, e.g. 512m). :meth:`start` returns once the master lists
    every worker ALIVE. Raises :class:`SparkClusterError` (a BrokerStartError) naming the
    process that failed, with its log's tail; MissingToolError without Java.
    """

    folder_prefix = _FOLDER_PREFIX

    def __init__(self, workers: int = 2, *, cores: int = 1, memory: str = "1g",
                 daemon_memory: str = "256m", start_timeout: float = 120.0) -> None:
        if workers < 1:
            raise ValueError(f"a cluster has at least one worker, got workers={workers}")
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.daemon_memory = daemon_memory
        self.start_timeout = start_timeout
        self.folder: Path | None = None
        self.master_port = 0
        self.master_webui_port = 0
        self._master: _Daemon | None = None
        self._workers: list[_Daemon | None] = []
        #: worker index -> its RPC port now (a restart takes a new one: see restart_worker)
        self._worker_ports: list[int] = []
        self.startup_seconds: float | None = None

    # ------------------------------------------------------------------ addresses

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:<port>``, what ``SparkSession.builder.master`` takes."""
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def master_webui_url(self) -> str:
        return f"http://127.0.0.1:{self.master_webui_port}"

    def worker_dir(self, index: int) -> Path:
        """Worker ``index``'s work folder: ``<app id>/<executor id>/`` for each executor it ran
        (also the executor's working directory, so its Python workers' ``os.getcwd()``)."""
        assert self.folder is not None, "the cluster has not been started"
        self._check_index(index)
        return self.folder / f"worker{index}" / "work"

    def worker_pid(self, index: int) -> int | None:
        self._check_index(index)
        w = self._workers[index]
        return w.pid if w is not None and w.is_running() else None

    def worker_log(self, index: int) -> Path:
        assert self.folder is not None, "the cluster has not been started"
        self._check_index(index)
        return self.folder / "logs" / f"worker{index}.log"

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.workers:
            raise IndexError(f"no worker {index}; the cluster has workers 0..{self.workers - 1}")

    # ------------------------------------------------------------------ the master's view

    def state(self, timeout: float = 5.0) -> dict[str, Any]:
        """The master's JSON (``/json/``): workers with their state, apps, ``status``."""
        with urllib.request.urlopen(f"{self.master_webui_url}/json/", timeout=timeout) as r:
            data: dict[str, Any] = json.load(r)
        return data

    def alive_workers(self) -> list[dict[str, Any]]:
        """The master's ALIVE workers (each with ``id``, ``host``, ``port``, ``cores``...)."""
        return [w for w in self.state().get("workers", []) if w.get("state") == "ALIVE"]

    # ------------------------------------------------------------------ lifecycle

    def _env(self) -> dict[str, str]:
        assert self.folder is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
        env.update({
            "SPARK_HOME": str(pyspark_home()),
            "SPARK_CONF_DIR": str(self.folder / "conf"),   # no spark-env.sh from elsewhere
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.folder / "logs"),
            "SPARK_PID_DIR": str(self.folder),
            "SPARK_DAEMON_MEMORY": self.daemon_memory,
            "SPARK_DAEMON_JAVA_OPTS": f"{_FAST_JVM} -Djava.io.tmpdir={self.folder / 'tmp'}",
            # the executors' Python workers: this interpreter, where pyconsumer is installed
            "PYSPARK_PYTHON": sys.executable,
            "TMPDIR": str(self.folder / "tmp"),
        })
        return env

    def _spark_class(self) -> str:
        return str(pyspark_home() / "bin" / "spark-class")

    def start(self) -> SparkStandaloneCluster:
        """Start the master, then the workers; wait until the master lists them all ALIVE."""
        if self._master is not None:
            return self
        require_tool("SparkStandaloneCluster", "java")
        pyspark_home()
        t0 = time.monotonic()
        folder = self._make_folder()
        for sub in ("conf", "logs", "tmp"):
            (folder / sub).mkdir()
        try:
            self.master_port = free_port()
            self.master_webui_port = free_port()
            env = dict(self._env())
            # a worker that vanishes without a word is declared dead after this (default 60 s)
            env["SPARK_MASTER_OPTS"] = "-Dspark.worker.timeout=15"
            self._master = _Daemon("master", [
                self._spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                "--port", str(self.master_port), "--webui-port", str(self.master_webui_port)],
                env, folder / "logs" / "master.log")
            self._master.spawn()
            self._wait(lambda: self.state().get("status") == "ALIVE", [self._master],
                       "the master to answer on its web UI")
            self._workers = [None] * self.workers
            self._worker_ports = [0] * self.workers
            for i in range(self.workers):
                self._spawn_worker(i)
            self._wait_for_workers()
        except BaseException:
            self.close()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _spawn_worker(self, index: int) -> None:
        assert self.folder is not None
        work = self.worker_dir(index)
        work.mkdir(parents=True, exist_ok=True)
        port = free_port()
        while port in self._worker_ports or port in (self.master_port, self.master_webui_port):
            port = free_port()
        self._worker_ports[index] = port
        env = self._env()
        # executors (and their Python workers) keep their scratch files in the worker's folder
        env["SPARK_WORKER_DIR"] = str(work)
        env["SPARK_LOCAL_DIRS"] = str(work.parent / "local")
        worker = _Daemon(f"worker {index}", [
            self._spark_class(), "org.apache.spark.deploy.worker.Worker", self.master_url,
            "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port()),
            "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work)],
            env, self.worker_log(index))
        self._workers[index] = worker
        worker.spawn()

    def _alive_ports(self) -> set[int]:
        return {int(w["port"]) for w in self.alive_workers()}

    def _wait_for_workers(self) -> None:
        want = set(self._worker_ports)
        daemons = [d for d in [self._master, *self._workers] if d is not None]
        self._wait(lambda: want <= self._alive_ports(), daemons,
                   f"the master to list {len(want)} ALIVE workers (ports {sorted(want)})")

    def _wait(self, ready: Any, daemons: list[_Daemon], what: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            for d in daemons:
                d.check_alive()
            try:
                if ready():
                    return
            except (OSError, urllib.error.URLError, ValueError) as exc:
                last = exc              # the web UI is not up yet
            time.sleep(0.2)
        tails = "\n".join(f"--- {d.name} ({d.log_path}):\n{d.log_tail(2000)}" for d in daemons)
        raise SparkClusterError(f"waited {self.start_timeout:.0f} s for {what} "
                                f"(last error: {last!r}):\n{tails}")

    def kill_worker(self, index: int) -> None:
        """SIGKILL worker ``index``'s JVM and its executor JVMs (with their Python workers):
        the machine is gone, nothing is shut down cleanly."""
        self._check_index(index)
        worker = self._workers[index]
        if worker is not None:
            worker.kill()

    def restart_worker(self, index: int) -> None:
        """Start worker ``index`` again (killing it first if it runs), on a new RPC port (the
        master may not have dropped the old address yet); return once the master lists it
        ALIVE."""
        self.kill_worker(index)
        self._spawn_worker(index)
        self._wait_for_workers()

    def _kill_processes(self) -> None:
        for daemon in [*self._workers[::-1], self._master]:
            if daemon is not None:
                try:
                    daemon.kill()
                except Exception:  # noqa: BLE001 - best effort: the others still go
                    pass
        self._workers = []
        self._master = None

    def __repr__(self) -> str:
        if self._master is None:
            return f"SparkStandaloneCluster(workers={self.workers}, stopped)"
        up = ", ".join(f"{i}:{'up' if w is not None and w.is_running() else 'down'}"
                       for i, w in enumerate(self._workers))
        return f"SparkStandaloneCluster({self.master_url}, [{up}], {self.folder})"


