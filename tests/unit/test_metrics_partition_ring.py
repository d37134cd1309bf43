"""A partition's lag and lead stats kept in one ring (consumer/metrics._PartitionStats) read
exactly as Java's SampledStat pairs they stand for: a _Max and an _Avg of the lag, a _Min and
an _Avg of the lead, recording side by side (pyconsumer.metrics), through rolls, purges and
reads at any moment."""
from __future__ import annotations

import math
import random

import pytest

from pyconsumer.consumer.metrics import _PartitionStats
from pyconsumer.metrics import _Avg, _Max, _Min, _Window
from pyconsumer.structs import TopicPartition


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("seed", range(40))
def test_the_ring_reads_as_the_four_sampled_stats(seed: int) -> None:
    rng = random.Random(seed)
    w = _Window(rng.choice([1, 2, 3, 5]), rng.choice([10.0, 100.0, 30_000.0]))
    ring = _PartitionStats()
    lag_max, lag_avg, lead_min, lead_avg = _Max(), _Avg(), _Min(), _Avg()
    now = 1_000.0
    for _ in range(400):
        now += rng.choice([0.0, 0.5, 3.0, w.window_ms / 2, w.window_ms, w.window_ms * w.samples * 2])
        what = rng.random()
        if what < 0.4:
            v = float(rng.randrange(-5, 10_000))
            ring.record_lag(w, v, now)
            lag_max.record(w, v, now)
            lag_avg.record(w, v, now)
        elif what < 0.8:
            v = float(rng.randrange(0, 10_000))
            ring.record_lead(w, v, now)
            lead_min.record(w, v, now)
            lead_avg.record(w, v, now)
        else:
            read = dict((m.name, s.measure(w, now))
                        for m, s in ring.named(lambda tp: {"client-id": "c"}, TopicPartition("t", 0)))
            want = {"records-lag-max": lag_max.measure(w, now), "records-lag-avg": lag_avg.measure(w, now),
                    "records-lead-min": lead_min.measure(w, now),
                    "records-lead-avg": lead_avg.measure(w, now)}
            assert set(read) == set(want)
            for name in want:
                assert _same(read[name], want[name]), (name, read[name], want[name], now)


def test_a_partition_costs_the_collector_three_objects() -> None:
    """The object and its two rings, whatever it recorded (the four stats, their sample lists,
    samples and bound methods were ~20)."""
    import gc

    w = _Window(2, 30_000.0)
    gc.collect()
    before = len(gc.get_objects())
    kept = [_PartitionStats() for _ in range(500)]
    for i, stats in enumerate(kept):
        for t in range(5):
            stats.record_lag(w, float(i), t * 20_000.0)
            stats.record_lead(w, float(t), t * 20_000.0)
    grown = len(gc.get_objects()) - before
    assert 3 * 500 <= grown <= 3 * 500 + 20
