"""decode.threads=0 counts the cores this process may run on (its CPU affinity), not the
machine's: a process pinned to one core decodes in the polling thread only."""
from __future__ import annotations

import os

import pytest

from pyconsumer.consumer.fetch import decode


def test_a_given_count_is_kept() -> None:
    assert decode.threads_for(3) == 3


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_the_default_follows_the_affinity() -> None:
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(before)})
        assert decode.threads_for(0) == 1
        os.sched_setaffinity(0, before)
        assert decode.threads_for(0) == min(4, len(before))
    finally:
        os.sched_setaffinity(0, before)


def test_without_affinity_the_machine_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert decode.threads_for(0) == 4
