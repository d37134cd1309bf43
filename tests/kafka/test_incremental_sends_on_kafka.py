"""Incremental fetch sessions over 1,000 partitions on Apache Kafka (issue 26): a send to an
open session lists only the partitions whose fetch state changed, found without walking the
assignment, and the records stay exact.

Rounds of records go to a few partitions at a time (a different few each round) while the
other partitions sit idle at their end. Every record comes once, in order, with its offset,
key and value; the Fetch requests seen on the wire after the session opened are incremental
in one session with a few partitions listed, never the thousand; and the consumer checks
each incremental send against the walk over every partition (``check_incremental``).
"""
from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.fetch.request import FetchRequests
from pyconsumer.consumer.fetch.session import FetchSessionHandler
from pyconsumer.testing import KafkaCluster, TestRecord, produce

from tests.kafka.test_fetch_sessions_on_kafka import FetchSpy

pytestmark = pytest.mark.kafka

_PARTITIONS = 1000
_ROUNDS = 4
_PER_ROUND = 7            # partitions written in a round
_RECORDS = 3              # records a partition gets in a round

Row = tuple[int, bytes | None, bytes | None]


def test_incremental_sends_list_what_moved_and_records_stay_exact(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    topic = make_kafka_topic(_PARTITIONS)
    tps = [TopicPartition(topic, p) for p in range(_PARTITIONS)]
    monkeypatch.setattr(FetchRequests, "check_incremental", True)
    built: list[int] = []                 # partitions listed by each build_changes request
    build_changes = FetchSessionHandler.build_changes

    def counting(self: FetchSessionHandler, changes: dict[TopicPartition, object]) -> object:
        data = build_changes(self, changes)  # type: ignore[arg-type]
        if data is not None:
            built.append(len(data.to_send))
        return data

    monkeypatch.setattr(FetchSessionHandler, "build_changes", counting)
    spy = FetchSpy(monkeypatch)
    settings = kafka.client_settings(auto_offset_reset="earliest", fetch_max_wait_ms=100)
    with KafkaConsumer(**settings) as c:
        c.assign(tps)
        # settle: every partition at its end (the topic is empty) and a session open
        deadline = time.monotonic() + 60
        while not (c._fetcher is not None and any(
                h.has_session and len(h.session_partitions) == _PARTITIONS
                for h in c._fetcher.sessions.values())):
            assert time.monotonic() < deadline, "no fetch session opened"
            assert c.poll(timeout_ms=100) == {}
        session_id = next(h.session_id for h in c._fetcher.sessions.values())
        opened = len(spy.sent)
        for r in range(_ROUNDS):
            chosen = sorted({(r * 211 + k * 137) % _PARTITIONS for k in range(_PER_ROUND)})
            records = [TestRecord(b"k%d-%d-%d" % (r, p, i), b"v%d-%d-%d" % (r, p, i) * (i + 1),
                                  partition=p) for i in range(_RECORDS) for p in chosen]
            delivered = produce(kafka.bootstrap, topic, records, timeout=60)
            want: dict[int, list[Row]] = {}
            for rec, (p, offset) in zip(records, delivered):
                want.setdefault(p, []).append((offset, rec.key, rec.value))
            for rows in want.values():
                rows.sort()
            got: dict[int, list[Row]] = {}
            n, deadline = 0, time.monotonic() + 30
            while n < len(records):
                assert time.monotonic() < deadline, f"round {r}: {n} of {len(records)}: {got}"
                # max_records 2: a partition's records come over several polls (its
                # position moves while the others stay)
                for tp, recs in c.poll(timeout_ms=200, max_records=2).items():
                    got.setdefault(tp.partition, []).extend(
                        (x.offset, x.key, x.value) for x in recs)
                    n += len(recs)
            assert got == want, r
            assert c.poll(timeout_ms=300) == {}            # nothing more, nothing twice
            for p, rows in want.items():
                assert c.position(TopicPartition(topic, p)) == rows[-1][0] + 1
    later = spy.sent[opened:]
    assert later, "no Fetch after the session opened"
    # incremental in the one session, each listing a few partitions (the moved ones); a full
    # fetch may come between when a prefetch meets a starving partition (request.py)
    incremental = [s for s in later if s.epoch > 0]
    assert {s.session_id for s in incremental} == {session_id}
    assert len(incremental) >= 0.9 * len(later), [(s.epoch, len(s.listed)) for s in later]
    assert max(len(s.listed) for s in incremental) <= _PER_ROUND
    assert any(s.listed for s in incremental) and not any(s.forgotten for s in later)
    answers = [spy.answer_to(s) for s in later]
    assert [a.error_code for a in answers if a is not None] == [0] * sum(
        a is not None for a in answers)
    # they came from build_changes (the walk builds through FetchRequestBuilder)
    assert len(built) >= len(incremental) - 1 and max(built) > 0
