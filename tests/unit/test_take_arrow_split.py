"""take_arrow_split (consumer/fetch/decode.py over CompletedFetch.cut/join): a large
response's compressed batches cut into runs that
decode on several threads. Whatever the cut, the rows and the cursor afterwards (position,
leader epoch, drained) are those of take_arrow; when a run fails, nothing moved and
take_arrow gives the same records and then the same error."""
from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import crc32c
import pyarrow as pa
import pytest

from pyconsumer.consumer.fetch import decode
from pyconsumer.consumer.fetch.decode import SplitChooser, take_arrow_split
from pyconsumer.errors import CorruptRecordError
from pyconsumer.records import CompletedFetch

from tests import recordsets as rs

Run = Callable[[list[Callable[[], Any]]], list[tuple[Any, BaseException | None]]]


def serial(calls: list[Callable[[], Any]]) -> list[tuple[Any, BaseException | None]]:
    out: list[tuple[Any, BaseException | None]] = []
    for call in calls:
        try:
            out.append((call(), None))
        except BaseException as e:        # noqa: B036 - as decode.run hands it back
            out.append((None, e))
    return out


def pool(threads: int) -> Run:
    return lambda calls: decode.run(calls, threads)


def recs(n: int, first: int, step: int = 1) -> list[rs.Rec]:
    return [(i * step, 1_700_000_000_000 + first + i, b"k%d" % (first + i * step),
             b"v%d" % (first + i * step) * 3, [("h", b"%d" % i)] if i % 3 == 0 else [])
            for i in range(n)]


