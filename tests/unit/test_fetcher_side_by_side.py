"""Fetcher.drain taking several buffered partitions side by side (decode.threads > 1, the
Arrow path): the same records, positions and partition order as one by one, whatever the
budget, stale data or corruption; and the takes really run on the decode threads."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from pyconsumer.consumer.fetch import Strategy, decode
from pyconsumer.errors import CorruptRecordError, KafkaError
from pyconsumer.protocol import ApiKey
from pyconsumer.records import CompletedFetch, RecordSetIndex
from pyconsumer.structs import TopicPartition
from pyconsumer.testing import FakeCluster, Request

from tests import recordsets as rs
from tests.unit.fetch_rig import Rig as DrainRig
from tests.unit.fetch_rig import Takes

TPS = [TopicPartition("t", p) for p in range(4)]
Rows = list[tuple[int, bytes | None]]


class Rig(DrainRig):
    def __init__(self, cluster: FakeCluster, threads: int) -> None:
        super().__init__(cluster)
        self.threads = threads
        self.decoded_on: set[str] = set()
        self.rendezvous: threading.Barrier | None = None
        self._met = 0
        self._meeting = threading.Lock()

    def meet(self, parties: int) -> None:
        """Make the next ``parties`` takes wait for each other: proof that that many threads
        run takes at once (otherwise the caller may finish every take before a pool thread
        wakes, which is allowed)."""
        self.rendezvous = threading.Barrier(parties, timeout=10)
        self._met = 0

    def drain(self, n: int) -> list[tuple[TopicPartition, Rows]] | KafkaError:  # type: ignore[override]
        def take(cursor: CompletedFetch, k: int) -> pa.RecordBatch:
            self.decoded_on.add(threading.current_thread().name)
            with self._meeting:
                meet = self.rendezvous
                self._met += 1
                if meet is not None and self._met >= meet.parties:
                    self.rendezvous = None              # later takes do not wait
            if meet is not None:
                meet.wait()
            return cursor.take_arrow(k)

        try:
            chunks = self.fetcher.drain(n, Takes(take, lambda b: b.num_rows,
                                                 Strategy.SIDE_BY_SIDE, self.threads))
        except KafkaError as e:
            return e
        return [(tp, list(zip(b.column("offset").to_pylist(), b.column("value").to_pylist())))
                for tp, b in chunks]

    def state(self) -> tuple[dict[TopicPartition, int], list[TopicPartition]]:
        positions = {}
        for tp in self.subs.assigned_partitions():
            pos = self.subs.position(tp)
            assert pos is not None
            positions[tp] = pos.offset
        return positions, self.subs.assigned_partitions()


def _fill(c: FakeCluster) -> None:
    """Four partitions of several batches each (one lz4), 3 to 12 records a partition."""
    for p, sizes in enumerate(((3, 2), (4, 4, 4), (1,), (2, 5))):
        start = 0
        for i, n in enumerate(sizes):
            c.produce(TPS[p], [(b"k%d" % o, b"%d-%d" % (p, o)) for o in range(start, start + n)],
                      codec="lz4" if i == 1 else "none")
            start += n


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(1, topics={"t": 4}) as c:
        _fill(c)
        yield c
        assert c.errors == []


@pytest.fixture(autouse=True)
def small_work_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """These record sets are tiny: hand them to threads anyway."""
    monkeypatch.setattr(decode, "min_bytes", 0)


@pytest.fixture
def side_by_side_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many takes each side-by-side run had (so a test knows the path ran)."""
    calls: list[int] = []
    real = decode.run

    def spy(fns: list[Callable[[], Any]], threads: int) -> Any:
        calls.append(len(fns))
        return real(fns, threads)

    monkeypatch.setattr(decode, "run", spy)
    return calls


def _script(cluster: FakeCluster, threads: int, starts: dict[TopicPartition, int],
            budgets: list[int], between: Callable[[Rig, int], None] | None = None
            ) -> list[Any]:
    """What each drain returned and the positions and fetch order after it."""
    rig = Rig(cluster, threads)
    try:
        rig.assign(starts)
        rig.fetch()
        seen: list[Any] = []
        for i, n in enumerate(budgets):
            if between is not None:
                between(rig, i)
            got = rig.drain(n)
            seen.append((repr(got) if isinstance(got, KafkaError) else got, rig.state()))
        return seen
    finally:
        rig.close()


