"""RecordSetIndex: where a record set's batches are, from one pass over their log headers.

Boundaries, the prefetch end and the record bound (what the fetcher reads), cut points (what
a parallel take cuts at) and byte counts, on v2, v1 and v0 sets, a partial trailing batch and
hostile headers: the index stops there or says it cannot tell (None), it never raises. The
end and the bound are held against the Python header parser the fetcher used before (kept
here as the oracle), on the sets below and on random damage."""
from __future__ import annotations

import random
import struct
from collections.abc import Callable

import pyarrow as pa
import pytest

from pyconsumer.errors import CorruptRecordError
from pyconsumer.records import CompletedFetch, RecordSetIndex

from tests import recordsets as rs


def oracle(records: bytes | None, fetch_offset: int) -> tuple[int | None, int | None]:
    """(end, bound) as fetcher.records_span computed them in Python (before the index)."""
    if records is None:
        return None, 0
    view = memoryview(records)
    size, pos = len(view), 0
    batches = []
    while size - pos >= 61:
        base, length = struct.unpack_from(">qi", view, pos)
        if length < 49 or view[pos + 16] != 2:
            return None, None
        if pos + 12 + length > size:
            break
        (delta,) = struct.unpack_from(">i", view, pos + 23)
        (count,) = struct.unpack_from(">i", view, pos + 57)
        if delta < 0 or base < 0 or count < 0:
            return None, None
        batches.append((base, base + delta, count))
        pos += 12 + length
    bound = sum(count for _, last, count in batches if last >= fetch_offset)
    if not batches or batches[-1][1] < fetch_offset:
        return None, bound
    return batches[-1][1] + 1, bound


A = rs.aio_v2(rs.sample_records(3), "none", 10)            # offsets 10-12
B = rs.aio_v2(rs.sample_records(4), "lz4", 13)             # offsets 13-16
C = rs.control_batch(17, producer_id=5, commit=True)       # offset 17


def test_v2_boundaries_end_bound_and_bytes() -> None:
    ix = RecordSetIndex(A + B + C, 12)
    assert ix.batches == [(0, len(A), 2, 10, 12, 3),
                          (len(A), len(B), 2, 13, 16, 4),
                          (len(A) + len(B), len(C), 2, 17, 17, 1)]
    assert len(ix) == 3
    assert (ix.end, ix.bound) == (18, 8)
    assert ix.size == ix.whole_bytes == len(A) + len(B) + len(C)
    assert ix.fetch_offset == 12
    assert (RecordSetIndex(A + B + C, 13).end, RecordSetIndex(A + B + C, 13).bound) == (18, 5)
    assert RecordSetIndex(A + B, 17).end is None                # nothing at or past the offset
    assert RecordSetIndex(A + B, 17).bound == 0
    assert RecordSetIndex(A + B + C, 17).bound == 1              # the control batch counts
    mv = memoryview(b"xx" + A + B)[2:]                          # a slice of a larger frame
    assert RecordSetIndex(mv, 10).batches == RecordSetIndex(A + B, 10).batches


def test_empty_and_none() -> None:
    for empty in (b"", None, bytearray()):
        ix = RecordSetIndex(empty, 5)
        assert (ix.batches, ix.end, ix.bound, ix.size, ix.whole_bytes) == ([], None, 0, 0, 0)


def test_partial_trailing_batch_is_left_out() -> None:
    for cut in (len(B) - 1, 61, 30, 11, 1):                     # in the records, the header
        ix = RecordSetIndex(A + B[:cut], 10)
        assert [b[0] for b in ix.batches] == [0]
        assert (ix.end, ix.bound) == (13, 3)
        assert ix.whole_bytes == len(A) and ix.size == len(A) + cut
    assert RecordSetIndex(A[:-1], 10).batches == []
    assert RecordSetIndex(A[:-1], 10).end is None


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_messages_are_entries_but_tell_no_end(magic: int) -> None:
    plain = rs.kp_legacy(rs.sample_records(3), magic, base_offset=5)
    ix = RecordSetIndex(plain, 0)
    assert [(m, base, last, n) for _, _, m, base, last, n in ix.batches] == \
        [(magic, 5, 5, 1), (magic, 6, 6, 1), (magic, 7, 7, 1)]
    assert sum(size for _, size, *_ in ix.batches) == len(plain) == ix.whole_bytes
    assert (ix.end, ix.bound) == (None, None)                   # v2 headers only
    wrapper = rs.kp_legacy(rs.sample_records(3), magic, "gzip", base_offset=5)
    assert [(m, base) for _, _, m, base, _, _ in RecordSetIndex(wrapper).batches] == \
        [(magic, 7)]                                            # the wrapper's offset
    mixed = RecordSetIndex(A + wrapper + B, 10)                 # magics mixed: all indexed
    assert [m for _, _, m, *_ in mixed.batches] == [2, magic, 2]
    assert (mixed.end, mixed.bound) == (None, None)


def put(data: bytes, at: int, fmt: str, value: int) -> bytes:
    buf = bytearray(data)
    struct.pack_into(fmt, buf, at, value)
    return bytes(buf)


