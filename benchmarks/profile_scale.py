"""Where a read over many partitions spends its time: cProfile of ``poll_arrow`` (or ``poll()``)
reading N x 100 B records over P partitions, and of idle polls with every partition assigned.

    python benchmarks/profile_scale.py --broker kafka --partitions 1000 --records 1000000

Prints the wall time, the rate, and the top functions by own time and by calls, for the read
and for 2,000 idle ``poll(timeout_ms=0)`` (issue 26: per-partition work should follow what
changed, not what is assigned). Not a benchmark (the profiler slows Python code several times
over); the call counts are what to compare before and after a change.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_consume  # noqa: E402
import brokers  # noqa: E402

from pyconsumer import KafkaConsumer, TopicPartition  # noqa: E402


def report(prof: cProfile.Profile, title: str, top: int) -> None:
    for key in ("tottime", "ncalls"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(key).print_stats(top)
        lines = out.getvalue().splitlines()
        start = next(i for i, ln in enumerate(lines) if "ncalls" in ln)
        total = next((ln for ln in lines if "function calls" in ln), "").strip()
        print(f"\n--- {title}: top {top} by {key} ({total})")
        print("\n".join(lines[start:start + top + 1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--broker", choices=["kafka", "tansu"], default="kafka")
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--poll", choices=["arrow", "records"], default="arrow")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    with brokers.start(a.broker) as b:
        topic = b.create_topic(f"profile-{a.partitions}p", a.partitions)
        bench_consume.fill(b.bootstrap, topic, a.records, a.partitions, 100, "none")
        bench_consume.raw_fetch(b.bootstrap, topic, a.partitions, a.records)     # warm the broker
        tps = [TopicPartition(topic, p) for p in range(a.partitions)]
        with KafkaConsumer(bootstrap_servers=b.bootstrap, auto_offset_reset="earliest") as c:
            c.assign(tps)
            prof = cProfile.Profile()
            got, start = 0, time.perf_counter()
            prof.enable()
            while got < a.records:
                if a.poll == "arrow":
                    got += c.poll_arrow(timeout_ms=1000, max_records=100_000).num_rows
                else:
                    got += sum(len(v) for v in c.poll(timeout_ms=1000).values())
            prof.disable()
            took = time.perf_counter() - start
            print(f"read {got:,} records over {a.partitions} partitions of {b.title} in {took:.2f} s under "
                  f"the profiler ({got / took / 1e3:,.0f} krec/s)")
            report(prof, "the read", a.top)
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(2000):
                c.poll(timeout_ms=0)
            prof.disable()
            report(prof, f"2,000 idle polls, {a.partitions} partitions at their end", a.top)


if __name__ == "__main__":
    main()
