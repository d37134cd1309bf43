"""The coordinator's OffsetFetch partition errors, classified by the partition error table
(pyconsumer.consumer.partition_errors) against the fake cluster: a transaction committing
offsets is asked again, an unknown partition or a denied topic is raised at once."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.errors import BrokerResponseError, ErrorCode, KafkaError
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import OffsetAndMetadata, TopicPartition
from pyconsumer.testing import FAST_CONSUMER as FAST, FakeCluster, Request

TP = TopicPartition("t", 0)


def answer_with(cluster: FakeCluster, code: int, times: int) -> Callable[[Request], Any]:
    """An OffsetFetch control: the first ``times`` answers carry ``code`` on every partition."""
    left = [times]

    def control(req: Request) -> Any:
        if left[0] == 0:
            return None
        left[0] -= 1
        answer = cluster.default_answer(req)
        groups = answer.get("groups") or [answer]          # v8+ nests topics in groups
        for g in groups:
            for t in g["topics"]:
                for p in t["partitions"]:
                    p["error_code"] = code
        return answer
    return control


def consumer(cluster: FakeCluster) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g",
                         enable_auto_commit=False, **FAST)


def test_an_unstable_offset_commit_is_asked_again(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    cluster.set_committed("g", {TP: 5})
    cluster.control(ApiKey.OFFSET_FETCH, answer_with(cluster, ErrorCode.UNSTABLE_OFFSET_COMMIT, 2))
    with consumer(cluster) as c:
        mark = cluster.mark()
        assert c.committed([TP], timeout_ms=10_000) == {TP: OffsetAndMetadata(5, "", None)}
    assert len(cluster.requests_of(ApiKey.OFFSET_FETCH, after=mark)) == 3


def test_an_unknown_partition_is_raised_naming_it(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    cluster.control(ApiKey.OFFSET_FETCH,
                    answer_with(cluster, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 1))
    with consumer(cluster) as c:
        mark = cluster.mark()
        with pytest.raises(KafkaError) as raised:
            c.committed([TP], timeout_ms=10_000)
    assert str(raised.value) == "Topic or partition t-0 does not exist (OffsetFetch for group g)"
    assert len(cluster.requests_of(ApiKey.OFFSET_FETCH, after=mark)) == 1


def test_a_denied_topic_is_raised_not_retried(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    cluster.control(ApiKey.OFFSET_FETCH,
                    answer_with(cluster, ErrorCode.TOPIC_AUTHORIZATION_FAILED, 1))
    with consumer(cluster) as c:
        mark = cluster.mark()
        with pytest.raises(BrokerResponseError) as raised:
            c.committed([TP], timeout_ms=10_000)
    assert raised.value.errno == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert len(cluster.requests_of(ApiKey.OFFSET_FETCH, after=mark)) == 1