@pytest.mark.parametrize("budgets", [[100], [12], [3, 100], [8, 8, 8, 8], [1] * 26,
                                     [5, 14, 100]])
@pytest.mark.parametrize("threads", [2, 4])
def test_side_by_side_equals_one_by_one(cluster: FakeCluster, side_by_side_calls: list[int],
                                        budgets: list[int], threads: int) -> None:
    starts = {TPS[0]: 0, TPS[1]: 5, TPS[2]: 0, TPS[3]: 1}      # two start inside a batch
    one = _script(cluster, 1, starts, budgets)
    assert side_by_side_calls == []
    many = _script(cluster, threads, starts, budgets)
    assert many == one
    delivered = [(tp, o) for step in one for tp, rows in step[0] for o, _ in rows]
    assert len(set(delivered)) == len(delivered)                 # never twice
    if sum(budgets) >= 19:
        assert len(delivered) == 5 + 7 + 1 + 6                   # every record
    if max(budgets) >= 19:
        assert side_by_side_calls and max(side_by_side_calls) >= 2


def test_everything_fits_goes_side_by_side_in_fetch_order(cluster: FakeCluster,
                                                          side_by_side_calls: list[int]) -> None:
    rig = Rig(cluster, 4)
    try:
        rig.assign({tp: 0 for tp in TPS})
        rig.fetch()
        rig.meet(2)
        got = rig.drain(1000)
        assert side_by_side_calls == [4]
        # two takes ran at once (the rendezvous), so at least one on the decode pool; which
        # thread takes which partition is a race (the caller may even take none)
        assert len(rig.decoded_on) >= 2
        assert {n for n in rig.decoded_on if n.startswith("pyconsumer-decode_")}
        assert rig.decoded_on <= {threading.current_thread().name} | {
            f"pyconsumer-decode_{i}" for i in range(3)}
        assert [tp for tp, _ in got] == TPS
        assert got[1][1] == [(o, b"1-%d" % o) for o in range(12)]
        assert rig.state()[0] == {TPS[0]: 5, TPS[1]: 12, TPS[2]: 1, TPS[3]: 7}
        assert rig.drain(1000) == []
    finally:
        rig.close()


def test_a_partition_seeked_while_buffered_is_skipped(cluster: FakeCluster,
                                                      side_by_side_calls: list[int]) -> None:
    def seek(rig: Rig, i: int) -> None:
        if i == 0:
            rig.subs.seek(TPS[1], 2)                 # its buffered data is stale now

    starts = {tp: 0 for tp in TPS}
    one = _script(cluster, 1, starts, [100, 100], seek)
    many = _script(cluster, 4, starts, [100, 100], seek)
    assert many == one
    assert [tp for tp, _ in one[0][0]] == [TPS[0], TPS[2], TPS[3]]
    assert one[0][1][0][TPS[1]] == 2
    assert side_by_side_calls == [3]


def _corrupt(cluster: FakeCluster, partition: int, at: int) -> None:
    """Fetch answers of t-``partition`` get byte ``at`` of their records flipped."""
    def answer(req: Request) -> dict[str, Any]:
        body = cluster.default_answer(req)
        for t in body["responses"]:
            for p in t["partitions"]:
                if p["partition_index"] == partition and p["records"]:
                    data = bytearray(p["records"])
                    data[at] ^= 0xFF
                    p["records"] = bytes(data)
        return body

    cluster.control(ApiKey.FETCH, answer)


@pytest.mark.parametrize("threads", [2, 4])
def test_corruption_behind_good_rows_stops_there_as_one_by_one(
        cluster: FakeCluster, side_by_side_calls: list[int], threads: int) -> None:
    _corrupt(cluster, 1, -1)          # t-1's last batch (offsets 8-11) fails its CRC
    starts = {tp: 0 for tp in TPS}
    budgets = [100, 100, 100]
    one = _script(cluster, 1, starts, budgets)
    many = _script(cluster, threads, starts, budgets)
    assert many == one
    # t-0 whole and t-1 up to the bad batch; then the error, until a seek; t-2 and t-3 wait
    first, second = one[0], one[1]
    assert [(tp, [o for o, _ in rows]) for tp, rows in first[0]] == [
        (TPS[0], [0, 1, 2, 3, 4]), (TPS[1], [0, 1, 2, 3, 4, 5, 6, 7])]
    assert "CorruptRecordError" in second[0] and "partition=1, offset=8" in second[0]
    assert second[1][0] == {TPS[0]: 5, TPS[1]: 8, TPS[2]: 0, TPS[3]: 0}
    assert side_by_side_calls and side_by_side_calls[0] == threads


