"""Issue 26: an idle poll's work does not grow with the number of assigned partitions, and
the Fetch requests encoded from kept partition entries are the codec's bytes.

No timing: the Python lines the consumer runs (sys.settrace) during idle polls are counted
with 10 and with 2,000 assigned partitions, every position settled and a long-polling Fetch in
flight to the one broker. A loop over the assignment shows up as thousands of lines.
"""
from __future__ import annotations

import contextlib
import random
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import pyconsumer
from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.config import OffsetResetStrategy
from pyconsumer.consumer.fetch.session import (
    FetchRequestData,
    FetchSessionHandler,
    PartitionData,
)
from pyconsumer.consumer.subscription import FetchState, SubscriptionState
from pyconsumer.errors import NoOffsetForPartitionError
from pyconsumer.protocol import SUPPORTED_VERSIONS, ApiKey, encode_request
from pyconsumer.testing import FakeCluster

_PKG = str(Path(pyconsumer.__file__).parent)
_POLLS = 20


def _lines_per_idle_poll(n: int) -> tuple[float, dict[str, int]]:
    # the fake holds a Fetch up to its cap: long enough that none completes while counting
    with FakeCluster(topics={"t": n}, fetch_wait_cap_s=30.0) as cluster:
        tps = [TopicPartition("t", p) for p in range(n)]
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                           fetch_max_wait_ms=20_000, request_timeout_ms=30_000) as c:
            c.assign(tps)
            deadline = time.monotonic() + 20
            subs = c._subscriptions
            fetcher = c._fetcher
            assert fetcher is not None
            # settle: every position found and a (long-polling) Fetch in flight
            while time.monotonic() < deadline:
                c.poll(timeout_ms=50)
                if subs.all_fetching() and fetcher._nodes_in_flight:
                    break
            assert subs.all_fetching() and fetcher._nodes_in_flight
            completions = fetcher.completions
            c.poll(timeout_ms=0)                 # warm: caches keyed on the settled state
            lines: dict[str, int] = {}

            def tracer(frame: FrameType, event: str, arg: Any) -> Any:
                if not frame.f_code.co_filename.startswith(_PKG):
                    return None
                if event == "line":
                    where = f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"
                    lines[where] = lines.get(where, 0) + 1
                return tracer

            sys.settrace(tracer)
            try:
                for _ in range(_POLLS):
                    c.poll(timeout_ms=0)
            finally:
                sys.settrace(None)
            # a Fetch that completed meanwhile would mean a send pass, not an idle poll
            assert fetcher.completions == completions
            assert cluster.errors == []
            return sum(lines.values()) / _POLLS, lines


def test_idle_poll_lines_do_not_grow_with_partitions() -> None:
    small, _ = _lines_per_idle_poll(10)
    large, where = _lines_per_idle_poll(2000)
    top = sorted(where.items(), key=lambda kv: -kv[1])[:5]
    # equal in principle; a little slack for a metadata or session line on either side
    assert large <= small * 1.2 + 20, (small, large, top)
    assert large < 2000, top             # far below one line per partition


