"""Spark's own Delta Lake reader and writer (delta-spark) for tests and benchmarks, from Maven Central.

Tables that ``pyconsumer ingest --table-format delta`` writes with deltalake are read back by
Spark's Delta reader, and the conventional route (``format("pyconsumer")`` or ``format("kafka")``
into ``write.format("delta")``) is compared against ours: both need delta-spark's jars, which
PySpark does not ship. :func:`delta_spark_jars` fetches them once with Maven into the per-user
cache (see :mod:`._maven`); :func:`delta_spark_conf` is the session configuration that turns
them on (jars, SQL extension, catalog).

delta-spark is built for one Spark minor version at a time: :data:`DELTA_FOR_SPARK` maps the
Spark versions it is known to be published for to the Delta release to take. Another PySpark
gets a BrokerStartError naming the supported ones.
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

from pyconsumer._install import install_hint

from ._errors import BrokerStartError
from ._maven import fetch_jars

__all__ = ["DELTA_FOR_SPARK", "delta_spark_conf", "delta_spark_jars"]

#: Spark minor version -> the delta-spark release built for it (Maven Central, 2026-11-28)
DELTA_FOR_SPARK = {"4.2": "4.4.0"}

#: delta-spark and its compile-scope dependencies that PySpark lacks (the rest it ships)
_ARTIFACTS = ("delta-spark_2.13", "delta-storage", "delta-kernel-api", "delta-kernel-defaults",
              "delta-kernel-unitycatalog")


def _delta_version(spark_version: str | None) -> str:
    if spark_version is None:
        try:
            spark_version = importlib.metadata.version("pyspark")
        except importlib.metadata.PackageNotFoundError:
            raise BrokerStartError(f"delta_spark_jars needs pyspark: {install_hint('spark')}") from None
    minor = ".".join(spark_version.split(".")[:2])
    try:
        return DELTA_FOR_SPARK[minor]
    except KeyError:
        known = ", ".join(f"Spark {s}.x (Delta {d})" for s, d in sorted(DELTA_FOR_SPARK.items()))
        raise BrokerStartError(f"no delta-spark is known to be published for Spark {spark_version}; "
                               f"known: {known}") from None


def delta_spark_jars(spark_version: str | None = None) -> list[str]:
    """Paths of delta-spark's jars for ``spark_version`` (default: the installed PySpark's),
    fetched once with Maven; pass them as ``spark.jars`` (comma-separated).

    Raises MissingToolError without Maven, BrokerStartError for a Spark version delta-spark is not
    known to be built for or when Maven Central refuses the artifact."""
    version = _delta_version(spark_version)
    libs = fetch_jars(f"delta-spark-{version}", [f"io.delta:delta-spark_2.13:{version}"],
                      user="delta_spark_jars", include_artifacts=_ARTIFACTS)
    jars = sorted(str(path) for path in libs.glob("*.jar"))
    if not any(Path(jar).name == f"delta-spark_2.13-{version}.jar" for jar in jars):
        raise BrokerStartError(f"Maven Central did not serve io.delta:delta-spark_2.13:{version}")
    return jars


def delta_spark_conf(spark_version: str | None = None) -> dict[str, str]:
    """Session settings for ``format("delta")``: the jars, Delta's SQL extension and catalog.
    ``spark.jars`` is read only when the JVM starts: merge these before the first session."""
    return {
        "spark.jars": ",".join(delta_spark_jars(spark_version)),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    }
