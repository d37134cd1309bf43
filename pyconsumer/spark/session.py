"""A local SparkSession set up for pyconsumer's source (used by the CLI, the demo and tests).

Spark's Python workers are started by the JVM; unless ``PYSPARK_PYTHON`` names this
interpreter they run whatever ``python3`` is on PATH, which may not have pyconsumer or pyarrow.
"""
from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["local_session", "SPARK_MISSING"]

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
