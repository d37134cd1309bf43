"""Consumers polled in threads for the group tests (classic and consumer protocol), and the
fixture that closes what a failed test left polling."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from pyconsumer import ConsumerRecord, KafkaConsumer, TopicPartition
from pyconsumer.errors import CommitFailedError, KafkaError, RebalanceInProgressError
from tests.backends import broker_quirk


def tps(topic: str, n: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(n)}


class Runner:
    """Polls a consumer in a thread, collecting (partition, offset) and listener calls. The
    consumer belongs to that thread while it runs (a consumer refuses a second thread): the
    test reads ``assignment`` as the runner saw it after its last poll."""

    def __init__(self, consumer: KafkaConsumer, commit: bool = False) -> None:
        self.consumer = consumer
        self.commit = commit
        self.records: list[tuple[TopicPartition, int]] = []
        self.errors: list[BaseException] = []
        self.assignment: set[TopicPartition] = set()
        self.commit_failures: list[BaseException] = []
        self.quirks: list[KafkaError] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        _runners.append(self)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    got = self.consumer.poll(timeout_ms=100)
                except KafkaError as e:
                    if not broker_quirk(e):
                        raise
                    self.quirks.append(e)          # a test broker's: the next poll() rejoins
                    continue
                for tp, recs in got.items():
                    self.records += [(tp, r.offset) for r in recs]
                if got and self.commit:
                    try:
                        self.consumer.commit()
                    except (CommitFailedError, RebalanceInProgressError) as e:
                        # the group is moving: an application goes on polling (and rejoins)
                        self.commit_failures.append(e)
                self.assignment = self.consumer.assignment()
                self.after_poll(got)
        except BaseException as e:  # reported by the test
            self.errors.append(e)

    def after_poll(self, got: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        """A subclass's look at each poll's records, on the polling thread (which alone may
        use the consumer)."""

    def stop(self) -> None:
        if self in _runners:
            _runners.remove(self)
        self._stop.set()
        self._thread.join(20)
        assert not self._thread.is_alive()
        assert not self.errors, self.errors


_runners: list[Runner] = []


@pytest.fixture(autouse=True)
def close_what_a_failed_test_left() -> Iterator[None]:
    """A test that fails midway leaves runners polling and consumers heartbeating after their
    cluster is gone: their warnings would land in later tests' logs."""
    yield
    while _runners:
        r = _runners.pop()
        r._stop.set()
        r._thread.join(20)
        try:
            r.consumer.close(timeout_ms=0)
        except Exception:  # noqa: BLE001 - best effort after a failure
            pass


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, (
            "condition not met in time; runners: " + "; ".join(
                f"assignment={sorted(map(str, r.assignment))} errors={r.errors} "
                f"commit failures={len(r.commit_failures)}" for r in _runners))
        time.sleep(0.05)
