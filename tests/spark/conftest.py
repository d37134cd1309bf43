"""Spark tier: every test here is marked ``spark``."""
from __future__ import annotations


import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/spark/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.spark)

# the session's `spark` fixture lives in tests/conftest.py: tests/kafka/ uses it too
