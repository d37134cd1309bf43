"""``KafkaConsumer.metrics()``: the Java consumer's metrics, by the same names and meanings.

Built from the primitives of :mod:`pyconsumer.metrics` (times in ms; ``*-seconds-ago``
metrics are whole seconds, -1 when the event never happened). The assignment's positions
and offsets are read through :class:`AssignmentView`, a read-only view this module defines
(``SubscriptionState`` is one), never through the subscription's own types.

What is recorded, and when (the metric names are Java's; see ``METRICS`` for the list):

* ``consumer-fetch-manager-metrics`` (also per topic, tag ``topic`` with '.' as '_' as in Java):
  ``records-consumed-total/rate`` count the records (rows) poll() and poll_arrow() hand out,
  before interceptors, per drained chunk; ``bytes-consumed-total/rate`` count the record-batch
  bytes of a partition's part of a Fetch response (its ``records`` field, less a trailing
  batch cut off by the size limit, which is fetched again) once every record in it was handed
  out; data dropped before that (a seek, a rebalance) is not counted. Java counts the size of
  each returned record instead (no batch headers): pyconsumer does no per-record work for
  metrics, so its byte counts include the 61-byte batch headers and whole batches.
  ``fetch-size-avg/max``: record-batch bytes per Fetch response; ``fetch-latency-avg/max``,
  ``fetch-rate/total``: Fetch responses without a top-level error, timed from the send.
  ``records-lag`` / ``records-lead`` (tags topic, partition) are computed when metrics() is
  called: high watermark (last stable offset under read_committed) minus the position, and
  the position minus the log start offset, for assigned partitions where both are known.
  ``records-lag-max/avg`` and ``records-lead-min/avg`` (per partition, and ``records-lag-max``
  / ``records-lead-min`` over all partitions) are windowed over the values seen each time
  records were drained from a partition (Java records them there too).
* ``consumer-fetch-manager-metrics``, typed values (``value.format`` / ``key.format``; 0
  while both are binary; no Java counterpart, Java-style names): ``records-decoded-total``
  (records whose key and value went through the decoding plan and were handed out or kept,
  PERMISSIVE's bad ones included), ``records-malformed-total`` (records with a key or value
  that did not decode, PERMISSIVE and DROPMALFORMED: FAILFAST raises instead),
  ``records-dropped-total`` (DROPMALFORMED: left
  out), ``schema-ids-seen`` (how many distinct Avro writer schema ids and GUIDs the records
  named). They count the plan's work: a record decoded again (a poll rolled back, the
  records after a FAILFAST error fetched again) counts again.
* ``consumer-metrics``: ``time-between-poll-avg/max`` (ms from one poll's start to the next),
  ``poll-idle-ratio-avg`` (Java's poll time / (poll time + time since the previous poll)),
  ``last-poll-seconds-ago``, ``connection-count`` (broker connections open or opening).
* ``consumer-coordinator-metrics`` (only with a group.id, as in Java): ``commit-latency-avg/max``,
  ``commit-rate/total`` (OffsetCommit responses, from the send), ``heartbeat-response-time-max``,
  ``heartbeat-rate/total``, ``last-heartbeat-seconds-ago`` (since the last heartbeat sent),
  ``rebalance-latency-avg/max/total`` (ms from the first JoinGroup of a rebalance to its
  SyncGroup answer), ``rebalance-total``, ``rebalance-rate-per-hour``,
  ``failed-rebalance-total``, ``failed-rebalance-rate-per-hour`` (join rounds that failed),
  ``last-rebalance-seconds-ago``, ``assigned-partitions``.

Cost: nothing per record. Per poll two sensor updates; per drained chunk the records and lag
sensors; per Fetch response the latency and size sensors; gauges are computed only when
metrics() is called. Threads: request latencies are taken when the answer arrives, on
whichever thread polls (the heartbeat thread too), under the client lock; metrics() reads
copies of the registries without it, from any thread.

Poll listeners (:mod:`pyconsumer.metrics.polls`, the exporters' hook): while there is one,
the drains also count records per partition, and each poll ends with a PollEvent of its
duration and those counts; without one, none of this is done.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Mapping, Sized
from typing import TYPE_CHECKING, Protocol

from pyconsumer.errors import IllegalStateError
from pyconsumer.metrics import (
    MetricName,
    Sensor,
    _Avg,
    _Max,
    _Min,
    _Rate,
    _Recorders,
    _Stat,
    _Total,
    _Window,
    _WindowedCount,
    _WindowedSum,
)
from pyconsumer.metrics.catalog import CONSUMER_GROUP, COORDINATOR_GROUP, FETCH_GROUP, METRICS
from pyconsumer.metrics.polls import PollEvent, PollListener
from pyconsumer.structs import TopicPartition

if TYPE_CHECKING:
    from pyconsumer.config import ConsumerConfig
    from pyconsumer.net.connection import Response
    from pyconsumer.net.future import Future
    from pyconsumer.records import CompletedFetch

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- what it reads


class _Offset(Protocol):
    @property
    def offset(self) -> int: ...


class PartitionView(Protocol):
    """One assigned partition's offsets as the metrics read them (read-only)."""

    @property
    def position(self) -> _Offset | None: ...

    @property
    def has_valid_position(self) -> bool: ...

    @property
    def high_watermark(self) -> int | None: ...

    @property
    def last_stable_offset(self) -> int | None: ...

    @property
    def log_start_offset(self) -> int | None: ...


