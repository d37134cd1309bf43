"""Batch CRCs checked ahead on a decode thread (RecordSetIndex.verify_crcs, issue 26): the
compiled CRC32C is the crc32c package's, a batch found good is not checked again by the walker,
one found bad (or not reached) is checked where it is read, with the same error and the same
records before it; and a consumer that checks ahead hands out exactly what one that does not
hands out, a corrupt batch included."""
from __future__ import annotations

import os
import random
from collections.abc import Callable

import crc32c
import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer._records import crc32c_checksum
from pyconsumer.consumer.fetch import request
from pyconsumer.errors import CorruptRecordError
from pyconsumer.records import CompletedFetch, RecordSetIndex
from pyconsumer.testing import FakeCluster

from tests import recordsets as rs


@pytest.mark.parametrize("tables", [False, True], ids=["instruction", "tables"])
def test_the_compiled_crc32c_is_the_packages(tables: bool) -> None:
    rng = random.Random(7)
    data = os.urandom(5000)
    for n in list(range(0, 40)) + [rng.randrange(40, 5000) for _ in range(200)]:
        start = rng.randrange(0, 8)                 # unaligned starts too
        piece = memoryview(data)[start:start + n]
        assert crc32c_checksum(piece, tables) == crc32c.crc32c(piece), (start, n)


@pytest.mark.parametrize("tables", [False, True], ids=["instruction", "tables"])
def test_the_three_stream_crc32c_joins_its_blocks_exactly(tables: bool) -> None:
    """The instruction path runs three streams over 8 KB blocks, then over 256-byte ones,
    joining each round's three CRCs: every length at and around those rounds' edges (one
    short round 768 bytes, one long 24 KB, several of each with single bytes after), unaligned,
    gives the package's CRC, as does a large record set."""
    rng = random.Random(227)
    data = os.urandom(200_000)
    edges = [k * 768 + d for k in range(1, 5) for d in (-9, -8, -1, 0, 1, 7, 8)] + \
        [k * 24_576 + d for k in range(1, 5) for d in (-769, -768, -1, 0, 1, 767, 768, 775)]
    for n in edges + [rng.randrange(0, 200_000) for _ in range(100)] + [199_992]:
        start = rng.randrange(0, 8)
        piece = memoryview(data)[start:start + n]
        assert crc32c_checksum(piece, tables) == crc32c.crc32c(piece), (start, n)


GOOD = rs.aio_v2(rs.sample_records(10), "none", 0)                  # offsets 0..9
MIDDLE = rs.aio_v2(rs.sample_records(10, seed=10), "lz4", 10)        # 10..19
AFTER = rs.aio_v2(rs.sample_records(10, seed=20), "none", 20)        # 20..29


def flipped(batch: bytes) -> bytes:
    buf = bytearray(batch)
    buf[-3] ^= 0x40                                 # inside the CRC-covered bytes
    return bytes(buf)


def test_verify_crcs_marks_each_batch_once() -> None:
    data = GOOD + flipped(MIDDLE) + AFTER
    index = RecordSetIndex(data)
    assert index.crc_states() == [0, 0, 0]
    assert index.verify_crcs(data) == 3
    assert index.crc_states() == [1, 2, 1]
    assert index.verify_crcs(data) == 0             # checked already: not again
    with pytest.raises(ValueError, match="bytes, not of 3$"):
        index.verify_crcs(b"abc")


def offsets(kind: str, cf: CompletedFetch) -> Callable[[int], list[int]]:
    if kind == "records":
        return lambda n: [r.offset for r in cf.take_records(n)]
    return lambda n: cf.take_arrow(n).column("offset").to_pylist()


@pytest.mark.parametrize("kind", ["records", "arrow"])
def test_a_bad_batch_checked_ahead_raises_where_it_is_read_as_before(kind: str) -> None:
    data = GOOD + flipped(MIDDLE) + AFTER
    errors = []
    for ahead in (False, True):
        index = RecordSetIndex(data)
        if ahead:
            index.verify_crcs(data)
        cf = CompletedFetch(data, "t", 3, 0, check_crcs=True, index=index)
        take = offsets(kind, cf)
        assert take(100) == list(range(10))
        with pytest.raises(CorruptRecordError, match="CRC32C mismatch") as info:
            take(100)
        assert cf.next_fetch_offset == 10 and not cf.is_drained
        errors.append((str(info.value), info.value.offset))
    assert errors[0] == errors[1]


def test_a_batch_checked_ahead_is_not_checked_again() -> None:
    """The walker trusts a batch the index found good: its bytes changed after the check (which
    no real record set does) go unnoticed, where a walker without the check-ahead raises."""
    data = bytearray(GOOD + AFTER)
    index = RecordSetIndex(bytes(data))
    index.verify_crcs(bytes(data))
    assert index.crc_states() == [1, 1]
    at = bytes(data).index(b"v0-")                  # offset 0's value
    data[at] = ord("V")
    trusted = CompletedFetch(bytes(data), "t", 0, 0, check_crcs=True, index=index)
    records = trusted.take_records(100)
    assert [r.offset for r in records] == list(range(10)) + list(range(20, 30))
    assert records[0].value == b"V0-"
    checked = CompletedFetch(bytes(data), "t", 0, 0, check_crcs=True)
    with pytest.raises(CorruptRecordError, match="CRC32C mismatch"):
        checked.take_records(100)


