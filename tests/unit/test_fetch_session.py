"""FetchSessionHandler (KIP-227) on its own, as Java's FetchSessionHandlerTest: which partitions
a request lists, which it forgets, the session id and epoch it carries, and how responses and
errors move the session on. No network."""
from __future__ import annotations

import random
import uuid

import pytest

from pyconsumer.consumer.fetch.session import (
    INITIAL,
    ZERO_UUID,
    FetchMetadata,
    FetchRequestData,
    FetchSessionHandler,
    PartitionData,
    _naming,
    next_epoch,
)
from pyconsumer.errors import ErrorCode
from pyconsumer.structs import TopicPartition

FOO, BAR = uuid.uuid4(), uuid.uuid4()
F0, F1, F2 = (TopicPartition("foo", i) for i in range(3))
B0 = TopicPartition("bar", 0)


def pd(offset: int, topic_id: uuid.UUID = FOO, max_bytes: int = 100,
       epoch: int = 4) -> PartitionData:
    return PartitionData(topic_id, offset, max_bytes, epoch)


def build(h: FetchSessionHandler, wanted: dict[TopicPartition, PartitionData],
          full: bool = False) -> FetchRequestData:
    b = h.new_builder()
    for tp, data in wanted.items():
        b.add(tp, data)
    return b.build(full=full)


def opened(session_id: int = 123) -> FetchSessionHandler:
    """A handler whose full fetch of foo-0, foo-1 opened session ``session_id``."""
    h = FetchSessionHandler(1)
    build(h, {F0: pd(0), F1: pd(10)})
    assert h.handle_response(0, session_id, {F0, F1})
    assert h.next_metadata == FetchMetadata(session_id, 1)
    return h


def test_a_full_fetch_lists_every_partition_and_asks_for_a_session() -> None:
    h = FetchSessionHandler(1)
    data = build(h, {F1: pd(10), F0: pd(0), B0: pd(5, BAR)})
    assert data.metadata == INITIAL == FetchMetadata(0, 0)      # Java asks with epoch 0
    assert list(data.to_send) == [F1, F0, B0]                   # in the order added
    assert data.to_forget == [] and data.to_replace == []
    assert data.session_partitions == data.to_send
    assert data.can_use_topic_ids and data.topic_names == {FOO: "foo", BAR: "bar"}


def test_an_unchanged_session_sends_nothing_and_counts_epochs() -> None:
    h = opened()
    for epoch in (1, 2, 3):
        data = build(h, {F0: pd(0), F1: pd(10)})
        assert data.metadata == FetchMetadata(123, epoch)
        assert data.to_send == {} and data.to_forget == []
        assert list(data.session_partitions) == [F0, F1]        # what the answer may name
        assert h.handle_response(0, 123, set())                  # nothing new: no partitions
    assert h.next_metadata == FetchMetadata(123, 4)


def test_incremental_lists_added_then_altered_and_forgets_removed() -> None:
    h = opened()
    build(h, {F0: pd(0), F1: pd(10)})
    assert h.handle_response(0, 123, {F0})
    # foo-0 moved on, foo-1 is gone (unassigned, paused, fetched elsewhere), bar-0 is new
    data = build(h, {F0: pd(7), B0: pd(5, BAR)})
    assert data.metadata == FetchMetadata(123, 2)
    assert list(data.to_send.items()) == [(B0, pd(5, BAR)), (F0, pd(7))]
    assert data.to_forget == [(F1, FOO)]
    assert list(data.session_partitions) == [F0, B0]
    assert data.forgotten(12) == data.forgotten(13) == [(F1, FOO)]


@pytest.mark.parametrize("changed", [pd(0, epoch=5), pd(0, max_bytes=200), pd(1)],
                         ids=["leader-epoch", "max-bytes", "fetch-offset"])
def test_any_changed_field_is_sent_again(changed: PartitionData) -> None:
    h = opened()
    data = build(h, {F0: changed, F1: pd(10)})
    assert data.to_send == {F0: changed} and data.to_forget == []
    assert data.session_partitions[F0] == changed


def test_a_recreated_topic_is_replaced_where_topics_go_by_id() -> None:
    h = opened()
    new_id = uuid.uuid4()
    data = build(h, {F0: pd(0, new_id), F1: pd(10, new_id)})
    assert data.to_send == {F0: pd(0, new_id), F1: pd(10, new_id)}
    assert data.to_replace == [(F0, FOO), (F1, FOO)]
    assert data.forgotten(13) == [(F0, FOO), (F1, FOO)]     # the old ids, by id
    assert data.forgotten(12) == []                         # by name: nothing to forget
    assert data.topic_names == {new_id: "foo"}


def test_losing_topic_ids_closes_the_session_with_a_full_fetch() -> None:
    h = opened()
    data = build(h, {F0: pd(0), F1: pd(10), B0: pd(0, ZERO_UUID)})
    assert data.metadata == FetchMetadata(123, 0)            # close 123, open another
    assert list(data.to_send) == [F0, F1, B0] and not data.can_use_topic_ids
    assert data.topic_names == {FOO: "foo"}