def test_corrupt_first_in_line_with_nothing_before_raises(cluster: FakeCluster) -> None:
    _corrupt(cluster, 0, 70)          # inside t-0's first batch's records
    rig = Rig(cluster, 4)
    try:
        rig.assign({tp: 0 for tp in TPS})
        rig.fetch()
        got = rig.drain(100)
        assert isinstance(got, CorruptRecordError)
        assert (got.topic, got.partition, got.offset) == ("t", 0, 0)
        assert rig.state()[0] == {tp: 0 for tp in TPS}
        # the others were put back untouched: a seek past the bad data, and all of them come
        rig.subs.seek(TPS[0], 5)
        assert [(tp, len(rows)) for tp, rows in rig.drain(100)] == [  # type: ignore[union-attr]
            (TPS[1], 12), (TPS[2], 1), (TPS[3], 7)]
    finally:
        rig.close()


def records_bound(records: bytes | None, fetch_offset: int) -> int | None:
    return RecordSetIndex(records, fetch_offset).bound        # (was fetcher.records_bound)


def test_records_bound_counts_the_complete_batches_reaching_the_position() -> None:
    a = rs.aio_v2(rs.sample_records(3), "none", 10)            # offsets 10-12
    b = rs.aio_v2(rs.sample_records(4), "lz4", 13)             # offsets 13-16
    c = rs.control_batch(17, producer_id=5, commit=True)       # offset 17
    assert records_bound(a + b + c, 10) == 8
    assert records_bound(a + b + c, 12) == 8                   # a batch reaching it counts whole
    assert records_bound(a + b + c, 13) == 5
    assert records_bound(a + b[:-1], 10) == 3                  # a trailing partial batch: not
    assert records_bound(b"", 0) == 0 and records_bound(None, 0) == 0
    assert records_bound(rs.kp_legacy(rs.sample_records(2), 1), 0) is None   # magic 1: unknown


def test_less_than_min_bytes_goes_one_by_one(cluster: FakeCluster, side_by_side_calls: list[int],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode, "min_bytes", 1 << 20)
    rig = Rig(cluster, 4)
    try:
        rig.assign({tp: 0 for tp in TPS})
        rig.fetch()
        got = rig.drain(1000)
        assert [tp for tp, _ in got] == TPS and side_by_side_calls == []
    finally:
        rig.close()


def test_with_take_many_the_decode_threads_take_no_partitions_side_by_side(
        cluster: FakeCluster, side_by_side_calls: list[int]) -> None:
    """poll_arrow's path (take_many given, issue 26): every buffered partition that fits goes
    into one take_many call writing one batch, even with 4 decode threads: side by side their
    batches would need a concatenation (a full copy), which cost more than the threads gained
    (6 partitions of Apache Kafka: 171 -> 117 ms a read)."""
    from pyconsumer.records import take_arrow_many

    many_calls: list[list[TopicPartition]] = []

    def take_many(cursors: list[CompletedFetch], budgets: list[int]
                  ) -> tuple[pa.RecordBatch, list[int]]:
        many_calls.append([TopicPartition(c.topic, c.partition) for c in cursors])
        return take_arrow_many(cursors, budgets)

    rig = Rig(cluster, 4)
    try:
        rig.assign({tp: 0 for tp in TPS})
        rig.fetch()
        chunks = rig.fetcher.drain(1000, Takes(lambda c, n: c.take_arrow(n), lambda b: b.num_rows,
                                               Strategy.MANY, 4, take_many))
        assert side_by_side_calls == [] and many_calls == [TPS]
        assert len(chunks) == 1 and chunks[0][0] == TPS[0]
        batch = chunks[0][1]
        assert list(zip(batch.column("partition").to_pylist(), batch.column("offset").to_pylist())) == [
            (p, o) for p, n in enumerate((5, 12, 1, 7)) for o in range(n)]
        assert rig.state()[0] == {TPS[0]: 5, TPS[1]: 12, TPS[2]: 1, TPS[3]: 7}
    finally:
        rig.close()
