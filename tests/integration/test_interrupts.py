"""An exception inside poll() after records were drained (a Ctrl-C can land at any bytecode)
must not lose them: the position moves only when records reach the caller, and close() with
auto-commit commits only what was delivered (issue 9, item 9). Against librdkafka's mock."""
from __future__ import annotations

from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.testing import MockCluster, produce, sample_records

TP = TopicPartition("intr", 0)


def settings(mc: MockCluster, **extra: Any) -> dict[str, Any]:
    return dict(bootstrap_servers=mc.bootstrap, group_id="g-intr", auto_offset_reset="earliest",
                enable_auto_commit=True, auto_commit_interval_ms=600_000, max_poll_records=50,
                **extra)


def drain_all(c: KafkaConsumer, offsets: list[int], total: int) -> None:
    for _ in range(200):
        if len(offsets) >= total:
            return
        offsets += [r.offset for r in c.poll(timeout_ms=200).get(TP, [])]


@pytest.fixture
def topic300(mock_cluster: MockCluster) -> MockCluster:
    mock_cluster.create_topic("intr", 1)
    produce(mock_cluster.bootstrap, "intr", sample_records(300, partitions=1))
    return mock_cluster


def test_interrupt_after_drain_loses_nothing_and_close_commits_only_delivered(
        topic300: MockCluster) -> None:
    mc = topic300
    c = KafkaConsumer(**settings(mc))
    c.assign([TP])
    delivered: list[int] = []
    drain_all(c, delivered, 100)
    assert delivered == list(range(len(delivered)))
    fetcher = c._fetcher
    assert fetcher is not None
    original = fetcher.send_fetches
    armed = [True]

    before = c.position(TP)

    def interrupted() -> int:
        # the pipelined fetch right after records were drained: Ctrl-C lands here
        position = c._subscriptions.position(TP)
        if armed[0] and position is not None and position.offset > before:
            armed[0] = False
            raise KeyboardInterrupt
        return original()

    fetcher.send_fetches = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        for _ in range(50):
            delivered += [r.offset for r in c.poll(timeout_ms=200).get(TP, [])]
    assert not armed[0]
    assert c.position(TP) == len(delivered) >= before    # not past what was returned
    c.close()                                            # auto-commit: only what was delivered
    with KafkaConsumer(**settings(mc)) as again:
        assert again.committed([TP])[TP].offset == len(delivered)   # type: ignore[union-attr]
        again.assign([TP])
        rest: list[int] = []
        drain_all(again, rest, 300 - len(delivered))
        assert delivered + rest == list(range(300))        # no gap, no duplicate


def test_interrupt_from_a_deserializer_mid_batch_loses_nothing(topic300: MockCluster) -> None:
    calls = [0]

    def value(data: bytes | None) -> bytes | None:
        calls[0] += 1
        if calls[0] == 130:                               # inside the third poll's batch
            raise KeyboardInterrupt
        return data

    c = KafkaConsumer(**settings(topic300, value_deserializer=value))
    c.assign([TP])
    delivered: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        drain_all(c, delivered, 300)
    assert 0 < len(delivered) < 130
    assert c.position(TP) == len(delivered)
    drain_all(c, delivered, 300)
    assert delivered == list(range(300))
    c.close()
