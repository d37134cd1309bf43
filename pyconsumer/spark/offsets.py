"""Driver-side offset lookups: which partitions a query reads and where their ranges start and end.

Spark's KafkaOffsetReader, over one assign-mode :class:`~pyconsumer.KafkaConsumer` opened
lazily (a reader is pickled; the consumer never is). Every lookup is retried
``fetchOffset.numRetries`` times, ``fetchOffset.retryIntervalMs`` apart, as Spark does.
"""
from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from pyconsumer.consumer.consumer import KafkaConsumer
from pyconsumer.consumer.log_end import end_offsets_exact
from pyconsumer.errors import (
    ConfigurationError,
    DataLossError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from pyconsumer.spark.options import (
    EARLIEST,
    LATEST,
    Assign,
    EarliestSpec,
    GlobalTimestamp,
    LatestSpec,
    OffsetSpec,
    SourceOptions,
    SpecificOffsets,
    SpecificTimestamps,
    Subscribe,
    SubscribePattern,
)
from pyconsumer.structs import TopicPartition

__all__ = ["OffsetReader", "DataLossError", "check_named_partitions"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# driver lookups fetch only to read watermarks: never wait at the broker for data
_DRIVER_DEFAULTS = {"fetch.max.wait.ms": "1"}   # (a broker may answer 0 with nothing at all)


DATA_LOSS_HINT = ("Some data may have been lost because it is no longer available in Kafka "
                  "(aged out by retention, or the topic was deleted). If you want the query "
                  "to go on reading past the lost data, set the source option "
                  "\"failOnDataLoss\" to \"false\".")


def report_data_loss(options: SourceOptions, message: str) -> None:
    """Raise :class:`DataLossError` (failOnDataLoss=true) or log the skip."""
    if options.fail_on_data_loss:
        raise DataLossError(f"{message}. {DATA_LOSS_HINT}")
    log.warning("%s. Skipping it because failOnDataLoss is false.", message)


def check_named_partitions(spec: OffsetSpec, partitions: Iterable[TopicPartition],
                           option: str) -> None:
    """Offsets or timestamps given per partition (JSON) name exactly the topic-partitions the
    query reads, as Spark requires (its "Partitions specified for Kafka start offsets don't
    match what are assigned"): a :class:`ConfigurationError` naming ``option``, the partitions
    missing and those not read. Other specs (earliest, latest, one timestamp) always fit."""
    if not isinstance(spec, (SpecificOffsets, SpecificTimestamps)):
        return
    given = set(spec.offsets if isinstance(spec, SpecificOffsets) else spec.timestamps)
    parts = set(partitions)
    if given == parts:
        return
    missing = sorted(parts - given)
    extra = sorted(given - parts)
    detail = []
    if missing:
        detail.append("missing " + ", ".join(f"{t}-{p}" for t, p in missing))
    if extra:
        detail.append("not read by this query " + ", ".join(f"{t}-{p}" for t, p in extra))
    raise ConfigurationError(f"{option} must name exactly the topic-partitions the query reads "
                             f"({'; '.join(detail)})")


class OffsetReader:
    """Partition discovery and offset lookups for the driver (planner / stream runner)."""

    def __init__(self, options: SourceOptions, role: str = "driver") -> None:
        self.options = options
        self.role = role
        self._consumer: KafkaConsumer | None = None

    # a reader travels to other processes pickled: the consumer stays behind
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_consumer"] = None
        return state

    @property
    def consumer(self) -> KafkaConsumer:
        if self._consumer is None or self._consumer.closed:
            self._consumer = KafkaConsumer(**self._settings())
        return self._consumer

    def _settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = dict(_DRIVER_DEFAULTS)
        settings.update(self.options.consumer_settings())
        settings.setdefault(
            "client.id", f"{self.options.group_id_prefix}-{uuid.uuid4().hex[:8]}-{self.role}")
        settings["auto.offset.reset"] = "none"
        return settings

    def close(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.close(timeout_ms=5000)
            finally:
                self._consumer = None

    def _retrying(self, what: str, call: Callable[[], T]) -> T:
        attempts = self.options.fetch_offset_num_retries
        for attempt in range(1, attempts + 1):
            try:
                return call()
            except KafkaError as exc:
                if isinstance(exc, ConfigurationError) or attempt >= attempts:
                    raise
                log.warning("%s failed (attempt %d of %d), retrying in %d ms: %s", what,
                            attempt, attempts, self.options.fetch_offset_retry_interval_ms, exc)
                time.sleep(self.options.fetch_offset_retry_interval_ms / 1000.0)
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ partitions

    def partitions(self) -> set[TopicPartition]:
        """The topic-partitions the query reads now: the subscribed topics' partitions, every
        partition of the topics whose name the pattern finds (Spark 4's ``findFirstIn``: a
        match anywhere in the name, not of the whole name), or the assigned ones.

        A batch query fails on a subscribed topic or an assigned partition that does not
        exist, naming them (Spark fails on the missing topics too); a stream reads the ones
        that exist and picks the others up when they appear."""
        strategy = self.options.strategy
        if isinstance(strategy, Assign) and self.options.streaming:
            return set(strategy.partitions)
        topics = self._retrying("listing topics", lambda: self.consumer.topics())
        if isinstance(strategy, Assign):
            known = {TopicPartition(t, p.partition) for t, ps in topics.items() for p in ps}
            absent = sorted(set(strategy.partitions) - known)
            if absent:
                raise UnknownTopicOrPartitionError(
                    "Option 'assign': " + ", ".join(f"{t}-{p}" for t, p in absent)
                    + (" does" if len(absent) == 1 else " do") + " not exist")
            return set(strategy.partitions)
        if isinstance(strategy, Subscribe):
            missing = [t for t in strategy.topics if t not in topics]
            if missing and not self.options.streaming:
                raise UnknownTopicOrPartitionError(
                    "Option 'subscribe': " + ("topic " if len(missing) == 1 else "topics ")
                    + ", ".join(missing) + (" does" if len(missing) == 1 else " do")
                    + " not exist")
            names: Iterable[str] = [t for t in strategy.topics if t in topics]
        else:
            assert isinstance(strategy, SubscribePattern)
            pattern = re.compile(strategy.pattern)
            # internal topics (__consumer_offsets, ...) are never read, as Admin's listTopics
            names = [t for t in topics if pattern.search(t) and not t.startswith("__")]
        return {TopicPartition(t, p.partition) for t in names for p in topics[t]}

    # ------------------------------------------------------------------ lookups

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        parts = sorted(tps)
        if not parts:
            return {}
        return self._retrying("fetching earliest offsets",
                              lambda: self.consumer.beginning_offsets(parts))

    def latest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Log end offsets (last stable offsets with kafka.isolation.level=read_committed)."""
        parts = sorted(tps)
        if not parts:
            return {}
        return self._retrying("fetching latest offsets",
                              lambda: end_offsets_exact(self.consumer, parts, self._settings()))

    def by_timestamp(self, timestamps: Mapping[TopicPartition, int], *, is_start: bool
                     ) -> dict[TopicPartition, int]:
        """The first offset at or after each timestamp. When there is none: the latest offset
        for an end; for a start, per startingOffsetsByTimestampStrategy (error or latest)."""
        found = self._retrying("fetching offsets by timestamp",
                               lambda: self.consumer.offsets_for_times(dict(timestamps)))
        missing = [tp for tp, ot in found.items() if ot is None]
        out = {tp: ot.offset for tp, ot in found.items() if ot is not None}
        if missing:
            if is_start and self.options.starting_by_timestamp_strategy == "error":
                raise ConfigurationError(
                    "No offset matched the starting timestamp for "
                    + ", ".join(f"{tp.topic}-{tp.partition} (timestamp {timestamps[tp]})"
                                for tp in sorted(missing))
                    + ": no record at or after it. Set startingOffsetsByTimestampStrategy to "
                    "'latest' to start those partitions at the latest offset instead.")
            out.update(self.latest(missing))
        return out

    def resolve(self, spec: OffsetSpec, tps: Iterable[TopicPartition], *, is_start: bool,
                option: str) -> dict[TopicPartition, int]:
        """Concrete offsets of ``tps`` for a starting or ending spec."""
        parts = set(tps)
        if isinstance(spec, EarliestSpec):
            return self.earliest(parts)
        if isinstance(spec, LatestSpec):
            return self.latest(parts)
        if isinstance(spec, GlobalTimestamp):
            return self.by_timestamp({tp: spec.timestamp for tp in parts}, is_start=is_start)
        if isinstance(spec, (SpecificOffsets, SpecificTimestamps)):
            check_named_partitions(spec, parts, option)
            given = spec.offsets if isinstance(spec, SpecificOffsets) else spec.timestamps
            if isinstance(spec, SpecificTimestamps):
                return self.by_timestamp(given, is_start=is_start)
            out = {tp: off for tp, off in given.items() if off >= 0}
            out.update(self.earliest([tp for tp, off in given.items() if off == EARLIEST]))
            out.update(self.latest([tp for tp, off in given.items() if off == LATEST]))
            return out
        raise TypeError(f"unknown offset spec {spec!r}")
