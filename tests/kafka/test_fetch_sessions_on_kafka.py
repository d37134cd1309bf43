"""Incremental fetch sessions (KIP-227) against real Apache Kafka, the first broker here that
keeps them (Tansu and librdkafka's mock always answer session id 0; see
tests/integration/test_fetch_sessions.py).

Every Fetch request pyconsumer encodes and every Fetch response it decodes is recorded, so
the tests see the session ids Kafka hands out, the epochs, which partitions each request
lists, and the size of each request on the wire."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition, protocol
from pyconsumer.errors import ErrorCode
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import KafkaCluster, NotOurCluster, sample_records

from tests.backends import external_kafka
from tests.conftest import unique_topic_name
from tests.integration.runners import wait_for
from tests.kafka.test_security_on_kafka import (
    Row,
    consume,
    private_cluster,
    produce_expected,
    strict_cluster,
)

pytestmark = pytest.mark.kafka


@dataclass
class Sent:
    """One Fetch request as encoded."""

    correlation_id: int
    session_id: int
    epoch: int
    listed: list[int]          # partition numbers the request lists, in request order
    forgotten: list[int]
    size: int                  # bytes on the wire (size prefix, header and body)


@dataclass
class Answer:
    """One Fetch response as decoded."""

    correlation_id: int
    error_code: int
    session_id: int
    named: list[int]           # partition numbers the response names


class FetchSpy:
    """Records the Fetch requests pyconsumer encodes and the responses it decodes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[Sent] = []
        self.answers: list[Answer] = []
        encode, decode = protocol.encode_request, protocol.decode_response
        decode_request = protocol.decode_request

        def spy_encode(api_key: int, version: int, correlation_id: int, client_id: str | None,
                       body: dict[str, Any]) -> bytes:
            frame = encode(api_key, version, correlation_id, client_id, body)
            if api_key == ApiKey.FETCH:
                body = decode_request(frame[4:])[4]      # as on the wire: entries may be encoded
                self.sent.append(Sent(
                    correlation_id, body["session_id"], body["session_epoch"],
                    [p["partition"] for t in body["topics"] for p in t["partitions"]],
                    [p for t in body["forgotten_topics_data"] for p in t["partitions"]],
                    len(frame)))
            return frame

        def spy_decode(api_key: int, version: int, frame: Any) -> tuple[int, dict[str, Any]]:
            correlation_id, body = decode(api_key, version, frame)
            if api_key == ApiKey.FETCH:
                self.answers.append(Answer(
                    correlation_id, body.get("error_code", 0), body.get("session_id", 0),
                    [p["partition_index"] for t in body["responses"] for p in t["partitions"]]))
            return correlation_id, body

        monkeypatch.setattr(protocol, "encode_request", spy_encode)
        monkeypatch.setattr(protocol, "decode_response", spy_decode)

    def answer_to(self, request: Sent) -> Answer | None:
        """The response to ``request`` (all Fetches go to one node here, the leader of every
        partition, whose connection numbers its requests without reuse), None when it got none."""
        found = [a for a in self.answers if a.correlation_id == request.correlation_id]
        assert len(found) <= 1
        return found[0] if found else None


def settings(cluster: KafkaCluster, **extra: Any) -> dict[str, Any]:
    return cluster.client_settings(auto_offset_reset="earliest", fetch_max_wait_ms=100,
                                   **extra)


def merge(into: dict[TopicPartition, list[Row]], more: dict[TopicPartition, list[Row]]) -> None:
    for tp, rows in more.items():
        into.setdefault(tp, []).extend(rows)


