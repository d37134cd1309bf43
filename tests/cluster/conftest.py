"""The cluster tier's shared pieces: a Spark standalone cluster per test module, the JVM flags
its drivers and executors start with."""
from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator

import pytest

from pyconsumer.testing import SparkStandaloneCluster

#: tests only: a quick-starting JIT and a small collector for the drivers and executors
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"


@pytest.fixture(scope="module")
def cluster() -> Iterator[SparkStandaloneCluster]:
    """Two workers of one core each, per module: an application with an executor on each has
    the cluster to itself, and one that loses a worker waits for it to come back."""
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("the cluster tier needs pyspark (pip install -e '.[test]')")
    if shutil.which("java") is None:
        pytest.skip("the cluster tier needs Java 17 on PATH")
    with SparkStandaloneCluster(workers=2, cores=1) as c:
        yield c
