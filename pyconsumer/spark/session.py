"""pyconsumer's one Spark-session manager: :func:`local_session` (a SparkSession set up for
pyconsumer's source: the CLI, the demo, tests, benchmarks) and :func:`temporary_session` (one
whose scratch files live in a temporary directory removed with it: the commands').

Spark's Python workers are started by the JVM; unless ``PYSPARK_PYTHON`` names this
interpreter they run whatever ``python3`` is on PATH, which may not have pyconsumer or pyarrow.
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pyconsumer.spark.java import check_java
from pyconsumer._install import install_hint
from pyconsumer.spark.logs import JVM_NOISE, QuietPy4J, jvm_stderr_without, log4j2_java_options

__all__ = ["local_session", "temporary_session", "SPARK_MISSING"]

#: the one sentence a user sees when the spark extra is missing
SPARK_MISSING = f"this needs PySpark (and Java 17): {install_hint('spark')}"

# C1-only JIT: the JVM starts about twice as fast, but Arrow throughput drops 2-3x.
# For test suites only, never for benchmarks.
FAST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _jvm_running() -> bool:
    """True when this process already talks to a JVM (a session, a notebook's gateway)."""
    from pyspark import SparkContext

    return (SparkContext._gateway is not None
            or "PYSPARK_GATEWAY_PORT" in os.environ)


def local_session(master: str = "local[2]", *, app_name: str = "pyconsumer",
                  fast_jvm: bool = False, local_dir: str | None = None,
                  java_options: str = "", conf: Mapping[str, Any] | None = None,
                  log_level: str | None = "error") -> Any:
    """Get or create a SparkSession with pyconsumer's source registered.

    ``fast_jvm`` trades throughput for start-up time (tests); ``local_dir`` puts Spark's
    scratch files (shuffle, block manager, the JVM's temporary files) there instead of /tmp;
    ``java_options`` are more driver JVM flags. Spark logs on stderr at ``log_level`` (error
    by default: none of the JVM's start-up lines and warnings; None keeps Spark's own log4j2
    defaults, and so does a ``-Dlog4j2.configurationFile`` of the caller's). Before a JVM is
    started, the Java it would run is checked (:class:`~pyconsumer.spark.java.JavaError`)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        # loopback only for a local master: on a cluster the executors must reach the driver
        # at an address of this machine they can route to
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise ImportError(SPARK_MISSING) from exc
    settings = dict(conf or {})
    starting = not _jvm_running()
    if starting:
        check_java()
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.shuffle.partitions", "4"))
    flags = [FAST_JVM_OPTIONS] if fast_jvm else []
    if local_dir is not None:
        builder = builder.config("spark.local.dir", local_dir)
        # the JVM unpacks native codecs (lz4-java, snappy) into java.io.tmpdir: keep them too
        flags.append(f"-Djava.io.tmpdir={local_dir}")
    if java_options:
        flags.append(java_options)
    extra = str(settings.pop("spark.driver.extraJavaOptions", ""))
    if extra:
        flags.append(extra)
    if log_level is not None and "log4j2.configurationFile" not in " ".join(flags):
        flags.append(log4j2_java_options(log_level))
    if flags:
        builder = builder.config("spark.driver.extraJavaOptions", " ".join(flags))
    for key, value in settings.items():
        builder = builder.config(key, value)
    if starting and log_level is not None:
        with jvm_stderr_without(JVM_NOISE):
            spark = builder.getOrCreate()
    else:
        spark = builder.getOrCreate()
    _quiet_accumulator_hangups()
    from pyconsumer.spark import register
    register(spark)
    return spark


def _quiet_accumulator_hangups() -> None:
    """A JVM stopped by Ctrl-C mid-job closes PySpark's accumulator connection mid-read;
    socketserver prints that EOFError as a traceback from its thread, after the command's one
    line. A hang-up there is the end of the session, not an error to show."""
    try:
        from pyspark import accumulators
    except ImportError:
        return
    for name in ("AccumulatorTCPServer", "AccumulatorUnixServer", "AccumulatorServer"):
        server = getattr(accumulators, name, None)
        if server is None or getattr(server, "_pyconsumer_quiet", False):
            continue
        shown = server.handle_error

        def handle_error(self: Any, request: Any, client_address: Any, shown: Any = shown) -> None:
            if isinstance(sys.exc_info()[1], (EOFError, ConnectionError)):
                return
            shown(self, request, client_address)

        server.handle_error = handle_error
        server._pyconsumer_quiet = True


def _kill_children_mentioning(marker: str, timeout: float = 5.0) -> None:
    """Kill this process's children whose command line contains ``marker`` and wait until
    they are dead (Linux /proc; elsewhere nothing is done). They are not reaped: the Popen
    that started one must see its exit status (PySpark waits for the JVM through it)."""
    if not os.path.isdir("/proc"):
        return
    me, needle = os.getpid(), marker.encode()
    killed = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if _parent_and_state(entry)[0] != me:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if needle not in f.read():
                    continue
            os.kill(int(entry), signal.SIGKILL)
            killed.append(entry)
        except (OSError, ValueError, IndexError):
            continue
    deadline = time.monotonic() + timeout
    for pid in killed:
        while time.monotonic() < deadline:
            try:
                if _parent_and_state(pid)[1] in ("Z", "X"):
                    break
            except (OSError, ValueError, IndexError):
                break                        # gone (reaped by its Popen)
            time.sleep(0.02)


def _parent_and_state(pid: str) -> tuple[int, str]:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return int(fields[1]), fields[0].decode()


def _start_interruptibly(start: Callable[[], Any], marker: str) -> Any:
    """``start()`` (a session's start-up) on a thread of its own, so that a Ctrl-C at any
    moment of it lands in this (main) thread's wait, never inside a py4j call: the JVM being
    started (a child whose command line has ``marker``) is killed and KeyboardInterrupt
    raised. On that thread PySpark installs no SIGINT handler of its own either."""
    if threading.current_thread() is not threading.main_thread():
        try:
            return start()
        except BaseException:
            _kill_children_mentioning(marker)
            raise
    outcome: dict[str, Any] = {}
    # an Event, not Thread.join: a Ctrl-C inside join() can mark a running thread as stopped
    done = threading.Event()

    def run() -> None:
        try:
            outcome["session"] = start()
        except BaseException as exc:         # handed to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="pyconsumer-spark-start", daemon=True).start()
    try:
        while not done.wait(0.1):
            pass
    except BaseException:
        # PySpark does not stop a JVM it has not connected to yet, and that one would run on
        # (and hold the terminal's pipes) after this process exits
        # the start fails once its JVM is gone (killed again should it come up later: the
        # start may not have launched it yet); until then the JVM's stderr filter may hold
        # this process's stderr, where the caller reports the interruption
        deadline = time.monotonic() + 30.0
        while not done.is_set() and time.monotonic() < deadline:
            _kill_children_mentioning(marker)
            done.wait(0.1)
        raise
    if "error" in outcome:
        _kill_children_mentioning(marker)
        raise outcome["error"]
    return outcome["session"]


@contextmanager
def temporary_session(master: str = "local[*]", *, app_name: str = "pyconsumer",
                      conf: Mapping[str, str] | None = None, fast_jvm: bool = False,
                      log_level: str = "fatal") -> Iterator[Any]:
    """A SparkSession whose scratch files (spark.local.dir, the JVM's and the Python
    workers' temp files, the SQL warehouse) live in one temporary directory that is removed,
    with the session, on exit: nothing is left in /tmp or in the working directory. Spark
    logs to stderr at ``log_level`` (fatal by default: the caller reports failures).
    ``master`` may be a cluster's (``spark://host:7077``): then these settings are the
    driver's, and the executors keep the scratch space and logs their cluster manager gives.

    When this process already has an active SparkSession (a test suite's, a notebook's), that
    one is used as it is (the arguments are ignored) and left running."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        from pyconsumer.spark import register

        register(active)
        yield active
        return
    scratch = tempfile.mkdtemp(prefix="pyconsumer-spark-")
    saved_tmpdir = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = scratch           # Python workers and other children
    settings: dict[str, Any] = {"spark.sql.warehouse.dir": os.path.join(scratch, "warehouse")}
    settings.update(conf or {})
    spark = None
    # py4j's records of calls cut short (Ctrl-C, the JVM gone) are dropped: the caller
    # reports the failure itself
    QuietPy4J().install()
    try:
        spark = _start_interruptibly(
            lambda: local_session(master, app_name=app_name, local_dir=scratch,
                                  fast_jvm=fast_jvm, java_options="-XX:-UsePerfData",
                                  conf=settings, log_level=log_level),
            scratch)
        if threading.current_thread() is threading.main_thread():
            # a plain KeyboardInterrupt: stop() below cancels what runs (PySpark's own handler
            # cancels jobs through py4j while a py4j call may be waiting on that connection)
            signal.signal(signal.SIGINT, signal.default_int_handler)
        yield spark
    finally:
        try:
            if spark is not None:
                spark.stop()
        finally:
            QuietPy4J.uninstall_all()
            if saved_tmpdir is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = saved_tmpdir
            shutil.rmtree(scratch, ignore_errors=True)
