"""What one Fetch send costs with many assigned partitions (issue 26): the client's Python work
to schedule, build and encode a request, full (no session) against incremental (an open
session, nothing changed or a few positions moved), and on a real broker the round trip of
each kind with every partition at its end.

    python benchmarks/fetch_send_cost.py --broker fake --partitions 1000
    python benchmarks/fetch_send_cost.py --broker kafka --partitions 1000

Not a benchmark case: a quick measurement (best and median of a few hundred sends). The
client-side figures send nothing: ``client.send`` is replaced by a stub that encodes the body
at the negotiated version and returns a future that never completes.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pyconsumer import KafkaConsumer, TopicPartition  # noqa: E402
from pyconsumer.consumer.fetch.session import FINAL_EPOCH, FetchMetadata  # noqa: E402
from pyconsumer.net.future import Future  # noqa: E402
from pyconsumer.protocol import ApiKey, encode_request  # noqa: E402


@contextlib.contextmanager
def broker(kind: str, partitions: int) -> Iterator[tuple[str, str]]:
    if kind == "fake":
        from pyconsumer.testing import FakeCluster
        with FakeCluster(topics={"t": partitions}) as cluster:
            yield cluster.bootstrap, "t"
    else:
        import brokers
        with brokers.start(kind) as b:
            yield b.bootstrap, b.create_topic(f"send-cost-{partitions}p", partitions)


def settle(c: KafkaConsumer) -> None:
    """Every position found and a fetch session open with the one broker."""
    deadline = time.monotonic() + 60
    fetcher = c._fetcher
    while time.monotonic() < deadline:
        c.poll(timeout_ms=50)
        assert fetcher is not None
        if c._subscriptions.all_fetching() and fetcher.sessions and all(
                h.has_session for h in fetcher.sessions.values()):
            # and no Fetch in flight: its answer would meet a session the stub moved on
            client = fetcher.requests.client
            client.poll(timeout_ms=10_000, until=lambda: not fetcher._nodes_in_flight)
            if all(h.has_session for h in fetcher.sessions.values()):
                return
    raise RuntimeError("no fetch session opened within 60 s")


def stats(samples: list[float]) -> str:
    return f"best {min(samples) * 1e3:.3f} ms, median {statistics.median(samples) * 1e3:.3f} ms"


def client_side(c: KafkaConsumer, sends: int, full: bool, moved: int) -> list[float]:
    """Seconds per send_fetches() with the network stubbed out (nothing completes)."""
    fetcher = c._fetcher
    assert fetcher is not None
    requests = fetcher.requests
    client = requests.client
    real_send = client.send
    node = next(iter(fetcher.sessions))
    handler = fetcher.sessions[node]
    version = client.api_version(node, ApiKey.FETCH)
    subs = c._subscriptions
    tps = subs.assigned_partitions()[:moved]

    def stub(node_id: int, api_key: int, body: Callable[[int], dict[str, Any]] | Any,
             *args: Any, **kwargs: Any) -> Future[Any]:
        encode_request(api_key, version, 1, "bench", body(version) if callable(body) else body)
        return Future()

    open_meta = handler.next_metadata
    start_at = {tp: subs.position(tp) for tp in tps}
    moved_hook = getattr(requests, "positions_moved", lambda moved: None)
    out = []
    client.send = stub  # type: ignore[method-assign]
    try:
        for i in range(sends):
            requests._nodes_in_flight.discard(node)
            handler.next_metadata = FetchMetadata(0, FINAL_EPOCH) if full else open_meta
            for tp in tps:       # positions moved on a few partitions (as a drain does)
                pos = start_at[tp]
                assert pos is not None
                subs.state(tp).position = pos._replace(offset=pos.offset + i % 2)
            moved_hook(tps)
            start = time.perf_counter()
            assert requests.send_fetches() == 1
            out.append(time.perf_counter() - start)
    finally:
        client.send = real_send  # type: ignore[method-assign]
        requests._nodes_in_flight.discard(node)
        for tp, pos in start_at.items():
            subs.state(tp).position = pos
        moved_hook(tps)
        # the next fetch is a full one: the stubbed sends left the session's offsets behind
        handler.next_metadata = open_meta.close_existing_attempt_new()
    return out


def round_trips(c: KafkaConsumer, rounds: int, full: bool) -> list[float]:
    """Seconds from send_fetches() to the answer, every partition at its end (the consumer
    built with fetch_max_wait_ms=0, so the broker answers at once)."""
    fetcher = c._fetcher
    assert fetcher is not None
    client = fetcher.requests.client
    out = []
    for _ in range(rounds):
        for h in fetcher.sessions.values():
            if full:
                h.next_metadata = FetchMetadata(0, FINAL_EPOCH)    # full, no session
        done = fetcher.completions
        start = time.perf_counter()
        fetcher.send_fetches()
        client.poll(timeout_ms=5000,
                    until=lambda done=done: fetcher.completions != done)  # type: ignore[misc]
        out.append(time.perf_counter() - start)
        assert fetcher.completions != done
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--broker", choices=["fake", "kafka", "tansu"], default="fake")
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--sends", type=int, default=300)
    a = ap.parse_args()
    with broker(a.broker, a.partitions) as (bootstrap, topic):
        with KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="latest",
                           fetch_max_wait_ms=0) as c:
            c.assign([TopicPartition(topic, p) for p in range(a.partitions)])
            print(f"{a.partitions} partitions on {a.broker}, client side (send stubbed):")
            for label, full, moved in [("full (no session)", True, 0),
                                       ("incremental, nothing changed", False, 0),
                                       ("incremental, 10 positions moved", False, 10)]:
                settle(c)
                client_side(c, 20, full, moved)     # warm the kept entries
                settle(c)
                print(f"  {label}: {stats(client_side(c, a.sends, full, moved))}")
            if a.broker != "fake":
                settle(c)
                print("round trip, every partition at its end (fetch.max.wait.ms=0):")
                for label, full in [("full (no session)", True), ("incremental", False)]:
                    round_trips(c, 20, full)
                    print(f"  {label}: {stats(round_trips(c, a.sends, full))}")


if __name__ == "__main__":
    main()