@pytest.mark.parametrize("ahead", [True, False], ids=["ahead", "in-turn"])
def test_a_consumer_checking_ahead_hands_out_the_same_records_and_error(
        ahead: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """4 partitions of exact records; partition 2's second batch (offsets 30..59) corrupt.
    With decode threads and every answer checked ahead (CHECK_AHEAD_BYTES 0), and without,
    poll_arrow hands out the same records in order per partition, raises a CorruptRecordError
    naming partition 2, offset 30 (nothing of that batch handed out), and after a seek past
    the batch the rest follows."""
    monkeypatch.setattr(request, "CHECK_AHEAD_BYTES", 0 if ahead else 1 << 62)
    submitted = []
    real_submit = request.decode.submit

    def counting(call: Callable[[], object], threads: int) -> object:
        submitted.append(threads)
        return real_submit(call, threads)
    monkeypatch.setattr(request.decode, "submit", counting)
    tps = [TopicPartition("t", p) for p in range(4)]
    with FakeCluster(topics={"t": 4}) as cluster:
        want: dict[int, list[tuple[int, bytes]]] = {}
        for tp in tps:
            values = [b"v-%d-%d" % (tp.partition, i) for i in range(90)]
            for part in range(3):
                chunk = values[30 * part:30 * (part + 1)]
                if tp.partition == 2 and part == 1:
                    rows = [(i, 1_700_000_000_000 + i, None, v, []) for i, v in enumerate(chunk)]
                    cluster.append_batch(tp, flipped(rs.aio_v2(rows, "none", 0)))
                else:
                    cluster.produce(tp, [(None, v) for v in chunk])
            want[tp.partition] = [(o, v) for o, v in enumerate(values)
                                  if tp.partition != 2 or not 30 <= o < 60]
        got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(4)}
        errors = []
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                           decode_threads=2, fetch_max_wait_ms=10, max_partition_fetch_bytes=2048) as c:
            c.assign(tps)
            for _ in range(300):
                try:
                    batch = c.poll_arrow(timeout_ms=50)
                except CorruptRecordError as e:
                    errors.append((e.topic, e.partition, e.offset, "CRC32C mismatch" in str(e)))
                    c.seek(tps[2], 60)
                    continue
                for p, o, v in zip(batch.column("partition").to_pylist(),
                                   batch.column("offset").to_pylist(),
                                   batch.column("value").to_pylist()):
                    got[p].append((o, v))
                if all(len(got[p]) == len(want[p]) for p in range(4)):
                    break
        assert got == want
        assert errors == [("t", 2, 30, True)]
        assert (len(submitted) > 0) == ahead and set(submitted) <= {2}
        assert cluster.errors == []


@pytest.mark.parametrize("partitions", [1, 3])
def test_the_first_partition_of_an_answer_is_left_to_the_walker(
        partitions: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever its size (CHECK_AHEAD_BYTES 0), an answer's first partition with data is not
    handed to the checker: the walker starts on it at once and the two would check the same
    batches. A one-partition answer is never checked ahead; with 3 partitions every answer
    hands the other two over. The records come out exact either way."""
    monkeypatch.setattr(request, "CHECK_AHEAD_BYTES", 0)
    handed: list[int] = []
    real_submit = request.decode.submit

    def counting(call: Callable[[], object], threads: int) -> object:
        cells = dict(zip(call.__code__.co_freevars, call.__closure__ or ()))
        handed.append(len(cells["work"].cell_contents))
        return real_submit(call, threads)
    monkeypatch.setattr(request.decode, "submit", counting)
    tps = [TopicPartition("t", p) for p in range(partitions)]
    with FakeCluster(topics={"t": partitions}) as cluster:
        for tp in tps:
            cluster.produce(tp, [(None, b"v-%d-%d" % (tp.partition, i)) for i in range(50)])
        got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                           decode_threads=2, fetch_max_wait_ms=10) as c:
            c.assign(tps)
            for _ in range(100):
                batch = c.poll_arrow(timeout_ms=50)
                for p, o, v in zip(batch.column("partition").to_pylist(),
                                   batch.column("offset").to_pylist(),
                                   batch.column("value").to_pylist()):
                    got[p].append((o, v))
                if sum(map(len, got.values())) == 50 * partitions:
                    break
        assert got == {p: [(i, b"v-%d-%d" % (p, i)) for i in range(50)] for p in range(partitions)}
        assert handed == ([] if partitions == 1 else [2])
        assert cluster.errors == []
