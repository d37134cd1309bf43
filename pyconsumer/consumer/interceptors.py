"""Consumer interceptors: Java's ``ConsumerInterceptor`` / ``ConsumerInterceptors``.

An interceptor is any object with some of these methods (each optional):

* ``on_consume(records)``: called by ``poll()`` just before it returns a non-empty result
  (``dict[TopicPartition, list[ConsumerRecord]]``), after the positions moved; it may return
  replacement records (filtered, changed), which is what poll() returns, or None to leave
  them as they are. Interceptors run in order, each on the previous one's output.
* ``on_consume_arrow(batch)``: the same for ``poll_arrow()`` with its ``pyarrow.RecordBatch``
  (return a RecordBatch or None). An interceptor without it is skipped by poll_arrow():
  ``on_consume`` is never given Arrow data.
* ``on_commit(offsets)``: offsets (``dict[TopicPartition, OffsetAndMetadata]``) the group
  coordinator accepted: after ``commit()`` (and the final commit of ``close()``, and the
  auto-commit before a rebalance) returns, and for ``commit_async()`` and auto-commits from
  the poll/commit/close that runs the completed commits' callbacks, just before the callback.
  Not called for a failed commit or an empty one.
* ``close()``: when the consumer closes, after its last commit.
* ``configure(configs)``: once, when the consumer is built, with its settings (Java name ->
  value, ``client.id`` filled in).

They come from ``interceptor.classes`` (import paths or classes, each built with no arguments)
then ``interceptors`` (objects). As in Java, an exception an interceptor raises (``Exception``,
not KeyboardInterrupt) is logged at WARNING naming the interceptor and not raised: the chain
goes on with the previous output; a return value of the wrong type is treated the same way.
An exception from building or configuring one is raised from the consumer's constructor.
Interceptors run on the application thread, without the client lock (heartbeats go on).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import ConfigurationError
from pyconsumer.records import ConsumerRecord
from pyconsumer.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

Records = dict[TopicPartition, list[ConsumerRecord]]


def _name(interceptor: Any) -> str:
    cls = type(interceptor)
    return f"{cls.__module__}.{cls.__qualname__}"


class ConsumerInterceptors:
    """The consumer's interceptors, in order; false when there are none."""

    def __init__(self, interceptors: list[Any]) -> None:
        self.interceptors = list(interceptors)
        self._consume = [(i, i.on_consume) for i in self.interceptors
                         if callable(getattr(i, "on_consume", None))]
        self._consume_arrow = [(i, i.on_consume_arrow) for i in self.interceptors
                               if callable(getattr(i, "on_consume_arrow", None))]
        self._commit = [(i, i.on_commit) for i in self.interceptors
                        if callable(getattr(i, "on_commit", None))]

    @classmethod
    def from_config(cls, config: ConsumerConfig) -> ConsumerInterceptors:
        """Build ``interceptor.classes``, then add ``interceptors``; configure each."""
        built: list[Any] = []
        try:
            for klass in config.interceptor_classes:
                try:
                    built.append(klass())
                except Exception as e:
                    raise ConfigurationError(
                        f"interceptor.classes: cannot create {klass.__module__}."
                        f"{klass.__qualname__}() (an interceptor is built with no arguments): "
                        f"{type(e).__name__}: {e}") from e
            every = built + list(config.interceptors)
            if every:
                settings = config.as_dict()
                for interceptor in every:
                    configure = getattr(interceptor, "configure", None)
                    if callable(configure):
                        try:
                            configure(dict(settings))
                        except Exception as e:
                            raise ConfigurationError(
                                f"interceptor {_name(interceptor)}: configure() raised "
                                f"{type(e).__name__}: {e}") from e
        except BaseException:
            cls(built).close()             # the ones built so far
            raise
        return cls(every)

    def __bool__(self) -> bool:
        return bool(self.interceptors)

    def on_consume(self, records: Records) -> Records:
        """What poll() returns: ``records`` through each ``on_consume`` in turn."""
        if not records or not self._consume:
            return records
        for interceptor, fn in self._consume:
            try:
                out = fn(records)
            except Exception:
                log.warning("interceptor %s: on_consume raised; its records are ignored",
                            _name(interceptor), exc_info=True)
                continue
            if out is None:
                continue
            if not isinstance(out, Mapping):
                log.warning("interceptor %s: on_consume returned a %s, not a dict of "
                            "TopicPartition -> records; ignored", _name(interceptor),
                            type(out).__name__)
                continue
            records = out if isinstance(out, dict) else dict(out)
        return records

    def on_consume_arrow(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """What poll_arrow() returns: ``batch`` through each ``on_consume_arrow`` in turn."""
        if batch.num_rows == 0 or not self._consume_arrow:
            return batch
        for interceptor, fn in self._consume_arrow:
            try:
                out = fn(batch)
            except Exception:
                log.warning("interceptor %s: on_consume_arrow raised; its batch is ignored",
                            _name(interceptor), exc_info=True)
                continue
            if out is None:
                continue
            if not isinstance(out, pa.RecordBatch):
                log.warning("interceptor %s: on_consume_arrow returned a %s, not a "
                            "pyarrow.RecordBatch; ignored", _name(interceptor),
                            type(out).__name__)
                continue
            batch = out
        return batch

    def on_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        for interceptor, fn in self._commit:
            try:
                fn(dict(offsets))
            except Exception:
                log.warning("interceptor %s: on_commit raised", _name(interceptor),
                            exc_info=True)

    def close(self) -> None:
        for interceptor in self.interceptors:
            close = getattr(interceptor, "close", None)
            if not callable(close):
                continue
            try:
                close()
            except Exception:
                log.warning("interceptor %s: close() raised", _name(interceptor),
                            exc_info=True)


__all__ = ["ConsumerInterceptors"]