def test_subscription_sets_follow_every_change() -> None:
    """The incremental sets answer as a walk over every partition would, after any sequence
    of assignments, seeks, resets, validations and pauses."""
    rng = random.Random(26)
    subs = SubscriptionState(OffsetResetStrategy("earliest"))
    universe = [TopicPartition("t", p) for p in range(12)]
    subs.assign_from_user(universe[:8])
    for _ in range(3000):
        tps = subs.assigned_partitions()
        tp = rng.choice(tps)
        op = rng.randrange(9)
        if op == 0:
            subs.seek(tp, rng.randrange(100), rng.choice([None, 1]), 1, rng.choice([None, 2]))
        elif op == 1:
            subs.request_reset(tp)
        elif op == 2:
            subs.maybe_validate_for_leader(tp, rng.randrange(3), rng.randrange(3))
        elif op == 3:
            subs.complete_validation(tp)
        elif op == 4:
            subs.pause(tp) if rng.random() < 0.5 else subs.resume(tp)
        elif op == 5 and subs.state(tp).fetch_state is FetchState.AWAIT_RESET:
            subs.maybe_seek_unvalidated(tp, 5, OffsetResetStrategy("earliest"), None)
        elif op == 6:
            subs.seek_validated(tp, rng.randrange(100), None)
        elif op == 7:
            subs.move_to_end(tp)
        elif op == 8 and rng.random() < 0.05:
            subs.assign_from_user(rng.sample(universe, rng.randrange(1, 12)))
        states = [(t, subs.state(t)) for t in subs.assigned_partitions()]
        assert subs.fetchable_partitions() == \
            [t for t, st in states if not st.paused and st.fetch_state is FetchState.FETCHING]
        assert subs.all_fetching() == all(st.fetch_state is FetchState.FETCHING
                                          for _, st in states)
        assert subs.paused_partitions() == {t for t, st in states if st.paused}
        assert subs.positioned_partitions() == [
            t for t, st in states
            if st.fetch_state in (FetchState.FETCHING, FetchState.AWAIT_VALIDATION)]
        for state, found in [(FetchState.INITIALIZING, subs.initializing_partitions()),
                             (FetchState.AWAIT_RESET, subs.partitions_needing_reset(1e18)),
                             (FetchState.AWAIT_VALIDATION,
                              subs.partitions_needing_validation(1e18))]:
            assert found == [t for t, st in states if st.fetch_state is state]


def test_fetch_template_encodes_the_codec_bytes() -> None:
    """Fetch requests built from kept partition entries are byte for byte the codec's, at
    every Fetch version the client speaks, for full and incremental fetches, with entries
    kept from before and entries encoded anew."""
    lo, hi = SUPPORTED_VERSIONS[ApiKey.FETCH]
    ids = {"a": uuid.uuid4(), "b": uuid.uuid4()}
    with FakeCluster(topics={"a": 3, "b": 2}) as cluster:
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap) as c:
            c.assign([TopicPartition("a", 0)])
            c.poll(timeout_ms=0)                   # the network parts exist from here
            assert c._fetcher is not None
            requests = c._fetcher.requests
            handler = FetchSessionHandler(0)

            def build(offset: int) -> FetchRequestData:
                builder = handler.new_builder()
                for t, n in (("b", 2), ("a", 3)):
                    for p in range(n):
                        builder.add(TopicPartition(t, p),
                                    PartitionData(ids[t], offset + p, 1 << 20, p - 1))
                return builder.build()

            full = build(10)
            handler.handle_response(0, 77, set(full.session_partitions))   # session 77 open
            handler.session_partitions.pop(TopicPartition("a", 2))         # forgotten next
            incremental = build(11)
            assert incremental.to_send and not incremental.metadata.is_full
            for data in (full, incremental):
                for version in range(lo, hi + 1):
                    frames = []
                    for template in (False, True, True):    # codec, encoded now, kept
                        requests.encode_template = template
                        body = requests._request_body(data, version, 1 << 22)
                        frames.append(encode_request(ApiKey.FETCH, version, 5, "cid", body))
                    assert frames[0] == frames[1] == frames[2], version


@contextlib.contextmanager
def _latest_on_filled(n: int) -> Iterator[tuple[FakeCluster, list[TopicPartition], KafkaConsumer]]:
    """A consumer (auto.offset.reset=latest) assigned t-0..t-(n-1) of a two-broker fake whose
    partition p holds p + 1 records; the fake saw no error when it is done."""
    with FakeCluster(2, topics={"t": n}) as cluster:
        for p in range(n):
            cluster.produce(TopicPartition("t", p), [(None, b"v")] * (p + 1))
        tps = [TopicPartition("t", p) for p in range(n)]
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="latest",
                           fetch_max_wait_ms=10) as c:
            c.assign(tps)
            yield cluster, tps, c
        assert cluster.errors == []