def test_kafka_opens_a_session_and_later_fetches_are_incremental(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """6 partitions: the first Fetch is full (session 0, epoch 0, all six listed) and Kafka
    answers a real session id; every later Fetch is incremental in that session, epochs
    1, 2, 3... without a gap. Once data flows on one partition only, each request lists at
    most that partition (nothing else changed), so it is a fraction of the full one's size;
    the records are exact throughout."""
    topic = make_kafka_topic(6)
    expected = produce_expected(kafka.bootstrap_servers, topic,
                                sample_records(60, partitions=6, seed=1))
    spy = FetchSpy(monkeypatch)
    got: dict[TopicPartition, list[Row]] = {}
    with KafkaConsumer(**settings(kafka)) as c:
        c.assign([TopicPartition(topic, p) for p in range(6)])
        merge(got, consume(c, 60))
        assert got == expected
        one_partition_from = len(spy.sent)
        for rnd in range(3):                     # then data on partition 3 only
            more = produce_expected(kafka.bootstrap_servers, topic,
                                    sample_records(10, partitions=[3], seed=10 + rnd))
            merge(expected, more)
            merge(got, consume(c, 10))
        assert c.poll(timeout_ms=300) == {}
        assert got == expected
    sent = spy.sent
    # the last request may be the one closing the session (epoch -1) at close()
    closing = sent.pop() if sent[-1].epoch == -1 else None
    first, rest = sent[0], sent[1:]
    assert (first.session_id, first.epoch, sorted(first.listed)) == (0, 0, [0, 1, 2, 3, 4, 5])
    opened = spy.answer_to(first)
    assert opened is not None and opened.error_code == 0 and opened.session_id != 0
    session = opened.session_id
    if closing is not None:
        assert (closing.session_id, closing.listed, closing.forgotten) == (session, [], [])
    assert len(rest) >= 5
    assert [(s.session_id, s.epoch) for s in rest] == [(session, e) for e in
                                                       range(1, len(rest) + 1)]
    answers = [a for a in map(spy.answer_to, rest) if a is not None]
    assert len(answers) >= len(rest) - 1            # the last may be in flight at close()
    assert all(a.error_code == 0 and a.session_id == session for a in answers)
    assert all(s.forgotten == [] for s in sent)
    tail = sent[one_partition_from:]
    assert tail and all(s.listed in ([], [3]) for s in tail), [s.listed for s in tail]
    assert [3] in [s.listed for s in tail] and [] in [s.listed for s in tail]
    # answers to incremental fetches name only partitions with news: here, partition 3
    assert all(set(a.named) <= {3} for a in map(spy.answer_to, tail) if a is not None)
    empty = {s.size for s in tail if not s.listed}
    one = {s.size for s in tail if s.listed}
    assert len(empty) == 1 and len(one) == 1
    assert max(empty) < max(one) < first.size
    with capsys.disabled():
        print(f"\nFetch request bytes on the wire, 6 partitions: full {first.size}, incremental "
              f"listing 1 partition {max(one)}, listing none {max(empty)}")


def test_a_paused_partition_is_forgotten_and_added_back(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Pausing a partition mid-session: the next incremental Fetch names it in
    forgotten_topics_data and Kafka stops answering for it (its new records stay unread);
    resumed, it is added back by an incremental Fetch listing it alone, in the same session,
    and its records arrive exactly."""
    topic = make_kafka_topic(3)
    tps = [TopicPartition(topic, p) for p in range(3)]
    expected = produce_expected(kafka.bootstrap_servers, topic,
                                sample_records(30, partitions=3, seed=6))
    spy = FetchSpy(monkeypatch)
    got: dict[TopicPartition, list[Row]] = {}
    with KafkaConsumer(**settings(kafka)) as c:
        c.assign(tps)
        merge(got, consume(c, 30))
        c.pause(tps[1])
        paused_from = len(spy.sent)
        more = produce_expected(kafka.bootstrap_servers, topic,
                                sample_records(12, partitions=[0, 1, 2], seed=7))
        merge(expected, more)
        merge(got, consume(c, 8))                 # partitions 0 and 2 only
        assert c.poll(timeout_ms=300) == {}
        assert got == {tp: rows if tp != tps[1] else rows[:10] for tp, rows in expected.items()}
        resumed_from = len(spy.sent)
        c.resume(tps[1])
        merge(got, consume(c, 4))
        assert c.poll(timeout_ms=300) == {}
    assert got == expected
    sent = [s for s in spy.sent if s.epoch != -1]
    opened = spy.answer_to(sent[0])
    assert opened is not None and opened.session_id != 0
    assert [(s.session_id, s.epoch) for s in sent[1:]] == [
        (opened.session_id, e) for e in range(1, len(sent))]
    # the pause: forgotten once, then never listed until the resume
    while_paused = sent[paused_from:resumed_from]
    assert while_paused[0].forgotten == [1] and 1 not in while_paused[0].listed
    assert all(s.forgotten == [] and 1 not in s.listed for s in while_paused[1:])
    assert all(1 not in a.named for a in map(spy.answer_to, while_paused) if a is not None)
    # the resume: partition 1 alone is added back at its position
    after = sent[resumed_from:]
    assert after[0].listed == [1] and after[0].forgotten == []
    assert all(s.forgotten == [] for s in after)


def test_a_wrong_epoch_closes_the_session_and_a_new_one_opens(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The consumer's next incremental Fetch carries an epoch Kafka did not expect (set by
    hand while nothing is in flight, as a lost response would leave it): Kafka answers
    INVALID_FETCH_SESSION_EPOCH, the consumer drops that answer, sends a full fetch that
    closes the session and asks for a new one (the old id, epoch 0), gets a new id and goes
    on: every record once, in order."""
    topic = make_kafka_topic(2)
    tps = [TopicPartition(topic, p) for p in range(2)]
    expected = produce_expected(kafka.bootstrap_servers, topic,
                                sample_records(20, partitions=2, seed=8))
    spy = FetchSpy(monkeypatch)
    got: dict[TopicPartition, list[Row]] = {}
    with KafkaConsumer(**settings(kafka)) as c:
        c.assign(tps)
        merge(got, consume(c, 20))
        fetcher = c._fetcher
        assert fetcher is not None
        c.pause(*tps)
        wait_for(lambda: c.poll(timeout_ms=100) == {} and not fetcher._nodes_in_flight)
        handler = fetcher.sessions[kafka.leaders(topic)[0]]
        assert handler.has_session
        old = handler.next_metadata
        handler.next_metadata = old._replace(epoch=old.epoch + 5)
        before = len(spy.sent)
        merge(expected, produce_expected(kafka.bootstrap_servers, topic,
                                         sample_records(20, partitions=2, seed=9)))
        c.resume(*tps)
        merge(got, consume(c, 20))
        assert c.poll(timeout_ms=300) == {}
    assert got == expected
    after = [s for s in spy.sent[before:] if s.epoch != -1]
    answers = [spy.answer_to(s) for s in after[:2]]
    assert answers[0] is not None and answers[1] is not None
    assert (after[0].session_id, after[0].epoch) == (old.session_id, old.epoch + 5)
    assert answers[0].error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert (after[1].session_id, after[1].epoch, sorted(after[1].listed)) == (
        old.session_id, 0, [0, 1])
    new_session = answers[1].session_id
    assert answers[1].error_code == 0 and new_session not in (0, old.session_id)
    assert [(s.session_id, s.epoch) for s in after[2:]] == [
        (new_session, e) for e in range(1, len(after) - 1)]


@pytest.fixture
def restartable_kafka(request: pytest.FixtureRequest) -> KafkaCluster:
    """A private one-node cluster a test may restart (the security tests' private node,
    shared to start one JVM less)."""
    external = external_kafka()
    if external:
        raise NotOurCluster(f"restarting the broker needs a Kafka the tests started, not the external one at {external}")
    return strict_cluster(request.config)


def test_a_restarted_broker_forgets_the_session_and_the_consumer_opens_another(
        restartable_kafka: KafkaCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The broker restarts while the consumer has a session and no Fetch in flight (its
    partitions paused); the consumer, polling, reconnects to the new broker process.
    Resumed, its next (incremental) Fetch names a session that process never had: Kafka answers FETCH_SESSION_ID_NOT_FOUND, the consumer
    drops that answer, sends a full fetch (session 0, epoch 0), gets a new session and goes
    on: every record once, in order."""
    cluster = restartable_kafka
    topic = cluster.create_topic(unique_topic_name(), 3)
    tps = [TopicPartition(topic, p) for p in range(3)]
    expected = produce_expected(cluster.bootstrap_servers, topic,
                                sample_records(30, partitions=3, seed=2))
    spy = FetchSpy(monkeypatch)
    got: dict[TopicPartition, list[Row]] = {}
    with KafkaConsumer(**settings(cluster, reconnect_backoff_ms=100,
                                  reconnect_backoff_max_ms=500)) as c:
        c.assign(tps)
        merge(got, consume(c, 30))
        assert got == expected
        fetcher = c._fetcher
        assert fetcher is not None
        wait_for(lambda: c.poll(timeout_ms=100) == {} and fetcher.sessions[1].has_session)
        old_session = fetcher.sessions[1].session_id
        opened = spy.answer_to(spy.sent[0])
        assert opened is not None and old_session == opened.session_id != 0
        c.pause(*tps)
        wait_for(lambda: c.poll(timeout_ms=100) == {} and not fetcher._nodes_in_flight)
        before = len(spy.sent)
        cluster.restart(1)
        client, conn = c._client, c._client.connection(1) if c._client else None
        assert client is not None and conn is not None and conn.last_error is None

        def reconnected() -> bool:
            """Polled (paused), the consumer sees the old connection closed, then connects
            to the new broker process."""
            assert c.poll(timeout_ms=100) == {}
            return conn.last_error is not None and client.ready(1)

        wait_for(reconnected)
        merge(expected, produce_expected(cluster.bootstrap_servers, topic,
                                         sample_records(30, partitions=3, seed=3)))
        c.resume(*tps)
        merge(got, consume(c, 30))
        assert c.poll(timeout_ms=300) == {}
        assert got == expected
    after = spy.sent[before:]
    answers = [spy.answer_to(s) for s in after[:2]]
    # the incremental fetch in the forgotten session, then a full one that opens a new session
    assert (after[0].session_id, after[0].epoch > 0) == (old_session, True)
    # it lists the partitions again when the restart's new leader epochs are known by then
    assert sorted(after[0].listed) in ([], [0, 1, 2])
    assert answers[0] is not None and answers[1] is not None
    assert (answers[0].error_code, answers[0].session_id) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)
    assert (after[1].session_id, after[1].epoch, sorted(after[1].listed)) == (0, 0, [0, 1, 2])
    new_session = answers[1].session_id
    assert answers[1].error_code == 0 and new_session not in (0, old_session)
    assert [(s.session_id, s.epoch) for s in after[2:] if s.epoch != -1] == [
        (new_session, e) for e in range(1, len([s for s in after[2:] if s.epoch != -1]) + 1)]


def test_no_session_slots_means_full_fetches(monkeypatch: pytest.MonkeyPatch) -> None:
    """max.incremental.fetch.session.cache.slots=0: Kafka has no room for a session and
    answers session id 0, so every Fetch is a full one (session 0, epoch 0) listing all the
    partitions, and the records are exact."""
    cluster = private_cluster(broker_config={"max.incremental.fetch.session.cache.slots": "0"})
    try:
        topic = cluster.create_topic(unique_topic_name(), 3)
        expected = produce_expected(cluster.bootstrap_servers, topic,
                                    sample_records(45, partitions=3, seed=4))
        spy = FetchSpy(monkeypatch)
        got: dict[TopicPartition, list[Row]] = {}
        with KafkaConsumer(**settings(cluster)) as c:
            c.assign([TopicPartition(topic, p) for p in range(3)])
            merge(got, consume(c, 45))
            merge(expected, produce_expected(cluster.bootstrap_servers, topic,
                                             sample_records(9, partitions=[1], seed=5)))
            merge(got, consume(c, 9))
            assert c.poll(timeout_ms=300) == {}
        assert got == expected
        assert len(spy.sent) >= 3
        assert all((s.session_id, s.epoch, sorted(s.listed), s.forgotten) == (0, 0, [0, 1, 2], [])
                   for s in spy.sent), spy.sent
        assert all((a.error_code, a.session_id) == (0, 0) for a in spy.answers)
    finally:
        cluster.close()
