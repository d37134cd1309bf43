"""The process's pool of large frame buffers (net/connection.FramePool): a buffer is reused only
once nothing refers to it, the memory kept is bounded per process, small frames never pooled."""
from __future__ import annotations

from pyconsumer.net.connection import FramePool

MB = 1 << 20


def test_a_free_buffer_is_reused_a_referenced_one_never() -> None:
    pool = FramePool(keep=2)
    first = pool.take(4 * MB)
    first_id = id(first)
    view = memoryview(first)[10:20]             # a record set still held by a CompletedFetch
    del first                                   # the connection let go of it: the view holds it
    second = pool.take(4 * MB)
    assert id(second) != first_id
    del second                                   # its records all handed out
    again = pool.take(4 * MB - 100)
    assert len(again) == 4 * MB - 100 and id(again) != first_id
    view.release()
    del view, again
    reused = pool.take(3 * MB)
    assert len(reused) == 3 * MB
    assert id(reused) == first_id               # the first is free now, and large enough


def test_at_most_keep_buffers_are_kept_and_small_frames_are_not_pooled() -> None:
    pool = FramePool(keep=2)
    held = [pool.take(2 * MB) for _ in range(3)]  # all in use: the third is not kept
    assert len(pool._frames) == 2 and all(b is not held[2] for b in pool._frames)
    small = pool.take(MB - 1)
    assert len(small) == MB - 1 and all(b is not small for b in pool._frames)
    del held
    pool.clear()
    assert pool._frames == []


def test_a_larger_answer_takes_the_place_of_a_free_smaller_buffer() -> None:
    pool = FramePool(keep=1)
    small = pool.take(2 * MB)
    del small
    big = pool.take(10 * MB)                    # 2 MB cannot serve it (less than half)
    assert len(pool._frames) == 1 and pool._frames[0] is big and len(big) == 10 * MB
    del big
    assert len(pool.take(9 * MB)) == 9 * MB and len(pool._frames[0]) == 9 * MB
