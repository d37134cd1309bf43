"""Spark's own Kafka source (spark-sql-kafka-0-10) for tests and benchmarks, from Maven Central.

PySpark ships Scala, Hadoop, lz4, snappy and slf4j but not the connector, its token provider,
kafka-clients or commons-pool2: :func:`spark_kafka_jars` fetches those four once with Maven
into the per-user cache (see :mod:`._maven`) and returns their paths for ``spark.jars``.

The connector is taken at the installed PySpark's exact version. Maven Central did not serve
every release's connector on the day this was written (4.3.0 was missing while PySpark 4.3.0 was
on PyPI): then the newest connector known to be served, :data:`SPARK_KAFKA_FALLBACK`, is used,
and :func:`spark_kafka_version` says which one was taken so a comparison can report it.
``PYCONSUMER_SPARK_KAFKA_VERSION`` forces a version.
"""
from __future__ import annotations

import importlib.metadata
import os
import time
from pathlib import Path
from typing import Any

from pyconsumer._install import install_hint

from ._errors import BrokerStartError
from ._maven import cache_dir, fetch_jars

__all__ = ["SPARK_KAFKA_FALLBACK", "spark_avro_jar", "spark_kafka_jars", "spark_kafka_session",
           "spark_kafka_version", "spark_protobuf_jar"]

#: the newest spark-sql-kafka-0-10 Maven Central served on 2026-11-26 (4.3.0 was not)
SPARK_KAFKA_FALLBACK = "4.2.0"

#: a version Maven refused is asked for again only after this long (it may be published later)
_RETRY_REFUSED_S = 24 * 3600.0

#: what PySpark lacks of the connector's runtime dependencies (the rest it ships)
_ARTIFACTS = ("spark-sql-kafka-0-10_2.13", "spark-token-provider-kafka-0-10_2.13",
              "kafka-clients", "commons-pool2")


def _pyspark_version() -> str:
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        raise BrokerStartError(f"spark_kafka_jars needs pyspark: {install_hint('spark')}") from None


def _candidates(spark_version: str | None) -> list[str]:
    forced = os.environ.get("PYCONSUMER_SPARK_KAFKA_VERSION")
    if forced:
        return [forced]
    wanted = spark_version or _pyspark_version()
    return [wanted] if wanted == SPARK_KAFKA_FALLBACK else [wanted, SPARK_KAFKA_FALLBACK]


def _fetch(version: str) -> list[str]:
    refused = cache_dir() / f"spark-kafka-{version}" / "refused"
    if refused.is_file() and time.time() - refused.stat().st_mtime < _RETRY_REFUSED_S:
        raise BrokerStartError(f"Maven Central refused spark-sql-kafka-0-10_2.13 {version} "
                               f"earlier (see {refused})")
    try:
        return _fetch_now(version)
    except BrokerStartError as exc:
        if type(exc) is BrokerStartError:          # not MissingToolError: Maven ran and said no
            refused.parent.mkdir(parents=True, exist_ok=True)
            refused.write_text(str(exc) + "\n")
        raise


def _fetch_now(version: str) -> list[str]:
    libs = fetch_jars(f"spark-kafka-{version}",
                      [f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"],
                      user="spark_kafka_jars", include_artifacts=_ARTIFACTS)
    jars = sorted(str(path) for path in libs.glob("*.jar"))
    if not any(Path(jar).name.startswith(f"spark-sql-kafka-0-10_2.13-{version}") for jar in jars):
        raise BrokerStartError(f"Maven Central did not serve spark-sql-kafka-0-10_2.13 {version}")
    return jars


def spark_kafka_version(spark_version: str | None = None) -> str:
    """The connector version :func:`spark_kafka_jars` uses for this PySpark (fetching if needed)."""
    for jar in spark_kafka_jars(spark_version):
        name = Path(jar).name
        if name.startswith("spark-sql-kafka-0-10_2.13-"):
            return name[len("spark-sql-kafka-0-10_2.13-"):-len(".jar")]
    raise AssertionError("spark_kafka_jars returned no connector jar")     # _fetch checks this


def spark_kafka_jars(spark_version: str | None = None) -> list[str]:
    """Paths of Spark's Kafka connector jars for ``spark_version`` (default: the installed
    PySpark's), fetched once with Maven; pass them as ``spark.jars`` (comma-separated).

    Raises MissingToolError without Maven, BrokerStartError when no candidate version is served
    (naming each version tried and Maven's answer)."""
    failures: list[str] = []
    for version in _candidates(spark_version):
        try:
            return _fetch(version)
        except BrokerStartError as exc:
            if type(exc) is not BrokerStartError:      # MissingToolError: no Maven at all
                raise
            failures.append(f"{version}: {str(exc).splitlines()[0]}")
    raise BrokerStartError("no spark-sql-kafka-0-10_2.13 connector could be fetched: "
                           + "; ".join(failures))


def _spark_jar(artifact: str, user: str, spark_version: str | None) -> str:
    """The path of Spark's ``artifact`` (``spark-avro_2.13``...) at the installed PySpark's version,
    else the fallback's, fetched once with Maven (its runtime dependencies PySpark has)."""
    failures: list[str] = []
    for version in _candidates(spark_version):
        try:
            libs = fetch_jars(f"{artifact.split('_')[0]}-{version}",
                              [f"org.apache.spark:{artifact}:{version}"],
                              user=user, include_artifacts=(artifact,))
        except BrokerStartError as exc:
            if type(exc) is not BrokerStartError:      # MissingToolError: no Maven at all
                raise
            failures.append(f"{version}: {str(exc).splitlines()[0]}")
            continue
        jars = sorted(libs.glob(f"{artifact}-*.jar"))
        if jars:
            return str(jars[0])
        failures.append(f"{version}: Maven Central served no {artifact} jar")
    raise BrokerStartError(f"no {artifact} could be fetched: " + "; ".join(failures))


def spark_avro_jar(spark_version: str | None = None) -> str:
    """The path of spark-avro (``from_avro`` / ``to_avro``) for ``spark_version`` (default: the
    installed PySpark's, else the same fallback as the Kafka connector's), fetched once with
    Maven; PySpark ships no spark-avro. Its runtime dependencies PySpark already has.

    Raises MissingToolError without Maven, BrokerStartError when no candidate version is served."""
    return _spark_jar("spark-avro_2.13", "spark_avro_jar", spark_version)


def spark_protobuf_jar(spark_version: str | None = None) -> str:
    """The path of spark-protobuf (``from_protobuf`` / ``to_protobuf``; protobuf-java shaded
    inside) for ``spark_version`` (default: the installed PySpark's, else the same fallback as
    the Kafka connector's), fetched once with Maven; PySpark ships no spark-protobuf.

    Raises MissingToolError without Maven, BrokerStartError when no candidate version is served."""
    return _spark_jar("spark-protobuf_2.13", "spark_protobuf_jar", spark_version)


def spark_kafka_session(master: str = "local[2]", *, conf: dict[str, Any] | None = None,
                        **options: Any) -> Any:
    """A SparkSession (pyconsumer.spark.session.local_session) with Spark's own Kafka source on
    its classpath as well, so ``format("kafka")`` and ``format("pyconsumer")`` run side by side.
    Spark reads ``spark.jars`` only when the JVM starts: call this before any other session."""
    from pyconsumer.spark.session import local_session
    merged = {"spark.jars": ",".join(spark_kafka_jars())}
    merged.update(conf or {})
    return local_session(master, conf=merged, **options)
