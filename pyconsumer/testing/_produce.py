"""Test data written by an independent client: confluent-kafka's Producer."""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any
from collections.abc import Iterable, Sequence

from ._errors import require_module

__all__ = ["TestRecord", "ProduceError", "produce", "produce_transactions", "sample_records", "CODECS"]

#: compression.type values librdkafka accepts, in Kafka's attribute-id order (0..4)
CODECS: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")

#: base of the explicit timestamps sample_records gives (2023-11-14T22:13:20Z)
SAMPLE_TIMESTAMP_BASE_MS = 1_700_000_000_000


class ProduceError(RuntimeError):
    """At least one record was not acknowledged by the broker."""


@dataclass
class TestRecord:
    """One record to produce. ``partition``/``timestamp_ms`` None = producer's choice."""

    __test__ = False  # not a pytest test class despite the name

    key: bytes | None = None
    value: bytes | None = None
    headers: list[tuple[str, bytes | None]] | None = None
    partition: int | None = None
    timestamp_ms: int | None = None


def _conf_key(name: str) -> str:
    # librdkafka property names never contain "_", so linger_ms -> linger.ms is unambiguous
    return name.replace("_", ".")


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[TestRecord],
    *,
    compression: str = "none",
    timeout: float = 30.0,
    **producer_conf: Any,
) -> list[tuple[int, int]]:
    """Produce ``records`` with confluent-kafka; return (partition, offset) per record, in input order.

    Extra settings are librdkafka properties (``**{"linger.ms": 50}`` or ``linger_ms=50``).
    Raises ProduceError if a delivery failed or the flush timed out.
    """
    require_module("produce()", "confluent_kafka")
    from confluent_kafka import Producer  # test dependency only

    if compression not in CODECS:
        raise ValueError(f"compression must be one of {CODECS}, got {compression!r}")
    recs = list(records)
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "compression.type": compression,
        "linger.ms": 5,
        "message.timeout.ms": int(timeout * 1000),
        "enable.idempotence": False,
        "acks": "all",
    }
    conf.update({_conf_key(k): v for k, v in producer_conf.items()})
    producer = Producer(conf)
    try:
        remaining, results, errors = _send_all(producer, topic, recs, timeout)
    finally:
        # drop the handle now, not at some later GC: it owns threads and sockets
        del producer
    if errors:
        raise ProduceError(f"{len(errors)} of {len(recs)} deliveries to {topic!r} failed: {errors[:5]}")
    if remaining:
        raise ProduceError(f"{remaining} of {len(recs)} records to {topic!r} not delivered within {timeout} s")
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:
        raise ProduceError(f"no delivery report for records {missing[:10]} to {topic!r}")
    return [r for r in results if r is not None]


