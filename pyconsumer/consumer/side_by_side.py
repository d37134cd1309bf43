"""Running decode work on several cores: a process-wide pool of decode threads.

poll_arrow() decodes buffered partitions (and the compressed batches of one large response)
side by side: the Cython fill releases the GIL and cramjam releases it while it decompresses,
so the threads really run at once. The calling thread takes pieces too; the pool
(``threads`` - 1 threads, named ``pyconsumer-decode_N``) is shared by every consumer of the
process (a Spark executor runs one consumer per task) and created on first use.
"""
from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

#: less work than this many bytes of record set is not handed to threads: a run costs some
#: 25 us of hand-over, about the decoding of 100 KB of uncompressed records
min_bytes = 256 << 10

_PREFIX = "pyconsumer-decode"
_pools: dict[int, concurrent.futures.ThreadPoolExecutor] = {}
_lock = threading.Lock()


def run(calls: Sequence[Callable[[], T]], threads: int
        ) -> list[tuple[T | None, BaseException | None]]:
    """(result, None) or (None, exception) of each call, in order. This thread and up to
    ``threads`` - 1 pool threads take the calls in order, each the next one not yet taken,
    so more calls than threads still keep every thread busy. Called from a decode thread (a
    piece that cuts itself up again), everything runs in that thread: a pool thread never
    waits on the pool."""
    results: list[tuple[T | None, BaseException | None]] = [(None, None)] * len(calls)
    helpers = min(threads, len(calls)) - 1
    if helpers < 1 or threading.current_thread().name.startswith(_PREFIX):
        for i, call in enumerate(calls):
            results[i] = _outcome(call)
        return results
    with _lock:
        pool = _pools.get(threads)
        if pool is None:
            pool = _pools[threads] = concurrent.futures.ThreadPoolExecutor(
                threads - 1, thread_name_prefix=_PREFIX)
    order = iter(range(len(calls)))
    taking = threading.Lock()

    def work() -> None:
        while True:
            with taking:
                i = next(order, None)
            if i is None:
                return
            results[i] = _outcome(calls[i])

    futures = [pool.submit(work) for _ in range(helpers)]
    work()
    for fut in futures:
        fut.result()
    return results


def _outcome(call: Callable[[], T]) -> tuple[T | None, BaseException | None]:
    try:
        return call(), None
    except BaseException as e:     # noqa: B036 - handed back to the caller, in order
        return None, e