def last_delta(batch: bytes, delta: int) -> bytes:
    """The batch with lastOffsetDelta set to ``delta`` (trailing records compacted away)."""
    buf = bytearray(batch)
    struct.pack_into(">i", buf, 23, delta)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def mixed_set() -> bytes:
    """Offsets 0-399 in lz4/zstd/none batches with leader epochs 1-3, a control batch, an
    offset gap inside a batch and a compacted batch end, and a partial batch at the end."""
    parts = [
        rs.aio_v2(recs(50, 0), "lz4", 0, leader_epoch=1),                 # 0-49
        rs.aio_v2(recs(50, 50), "zstd", 50, leader_epoch=1),              # 50-99
        rs.aio_v2(recs(25, 100, step=2), "lz4", 100, leader_epoch=2),     # 100-148, even
        last_delta(rs.aio_v2(recs(40, 150), "zstd", 150, leader_epoch=2), 49),  # 150-189, ends 199
        rs.control_batch(200, producer_id=7, commit=True),                # 200
        rs.aio_v2(recs(50, 201), "none", 201, leader_epoch=3),            # 201-250
        rs.aio_v2(recs(49, 251), "gzip", 251, leader_epoch=3),            # 251-299
        rs.aio_v2(recs(100, 300), "snappy", 300, leader_epoch=3),         # 300-399
    ]
    tail = rs.aio_v2(recs(10, 400), "lz4", 400)
    return b"".join(parts) + tail[:len(tail) // 2]


def rows(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    return [r for b in batches for r in b.to_pylist()]


def steps(data: Any, fetch_offset: int, budgets: list[int], split: Run | None,
          parts: int = 2, chooser: SplitChooser | None = None, **kw: Any) -> tuple[list[Any], int]:
    """What each budget drains (takes until it is spent, as Fetcher.drain does: a cut may
    hand out fewer rows than asked), and the cursor after it; how many takes were cut."""
    c = CompletedFetch(data, "t", 3, fetch_offset, include_headers=True, **kw)
    out: list[Any] = []
    cut = 0
    for n in budgets:
        got: list[pa.RecordBatch] = []
        left = n
        try:
            while left > 0 and not c.is_drained:
                parts_ = (take_arrow_split(c, left, parts, split, 0, chooser) if split is not None
                          else None)
                if parts_ is None:
                    parts_ = [c.take_arrow(left)]
                else:
                    cut += 1
                k = sum(b.num_rows for b in parts_)
                got += parts_
                left -= k
                if k == 0:
                    break
            out.append(rows(got))
        except CorruptRecordError as e:
            out.append((rows(got), str(e)))
        out.append((c.next_fetch_offset, c.last_epoch, c.is_drained))
    return out, cut


@pytest.mark.parametrize("budgets", [[1000], [120, 1000], [49, 51, 200, 200], [400],
                                     [150, 150, 150], [10] * 45])
@pytest.mark.parametrize("fetch_offset", [0, 20, 150, 205])
@pytest.mark.parametrize("split", ["serial", "pool2", "pool3"])
def test_split_takes_equal_plain_takes(budgets: list[int], fetch_offset: int, split: str) -> None:
    data = mixed_set()
    run = {"serial": serial, "pool2": pool(2), "pool3": pool(3)}[split]
    parts = 3 if split == "pool3" else 2
    want, _ = steps(data, fetch_offset, budgets, None)
    got, cut = steps(data, fetch_offset, budgets, run, parts)
    assert got == want
    if max(budgets) >= 150 and fetch_offset < 150:
        assert cut >= 1                              # the cut path really ran


def test_the_end_and_a_compacted_batch_end_leave_the_position_where_take_arrow_does() -> None:
    data = mixed_set()
    got, cut = steps(data, 0, [190, 1000], pool(2))
    assert cut == 2
    # 0-189 cut (ending on the compacted batch and the control batch), then 201-225 taken
    # whole: the last record + 1
    assert [r["offset"] for r in got[0]][-26:-24] == [189, 201]     # the control batch skipped
    assert got[1] == (226, 3, False)
    # the rest of 201-250 alongside the cut 251-399; the partial batch left for the next fetch
    assert got[3] == (400, 3, True)


def test_a_slice_of_a_larger_frame_is_cut_inside_the_slice() -> None:
    data = mixed_set()
    frame = bytearray(b"\xff" * 37 + data + b"\xee" * 11)
    view = memoryview(frame)[37:37 + len(data)]
    want, _ = steps(data, 0, [1000], None)
    got, cut = steps(view, 0, [1000], pool(2))
    assert cut == 1 and got == want


def test_nothing_to_cut() -> None:
    plain = b"".join(rs.aio_v2(recs(50, i * 50), "none", i * 50) for i in range(4))
    one = rs.aio_v2(recs(50, 0), "lz4", 0) + rs.aio_v2(recs(50, 50), "lz4", 50)
    legacy = rs.kp_legacy(rs.sample_records(20), 1, "gzip") + one

    def cursor(data: bytes, **kw: Any) -> CompletedFetch:
        return CompletedFetch(data, "t", 0, 0, **kw)

    assert take_arrow_split(cursor(plain), 1000, 2, serial) is None          # not compressed
    assert take_arrow_split(cursor(one), 99, 2, serial) is None              # one batch fits
    assert take_arrow_split(cursor(one), 1000, 1, serial) is None            # one part wanted
    assert take_arrow_split(cursor(legacy), 1000, 2, serial) is None         # v1 first
    txn = cursor(one, isolation_level="read_committed", aborted_transactions=[(5, 0)])
    assert take_arrow_split(txn, 1000, 2, serial) is None                    # aborted to drop
    single = cursor(rs.aio_v2(recs(50, 0), "lz4", 0) + rs.aio_v2(recs(50, 50), "none", 50))
    assert single.take_arrow(10).num_rows == 10
    assert take_arrow_split(single, 30, 2, serial) is None         # no whole batch fits after
    mid = cursor(one)
    assert mid.take_arrow(10).num_rows == 10
    got = take_arrow_split(mid, 1000, 2, serial)        # the batch's rest, the next one beside
    assert got is not None and [b.num_rows for b in got] == [40, 50]
    assert mid.is_drained and mid.next_fetch_offset == 100
    assert take_arrow_split(cursor(one), 1000, 2, serial, len(one) + 1) is None  # too little
    assert take_arrow_split(cursor(one), 1000, 2, serial, len(one)) is not None
    committed = cursor(one, isolation_level="read_committed")
    got = take_arrow_split(committed, 1000, 2, serial)                       # nothing aborted
    assert got is not None and sum(b.num_rows for b in got) == 100


@pytest.mark.parametrize("run", [serial, pool(2), pool(4)])
def test_a_failing_part_moves_nothing_and_take_arrow_reports_as_usual(run: Run) -> None:
    data = bytearray(mixed_set())
    at = len(b"".join(rs.aio_v2(recs(50, i * 50), c, i * 50, leader_epoch=1)
                      for i, c in enumerate(("lz4", "zstd"))))
    data[at + 70] ^= 0xFF                            # inside the third batch (offset 100)
    c = CompletedFetch(bytes(data), "t", 3, 0)
    assert take_arrow_split(c, 1000, 4, run) is None
    assert (c.next_fetch_offset, c.is_drained) == (0, False)
    assert [r["offset"] for r in c.take_arrow(1000).to_pylist()] == list(range(100))
    with pytest.raises(CorruptRecordError, match=r"partition=3, offset=100"):
        take_arrow_split(c, 1000, 4, run) or c.take_arrow(1000)
    assert c.next_fetch_offset == 100


def test_side_by_side_run_hands_back_results_and_errors_in_order() -> None:
    def boom() -> int:
        raise ValueError("part 2")

    out = decode.run([lambda: 1, boom, lambda: 3], 3)
    assert out[0] == (1, None) and out[2] == (3, None)
    assert isinstance(out[1][1], ValueError) and out[1][0] is None
    assert decode.run([], 4) == []


class _Fixed(SplitChooser):
    """A chooser that always answers ``cut`` and counts what it was told."""

    def __init__(self, cut: bool) -> None:
        super().__init__()
        self.cut = cut
        self.told: list[tuple[bool, int]] = []

    def split(self) -> bool:
        return self.cut

    def took(self, split: bool, seconds: float, records: int) -> None:
        self.told.append((split, records))


@pytest.mark.parametrize("cut", [True, False])
@pytest.mark.parametrize("budgets", [[1000], [49, 51, 200, 200], [400]])
def test_a_take_the_chooser_leaves_whole_equals_a_cut_one(cut: bool, budgets: list[int]) -> None:
    data = mixed_set()
    want, _ = steps(data, 0, budgets, None)
    chooser = _Fixed(cut)
    got, _ = steps(data, 0, budgets, pool(2), chooser=chooser)
    assert got == want
    assert chooser.told and all(split is cut for split, _ in chooser.told)


def _choices(chooser: SplitChooser, split_cost: float, plain_cost: float, takes: int) -> str:
    out = []
    for _ in range(takes):
        cut = chooser.split()
        out.append("s" if cut else "p")
        chooser.took(cut, (split_cost if cut else plain_cost) * 1000, 1000)
    return "".join(out)


def test_the_chooser_measures_both_ways_then_keeps_the_cheaper_and_probes_the_other() -> None:
    # cutting costs half: cut from then on, the plain way tried again every 16th take
    assert _choices(SplitChooser(), 1.0, 2.0, 34) == "sp" + "s" * 13 + "p" + "s" * 15 + "p" + "ss"
    # cutting costs more: whole takes, a cut tried every 16th
    assert _choices(SplitChooser(), 2.0, 1.0, 34) == "sp" + "p" * 13 + "s" + "p" * 15 + "s" + "pp"
    # cheaper by less than the margin is not worth the threads
    assert _choices(SplitChooser(), 1.0, 1.02, 20).count("s") == 2


def test_the_chooser_follows_a_change_of_load() -> None:
    chooser = SplitChooser()
    assert _choices(chooser, 1.0, 2.0, 40).endswith("s")
    # the other cores get busy: cutting now costs three times as much; the probes see it
    busy = _choices(chooser, 6.0, 2.0, 80)
    assert busy[0] == "s" and "ss" not in busy and busy[1:].count("s") == 80 // 16
    # a take with no rows teaches nothing
    chooser.took(True, 1.0, 0)
    assert chooser.split() is False
