"""What Metadata and ListOffsets cost in Python with thousands of partitions (issue 26), and
what the Spark source's planning costs on a 1,000-partition topic.

    python benchmarks/profile_metadata_scale.py --part codec --partitions 1000 5000
    python benchmarks/profile_metadata_scale.py --part consumer --broker fake --partitions 1000
    python benchmarks/profile_metadata_scale.py --part consumer --broker kafka --partitions 1000
    python benchmarks/profile_metadata_scale.py --part spark --broker kafka --partitions 1000

``codec``: no network; a Metadata response of one topic with N partitions (three replicas
each) decoded at v12 and applied to a :class:`ClusterMetadata` (first answer, then the same
answer again), and ListOffsets for N partitions: the request built and encoded, the response
decoded and parsed. ``consumer``: a consumer with N partitions assigned: ``beginning_offsets``
/ ``end_offsets``, the position resets of a new assignment, and a metadata refresh that
changes nothing followed by one idle ``poll(0)`` (what the refresh makes the consumer redo).
``spark``: ``KafkaBatchReader.plan()`` (earliest to latest) with its round trips by API.

Not a benchmark case: best and median of a few runs on a shared machine; the call counts
(``--calls``) are what to compare before and after a change.
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pyconsumer import KafkaConsumer, TopicPartition  # noqa: E402
from pyconsumer.config import ConsumerConfig  # noqa: E402
from pyconsumer.consumer.offsets import OffsetsClient  # noqa: E402
from pyconsumer.consumer.subscription import SubscriptionState  # noqa: E402
from pyconsumer.net.connection import Response  # noqa: E402
from pyconsumer.net.metadata import ClusterMetadata  # noqa: E402
from pyconsumer.protocol import ApiKey, decode_response, encode_request, encode_response  # noqa: E402

METADATA_VERSION = 12
PRODUCE = True
LIST_OFFSETS_VERSION = 9


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def stats(samples: list[float]) -> str:
    return f"best {min(samples) * 1e3:8.3f} ms, median {statistics.median(samples) * 1e3:8.3f} ms"


def calls(fn: Callable[[], object]) -> int:
    """Python function calls ``fn`` makes (cProfile's count)."""
    prof = cProfile.Profile()
    prof.runcall(fn)
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    return int(st.total_calls)  # type: ignore[attr-defined]


def metadata_body(topic: str, n: int, brokers: int = 3) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0, "cluster_id": "bench", "controller_id": 1,
        "brokers": [{"node_id": b, "host": "127.0.0.1", "port": 9092 + b, "rack": None}
                    for b in range(1, brokers + 1)],
        "topics": [{"error_code": 0, "name": topic, "topic_id": uuid.uuid4(), "is_internal": False,
                    "partitions": [{"error_code": 0, "partition_index": p,
                                    "leader_id": 1 + p % brokers, "leader_epoch": 3,
                                    "replica_nodes": [1 + (p + i) % brokers for i in range(brokers)],
                                    "isr_nodes": [1 + (p + i) % brokers for i in range(brokers)],
                                    "offline_replicas": []} for p in range(n)]}],
    }


def codec_part(n: int, runs: int, show_calls: bool) -> None:
    topic = "t"
    frame = encode_response(ApiKey.METADATA, METADATA_VERSION, 7,
                            metadata_body(topic, n))[4:]
    print(f"\n== {n} partitions: Metadata v{METADATA_VERSION} ({len(frame):,} bytes)")
    decode = timed(lambda: decode_response(ApiKey.METADATA, METADATA_VERSION, frame), runs)
    print(f"decode_response           {stats(decode)}")
    body = decode_response(ApiKey.METADATA, METADATA_VERSION, frame)[1]

    def first() -> None:
        ClusterMetadata([("h", 1)]).update(body, [topic])

    print(f"update, first answer      {stats(timed(first, runs))}")
    md = ClusterMetadata([("h", 1)])
    md.update(body, [topic])

    def again() -> None:
        md.update(decode_response(ApiKey.METADATA, METADATA_VERSION, frame)[1], [topic])

    again_body = [decode_response(ApiKey.METADATA, METADATA_VERSION, frame)[1] for _ in range(runs)]
    it = iter(again_body)
    print(f"update, unchanged answer  {stats(timed(lambda: md.update(next(it), [topic]), runs))}")
    if show_calls:
        print(f"  calls: decode {calls(lambda: decode_response(ApiKey.METADATA, METADATA_VERSION, frame)):,}"
              f", update unchanged {calls(lambda: md.update(again_body[0], [topic])):,}")

    # ListOffsets: request body and frame, response decode and parse
    config = ConsumerConfig(bootstrap_servers="h:1")
    subs = SubscriptionState(config.auto_offset_reset)

    class _Client:
        metadata = md

    offsets = OffsetsClient(_Client(), config, subs)  # type: ignore[arg-type]
    tps = {TopicPartition(topic, p): -1 for p in range(n)}

    def leader_requests() -> list[Any]:
        """What a round sends: one request per leader (nothing is sent here)."""
        sent: list[Any] = []
        real = offsets.client

        class _Send:
            metadata = md

            @staticmethod
            def send(node: int, api: int, body: Any) -> Any:
                sent.append(body)
                return _Never()

        offsets.client = _Send()  # type: ignore[assignment]
        try:
            offsets._send_round(tps, lambda outcome: None)
        finally:
            offsets.client = real
        return sent

    def request() -> list[bytes]:
        return [encode_request(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, 1, "bench",
                               body(LIST_OFFSETS_VERSION)) for body in leader_requests()]

    print(f"ListOffsets request build+encode {stats(timed(request, runs))}")
    answer = encode_response(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, 1, {
        "throttle_time_ms": 0,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": p, "error_code": 0, "timestamp": -1, "offset": 1000 + p,
             "leader_epoch": 3} for p in range(n)]}]})[4:]
    decode = timed(lambda: decode_response(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, answer), runs)
    print(f"ListOffsets response decode      {stats(decode)}")
    resp_body = decode_response(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, answer)[1]
    response = Response(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, 1, resp_body)

    def parse() -> None:
        from pyconsumer.consumer import offsets as module
        outcome = module._Outcome()
        req = module._LeaderRequest()
        for tp, ts in tps.items():
            req.add(tp, ts, 3)
        offsets._parse(response, req, outcome)
        assert len(outcome.offsets) == n

    print(f"ListOffsets response parse       {stats(timed(parse, runs))}")
    if show_calls:
        print(f"  calls: request {calls(request):,}, decode "
              f"{calls(lambda: decode_response(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, answer)):,}"
              f", parse {calls(parse):,}")


