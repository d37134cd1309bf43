"""Reading the next batches while the current ones are written: one reader thread per task.

A task reads its offset ranges (fetches, decoding) and encodes Parquet files; both spend most of
their time in code that releases the GIL (sockets and the decoder, the Parquet encoder), so
running them on two threads overlaps them instead of taking turns.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

_END = object()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetched(Generic[T]):
    """Iterates what ``source()`` yields, produced on a thread of its own up to ``depth`` items ahead.

    The source is made, iterated and closed on the reader thread only. An error there is raised
    here at the item where it happened; leaving early (an error in the consumer of the items, or
    close()) stops the reader at its next item and closes the source before close() returns.
    """

    def __init__(self, source: Callable[[], Iterable[T]], *, depth: int = 2, name: str = "pyconsumer-prefetch") -> None:
        if depth < 1:
            raise ValueError(f"prefetch depth must be at least 1, not {depth}")
        self._items: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(source,), name=name, daemon=True)
        self._thread.start()

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._items.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, source: Callable[[], Iterable[T]]) -> None:
        it: Iterator[T] | None = None
        try:
            it = iter(source())
            for item in it:
                if not self._put(item):
                    break
            else:
                self._put(_END)
        except BaseException as e:  # noqa: BLE001 - handed to the consuming thread
            self._put(_Failed(e))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                try:
                    close()
                except BaseException as e:  # noqa: BLE001
                    self._put(_Failed(e))

    def __iter__(self) -> Iterator[T]:
        try:
            while True:
                item = self._items.get()
                if item is _END:
                    return
                if isinstance(item, _Failed):
                    raise item.error
                yield item  # type: ignore[misc]
        finally:
            self.close()

    def close(self) -> None:
        """Stop the reader (if still running) and wait until it has closed its source."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                while True:
                    self._items.get_nowait()
            except queue.Empty:
                pass
            self._thread.join(timeout=0.05)