@pytest.mark.parametrize("damage, entries, end, bound", [
    (lambda d: put(d, 8, ">i", 5), 0, None, None),             # length below the v2 minimum
    (lambda d: put(d, 8, ">i", 4), 0, None, None),             # below any magic's
    (lambda d: put(d, 8, ">i", -1), 0, None, None),            # negative
    (lambda d: put(d, 8, ">i", 1 << 30), 0, None, 0),          # beyond the bytes: partial
    (lambda d: put(d, 16, ">b", 7), 0, None, None),            # unknown magic
    (lambda d: put(d, 23, ">i", -3), 3, None, None),           # negative lastOffsetDelta
    (lambda d: put(d, 57, ">i", -1), 3, None, None),           # negative count
    (lambda d: put(d, 0, ">q", -2), 3, None, None),            # negative base offset
])
def test_hostile_headers_stop_the_index_or_leave_end_and_bound_unknown(
        damage: Callable[[bytes], bytes], entries: int, end: int | None,
        bound: int | None) -> None:
    data = damage(A) + B + C
    ix = RecordSetIndex(data, 10)
    assert len(ix) == entries
    assert (ix.end, ix.bound) == (end, bound) == oracle(data, 10)
    # the walker is the one that raises, where the index stopped (or on the bad field)
    if entries == 0 and bound is None:
        with pytest.raises(CorruptRecordError):
            CompletedFetch(data, "t", 0, 10, index=ix).take_records(100)


def test_end_and_bound_match_the_python_parser_under_random_damage() -> None:
    rnd = random.Random(24)
    sets = [A + B + C, A + B[:-7], C + A, rs.kp_legacy(rs.sample_records(2), 1) + A,
            A + rs.kp_legacy(rs.sample_records(2), 0), b"\x00" * 70, A + b"\x01" * 60]
    for _ in range(3000):
        data = bytearray(rnd.choice(sets))
        for _ in range(rnd.randint(0, 3)):
            if data:
                data[rnd.randrange(len(data))] = rnd.randrange(256)
        if rnd.random() < 0.3:
            data = data[:rnd.randint(0, len(data))]
        fo = rnd.choice([0, 10, 13, 17, 18])
        ix = RecordSetIndex(bytes(data), fo)
        assert (ix.end, ix.bound) == oracle(bytes(data), fo), bytes(data).hex()
        ends = [start + size for start, size, *_ in ix.batches]
        assert [start for start, *_ in ix.batches] == ([0] + ends[:-1] if ends else [])
        assert ix.whole_bytes == (ends[-1] if ends else 0) <= ix.size == len(data)


def comp(n: int, first: int) -> bytes:
    return rs.aio_v2(rs.sample_records(n, seed=first), "lz4", first)


def test_cut_points_split_whole_v2_batches_by_bytes() -> None:
    batches = [comp(10, 10 * i) for i in range(4)]              # offsets 0-39
    data = b"".join(batches)
    ends = [sum(len(b) for b in batches[:i + 1]) for i in range(4)]
    ix = RecordSetIndex(data, 0)
    assert ix.cut_points(1000, 2) == [ends[1], ends[3]]
    assert ix.cut_points(1000, 4) == ends
    assert ix.cut_points(1000, 8) == ends                       # at most one cut per batch end
    assert ix.cut_points(25, 2) == [ends[0], ends[1]]           # the records that fit: 2 batches
    assert ix.cut_points(15, 2) is None                         # one batch fits: nothing to cut
    assert ix.cut_points(15, 2, head=True) == [ends[0]]         # ... beside a current batch
    assert ix.cut_points(1000, 1) is None
    assert ix.cut_points(1000, 2, len(data) + 1) is None        # fewer bytes than asked for
    assert ix.cut_points(1000, 2, len(data)) == [ends[1], ends[3]]
    assert ix.cut_points(1000, 2, start=ends[1]) == [ends[2], ends[3]]
    assert ix.cut_points(1000, 2, start=1) is None              # not a batch's first byte
    plain = b"".join(rs.aio_v2(rs.sample_records(10), "none", 10 * i) for i in range(4))
    assert RecordSetIndex(plain).cut_points(1000, 2) is None    # nothing compressed
    legacy = rs.kp_legacy(rs.sample_records(2), 1, "gzip", base_offset=40)
    assert RecordSetIndex(data + legacy).cut_points(1000, 2) == [ends[1], ends[3]]
    assert RecordSetIndex(legacy + data).cut_points(1000, 2) is None   # v1 first
    below = RecordSetIndex(data, 20)                            # batches below: skipped, cut
    assert below.cut_points(20, 2) == [ends[1], ends[3]]


def test_a_cursor_takes_an_index_of_its_own_bytes_only() -> None:
    data = A + B + C
    with pytest.raises(ValueError, match="index"):
        CompletedFetch(data, "t", 0, 10, index=RecordSetIndex(A + B, 10))
    given = CompletedFetch(data, "t", 0, 10, index=RecordSetIndex(data, 10))
    built = CompletedFetch(data, "t", 0, 10)
    assert given.take_arrow(100).equals(built.take_arrow(100))
    assert given.next_fetch_offset == built.next_fetch_offset == 18


def test_cut_runs_joined_leave_the_cursor_where_take_arrow_would() -> None:
    data = b"".join(comp(10, 10 * i) for i in range(4))
    whole = CompletedFetch(data, "t", 0, 0)
    expected = whole.take_arrow(1000)
    cursor = CompletedFetch(data, "t", 0, 0)
    plan = cursor.cut(1000, 2)
    assert plan is not None
    head, runs = plan
    assert head == 0 and len(runs) == 2
    batches = [r.take_arrow(1000) for r in runs]
    assert [b.num_rows for b in batches] == [20, 20]
    assert cursor.next_fetch_offset == 0                        # nothing moved before join
    assert cursor.join(runs, [b.num_rows for b in batches])
    assert pa.Table.from_batches(batches).combine_chunks().to_batches()[0].equals(expected)
    assert cursor.next_fetch_offset == whole.next_fetch_offset == 40
    assert cursor.is_drained and cursor.pending_error is None
    again = CompletedFetch(data, "t", 0, 0)
    plan = again.cut(1000, 2)
    assert plan is not None
    assert not again.join(plan[1], [0, 0])                      # runs not taken: refused
    assert again.next_fetch_offset == 0 and again.take_arrow(1000).equals(expected)
