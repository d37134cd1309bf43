"""The answered partitions of a Fetch, over the in-process fake: each keeps its own record-set
index. A partition the request did not list is ignored (a debug line), one it left out has no
data and is asked for again, and indexes that are not of the answered record sets are not
used (the record sets are indexed again)."""
from __future__ import annotations

import logging
from typing import Any

import pytest

from pyconsumer.consumer.fetch import request as fetch_request
from pyconsumer.net.connection import Response
from pyconsumer.protocol import ApiKey
from pyconsumer.records import RecordSetIndex
from pyconsumer.testing import FakeCluster, Request

from tests.unit.fetch_rig import (  # noqa: F401  (the fixtures cluster and rig)
    T0,
    T1,
    Rig,
    cluster_fixture,
    recs,
    rig_fixture,
)


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

    indexes: dict[tuple[int, int], Any] | None = None


@pytest.mark.parametrize("how", ["kept", "one missing", "repeated", "none"])
def test_each_partition_takes_the_index_keyed_by_its_own_place(
        rig: Rig, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """The decoder keys its indexes by (topic position, partition): a partition takes its own
    or, without one (a key the response repeated, a body from elsewhere), indexes its set."""
    used: list[Any] = []

    def body_of(response: Response, api: ApiKey) -> Any:
        body = response.body
        out = _Body(body)
        indexes = dict(body.indexes)
        keys = sorted((k, p["partition_index"]) for k, t in enumerate(body["responses"])
                      for p in t["partitions"])
        assert sorted(indexes) == keys and len(keys) == 2
        if how == "one missing":
            del indexes[keys[0]]
        elif how == "repeated":
            indexes[keys[1]] = None
        out.indexes = None if how == "none" else indexes
        used.extend(i for i in (out.indexes or {}).values() if i is not None)
        return out

    built: list[Any] = []

    def index_here(records: Any, offset: int) -> Any:
        built.append(RecordSetIndex(records, offset))
        return built[-1]

    monkeypatch.setattr(fetch_request, "body_of", body_of)
    monkeypatch.setattr(fetch_request, "RecordSetIndex", index_here)
    rig.assign({T0: 0, T1: 0})
    rig.fetch()
    assert rig.drain(100) == [(T0, recs(0, 0, 1, 2, 3, 4)), (T1, recs(1, 0, 1, 2, 3))]
    assert rig.offsets() == {T0: 5, T1: 4}
    assert len(used) == {"kept": 2, "one missing": 1, "repeated": 1, "none": 0}[how]
    assert len(built) == {"kept": 0, "one missing": 1, "repeated": 1, "none": 2}[how]
