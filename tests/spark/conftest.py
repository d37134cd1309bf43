"""Spark tier: one SparkSession for the whole test session (C1 JVM flags: tests only)."""
from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from typing import Any

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/spark/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("the Spark tier needs pyspark (pip install -e '.[test]')")
    if shutil.which("java") is None:
        pytest.skip("the Spark tier needs Java 17 on PATH")
    from pyconsumer.spark.session import local_session

    session = local_session("local[2]", app_name="pyconsumer-tests", fast_jvm=True,
                            local_dir=str(tmp_path_factory.mktemp("spark-local")),
                            conf={"spark.driver.memory": "2g",
                                  "spark.sql.shuffle.partitions": "2"})
    try:
        yield session
    finally:
        session.stop()