def _send_all(producer: Any, topic: str, recs: list[TestRecord], timeout: float
              ) -> tuple[int, list[tuple[int, int] | None], list[str]]:
    """Produce and flush ``recs``: (records still queued, (partition, offset) per record or
    None, delivery errors)."""
    results: list[tuple[int, int] | None] = [None] * len(recs)
    errors: list[str] = []

    def on_delivery(index: int) -> Any:
        def cb(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(f"record {index}: {err}")
            else:
                results[index] = (msg.partition(), msg.offset())
        return cb

    for i, rec in enumerate(recs):
        _produce_one(producer, topic, rec, on_delivery(i))
    # message.timeout.ms = timeout fails stuck records first, so flush reports their real error
    remaining: int = producer.flush(timeout + 5)
    return remaining, results, errors


def _produce_one(producer: Any, topic: str, rec: TestRecord, callback: Any) -> None:
    kwargs: dict[str, Any] = {"value": rec.value, "key": rec.key, "on_delivery": callback}
    if rec.partition is not None:
        kwargs["partition"] = rec.partition
    if rec.timestamp_ms is not None:
        kwargs["timestamp"] = rec.timestamp_ms
    if rec.headers is not None:
        kwargs["headers"] = list(rec.headers)
    while True:
        try:
            producer.produce(topic, **kwargs)
            break
        except BufferError:  # local queue full: let deliveries drain
            producer.poll(0.1)
    producer.poll(0)


def produce_transactions(
    bootstrap: str,
    topic: str,
    transactions: Sequence[tuple[Sequence[TestRecord], bool]],
    *,
    transactional_id: str | None = None,
    compression: str = "none",
    timeout: float = 30.0,
    **producer_conf: Any,
) -> list[list[tuple[int, int]]]:
    """Run one transaction per ``(records, commit)`` item with a transactional confluent-kafka producer.

    Every record is flushed (so it is in the log) before the transaction commits or aborts,
    so aborted records really are written, followed by an abort marker. Returns the
    (partition, offset) of every record, per transaction.
    """
    require_module("produce_transactions()", "confluent_kafka")
    from confluent_kafka import Producer  # test dependency only

    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "transactional.id": transactional_id or f"pyconsumer-test-{random.getrandbits(48):012x}",
        "compression.type": compression,
        "linger.ms": 5,
        "message.timeout.ms": int(timeout * 1000),
        "transaction.timeout.ms": max(int(timeout * 1000), 10000),
    }
    conf.update({_conf_key(k): v for k, v in producer_conf.items()})
    producer = Producer(conf)
    out: list[list[tuple[int, int]]] = []
    try:
        producer.init_transactions(timeout)
        for records, commit in transactions:
            producer.begin_transaction()
            remaining, results, errors = _send_all(producer, topic, list(records), timeout)
            if errors or remaining or any(r is None for r in results):
                producer.abort_transaction(timeout)
                raise ProduceError(
                    f"transaction {len(out)} to {topic!r}: {len(errors)} failed, {remaining} undelivered: {errors[:5]}")
            if commit:
                producer.commit_transaction(timeout)
            else:
                producer.abort_transaction(timeout)
            out.append([r for r in results if r is not None])
    finally:
        del producer
    return out


def sample_records(
    n: int,
    *,
    partitions: int | Sequence[int] | None = None,
    seed: int = 0,
    value_size: int = 100,
    timestamps: bool = True,
) -> list[TestRecord]:
    """``n`` deterministic, varied records.

    Mix (by index): null keys (i % 7 == 0), unicode keys (i % 3 == 1), null values (i % 11 == 3),
    empty values (i % 13 == 5), headers on i % 5 == 0 (repeated key, a null header value, a
    unicode header key), values of random bytes up to ``value_size``. ``partitions``: a count
    (round robin over 0..count-1) or an explicit list to cycle over; None lets the producer
    choose. Timestamps: SAMPLE_TIMESTAMP_BASE_MS + i * 7 unless ``timestamps`` is False.
    """
    rng = random.Random(seed)
    parts: list[int] | None
    if partitions is None:
        parts = None
    elif isinstance(partitions, int):
        parts = list(range(partitions))
    else:
        parts = list(partitions)
    out: list[TestRecord] = []
    for i in range(n):
        if i % 7 == 0:
            key: bytes | None = None
        elif i % 3 == 1:
            key = f"ключ-{i}-€-{seed}".encode()
        else:
            key = f"key-{i:06d}".encode()
        if i % 11 == 3:
            value: bytes | None = None
        elif i % 13 == 5:
            value = b""
        else:
            size = rng.randint(1, max(1, value_size))
            value = rng.randbytes(size)
        headers: list[tuple[str, bytes | None]] | None = None
        if i % 5 == 0:
            headers = [("h1", f"v{i}".encode()), ("h1", b"again"), ("null-header", None), ("ü-ключ", b"\x00\xff")]
        elif i % 5 == 2:
            headers = [("trace", rng.randbytes(8))]
        out.append(TestRecord(
            key=key,
            value=value,
            headers=headers,
            partition=None if parts is None else parts[i % len(parts)],
            timestamp_ms=SAMPLE_TIMESTAMP_BASE_MS + i * 7 if timestamps else None,
        ))
    return out