class AssignmentView(Protocol):
    """The assignment as the metrics read it (read-only): which partitions are assigned and
    each one's offsets. ``state`` raises IllegalStateError for a partition not assigned."""

    def assigned_partitions(self) -> Iterable[TopicPartition]: ...

    def is_assigned(self, tp: TopicPartition) -> bool: ...

    def state(self, tp: TopicPartition) -> PartitionView: ...

    def state_or_none(self, tp: TopicPartition) -> PartitionView | None: ...


_HOUR_MS = 3_600_000.0


def _seconds_ago(then: float | None, now: float) -> float:
    """Java's ``TimeUnit.SECONDS.convert(now - then, MILLISECONDS)``; -1 when never."""
    return -1.0 if then is None else float(int((now - then) // 1000))


class ValueCounts(Protocol):
    """What a decoding plan has done so far (pyconsumer.values.ValueCounts, read-only)."""

    @property
    def decoded(self) -> int: ...

    @property
    def malformed(self) -> int: ...

    @property
    def dropped(self) -> int: ...

    @property
    def schema_ids(self) -> Sized: ...


class _PollTimer:
    __slots__ = ("_metrics",)

    def __init__(self, metrics: ConsumerMetrics) -> None:
        self._metrics = metrics

    def __enter__(self) -> None:
        self._metrics.poll_start()

    def __exit__(self, kind: object, error: BaseException | None, tb: object) -> None:
        self._metrics.poll_end(error)


#: a partition's stats by metric name, in the order they are reported
_PARTITION_METRICS = ("records-lag-max", "records-lag-avg", "records-lead-min", "records-lead-avg")


#: a sample in a partition's ring: its start, the extreme (max lag / min lead), the sum, the count
_SAMPLE = 4


_EMPTY_RING = array("d")


class _PartitionStats:
    """One partition's records-lag-max/avg and records-lead-min/avg. The max and the average
    of the lag record the same values at the same moments, so their samples roll together:
    one ring holds both (per sample: start, max, sum, count; the lead likewise with its min),
    in an array, which the garbage collector does not track. The same values as a _Max and an
    _Avg recording side by side (tests/unit/test_metrics_partition_ring.py), in one object a
    partition instead of about twenty (four stats, their sample lists and samples, bound
    record methods): with thousands of partitions those kept the collector busy, ~40 ms a
    1M-record read at 1,000 partitions (issue 26). Names are made on the first metrics()
    call and kept."""

    __slots__ = ("lag", "lag_at", "lead", "lead_at", "_names")

    def __init__(self) -> None:
        self.lag = _EMPTY_RING[:]            # a slice: a new array, without parsing "d"
        self.lag_at = -1
        self.lead = _EMPTY_RING[:]
        self.lead_at = -1
        self._names: tuple[MetricName, ...] | None = None

    def record_lag(self, w: _Window, value: float, now: float) -> None:
        ring, at = self.lag, self.lag_at
        if at < 0 or now - ring[at * _SAMPLE] >= w.window_ms:
            at = self.lag_at = _roll(ring, at, w, now, -math.inf)
        i = at * _SAMPLE
        if value > ring[i + 1]:
            ring[i + 1] = value
        ring[i + 2] += value
        ring[i + 3] += 1.0

    def record_lead(self, w: _Window, value: float, now: float) -> None:
        ring, at = self.lead, self.lead_at
        if at < 0 or now - ring[at * _SAMPLE] >= w.window_ms:
            at = self.lead_at = _roll(ring, at, w, now, math.inf)
        i = at * _SAMPLE
        if value < ring[i + 1]:
            ring[i + 1] = value
        ring[i + 2] += value
        ring[i + 3] += 1.0

    def named(self, tags_of: Callable[[TopicPartition], dict[str, str]], tp: TopicPartition
              ) -> zip[tuple[MetricName, _RingStat]]:
        names = self._names
        if names is None:
            tags = tags_of(tp)
            names = self._names = tuple(MetricName(n, FETCH_GROUP, tags)
                                        for n in _PARTITION_METRICS)
        return zip(names, (_RingStat(self.lag, -math.inf, max), _RingStat(self.lag, -math.inf, None),
                           _RingStat(self.lead, math.inf, min), _RingStat(self.lead, math.inf, None)))


def _roll(ring: array[float], at: int, w: _Window, now: float, initial: float) -> int:
    """The sample to record into at ``now`` (the current one's window has passed, or there is
    none yet): the next one of the ring, reset (SampledStat's roll)."""
    count = len(ring) // _SAMPLE
    at = (at + 1) % w.samples if count else 0
    if at >= count:
        ring.extend((now, initial, 0.0, 0.0))
    else:
        i = at * _SAMPLE
        ring[i], ring[i + 1], ring[i + 2], ring[i + 3] = now, initial, 0.0, 0.0
    return at


class _RingStat:
    """A metric read from a partition's ring: its extreme (``pick`` max or min over the
    samples that saw a value) or, ``pick`` None, its average; NaN before any value. Samples
    as old as all the windows together are reset first (SampledStat's purge)."""

    __slots__ = ("ring", "initial", "pick")

    def __init__(self, ring: array[float], initial: float,
                 pick: Callable[[list[float]], float] | None) -> None:
        self.ring, self.initial, self.pick = ring, initial, pick

    def measure(self, w: _Window, now: float) -> float:
        ring = self.ring
        expire = w.samples * w.window_ms
        for i in range(0, len(ring), _SAMPLE):
            if now - ring[i] >= expire:
                ring[i], ring[i + 1], ring[i + 2], ring[i + 3] = now, self.initial, 0.0, 0.0
        if self.pick is not None:
            seen = [ring[i + 1] for i in range(0, len(ring), _SAMPLE) if ring[i + 3]]
            return self.pick(seen) if seen else math.nan
        count = sum(ring[i + 3] for i in range(0, len(ring), _SAMPLE))
        return sum(ring[i + 2] for i in range(0, len(ring), _SAMPLE)) / count if count else math.nan


class ConsumerMetrics:
    """The consumer's sensors and the metrics read from them; one per KafkaConsumer. The
    fetcher, coordinator and membership call the ``record``-style methods below; the
    consumer calls :meth:`snapshot` for ``metrics()``."""

    def __init__(self, config: ConsumerConfig, *, clock: Callable[[], float] | None = None
                 ) -> None:
        self._clock: Callable[[], float] = clock or (lambda: time.monotonic() * 1000.0)
        self.client_id = config.client_id
        self._tags = {"client-id": self.client_id}
        self._window = _Window(config.metrics_num_samples, float(config.metrics_sample_window_ms))
        self._read_committed = config.isolation_level == "read_committed"
        self.has_group = config.group_id is not None
        #: MetricName -> the stat it reads
        self._stats: dict[MetricName, _Stat] = {}
        # fetch manager
        self._records = self._meter(FETCH_GROUP, "records-consumed", self._tags)
        self._bytes = self._meter(FETCH_GROUP, "bytes-consumed", self._tags)
        self._fetch_size = self._sensor(FETCH_GROUP, self._tags, fetch_size_avg=_Avg(),
                                        fetch_size_max=_Max())
        self._fetch_latency = self._sensor(
            FETCH_GROUP, self._tags, fetch_latency_avg=_Avg(), fetch_latency_max=_Max(),
            fetch_rate=_Rate(_WindowedCount()), fetch_total=_Total(count=True))
        self._lag = self._sensor(FETCH_GROUP, self._tags, records_lag_max=_Max())
        self._lead = self._sensor(FETCH_GROUP, self._tags, records_lead_min=_Min())
        self._lag_to, self._lead_to = self._lag.recorders, self._lead.recorders
        self._topics: dict[str, tuple[Sensor, Sensor, Sensor]] = {}
        #: each drained partition's lag and lead stats (forgotten on unassignment)
        self._partitions: dict[TopicPartition, _PartitionStats] = {}
        #: each assigned partition's records-lag and records-lead names, made once
        self._lag_names: dict[TopicPartition, tuple[MetricName, MetricName]] = {}
        self._consumed_of: dict[str, tuple[_Recorders, _Recorders]] = {}
        self._fetch_latency_ms: dict[int, float] = {}     # node -> of the answer not read yet
        # consumer
        self._between_polls = self._sensor(CONSUMER_GROUP, self._tags,
                                           time_between_poll_avg=_Avg(),
                                           time_between_poll_max=_Max())
        self._idle = self._sensor(CONSUMER_GROUP, self._tags, poll_idle_ratio_avg=_Avg())
        self._last_poll: float | None = None
        self._poll_start = 0.0
        self._since_last_poll = 0.0
        # coordinator (registered only with a group, as Java creates the coordinator only then)
        coord = COORDINATOR_GROUP if self.has_group else None
        self._commit = self._sensor(coord, self._tags, commit_latency_avg=_Avg(),
                                    commit_latency_max=_Max(), commit_rate=_Rate(_WindowedCount()),
                                    commit_total=_Total(count=True))
        self._heartbeat = self._sensor(coord, self._tags, heartbeat_response_time_max=_Max(),
                                       heartbeat_rate=_Rate(_WindowedCount()),
                                       heartbeat_total=_Total(count=True))
        self._rebalance = self._sensor(
            coord, self._tags, rebalance_latency_avg=_Avg(), rebalance_latency_max=_Max(),
            rebalance_latency_total=_Total(), rebalance_total=_Total(count=True),
            rebalance_rate_per_hour=_Rate(_WindowedCount(), _HOUR_MS))
        self._failed_rebalance = self._sensor(
            coord, self._tags, failed_rebalance_total=_Total(count=True),
            failed_rebalance_rate_per_hour=_Rate(_WindowedCount(), _HOUR_MS))
        self._last_heartbeat: float | None = None
        self._rebalance_start: float | None = None
        self._last_rebalance: float | None = None
        #: the typed values' counters (count_values), read when metrics() is called
        self._value_counts: Callable[[], ValueCounts] | None = None
        #: the poll listeners (replaced whole, under the lock: any thread may add one)
        self._listeners: tuple[PollListener, ...] = ()
        self._listeners_lock = threading.Lock()
        #: records handed out by partition in the poll in progress, while there are listeners
        self._handed: dict[TopicPartition, int] | None = None

    # ------------------------------------------------------------------ building

    def _sensor(self, group: str | None, tags: Mapping[str, str], **stats: _Stat) -> Sensor:
        """A sensor whose stats are the metrics ``name_with_underscores=stat`` of ``group``
        (None: recorded but not reported)."""
        sensor = Sensor(self._window, self._clock)
        for attr, stat in stats.items():
            sensor.add(stat)
            if group is not None:
                self._stats[MetricName(attr.replace("_", "-"), group, tags)] = stat
        return sensor

    def _meter(self, group: str, prefix: str, tags: Mapping[str, str]) -> Sensor:
        """Java's Meter: ``<prefix>-rate`` (per second) and ``<prefix>-total``."""
        sensor = Sensor(self._window, self._clock)
        self._stats[MetricName(f"{prefix}-rate", group, tags)] = sensor.add(_Rate(_WindowedSum()))
        self._stats[MetricName(f"{prefix}-total", group, tags)] = sensor.add(_Total())
        return sensor

    def _topic(self, topic: str) -> tuple[Sensor, Sensor, Sensor]:
        """(records, bytes, fetch size) sensors of ``topic``, made on first use (topics whose
        tag is the same, "a.b" and "a_b", share them)."""
        tag = topic.replace(".", "_")
        sensors = self._topics.get(tag)
        if sensors is None:
            tags = {**self._tags, "topic": tag}
            sensors = (self._meter(FETCH_GROUP, "records-consumed", tags),
                       self._meter(FETCH_GROUP, "bytes-consumed", tags),
                       self._sensor(FETCH_GROUP, tags, fetch_size_avg=_Avg(),
                                    fetch_size_max=_Max()))
            self._topics[tag] = sensors
        return sensors

    @property
    def poll_timer(self) -> _PollTimer:
        """``with metrics.poll_timer:`` around a poll() records its start and end (made per
        use: one kept here would be a reference cycle with these metrics)."""
        return _PollTimer(self)

    def _partition(self, tp: TopicPartition) -> _PartitionStats:
        """What a drain of ``tp`` records its lag and its lead into (the partition's stats and
        the consumer's records-lag-max / records-lead-min), made on first use. Only the four
        stats are made here: their MetricNames (tags, frozen keys) wait for the first
        metrics() call, as a Sensor and four names per partition cost ~40 us each, 40 ms of
        the first polls over 1,000 partitions (issue 26)."""
        stats = self._partitions.get(tp)
        if stats is None:
            stats = self._partitions[tp] = _PartitionStats()
        return stats

    def _consumed(self, topic: str) -> tuple[_Recorders, _Recorders]:
        """What a drain of ``topic`` records its records and its bytes into: the consumer's
        meters and the topic's (one flat tuple each: a poll() records them every time)."""
        recorders = self._consumed_of.get(topic)
        if recorders is None:
            sensors = self._topic(topic)
            recorders = self._consumed_of[topic] = (self._records.recorders + sensors[0].recorders,
                                                    self._bytes.recorders + sensors[1].recorders)
        return recorders

    def _partition_tags(self, tp: TopicPartition) -> dict[str, str]:
        return {**self._tags, "topic": tp.topic.replace(".", "_"), "partition": str(tp.partition)}

    def count_values(self, snapshot: Callable[[], ValueCounts]) -> None:
        """Report the typed values' counters (value.format / key.format): ``snapshot`` gives
        them (thread-safe: metrics() may run on any thread)."""
        self._value_counts = snapshot

    # ------------------------------------------------------------------ poll listeners

    def add_listener(self, listener: PollListener) -> None:
        """Tell ``listener`` of every poll from the next one on (any thread)."""
        if not callable(getattr(listener, "on_poll", None)):
            raise TypeError(f"a poll listener needs an on_poll(event) method; "
                            f"{type(listener).__qualname__} has none")
        with self._listeners_lock:
            self._listeners = (*self._listeners, listener)

    def remove_listener(self, listener: PollListener) -> None:
        """Stop telling ``listener`` (any thread); ValueError if it was not added."""
        with self._listeners_lock:
            kept = list(self._listeners)
            for i, added in enumerate(kept):
                if added is listener:
                    del kept[i]
                    break
            else:
                raise ValueError(f"{type(listener).__qualname__} object is not a poll listener "
                                 "of this consumer")
            self._listeners = tuple(kept)

    # ------------------------------------------------------------------ recording: poll

    def poll_start(self) -> None:
        """Java recordPollStart: time since the previous poll's start (0 for the first)."""
        now = self._clock()
        self._since_last_poll = 0.0 if self._last_poll is None else now - self._last_poll
        self._between_polls.record(self._since_last_poll, now)
        self._last_poll = self._poll_start = now
        self._handed = {} if self._listeners else None

    def poll_end(self, error: BaseException | None = None) -> None:
        """Java recordPollEnd: poll time / (poll time + time since the previous poll); then
        the listeners, if the poll started with some."""
        spent = self._clock() - self._poll_start
        if spent + self._since_last_poll > 0:
            self._idle.record(spent / (spent + self._since_last_poll))
        handed, self._handed = self._handed, None
        if handed is not None:
            self._tell(PollEvent(spent / 1000.0, handed, error))

    def _tell(self, event: PollEvent) -> None:
        for listener in self._listeners:
            try:
                listener.on_poll(event)
            except Exception:
                log.warning("poll listener %s.%s: on_poll raised", type(listener).__module__,
                            type(listener).__qualname__, exc_info=True)

    # ------------------------------------------------------------------ recording: fetches

    def fetch_sent(self, node: int, fut: Future[Response]) -> None:
        """A Fetch went to ``node`` (one in flight per node). Its latency is taken when the
        answer arrives, on whichever thread reads it (the fetcher may see it later)."""
        start = self._clock()
        self._fetch_latency_ms.pop(node, None)

        def done(f: Future[Response]) -> None:
            if f.succeeded():
                self._fetch_latency_ms[node] = self._clock() - start
        fut.add_callback(done, any_thread=True)

    def fetch_answered(self, node: int, topic_bytes: Iterable[tuple[str | None, int]]) -> None:
        """A Fetch response without a top-level error: latency, and the record bytes it
        carried, per topic in response order (``topic_bytes``: (name, bytes), the name None
        for a topic id the request did not know; its bytes count in the total only)."""
        now = self._clock()
        latency = self._fetch_latency_ms.pop(node, None)
        if latency is not None:
            self._fetch_latency.record(latency, now)
        total = 0
        for name, size in topic_bytes:
            if name:
                self._topic(name)[2].record(size, now)
            total += size
        self._fetch_size.record(total, now)

    def taken(self, tp: TopicPartition, count: int, cursor: CompletedFetch,
              records: Sized | None, subscriptions: AssignmentView) -> None:
        """``count`` records were drained from ``tp``'s fetched data (``records``, read by
        ``cursor``): the records, the lag and lead after them and, once the cursor is used
        up, the data's record-batch bytes (less a trailing incomplete batch)."""
        now = self._clock()
        w = self._window
        records_to, bytes_to = self._consumed(tp.topic)
        if count:
            for record in records_to:
                record(w, count, now)
            handed = self._handed
            if handed is not None:
                handed[tp] = handed.get(tp, 0) + count
        if cursor.is_drained and records is not None:
            cut = cursor.incomplete_batch
            size = len(records) - (cut[2] if cut is not None else 0)
            for record in bytes_to:
                record(w, size, now)
        lag, lead = self._lag_lead(subscriptions, tp)
        if lag is not None or lead is not None:
            stats = self._partition(tp)
            if lag is not None:
                for record in self._lag_to:
                    record(w, lag, now)
                stats.record_lag(w, lag, now)
            if lead is not None:
                for record in self._lead_to:
                    record(w, lead, now)
                stats.record_lead(w, lead, now)

    def taken_many(self, drained: Iterable[tuple[TopicPartition, int, CompletedFetch, Sized | None]],
                   subscriptions: AssignmentView) -> None:
        """:meth:`taken` of each (tp, count, cursor, records) of ``drained`` (the partitions one
        poll_arrow chunk took together: hundreds), leaving the same metric values: a meter
        adds up what it records and the consumer's records-lag-max / records-lead-min keep
        the extreme, so each of those is recorded once, with a topic's sums and the group's
        extremes; only each partition's own lag and lead stats are recorded per partition."""
        now = self._clock()
        w = self._window
        sums: dict[str, list[int]] = {}     # topic -> [records, bytes, bytes recorded (0/1)]
        max_lag = min_lead = None
        partitions = self._partitions
        lag_lead_of, state_or_none = self._lag_lead_of, subscriptions.state_or_none
        handed = self._handed
        for tp, count, cursor, records in drained:
            topic_sums = sums.get(tp.topic)
            if topic_sums is None:
                topic_sums = sums[tp.topic] = [0, 0, 0]
            topic_sums[0] += count
            if handed is not None and count:
                handed[tp] = handed.get(tp, 0) + count
            if cursor.is_drained and records is not None:
                cut = cursor.incomplete_batch
                topic_sums[1] += len(records) - (cut[2] if cut is not None else 0)
                topic_sums[2] = 1
            lag, lead = lag_lead_of(state_or_none(tp))
            if lag is not None or lead is not None:
                stats = partitions.get(tp)            # _partition inlined: per partition
                if stats is None:
                    stats = partitions[tp] = _PartitionStats()
                if lag is not None:
                    stats.record_lag(w, lag, now)
                    if max_lag is None or lag > max_lag:
                        max_lag = lag
                if lead is not None:
                    stats.record_lead(w, lead, now)
                    if min_lead is None or lead < min_lead:
                        min_lead = lead
        for topic, (count, size, has_bytes) in sums.items():
            records_to, bytes_to = self._consumed(topic)
            if count:
                for record in records_to:
                    record(w, count, now)
            if has_bytes:
                for record in bytes_to:
                    record(w, size, now)
        if max_lag is not None:
            for record in self._lag_to:
                record(w, max_lag, now)
        if min_lead is not None:
            for record in self._lead_to:
                record(w, min_lead, now)

    def _lag_lead(self, subs: AssignmentView, tp: TopicPartition
                  ) -> tuple[int | None, int | None]:
        return self._lag_lead_of(subs.state_or_none(tp))

    def _lag_lead_of(self, st: PartitionView | None) -> tuple[int | None, int | None]:
        """A partition's lag and lead from its state (None: not assigned)."""
        if st is None:
            return None, None
        position = st.position if st.has_valid_position else None
        if position is None:
            return None, None
        end = st.last_stable_offset if self._read_committed else st.high_watermark
        lag = None if end is None else end - position.offset
        start = st.log_start_offset
        lead = None if start is None else position.offset - start
        return lag, lead

    # ------------------------------------------------------------------ recording: group

    def _timed(self, fut: Future[Response], sensor: Sensor) -> None:
        """Record the request's latency when its answer arrives (on any thread: it only
        records, under the client lock)."""
        start = self._clock()

        def done(f: Future[Response]) -> None:
            if f.succeeded():                    # an answer, whatever its error codes
                sensor.record(self._clock() - start)
        fut.add_callback(done, any_thread=True)

    def commit_sent(self, fut: Future[Response]) -> None:
        """An OffsetCommit went out: its latency is recorded when it is answered."""
        self._timed(fut, self._commit)

    def heartbeat_sent(self, fut: Future[Response]) -> None:
        """A Heartbeat went out (any thread)."""
        self._last_heartbeat = self._clock()
        self._timed(fut, self._heartbeat)

    def rebalance_started(self) -> None:
        """A JoinGroup goes out; the rebalance started with the first one (Java keeps the start
        of a rebalance across failed rounds)."""
        if self._rebalance_start is None:
            self._rebalance_start = self._clock()

    def rebalance_completed(self) -> None:
        now = self._clock()
        if self._rebalance_start is not None:
            self._rebalance.record(now - self._rebalance_start, now)
        self._rebalance_start = None
        self._last_rebalance = now

    def rebalance_failed(self) -> None:
        self._failed_rebalance.record()

    # ------------------------------------------------------------------ reading

    def snapshot(self, subscriptions: AssignmentView, connection_count: int
                 ) -> dict[MetricName, float]:
        """Every metric's value now (see the module doc). Any thread: it only reads copies
        of the registries (one-step dict copies under the GIL) while the consumer's thread
        may be recording."""
        now = self._clock()
        w = self._window
        assigned = set(subscriptions.assigned_partitions())
        for tp in [tp for tp in [*self._partitions, *self._lag_names] if tp not in assigned]:
            self._forget_partition(tp)           # Java removes them on unassignment
        out = {name: float(stat.measure(w, now)) for name, stat in list(self._stats.items())}
        for tp, part in list(self._partitions.items()):
            for metric, stat in part.named(self._partition_tags, tp):
                out[metric] = float(stat.measure(w, now))
        out[MetricName("last-poll-seconds-ago", CONSUMER_GROUP, self._tags)] = \
            _seconds_ago(self._last_poll, now)
        out[MetricName("connection-count", CONSUMER_GROUP, self._tags)] = float(connection_count)
        counts = None if self._value_counts is None else self._value_counts()
        for name, value in (("records-decoded-total", counts and counts.decoded),
                            ("records-malformed-total", counts and counts.malformed),
                            ("records-dropped-total", counts and counts.dropped),
                            ("schema-ids-seen", counts and len(counts.schema_ids))):
            out[MetricName(name, FETCH_GROUP, self._tags)] = float(value or 0)
        for tp in sorted(assigned, key=lambda tp: (tp.topic, tp.partition)):
            try:
                lag, lead = self._lag_lead(subscriptions, tp)
            except IllegalStateError:          # unassigned by the polling thread just now
                continue
            names = self._lag_names.get(tp)
            if names is None:
                tags = self._partition_tags(tp)
                names = self._lag_names[tp] = (MetricName("records-lag", FETCH_GROUP, tags),
                                               MetricName("records-lead", FETCH_GROUP, tags))
            if lag is not None:
                out[names[0]] = float(lag)
            if lead is not None:
                out[names[1]] = float(lead)
        if self.has_group:
            out[MetricName("last-heartbeat-seconds-ago", COORDINATOR_GROUP, self._tags)] = \
                _seconds_ago(self._last_heartbeat, now)
            out[MetricName("last-rebalance-seconds-ago", COORDINATOR_GROUP, self._tags)] = \
                _seconds_ago(self._last_rebalance, now)
            out[MetricName("assigned-partitions", COORDINATOR_GROUP, self._tags)] = \
                float(len(assigned))
        return out

    def _forget_partition(self, tp: TopicPartition) -> None:
        self._partitions.pop(tp, None)
        self._lag_names.pop(tp, None)


__all__ = ["AssignmentView", "ConsumerMetrics", "METRICS", "PartitionView", "ValueCounts",
           "FETCH_GROUP", "CONSUMER_GROUP", "COORDINATOR_GROUP"]
