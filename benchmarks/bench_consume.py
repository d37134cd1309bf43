"""End-to-end consume benchmark: records from a Tansu broker into Python, side by side.

One Tansu broker (memory://), one topic filled once by confluent-kafka, then every contender
reads the whole topic from the beginning with manual assignment, in interleaved rounds:

* ``pc_arrow``   pyconsumer ``poll_arrow`` (rows counted, no Python object per record)
* ``pc_poll``    pyconsumer ``poll`` (ConsumerRecords; key, value, offset, timestamp touched)
* ``ck_consume`` confluent-kafka ``Consumer.consume(500)`` (same fields touched)
* ``aio``        aiokafka ``getmany`` (same fields touched)
* ``kp``         kafka-python ``poll`` (same fields touched)

Rates are records/s over the whole read (connect and first fetch included); the table gives
the best round and the median ratio to confluent-kafka in the same round.

    python benchmarks/bench_consume.py --records 1000000 --partitions 4 --codec none --rounds 3
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.testing import TansuBroker, TestRecord, produce


def fill(bootstrap: str, topic: str, n: int, partitions: int, value_size: int, codec: str) -> None:
    value = b"v" * value_size
    records = [TestRecord(key=b"k%09d" % i, value=value, partition=i % partitions)
               for i in range(n)]
    produce(bootstrap, topic, records, compression=codec, linger_ms=20, batch_num_messages=1000,
            timeout=120.0)


def pc_arrow(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                       check_crcs=True) as c:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        got = 0
        while got < n:
            got += c.poll_arrow(timeout_ms=1000, max_records=100_000).num_rows
        return got


def pc_poll(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        got = 0
        while got < n:
            for records in c.poll(timeout_ms=1000).values():
                for r in records:
                    r.key; r.value; r.offset; r.timestamp  # noqa: B018
                got += len(records)
        return got


def ck_consume(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    from confluent_kafka import TopicPartition as CkTP

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-ck",
                  "enable.auto.commit": False, "fetch.queue.backoff.ms": 10,
                  "check.crcs": True})
    try:
        c.assign([CkTP(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got = 0
        while got < n:
            for m in c.consume(500, timeout=1.0):
                if m.error():
                    raise RuntimeError(m.error())
                m.key(); m.value(); m.offset(); m.timestamp()
                got += 1
        return got
    finally:
        c.close()


def aio(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as AioTP

    async def run() -> int:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", check_crcs=True)
        await c.start()
        try:
            tps = [AioTP(topic, p) for p in range(partitions)]
            c.assign(tps)
            await c.seek_to_beginning(*tps)
            got = 0
            while got < n:
                for records in (await c.getmany(timeout_ms=1000, max_records=500)).values():
                    for r in records:
                        r.key; r.value; r.offset; r.timestamp  # noqa: B018
                    got += len(records)
            return got
        finally:
            await c.stop()

    return asyncio.run(run())


def kp(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    from kafka import KafkaConsumer as KpConsumer
    from kafka import TopicPartition as KpTP

    c = KpConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                   auto_offset_reset="earliest", check_crcs=True)
    try:
        tps = [KpTP(topic, p) for p in range(partitions)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        got = 0
        while got < n:
            for records in c.poll(timeout_ms=1000, max_records=500).values():
                for r in records:
                    r.key; r.value; r.offset; r.timestamp  # noqa: B018
                got += len(records)
        return got
    finally:
        c.close()


CONTENDERS: dict[str, Callable[[str, str, int, int], int]] = {
    "ck_consume": ck_consume, "pc_arrow": pc_arrow, "pc_poll": pc_poll, "aio": aio, "kp": kp,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--codec", default="none")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=list(CONTENDERS))
    ap.add_argument("--slow-cap", type=int, default=200_000,
                    help="aiokafka and kafka-python read only this many records (rates stay per record)")
    args = ap.parse_args()

    with TansuBroker() as broker:
        topic = broker.create_topic("bench", args.partitions)
        t0 = time.perf_counter()
        fill(broker.bootstrap, topic, args.records, args.partitions, args.value_size, args.codec)
        print(f"filled {args.records:,} records ({args.value_size} B values, {args.codec}) in "
              f"{time.perf_counter() - t0:.1f} s")
        rates: dict[str, list[float]] = {name: [] for name in args.only}
        ratios: dict[str, list[float]] = {name: [] for name in args.only}
        for rnd in range(args.rounds):
            this: dict[str, float] = {}
            for name in args.only:
                n = args.records if name in ("pc_arrow", "pc_poll", "ck_consume") \
                    else min(args.records, args.slow_cap)
                start = time.perf_counter()
                got = CONTENDERS[name](broker.bootstrap, topic, args.partitions, n)
                elapsed = time.perf_counter() - start
                this[name] = got / elapsed
                rates[name].append(this[name])
                print(f"round {rnd} {name:10s} {got:>10,} records {elapsed:7.2f} s "
                      f"{this[name] / 1e3:10,.0f} krec/s", flush=True)
            if "ck_consume" in this:
                for name in args.only:
                    ratios[name].append(this[name] / this["ck_consume"])
        print(f"\n{'contender':10s} {'krec/s best':>12s} {'x confluent (median)':>22s}")
        for name in args.only:
            med = f"{statistics.median(ratios[name]):.2f}" if ratios[name] else "-"
            print(f"{name:10s} {max(rates[name]) / 1e3:12,.0f} {med:>22s}")


if __name__ == "__main__":
    main()
