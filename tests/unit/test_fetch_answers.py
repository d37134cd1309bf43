"""The answered partitions of a Fetch, over the in-process fake: each keeps its own record-set
index. A partition the request did not list is ignored (a debug line), one it left out has no
data and is asked for again, and indexes that are not of the answered record sets are not
used (the record sets are indexed again)."""
from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer import TopicPartition
from pyconsumer.consumer.fetch import request as fetch_request
from pyconsumer.net.connection import Response
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import FakeCluster, Request

from tests.unit.test_fetcher_drain import T0, T1, Rig, recs


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(1, topics={"t": 2}) as c:
        for p, sizes in ((0, (3, 2)), (1, (4,))):
            start = 0
            for n in sizes:
                c.produce(TopicPartition("t", p),
                          [(None, b"%d-%d" % (p, i)) for i in range(start, start + n)])
                start += n
        yield c
        assert c.errors == []


@pytest.fixture
def rig(cluster: FakeCluster) -> Iterator[Rig]:
    r = Rig(cluster)
    yield r
    r.close()


def test_a_partition_the_request_did_not_list_is_ignored(
        cluster: FakeCluster, rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    def both(req: Request) -> dict[str, Any]:
        answer = cluster.default_answer(req)
        [topic] = answer["responses"]
        [p0] = topic["partitions"]
        topic["partitions"].append({**p0, "partition_index": 1})   # t-0's data, as t-1's
        return answer

    cluster.control(ApiKey.FETCH, both)
    caplog.set_level(logging.DEBUG, logger="pyconsumer.consumer.fetch.request")
    rig.assign({T0: 0})
    rig.fetch()
    assert rig.drain(100) == [(T0, recs(0, 0, 1, 2, 3, 4))]
    assert rig.drain(100) == []
    assert rig.offsets() == {T0: 5}
    assert [r.levelno for r in caplog.records if "t-1" in r.getMessage()
            and r.name == "pyconsumer.consumer.fetch.request"] == [logging.DEBUG]


def test_a_partition_the_answer_left_out_has_no_data_and_is_asked_again(
        cluster: FakeCluster, rig: Rig) -> None:
    answers: list[int] = []

    def without_t1(req: Request) -> dict[str, Any]:
        answer = cluster.default_answer(req)
        if not answers:
            for topic in answer["responses"]:
                topic["partitions"] = [p for p in topic["partitions"]
                                       if p["partition_index"] != 1]
        answers.append(1)
        return answer

    cluster.control(ApiKey.FETCH, without_t1)
    rig.fetcher.prefetch = False
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    assert rig.drain(100) == [(T0, recs(0, 0, 1, 2, 3, 4))]
    assert rig.offsets() == {T0: 5, T1: 0}
    rig.fetch()
    assert rig.drain(100) == [(T1, recs(1, 0, 1, 2, 3))]
    assert rig.offsets() == {T0: 5, T1: 4}


class _Body(dict[str, Any]):
    """A Fetch body with indexes of its own choosing (the decoder's are read-only)."""

    indexes: list[Any] | None = None


@pytest.mark.parametrize("how", ["swapped", "one short"])
def test_indexes_that_are_not_of_the_answered_record_sets_are_not_used(
        rig: Rig, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    def body_of(response: Response, api: ApiKey) -> Any:
        body = response.body
        out = _Body(body)
        indexes = list(body.indexes)
        assert len(indexes) == 2
        out.indexes = indexes[::-1] if how == "swapped" else indexes[:1]
        return out

    monkeypatch.setattr(fetch_request, "body_of", body_of)
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    assert rig.drain(100) == [(T0, recs(0, 0, 1, 2, 3, 4)), (T1, recs(1, 0, 1, 2, 3))]
    assert rig.offsets() == {T0: 5, T1: 4}