def test_a_full_fetch_can_be_forced_in_a_session() -> None:
    h = opened()
    data = build(h, {F1: pd(10, max_bytes=900), F0: pd(0)}, full=True)
    assert data.metadata == FetchMetadata(123, 0)
    assert list(data.to_send) == [F1, F0]                   # the request's order, all of it
    assert h.handle_response(0, 456, {F0, F1})
    assert h.next_metadata == FetchMetadata(456, 1)


@pytest.mark.parametrize("code, after", [
    (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, FetchMetadata(0, 0)),
    (ErrorCode.INVALID_FETCH_SESSION_EPOCH, FetchMetadata(123, 0)),
    (ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, FetchMetadata(123, 0)),
])
def test_session_errors_drop_the_answer_and_make_the_next_fetch_full(
        code: int, after: FetchMetadata) -> None:
    h = opened()
    build(h, {F0: pd(0), F1: pd(10)})
    assert not h.handle_response(code, 0, set())
    assert h.next_metadata == after
    data = build(h, {F0: pd(0), F1: pd(10)})
    assert data.metadata == after and list(data.to_send) == [F0, F1]


def test_a_failed_request_closes_the_session_and_asks_for_a_new_one() -> None:
    h = opened()
    build(h, {F0: pd(0), F1: pd(10)})
    h.handle_error()
    assert h.next_metadata == FetchMetadata(123, 0)
    assert list(build(h, {F1: pd(10)}).to_send) == [F1]


def test_a_broker_without_sessions_gets_full_fetches_every_time() -> None:
    h = FetchSessionHandler(1)
    for _ in range(3):
        data = build(h, {F0: pd(0), F1: pd(10)})
        assert data.metadata == INITIAL and list(data.to_send) == [F0, F1]
        assert h.handle_response(0, 0, {F0, F1})    # session id 0: no session
        assert not h.has_session


def test_an_incremental_answer_with_session_id_zero_closes_the_session() -> None:
    h = opened()
    build(h, {F0: pd(0)})                            # foo-1 forgotten
    assert h.handle_response(0, 0, {F0})             # the broker closed it: data is good
    assert h.next_metadata == INITIAL
    assert list(build(h, {F0: pd(0)}).to_send) == [F0]


def test_an_incremental_answer_naming_partitions_outside_the_session_is_dropped() -> None:
    h = opened()
    build(h, {F0: pd(0), F1: pd(10)})
    assert not h.handle_response(0, 123, {F0, F2})
    assert h.next_metadata == FetchMetadata(123, 0)
    h = opened()
    build(h, {F0: pd(0), F1: pd(10)})
    assert not h.handle_response(0, 123, {F0}, unknown_topic_ids=1)


def test_a_full_answer_with_extra_partitions_keeps_the_session() -> None:
    # the extra partition is ignored by the fetcher; the rest is good data
    h = FetchSessionHandler(1)
    build(h, {F0: pd(0)})
    assert h.handle_response(0, 77, {F0, F2})
    assert h.next_metadata == FetchMetadata(77, 1)


def test_before_v7_a_request_lists_the_whole_session() -> None:
    h = opened()
    data = build(h, {F0: pd(3), F1: pd(10)})
    assert data.partitions_at(7) == {F0: pd(3)}
    assert data.partitions_at(6) == {F0: pd(3), F1: pd(10)}


def test_epochs_wrap_to_one_and_final_stays_final() -> None:
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(-1) == -1
    h = opened()
    h.next_metadata = FetchMetadata(123, 2**31 - 1)
    data = build(h, {F0: pd(0), F1: pd(10)})
    assert data.metadata == FetchMetadata(123, 2**31 - 1)
    assert h.handle_response(0, 123, set())
    assert h.next_metadata == FetchMetadata(123, 1)


def test_close_sends_an_empty_full_fetch_with_the_final_epoch() -> None:
    h = opened()
    h.notify_close()
    data = build(h, {})
    assert data.metadata == FetchMetadata(123, -1)
    assert data.to_send == {} and data.metadata.is_full


def test_naming_finds_every_topic_id_as_a_walk_would() -> None:
    """_naming (distinct id objects found in C) against a walk over every partition: topics
    interleaved, a topic's id shared as one object or held as equal copies, topics without
    an id (ZERO_UUID), in 300 random full fetches."""
    rng = random.Random(227)
    for _ in range(300):
        topics = [f"t{i}" for i in range(rng.randrange(1, 6))]
        ids = {t: (ZERO_UUID if rng.random() < 0.3 else uuid.uuid4()) for t in topics}
        partitions: dict[TopicPartition, PartitionData] = {}
        for _ in range(rng.randrange(0, 40)):
            t = rng.choice(topics)
            topic_id = ids[t] if rng.random() < 0.7 else uuid.UUID(int=ids[t].int)  # a copy
            partitions[TopicPartition(t, rng.randrange(50))] = PartitionData(topic_id, 0, 1, -1)
        want = {d.topic_id: tp.topic for tp, d in partitions.items() if d.topic_id != ZERO_UUID}
        assert _naming(partitions) == (
            want, all(d.topic_id != ZERO_UUID for d in partitions.values()))
