"""The process's pool of large frame buffers (net/connection.FramePool): a buffer is reused only
once nothing refers to it, never shrunk, the memory kept is bounded per process, small frames
never pooled."""
from __future__ import annotations

from pyconsumer.net.connection import FramePool

MB = 1 << 20


def test_a_free_buffer_is_reused_a_referenced_one_never() -> None:
    pool = FramePool(keep=2)
    first = pool.take(4 * MB)
    assert isinstance(first, memoryview) and len(first) == 4 * MB
    first_buf = id(first.obj)          # (an id: a reference would hold it)
    view = first[10:20]                          # a record set still held by a CompletedFetch
    del first                                    # the connection let go of it: the view holds it
    second = pool.take(4 * MB)
    assert id(second.obj) != first_buf
    del second                                   # its records all handed out
    again = pool.take(4 * MB - 100)
    assert len(again) == 4 * MB - 100 and id(again.obj) != first_buf
    view.release()
    del view, again
    reused = pool.take(3 * MB)
    assert len(reused) == 3 * MB
    assert id(reused.obj) == first_buf              # the first is free now, and large enough


def test_at_most_keep_buffers_are_kept_and_small_frames_are_not_pooled() -> None:
    pool = FramePool(keep=2)
    held = [pool.take(2 * MB) for _ in range(3)]  # all in use: the third is not kept
    assert len(pool._frames) == 2 and all(b is not held[2].obj for b in pool._frames)
    small = pool.take(MB - 1)
    assert type(small) is bytearray and len(small) == MB - 1
    del held
    pool.clear()
    assert pool._frames == []


def test_a_larger_answer_takes_the_place_of_the_smallest_free_buffer() -> None:
    pool = FramePool(keep=2)
    a, b = pool.take(2 * MB), pool.take(3 * MB)
    small, middle = id(a.obj), id(b.obj)        # (ids: a reference would hold them)
    del a, b
    big = pool.take(10 * MB)                    # neither can serve it: replaces the 2 MB one
    assert [id(f) for f in pool._frames] == [id(big.obj), middle]
    assert small not in [id(f) for f in pool._frames]


def test_a_smaller_answer_reads_into_the_smallest_free_buffer_that_fits_and_never_shrinks_it() -> None:
    pool = FramePool(keep=2)
    a, b = pool.take(10 * MB), pool.take(4 * MB)
    large, medium = id(a.obj), id(b.obj)        # (ids: a reference would hold them)
    del a, b
    c = pool.take(3 * MB)
    assert id(c.obj) == medium and len(c) == 3 * MB and len(c.obj) == 4 * MB
    d = pool.take(9 * MB)                        # the medium one is busy: the large one, whole
    assert id(d.obj) == large and len(d.obj) == 10 * MB
    del c, d
    e = pool.take(10 * MB)                       # after a 3 MB and a 9 MB answer: no new buffer
    assert id(e.obj) == large and len(pool._frames) == 2