class _Never:
    """A future that never completes (the round's requests are only built)."""

    def add_callback(self, fn: Callable[[Any], None]) -> None:
        pass


#: ``--bootstrap`` / ``--topic``: a running broker and a topic of N partitions to use
EXISTING: dict[str, str] = {}


@contextlib.contextmanager
def broker(kind: str, partitions: int) -> Iterator[tuple[str, str, Callable[[str, int], str]]]:
    if EXISTING:
        def refuse(name: str, n: int) -> str:
            raise RuntimeError("--bootstrap: topics are not created")
        yield EXISTING["bootstrap"], EXISTING["topic"], refuse
    elif kind == "fake":
        from pyconsumer.testing import FakeCluster
        with FakeCluster(topics={"t": partitions}) as cluster:
            def create(name: str, n: int) -> str:
                cluster.create_topic(name, n)
                return name
            yield cluster.bootstrap, "t", create
    else:
        import brokers
        with brokers.start(kind) as b:
            yield b.bootstrap, b.create_topic(f"md-scale-{partitions}p", partitions), b.create_topic


class SendCounter:
    """Counts the requests a client sends, by API."""

    def __init__(self, client: Any) -> None:
        self.counts: Counter[str] = Counter()
        real = client.send

        def send(node_id: int, api_key: int, *args: Any, **kwargs: Any) -> Any:
            self.counts[ApiKey(api_key).name] += 1
            return real(node_id, api_key, *args, **kwargs)

        client.send = send


