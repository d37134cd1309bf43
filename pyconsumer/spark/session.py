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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pyconsumer.spark.logs import JVM_NOISE, QuietPy4J, jvm_stderr_without, log4j2_properties

__all__ = ["local_session", "temporary_session", "SPARK_MISSING"]

#: the one sentence a user sees when the spark extra is missing
SPARK_MISSING = ("this needs PySpark (and Java 17): pip install 'pyconsumer[spark]'")

# C1-only JIT: the JVM starts about twice as fast, but Arrow throughput drops 2-3x.
# For test suites only, never for benchmarks.
FAST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def local_session(master: str = "local[2]", *, app_name: str = "pyconsumer",
                  fast_jvm: bool = False, local_dir: str | None = None,
                  java_options: str = "", conf: dict[str, Any] | None = None) -> Any:
    """Get or create a SparkSession with pyconsumer's source registered.

    ``fast_jvm`` trades throughput for start-up time (tests); ``local_dir`` puts Spark's
    scratch files (shuffle, block manager, the JVM's temporary files) there instead of /tmp;
    ``java_options`` are more driver JVM flags."""
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
    if flags:
        builder = builder.config("spark.driver.extraJavaOptions", " ".join(flags))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    from pyconsumer.spark import register
    register(spark)
    return spark


def _kill_children_mentioning(marker: str, timeout: float = 5.0) -> None:
    """Kill (and reap) this process's children whose command line contains ``marker``
    (Linux /proc; elsewhere nothing is done)."""
    if not os.path.isdir("/proc"):
        return
    me, needle = os.getpid(), marker.encode()
    killed = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if needle not in f.read():
                    continue
            os.kill(int(entry), signal.SIGKILL)
            killed.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    deadline = time.monotonic() + timeout
    for pid in killed:
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if done:
                break
            time.sleep(0.05)


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
    log_config = os.path.join(scratch, "log4j2.properties")
    with open(log_config, "w", encoding="utf-8") as f:
        f.write(log4j2_properties(log_level))
    saved_tmpdir = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = scratch           # Python workers and other children
    java_opts = (f"-Dlog4j2.configurationFile=file:{log_config} "
                 "-XX:-UsePerfData")         # no hsperfdata in /tmp
    settings: dict[str, Any] = {"spark.sql.warehouse.dir": os.path.join(scratch, "warehouse")}
    settings.update(conf or {})
    spark = None
    try:
        try:
            with jvm_stderr_without(JVM_NOISE):
                spark = local_session(master, app_name=app_name, local_dir=scratch,
                                      fast_jvm=fast_jvm, java_options=java_opts,
                                      conf=settings)
        except BaseException:
            # interrupted (Ctrl-C) or failed while the JVM was starting: PySpark does not stop
            # a JVM it has not connected to yet, and that one would run on (and hold the
            # terminal's pipes) after this process exits
            _kill_children_mentioning(scratch)
            raise
        quiet_py4j = QuietPy4J()
        quiet_py4j.install()
        if threading.current_thread() is threading.main_thread():
            # PySpark's SIGINT handler cancels jobs through py4j while a py4j call is waiting
            # on the same connection, and logs the tracebacks that causes; a plain
            # KeyboardInterrupt is enough: stop() below cancels what runs
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
