"""read_committed filtering of aborted transactions; control batches never surface."""
from __future__ import annotations


from tests import recordsets as rs

from pyconsumer.records import CompletedFetch, decode_arrow, decode_records  # noqa: E402


def _txn(base: int, pid: int, n: int) -> bytes:
    return rs.aio_v2([(i, i, b"p%d" % pid, b"%d" % (base + i), []) for i in range(n)], "none", base,
                     producer_id=pid, epoch=0, seq=0, transactional=True)


def _fetch() -> tuple[bytes, list[tuple[int, int]]]:
    # pid 1 commits offsets 0-2 (marker 6), pid 2 aborts 3-5 (marker 7), plain batch 8-9, pid 2 aborts 10 (marker 11)
    data = b"".join([_txn(0, 1, 3), _txn(3, 2, 3), rs.control_batch(6, 1, True),
                     rs.control_batch(7, 2, False), rs.aio_v2([(0, 0, None, b"8", []), (1, 0, None, b"9", [])], "none", 8),
                     _txn(10, 2, 1), rs.control_batch(11, 2, False)])
    return data, [(2, 3), (2, 10)]


def test_read_committed() -> None:
    data, aborted = _fetch()
    got = decode_records(data, "t", 0, isolation_level="read_committed", aborted_transactions=aborted)
    assert [r.offset for r in got] == [0, 1, 2, 8, 9]
    rows = decode_arrow(data, "t", 0, isolation_level="read_committed", aborted_transactions=aborted)
    assert rows.column("offset").to_pylist() == [0, 1, 2, 8, 9]
    f = CompletedFetch(data, "t", 0, 0, isolation_level="read_committed", aborted_transactions=aborted)
    assert [r.offset for r in f.take_records(500)] == [0, 1, 2, 8, 9]
    assert f.next_fetch_offset == 12  # past the trailing control batch


def test_read_uncommitted_skips_only_control() -> None:
    data, _ = _fetch()
    got = decode_records(data, "t", 0)
    assert [r.offset for r in got] == [0, 1, 2, 3, 4, 5, 8, 9, 10]
    assert [r["offset"] for r in rs.reference(data)] == [0, 1, 2, 3, 4, 5, 8, 9, 10]