def _settle(c: KafkaConsumer) -> None:
    deadline = time.monotonic() + 10
    while not c._subscriptions.all_fetching():
        assert time.monotonic() < deadline
        assert c.poll(timeout_ms=20) == {}


def test_a_reset_position_carries_its_leader_and_needs_no_leader_check() -> None:
    """Java's reset: the position a ListOffsets answer gives is taken as checked against the
    partition's current leader (FetchPosition with metadata.currentLeader), so no validation
    follows and the next leader check changes nothing (it rewrote every position once, each
    a move, after the first answers on 1,000s of partitions)."""
    with _latest_on_filled(4) as (_cluster, tps, c):
        start = c._subscriptions.moves
        _settle(c)
        subs, loop = c._subscriptions, c._poll_loop
        assert loop is not None and c._fetcher is not None
        metadata = c._fetcher.requests.client.metadata
        for tp in tps:
            info = metadata.partition(tp)
            assert info is not None
            st = subs.state(tp)
            assert st.fetch_state is FetchState.FETCHING
            assert st.position == (tp.partition + 1, None, info.leader, info.leader_epoch)
        # a reset request and a seek per partition: no third move to set its leader
        assert subs.moves == start + 2 * len(tps)
        moves = subs.moves
        loop._leaders_checked = None              # a leader check over every partition
        loop._validate_leaders(c._fetcher.requests.client)
        assert subs.moves == moves


def test_a_reset_pass_before_any_metadata_asks_for_it_and_marks_nothing() -> None:
    """Before the first metadata answer no leader is known: the reset pass asks for the
    metadata and leaves every partition as it was (it walked all of them into a round that
    could send nothing and marked each one to retry). Once the metadata is in, one ListOffsets
    per leader finds every position, and auto.offset.reset=none still raises at once."""
    with _latest_on_filled(6) as (cluster, tps, c):
        subs = c._subscriptions
        for tp in tps:
            subs.request_reset(tp)
        assert c._poll_loop is not None and c._fetcher is not None
        offsets = c._poll_loop._parts()[2]
        metadata = c._fetcher.requests.client.metadata
        assert metadata.topics == {}
        moves, version = subs.moves, metadata.update_version
        offsets.reset_positions_if_needed()
        assert subs.moves == moves and offsets.resets_completed == 0
        assert all(subs.state(tp).fetch_state is FetchState.AWAIT_RESET
                   and subs.state(tp).next_retry_time is None for tp in tps)
        assert metadata.update_requested()
        _settle(c)
        assert metadata.update_version > version
        leaders = {metadata.partition(tp).leader for tp in tps}     # type: ignore[union-attr]
        assert len(cluster.requests_of(ApiKey.LIST_OFFSETS)) == len(leaders) == 2
        assert {tp: subs.position(tp).offset for tp in tps} == {  # type: ignore[union-attr]
            tp: tp.partition + 1 for tp in tps}
    with FakeCluster(1, topics={"t": 2}) as cluster:
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="none") as c:
            c.assign([TopicPartition("t", 0)])
            with pytest.raises(NoOffsetForPartitionError, match="t-0"):
                c.poll(timeout_ms=0)


def test_tuple_maker_makes_what_the_named_tuple_makes() -> None:
    """The C-made tuples of the per-partition paths are the classes' own instances, field
    for field (tuple_maker skips only the Python-level constructor)."""
    from pyconsumer.consumer.fetch.session import PartitionData
    from pyconsumer.consumer.subscription import FetchPosition
    from pyconsumer.structs import PartitionInfo, tuple_maker
    topic_id = uuid.uuid4()
    for cls, fields in [(FetchPosition, (7, None, 1, 3)), (FetchPosition, (0, 2, None, None)),
                        (PartitionData, (topic_id, 5, 1 << 20, -1)),
                        (PartitionInfo, ("t", 2, 1, (1, 2), (1,), (), 4))]:
        made = tuple_maker(cls)(fields)
        assert type(made) is cls and made == cls(*fields)
        assert made._asdict() == cls(*fields)._asdict()
