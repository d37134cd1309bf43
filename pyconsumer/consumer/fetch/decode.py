"""The one scheduler of decode threads: decode work run on several cores.

poll_arrow() decodes buffered partitions (and the compressed batches of one large response)
side by side: the Cython fill releases the GIL and cramjam releases it while it decompresses,
so the threads really run at once. The calling thread takes pieces too; there is one pool
per thread count (``threads`` - 1 threads, named ``pyconsumer-decode_N``), shared by every
consumer of the process that asks for that count (a Spark executor runs one consumer per
task), created on first use. Cython hands out plain cursors (CompletedFetch.cut) and takes
back what they did (CompletedFetch.join); it never calls back into this module.
"""
from __future__ import annotations

import concurrent.futures
import functools
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import pyarrow as pa

from pyconsumer.records import CompletedFetch

T = TypeVar("T")

#: run(calls): (result, None) or (None, exception) of each call, in order (see run)
Runner = Callable[[list[Callable[[], pa.RecordBatch]]],
                  list[tuple[pa.RecordBatch | None, BaseException | None]]]

#: less work than this many bytes of record set is not handed to threads: a run costs some
#: 25 us of hand-over, about the decoding of 100 KB of uncompressed records
min_bytes = 256 << 10

_PREFIX = "pyconsumer-decode"
_pools: dict[int, concurrent.futures.ThreadPoolExecutor] = {}
_lock = threading.Lock()


def threads_for(setting: int) -> int:
    """The decode threads of a decode.threads setting: 0 means one per core this process may
    run on (its CPU affinity: a container or a Spark executor pinned to fewer cores than the
    machine has), at most 4."""
    return setting or min(4, _usable_cores())


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):      # no affinity where the platform has none
        return os.cpu_count() or 1


def _pool(threads: int) -> concurrent.futures.ThreadPoolExecutor:
    with _lock:
        pool = _pools.get(threads)
        if pool is None:
            pool = _pools[threads] = concurrent.futures.ThreadPoolExecutor(
                threads - 1, thread_name_prefix=_PREFIX)
        return pool


def submit(call: Callable[[], object], threads: int) -> concurrent.futures.Future[object] | None:
    """Run ``call`` on the pool of ``threads`` in the background (nothing waits for it: work
    that only saves the polling thread work later, such as checking an answer's CRCs ahead).
    None, and nothing run, with fewer than two threads."""
    if threads < 2:
        return None
    return _pool(threads).submit(call)


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
    pool = _pool(threads)
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


class SplitChooser:
    """Whether a take that could be cut across the decode threads is cut: chosen by what this
    consumer's own takes cost, not assumed. Threads win on idle cores and lose where the cores
    are busy (other tasks of a Spark executor, a broker on the same machine): each way's
    seconds per record is kept (a moving average), the cheaper way is taken, splitting only
    when it is cheaper by :attr:`margin`, and every :attr:`probe_every`-th cuttable take goes
    the other way so that a change of load is seen. Takes with nothing to cut (one
    uncompressed partition) never get here."""

    probe_every = 16
    margin = 1.05
    _weight = 0.25

    def __init__(self) -> None:
        self._cost: dict[bool, float | None] = {True: None, False: None}
        self._takes = 0

    def split(self) -> bool:
        """Whether the next cuttable take is cut."""
        self._takes += 1
        split_cost, plain_cost = self._cost[True], self._cost[False]
        if split_cost is None or plain_cost is None:
            return split_cost is None          # each way measured once first
        better = split_cost * self.margin <= plain_cost
        return not better if self._takes % self.probe_every == 0 else better

    def took(self, split: bool, seconds: float, records: int) -> None:
        """A cuttable take's cost: ``records`` in ``seconds``, cut or not."""
        if records <= 0:
            return
        per = seconds / records
        old = self._cost[split]
        self._cost[split] = per if old is None else old + self._weight * (per - old)


def take_arrow_split(cursor: CompletedFetch, max_records: int, parts: int, run: Runner,
                     min_bytes: int = 0, chooser: SplitChooser | None = None
                     ) -> list[pa.RecordBatch] | None:
    """cursor.take_arrow(max_records) on several threads: the rest of the current batch, and
    the next whole compressed v2 batches that fit in what is left of max_records cut into
    ``parts`` runs of about equal bytes (CompletedFetch.cut), each taken by ``run`` beside the
    others, then joined. A list of RecordBatches in offset order (fewer rows than take_arrow
    may give: only whole batches are cut), or None when there is nothing to cut. A run that
    fails moves nothing: take_arrow then gives the same records and errors as if no cut had
    been tried."""
    plan = cursor.cut(max_records, parts, min_bytes)
    if plan is None:
        return None
    head, runs = plan
    if chooser is None:
        return _split(cursor, max_records, head, runs, run)
    started = time.perf_counter()
    if not chooser.split():
        for r in runs:
            r.discard()
        batch = cursor.take_arrow(max_records)
        chooser.took(False, time.perf_counter() - started, batch.num_rows)
        return [batch]
    taken = _split(cursor, max_records, head, runs, run)
    chooser.took(True, time.perf_counter() - started, sum(b.num_rows for b in taken or ()))
    return taken


def _split(cursor: CompletedFetch, max_records: int, head: int, runs: list[CompletedFetch],
           run: Runner) -> list[pa.RecordBatch] | None:
    calls: list[Callable[[], pa.RecordBatch]] = [
        functools.partial(r.take_arrow, max_records) for r in runs]
    if head:
        calls.insert(0, functools.partial(cursor.take_arrow, head))
    results = run(calls)
    taken: list[pa.RecordBatch] = []
    if head:
        batch, error = results.pop(0)
        if error is not None or cursor.pending_error is not None:
            for r in runs:
                r.discard()
            if error is not None:
                raise error
            assert batch is not None
            return [batch]                      # the error comes with the next take
        assert batch is not None
        taken.append(batch)
    batches = [batch for batch, error in results if error is None and batch is not None]
    if len(batches) < len(runs) or not cursor.join(runs, [b.num_rows for b in batches]):
        for r in runs:
            r.discard()
        return taken or None                    # the batches after are taken here next
    taken += batches
    if not any(batch.num_rows for batch in taken):
        # all below the position, or control batches: never an empty take before the end
        # (a caller takes that as "nothing more here")
        taken.append(cursor.take_arrow(max_records))
    return taken