def consumer_part(kind: str, n: int, runs: int, show_calls: bool) -> None:
    with broker(kind, n) as (bootstrap, topic, _create):
        tps = [TopicPartition(topic, p) for p in range(n)]
        print(f"\n== {n} partitions on {EXISTING.get('bootstrap') or kind}")
        with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as c:
            c.topics()                               # connected, metadata in
            c.beginning_offsets(tps)
            print(f"beginning_offsets   {stats(timed(lambda: c.beginning_offsets(tps), runs))}")
            print(f"end_offsets         {stats(timed(lambda: c.end_offsets(tps), runs))}")
            if show_calls:
                print(f"  calls: end_offsets {calls(lambda: c.end_offsets(tps)):,}")
            resets = []
            for _ in range(max(3, runs // 4)):
                c.assign(tps)
                start = time.perf_counter()
                while not c._subscriptions.has_all_fetch_positions():
                    c.poll(timeout_ms=10)
                resets.append(time.perf_counter() - start)
                c.unsubscribe()
            print(f"assign + resets     {stats(resets)} (until every position is found)")
            c.assign(tps)
            while not c._subscriptions.has_all_fetch_positions():
                c.poll(timeout_ms=10)
            for _ in range(20):
                c.poll(timeout_ms=10)
            client = c._parts()[0]
            # the last Metadata answer, applied again in-process (a refresh that changes
            # nothing), re-decoded each time so nothing is shared with the cached one
            frame = encode_response(ApiKey.METADATA, METADATA_VERSION, 1,
                                    _last_metadata(client, topic))[4:]

            def refresh() -> None:
                body = decode_response(ApiKey.METADATA, METADATA_VERSION, frame)[1]
                client.metadata.update(body, [topic])

            applied, after, idle = [], [], []
            for _ in range(runs):
                refresh()
                c.poll(timeout_ms=0)              # let the answer's consequences settle
                body = decode_response(ApiKey.METADATA, METADATA_VERSION, frame)[1]
                start = time.perf_counter()
                client.metadata.update(body, [topic])
                applied.append(time.perf_counter() - start)
                start = time.perf_counter()
                c.poll(timeout_ms=0)
                after.append(time.perf_counter() - start)
                start = time.perf_counter()
                c.poll(timeout_ms=0)
                idle.append(time.perf_counter() - start)
            print(f"unchanged answer applied {stats(applied)} (decoded beforehand)")
            print(f"poll(0) after it    {stats(after)}")
            print(f"poll(0) idle        {stats(idle)}")
            if show_calls:
                c.poll(timeout_ms=0)
                body = decode_response(ApiKey.METADATA, METADATA_VERSION, frame)[1]
                applied_calls = calls(lambda: client.metadata.update(body, [topic]))
                print(f"  calls: unchanged answer applied {applied_calls:,}, "
                      f"poll(0) after {calls(lambda: c.poll(timeout_ms=0)):,}, "
                      f"idle {calls(lambda: c.poll(timeout_ms=0)):,}")


def _last_metadata(client: Any, topic: str) -> dict[str, Any]:
    """The Metadata answer the client gets for ``topic`` (sent once, kept as decoded)."""
    kept: list[dict[str, Any]] = []
    real = client.metadata.update

    def keep(body: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        kept.append(body)
        real(body, *args, **kwargs)

    client.metadata.update = keep
    try:
        client.update_metadata([topic])
    finally:
        del client.metadata.update
    return {k: v for k, v in kept[-1].items()}


def spark_part(kind: str, n: int, runs: int) -> None:
    from pyconsumer.spark.options import parse_options
    from pyconsumer.spark.source import KafkaBatchReader
    import pyconsumer.spark.offsets as spark_offsets

    with broker(kind, n) as (bootstrap, topic, _create):
        if kind != "fake" and PRODUCE:
            from pyconsumer.testing import TestRecord, produce
            produce(bootstrap, topic, [TestRecord(b"k%d" % p, b"v", partition=p)
                                       for p in range(n)], timeout=120)
        options = parse_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic},
                                streaming=False)
        counts: Counter[str] = Counter()
        real_consumer = spark_offsets.KafkaConsumer
        import pyconsumer.consumer.log_end as log_end
        real_log_end = log_end.KafkaConsumer

        def counted(**settings: Any) -> KafkaConsumer:
            c = real_consumer(**settings)
            counter = SendCounter(c._parts()[0])
            counter.counts = counts
            return c

        spark_offsets.KafkaConsumer = counted  # type: ignore[misc]
        log_end.KafkaConsumer = counted  # type: ignore[misc]
        try:
            samples, per_run = [], []
            for _ in range(runs):
                counts.clear()
                start = time.perf_counter()
                ranges = KafkaBatchReader(options).plan()
                samples.append(time.perf_counter() - start)
                per_run.append(Counter(counts))
            where = EXISTING.get("bootstrap") or kind
            print(f"\n== Spark batch planning, {n} partitions on {where}: {stats(samples)}, "
                  f"{len(ranges)} ranges")
            print(f"requests per plan: {dict(sorted(counts.items()))}")
            for i, one in enumerate(per_run):
                print(f"  run {i}: {dict(sorted(one.items()))}")
            prof = cProfile.Profile()
            prof.runcall(lambda: KafkaBatchReader(options).plan())
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
            print(out.getvalue()[:4000])
        finally:
            spark_offsets.KafkaConsumer = real_consumer  # type: ignore[misc]
            log_end.KafkaConsumer = real_log_end  # type: ignore[misc]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--part", choices=["codec", "consumer", "spark"], default="codec")
    ap.add_argument("--broker", choices=["fake", "kafka", "tansu"], default="fake")
    ap.add_argument("--partitions", type=int, nargs="+", default=[1000, 5000])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--calls", action="store_true", help="also count Python calls")
    ap.add_argument("--bootstrap", help="a running broker (with --topic), e.g. to compare trees")
    ap.add_argument("--topic", help="with --bootstrap: a topic of --partitions partitions")
    ap.add_argument("--no-produce", action="store_true",
                    help="spark: the topic has records already")
    a = ap.parse_args()
    if a.bootstrap:
        EXISTING.update(bootstrap=a.bootstrap, topic=a.topic)
    global PRODUCE
    PRODUCE = not a.no_produce
    for n in a.partitions:
        if a.part == "codec":
            codec_part(n, a.runs, a.calls)
        elif a.part == "consumer":
            consumer_part(a.broker, n, a.runs, a.calls)
        else:
            spark_part(a.broker, n, a.runs)


if __name__ == "__main__":
    main()
