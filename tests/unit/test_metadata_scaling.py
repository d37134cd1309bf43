"""Issue 26: a Metadata answer that changes nothing costs nothing per partition.

No timing. The Python lines the package runs are counted (sys.settrace, as in
test_fetch_send_scaling): applying an unchanged answer, then what a consumer redoes after it
(the position and leader passes of poll(), the fetch plan), with 10 and with 2,000 partitions.
A rebuild of the cached partitions, or a pass over the assignment, would be thousands of lines.
Beside that, what changes still shows exactly: a moved leader, a re-created topic, a stale
epoch kept back and asked again, errors, and the refresh backoff's count of answers that
changed nothing.
"""
from __future__ import annotations

import time
import uuid
from typing import Any

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import ErrorCode
from pyconsumer.net.metadata import ClusterMetadata
from pyconsumer.protocol import ApiKey, decode_response, encode_response
from pyconsumer.structs import BrokerInfo, PartitionInfo
from pyconsumer.testing import FakeCluster
from tests.unit.test_fetch_send_scaling import _count_lines, _quiet, _top

_ID = uuid.UUID(int=0x1234)


def _answer(n: int, *, topic_id: uuid.UUID = _ID, epoch: int = 5,
            changes: dict[int, dict[str, Any]] | None = None,
            extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A Metadata v12 answer for topic "t" with ``n`` partitions on three brokers, decoded from
    its bytes (fresh objects each time, as from the wire)."""
    parts = []
    for p in range(n):
        part = {"error_code": 0, "partition_index": p, "leader_id": 1 + p % 3,
                "leader_epoch": epoch, "replica_nodes": [1 + (p + i) % 3 for i in range(3)],
                "isr_nodes": [1 + (p + i) % 3 for i in range(3)], "offline_replicas": []}
        part.update((changes or {}).get(p, {}))
        parts.append(part)
    body = {"throttle_time_ms": 0, "cluster_id": "c1", "controller_id": 1,
            "brokers": [{"node_id": b, "host": "127.0.0.1", "port": 9000 + b, "rack": None}
                        for b in (1, 2, 3)],
            "topics": [{"error_code": 0, "name": "t", "topic_id": topic_id,
                        "is_internal": False, "partitions": parts}, *(extra or [])]}
    frame = encode_response(ApiKey.METADATA, 12, 1, body)
    return decode_response(ApiKey.METADATA, 12, frame[4:])[1]


def _unchanged_lines(n: int) -> dict[str, int]:
    md = ClusterMetadata([("h", 1)], clock=lambda: 100.0)
    md.update(_answer(n), ["t"])
    version, answers, topic = md.update_version, md.answers, md.topics["t"]
    partitions = topic.partitions
    again = _answer(n)
    lines, _ = _count_lines(lambda: md.update(again, ["t"]))
    assert (md.update_version, md.answers) == (version, answers + 1)
    assert md.topics["t"] is topic and topic.partitions is partitions     # nothing rebuilt
    assert md.partition(TopicPartition("t", n - 1)) == PartitionInfo(
        "t", n - 1, 1 + (n - 1) % 3, tuple(1 + (n - 1 + i) % 3 for i in range(3)),
        tuple(1 + (n - 1 + i) % 3 for i in range(3)), (), 5)
    return lines


def test_an_unchanged_answer_runs_the_same_lines_at_10_and_2000_partitions() -> None:
    small, large = _unchanged_lines(10), _unchanged_lines(2000)
    assert large == small, (_top(small), _top(large))
    assert sum(large.values()) < 200


def test_a_changed_answer_still_shows_every_change() -> None:
    md = ClusterMetadata([("h", 1)], clock=lambda: 100.0)
    md.update(_answer(6), ["t"])
    v = md.update_version
    before = md.topics["t"].partitions
    # partition 3's leader moves to node 2 with a new epoch
    md.update(_answer(6, changes={3: {"leader_id": 2, "leader_epoch": 6}}), ["t"])
    assert md.update_version == v + 1
    assert md.partition(TopicPartition("t", 3)) == PartitionInfo("t", 3, 2, (1, 2, 3),
                                                                 (1, 2, 3), (), 6)
    assert {p: i for p, i in md.topics["t"].partitions.items() if p != 3} == \
        {p: i for p, i in before.items() if p != 3}
    # the same partitions under a new topic id (the topic was re-created): a change
    new_id = uuid.UUID(int=0x5678)
    md.update(_answer(6, topic_id=new_id, changes={3: {"leader_id": 2, "leader_epoch": 6}}),
              ["t"])
    assert md.update_version == v + 2 and md.topics["t"].topic_id == new_id
    # a broker's port: a change
    body = _answer(6, topic_id=new_id, changes={3: {"leader_id": 2, "leader_epoch": 6}})
    body["brokers"][1]["port"] = 9999
    md.update(body, ["t"])
    assert md.update_version == v + 3 and md.brokers[2] == BrokerInfo(2, "127.0.0.1", 9999)
    # a topic that stopped existing: a change, and its error kept
    gone = _answer(6, topic_id=new_id, changes={3: {"leader_id": 2, "leader_epoch": 6}})
    gone["brokers"][1]["port"] = 9999
    gone["topics"][0].update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partitions=[])
    md.update(gone, ["t"])
    assert md.update_version == v + 4 and "t" not in md.topics
    assert md.topic_errors == {"t": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    # the same answer again: nothing new
    md.update(gone, ["t"])
    assert md.update_version == v + 4 and md.answers == 6


def test_a_stale_epoch_is_kept_back_and_asked_again_every_time() -> None:
    md = ClusterMetadata([("h", 1)], clock=lambda: 100.0)
    md.update(_answer(4, epoch=7), ["t"])
    v = md.update_version
    assert not md.update_requested()
    newer = md.partition(TopicPartition("t", 2))
    for _ in range(2):    # the same stale answer twice: kept back both times (no shortcut)
        md.update(_answer(4, epoch=7, changes={2: {"leader_id": 3, "leader_epoch": 6}}),
                  ["t"])
        assert md.partition(TopicPartition("t", 2)) is newer
        assert md.update_requested()                 # another broker may know better
        assert md.update_version == v                # what is cached did not change
    # the broker catches up: the newer epoch is taken
    md.update(_answer(4, epoch=7, changes={2: {"leader_id": 3, "leader_epoch": 8}}), ["t"])
    assert md.partition(TopicPartition("t", 2)) == PartitionInfo("t", 2, 3, (3, 1, 2),
                                                                 (3, 1, 2), (), 8)
    assert not md.update_requested() and md.update_version == v + 1


def test_answers_that_change_nothing_lengthen_the_refresh_backoff_as_before() -> None:
    now = [100.0]
    md = ClusterMetadata([("h", 1)], clock=lambda: now[0], refresh_backoff_ms=100,
                         refresh_backoff_max_ms=1000)
    md.update(_answer(3), ["t"])
    assert md._equivalent_answers == 0
    for i in range(1, 4):
        md.request_update()
        now[0] += 0.01
        md.update(_answer(3), ["t"])
        assert md._equivalent_answers == i
    md.request_update()
    md.update(_answer(3, changes={0: {"isr_nodes": [1]}}), ["t"])   # a change: back to 0
    assert md._equivalent_answers == 0
    md.request_update()
    md.update(_answer(3, changes={0: {"isr_nodes": [1]}}), ["t"])
    assert md._equivalent_answers == 1
    # an answer not asked for (periodic) does not count
    md.update(_answer(3, changes={0: {"isr_nodes": [1]}}), ["t"])
    assert md._equivalent_answers == 0


def _consumer_lines(n: int, bump: bool) -> dict[str, int]:
    """Lines of an unchanged Metadata answer applied to a consumer with ``n`` partitions
    assigned and fetching, then its positions pass and a Fetch send (``bump``: the version
    moved as if the answer had changed, to show a walk is seen)."""
    with FakeCluster(topics={"t": n}) as cluster:
        tps = [TopicPartition("t", p) for p in range(n)]
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                           fetch_max_wait_ms=10) as c:
            c.assign(tps)
            deadline = time.monotonic() + 30
            while not (c._subscriptions.all_fetching() and c._fetcher is not None
                       and c._fetcher.sessions
                       and all(len(h.session_partitions) == n
                               for h in c._fetcher.sessions.values())):
                assert time.monotonic() < deadline, "positions and session not settled"
                assert c.poll(timeout_ms=20) == {}
            fetcher, loop = c._fetcher, c._poll_loop
            assert fetcher is not None and loop is not None
            client = fetcher.requests.client
            kept: list[dict[str, Any]] = []
            real = client.metadata.update
            client.metadata.update = lambda body, *a, **k: (kept.append(body),  # type: ignore[method-assign]
                                                             real(body, *a, **k))[1]
            client.update_metadata(["t"])
            del client.metadata.update
            frame = encode_response(ApiKey.METADATA, 12, 1, kept[-1])
            for _ in range(2):           # settle after the refresh above: plans made again
                _quiet(c, fetcher)
                loop.update_fetch_positions(time.monotonic() + 5)
                fetcher.send_fetches()
            _quiet(c, fetcher)
            again = decode_response(ApiKey.METADATA, 12, frame[4:])[1]

            def apply() -> None:
                client.metadata.update(again, ["t"])
                if bump:
                    client.metadata.update_version += 1
                loop.update_fetch_positions(time.monotonic() + 5)
                fetcher.send_fetches()

            version = client.metadata.update_version
            lines, _ = _count_lines(apply)
            assert client.metadata.update_version == version + bump
            assert c._subscriptions.all_fetching()
            _quiet(c, fetcher)
            assert cluster.errors == []
            return lines


def test_a_consumer_redoes_nothing_per_partition_after_an_unchanged_answer() -> None:
    small, large = _consumer_lines(10, False), _consumer_lines(2000, False)
    assert large == small, (_top(small), _top(large))
    assert sum(large.values()) < 1000
    # the count sees a walk: the same with the version moved grows by thousands of lines
    walked = _consumer_lines(2000, True)
    assert sum(walked.values()) > sum(large.values()) + 2000, _top(walked)
