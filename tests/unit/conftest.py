"""Fixtures shared by the unit tier."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fakecluster import FakeCluster


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
