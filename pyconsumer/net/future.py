"""A minimal single-threaded future: the network client completes it inside ``poll()``."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Future(Generic[T]):
    __slots__ = ("_done", "value", "exception", "_callbacks")

    def __init__(self) -> None:
        self._done = False
        self.value: T | None = None
        self.exception: BaseException | None = None
        self._callbacks: list[Callable[[Future[T]], Any]] = []

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

    def add_callback(self, fn: Callable[[Future[T]], Any]) -> None:
        if self._done:
            fn(self)
        else:
            self._callbacks.append(fn)

    def result(self) -> T:
        """The value of a completed future, or its exception raised."""
        if not self._done:
            raise RuntimeError("future is not completed")
        if self.exception is not None:
            raise self.exception
        return self.value  # type: ignore[return-value]

    def _run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn(self)
