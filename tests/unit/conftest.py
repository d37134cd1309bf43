"""Fixtures shared by the unit tier."""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pyconsumer.testing import FakeCluster


@pytest.fixture
def make_cluster() -> Iterator[Callable[..., FakeCluster]]:
    made: list[FakeCluster] = []

    def make(*args: Any, **kwargs: Any) -> FakeCluster:
        made.append(FakeCluster(*args, **kwargs))
        return made[-1]

    yield make
    for c in made:
        c.close()
    for c in made:
        assert c.errors == [], c.errors


@pytest.fixture(scope="module")
def suite() -> ModuleType:
    """``benchmarks/__main__.py`` imported (it puts benchmarks/ on sys.path for its scripts), for
    the tests of the benchmark suite's bookkeeping."""
    root = Path(__file__).resolve().parents[2]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module("benchmarks.__main__")
