"""A minimal future: the network client completes it inside ``poll()``.

Callbacks run in the thread that completes the future, except while the heartbeat thread
polls (see :mod:`pyconsumer.threads`): then a callback not registered with
``any_thread=True`` is handed to the network client's queue and runs at the application
thread's next poll, so only thread-safe bookkeeping ever runs on the heartbeat thread.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

Callback = Callable[["Future[Any]"], Any]

_local = threading.local()


class defer_callbacks:
    """While active in this thread, callbacks not marked ``any_thread`` go to ``sink``."""

    def __init__(self, sink: list[tuple[Callback, Future[Any]]]) -> None:
        self.sink = sink

    def __enter__(self) -> None:
        _local.sink = self.sink

    def __exit__(self, *exc: object) -> None:
        _local.sink = None


def _dispatch(fn: Callback, any_thread: bool, fut: Future[Any]) -> None:
    sink = getattr(_local, "sink", None)
    if sink is not None and not any_thread:
        sink.append((fn, fut))
    else:
        fn(fut)


class Future(Generic[T]):
    __slots__ = ("_done", "value", "exception", "_callbacks")

    def __init__(self) -> None:
        self._done = False
        self.value: T | None = None
        self.exception: BaseException | None = None
        self._callbacks: list[tuple[Callable[[Future[T]], Any], bool]] = []

    @property
    def done(self) -> bool:
        return self._done

    def succeeded(self) -> bool:
        return self._done and self.exception is None

    def failed(self) -> bool:
        return self._done and self.exception is not None

    def success(self, value: T) -> None:
        if self._done:
            raise RuntimeError("future already completed")
        self.value, self._done = value, True
        self._run_callbacks()

    def failure(self, exception: BaseException) -> None:
        if self._done:
            raise RuntimeError("future already completed")
        self.exception, self._done = exception, True
        self._run_callbacks()

    def add_callback(self, fn: Callable[[Future[T]], Any], *, any_thread: bool = False) -> None:
        """Run ``fn(self)`` once the future completes (now if it has). ``any_thread``: ``fn``
        only records thread-safe facts and may run on the heartbeat thread."""
        if self._done:
            _dispatch(fn, any_thread, self)
        else:
            self._callbacks.append((fn, any_thread))

    def result(self) -> T:
        """The value of a completed future, or its exception raised."""
        if not self._done:
            raise RuntimeError("future is not completed")
        if self.exception is not None:
            raise self.exception
        return self.value  # type: ignore[return-value]

    def _run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for fn, any_thread in callbacks:
            _dispatch(fn, any_thread, self)
