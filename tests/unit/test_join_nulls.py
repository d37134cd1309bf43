"""A JoinGroup answer with a null where Kafka never sends one is a clear error.

The codec reads JoinGroup's member_id, leader and protocol_name as nullable (librdkafka's mock
sends nulls beside an error code), so the classic membership checks them: without an error all
three name something, and MEMBER_ID_REQUIRED (KIP-394) carries the member id to rejoin with.
"""
from __future__ import annotations

from collections.abc import Callable

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.errors import ErrorCode, KafkaProtocolError
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import FAST_CONSUMER as FAST, FakeCluster, Request
from pyconsumer.testing._fake.common import Body


@pytest.mark.parametrize("field", ["member_id", "leader", "protocol_name"])
def test_a_null_in_an_answer_without_error(make_cluster: Callable[..., FakeCluster],
                                           field: str) -> None:
    cluster = make_cluster(1, topics={"t": 1})

    def null(req: Request) -> Body | None:
        answer = cluster.default_answer(req)
        if answer["error_code"] == 0:
            answer[field] = None
        return answer

    cluster.control(ApiKey.JOIN_GROUP, null)
    c = KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g",
                      enable_auto_commit=False, **FAST)
    try:
        with pytest.raises(KafkaProtocolError,
                           match=f"^JoinGroup answered without error with a null {field}$"):
            c.poll(5000)
    finally:
        c.close(timeout_ms=1000)


def test_member_id_required_without_a_member_id(make_cluster: Callable[..., FakeCluster]
                                                ) -> None:
    cluster = make_cluster(1, topics={"t": 1})

    def null(req: Request) -> Body | None:
        answer = cluster.default_answer(req)
        assert answer["error_code"] == ErrorCode.MEMBER_ID_REQUIRED   # the first join's
        answer["member_id"] = None
        return answer

    cluster.control(ApiKey.JOIN_GROUP, null)
    c = KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g",
                      enable_auto_commit=False, **FAST)
    try:
        with pytest.raises(KafkaProtocolError,
                           match="^JoinGroup answered MEMBER_ID_REQUIRED with a null member_id$"):
            c.poll(5000)
        assert len(cluster.requests_of(ApiKey.JOIN_GROUP)) == 1    # no rejoin with None
    finally:
        c.close(timeout_ms=1000)
