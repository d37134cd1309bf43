"""confluent-kafka's per-message cost next to pyconsumer and aiokafka (decode-performance.md §0).

confluent-kafka cannot decode bytes handed to it, so its records come from a broker: Tansu
(pyconsumer.testing.TansuBroker, in-memory storage) is filled with the same record shape as
gen_data.py (10-byte keys, 100-byte values, uncompressed), a Consumer is started with a prefetch
queue large enough for the whole partition and given time to fill it, and only then is
``consume(500)`` timed (touching key, value, offset, timestamp). What is measured is therefore the
Python side of librdkafka's consumer (message objects and their accessors), with librdkafka's
fetch and decode on its own threads mostly done before the clock starts; consume() calls that
came back short while the queue was still filling are counted and printed.

In the same process and rounds, aiokafka's Cython reader (``aio_c``) and pyconsumer's
``CompletedFetch.take_records(500)`` run on the gen_data v100 100 MB set (rates are per record).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import bench_decode  # noqa: E402
import gen_data  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from pyconsumer.testing import TansuBroker  # noqa: E402


def fill(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 1000,
                  "batch.size": 1 << 20, "enable.idempotence": False, "acks": 1,
                  "queue.buffering.max.messages": 200_000})
    ts0 = 1_700_000_000_000
    for i in range(n):
        while True:
            try:
                p.produce(topic, key=b"user-%05d" % (i % 100000), value=gen_data._value(i, 100),
                          partition=0, timestamp=ts0 + i)
                break
            except BufferError:
                p.poll(0.05)
    left = p.flush(120)
    if left:
        raise RuntimeError(f"{left} records not delivered")


def confluent_round(bootstrap: str, topic: str, n: int, settle: float) -> tuple[float, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "queued.min.messages": n + 1000, "queued.max.messages.kbytes": 2_000_000,
                  "fetch.max.bytes": 50 << 20, "max.partition.fetch.bytes": 50 << 20})
    c.assign([TopicPartition(topic, 0, 0)])
    got, short = 0, 0
    while got == 0:
        got = len(c.consume(num_messages=1, timeout=5.0))
    time.sleep(settle)  # let librdkafka's threads fetch and queue the rest
    t = time.perf_counter()
    while got < n:
        want = min(500, n - got)  # consume() waits for all it was asked for (or the timeout)
        msgs = c.consume(num_messages=want, timeout=5.0)
        if not msgs:
            break
        if len(msgs) < want:
            short += 1
        for m in msgs:
            m.key(); m.value(); m.offset(); m.timestamp()  # noqa: B018
        got += len(msgs)
    dt = time.perf_counter() - t
    c.close()
    return (got - 1) / dt, short


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--settle", type=float, default=8.0)
    a = ap.parse_args()
    data = gen_data.build("v100", "none", 100).read_bytes()  # rates are per record
    with TansuBroker() as broker:
        broker.create_topic("bench", 1)
        t = time.perf_counter()
        fill(broker.bootstrap, "bench", a.records)
        print(f"produced {a.records} records in {time.perf_counter() - t:.1f} s", flush=True)
        rates: dict[str, list[float]] = {"aio_c": [], "pc_fetch500": [], "confluent": []}
        shorts = []
        for _ in range(a.rounds):
            r, s = confluent_round(broker.bootstrap, "bench", a.records, a.settle)
            rates["confluent"].append(r)
            shorts.append(s)
            for name, fn in (("aio_c", bench_decode.aio_raw), ("pc_fetch500", bench_decode.pc_fetch)):
                t = time.perf_counter()
                k = fn(data, True)
                rates[name].append(k / (time.perf_counter() - t))
    print(f"{'contender':12} {'krec/s best':>12} {'x aio_c (median)':>17}")
    for k, v in rates.items():
        ratio = statistics.median(x / y for x, y in zip(v, rates["aio_c"]))
        print(f"{k:12} {max(v) / 1e3:12,.0f} {ratio:17.2f}")
    print(f"confluent consume(500) calls that came back short before the end: {shorts}")


if __name__ == "__main__":
    main()
