"""KIP-714 client telemetry on the in-process fake cluster: what goes on the wire and how the
consumer answers each broker reply (Java's state machine): the subscription, the jittered
first push, the interval, compression by the broker's accepted types, the terminating push,
re-subscribing, stopping for good, throttling; and a broker without the APIs. Payloads are
decompressed with kafka-python's codecs and decoded with opentelemetry-proto."""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.telemetry.state import (
    DEFAULT_PUSH_INTERVAL_MS,
    TelemetrySender,
    TelemetryState,
    error_interval_ms,
)
from pyconsumer.errors import ErrorCode
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import FAST_CONSUMER, FakeCluster, TelemetrySubscriptionConfig

metrics_pb2 = pytest.importorskip("opentelemetry.proto.metrics.v1.metrics_pb2")
kafka_codec = pytest.importorskip("kafka.codec")

pytestmark = pytest.mark.fake

GET = ApiKey.GET_TELEMETRY_SUBSCRIPTIONS
PUSH = ApiKey.PUSH_TELEMETRY
TP = TopicPartition("t", 0)
DECODERS: dict[int, Callable[[bytes], bytes]] = {
    0: lambda b: b, 1: kafka_codec.gzip_decode, 2: kafka_codec.snappy_decode,
    3: kafka_codec.lz4_decode, 4: kafka_codec.zstd_decode}


@pytest.fixture
def make_cluster() -> Iterator[Callable[..., FakeCluster]]:
    made: list[FakeCluster] = []

    def make(**config: Any) -> FakeCluster:
        telemetry = config.pop("telemetry", True)
        cluster = FakeCluster(1, topics={"t": 1}, client_telemetry=(
            TelemetrySubscriptionConfig(**config) if telemetry else None))
        cluster.produce(TP, [(b"k%d" % i, b"v%d" % i) for i in range(20)])
        made.append(cluster)
        return cluster

    yield make
    for cluster in made:
        assert cluster.errors == []
        cluster.close()


def consumer(cluster: FakeCluster, **settings: Any) -> KafkaConsumer:
    c = KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="tele",
                      **{**FAST_CONSUMER, **settings})
    c.assign([TP])
    return c


def poll_for(c: KafkaConsumer, seconds: float, until: Callable[[], bool] = lambda: False
             ) -> int:
    """Poll until ``until()`` or for ``seconds``; the number of records polled."""
    got = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end and not until():
        got += sum(map(len, c.poll(20).values()))
    return got


def telemetry_requests(cluster: FakeCluster, after: int = 0) -> list[Any]:
    return [r for r in cluster.requests[after:] if r.api in (GET, PUSH)]


def decoded(push: Any) -> Any:
    parsed = metrics_pb2.MetricsData()
    parsed.ParseFromString(DECODERS[push.compression_type](push.metrics))
    return parsed


@pytest.mark.parametrize(("accepted", "used"), [
    ((4, 3, 1, 2), 4), ((3,), 3), ((1,), 1), ((2,), 2), ((9, 2, 1), 2), ((), 0)])
def test_pushes_are_compressed_with_the_first_accepted_type_and_decode(
        make_cluster: Callable[..., FakeCluster], accepted: tuple[int, ...], used: int) -> None:
    cluster = make_cluster(compression_types=accepted, interval_ms=100)
    with consumer(cluster, group_id="g") as c:
        poll_for(c, 10, lambda: len(cluster.telemetry.pushes) >= 2)   # type: ignore[union-attr]
        instance = c.client_instance_id()
    t = cluster.telemetry
    assert t is not None and instance == t.instances[0]
    get = cluster.requests_of(GET)[0]
    assert get.body["client_instance_id"] == uuid.UUID(int=0) and get.client_id == "tele"
    assert all(p.compression_type == used for p in t.pushes)
    assert t.pushes[-1].terminating and not any(p.terminating for p in t.pushes[:-1])
    for push in t.pushes:
        parsed = decoded(push)
        (rm,) = parsed.resource_metrics
        assert {a.key: a.value.string_value for a in rm.resource.attributes} == {"group_id": "g"}
        names = [m.name for m in rm.scope_metrics[0].metrics]
        assert names == sorted(names) and all(n.startswith("org.apache.kafka.") for n in names)
        assert "org.apache.kafka.consumer.fetch.manager.records.consumed.total" in names


def test_the_first_push_is_jittered_then_one_interval_apart(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(interval_ms=400)
    with consumer(cluster) as c:
        poll_for(c, 10, lambda: len(cluster.requests_of(PUSH)) >= 3)
        got = cluster.requests_of(GET)[0].at
        pushes = [r.at for r in cluster.requests_of(PUSH)]
    first = pushes[0] - got
    # 0.5 to 1.5 intervals after the answer, which may wait behind a fetch (100 ms)
    assert 0.2 - 0.05 <= first <= 0.6 + 0.3, first
    for a, b in zip(pushes, pushes[1:3]):
        assert 0.4 - 0.02 <= b - a <= 0.4 + 0.3, b - a


def test_a_subscription_without_metrics_is_asked_again_and_nothing_pushed(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(metrics=(), interval_ms=200)
    with consumer(cluster) as c:
        poll_for(c, 10, lambda: len(cluster.requests_of(GET)) >= 3)
    gets = cluster.requests_of(GET)
    assert cluster.requests_of(PUSH) == []          # none, and no terminating push either
    instance = gets[1].body["client_instance_id"]
    assert instance != uuid.UUID(int=0) and gets[2].body["client_instance_id"] == instance
    for a, b in zip(gets, gets[1:]):
        assert 0.2 - 0.02 <= b.at - a.at <= 0.2 + 0.3


def test_a_changed_subscription_is_fetched_again_at_once(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(interval_ms=1000)
    t = cluster.telemetry
    assert t is not None
    with consumer(cluster) as c:
        poll_for(c, 10, lambda: len(t.pushes) >= 1)
        old = t.pushes[0].subscription_id
        t.config.interval_ms = 1100             # the subscription id changes with it
        mark = cluster.mark()
        poll_for(c, 10, lambda: any(p.subscription_id != old for p in t.pushes))
        seen = telemetry_requests(cluster, mark)
    # the push with the old id: UNKNOWN_SUBSCRIPTION_ID; then at once the subscription again
    # (with our instance id), then pushes under the new one
    kinds = [r.api for r in seen]
    assert kinds[:3] == [PUSH, GET, PUSH], kinds
    assert seen[0].body["subscription_id"] == old
    assert seen[1].body["client_instance_id"] == t.instances[0]
    # at once: the push's answer waits behind a fetch (up to fetch.max.wait.ms, 100 ms) on
    # the same connection, far less than an interval
    assert seen[1].at - seen[0].at < 0.4
    assert seen[2].body["subscription_id"] == t.subscription_id(t.instances[0]) != old
    assert len(t.instances) == 1


@pytest.mark.parametrize("code", [ErrorCode.INVALID_RECORD, ErrorCode.INVALID_REQUEST,
                                  ErrorCode.UNSUPPORTED_VERSION, ErrorCode.UNKNOWN_SERVER_ERROR])
def test_an_error_that_retrying_cannot_fix_stops_telemetry_for_good(
        make_cluster: Callable[..., FakeCluster], code: int) -> None:
    cluster = make_cluster(interval_ms=100)
    cluster.inject(PUSH, code)
    with consumer(cluster) as c:
        records = poll_for(c, 10, lambda: len(cluster.requests_of(PUSH)) >= 1)
        records += poll_for(c, 1.0)             # ten intervals: nothing more is sent
        assert c.client_instance_id() is not None
    assert [r.api for r in telemetry_requests(cluster)] == [GET, PUSH]   # no terminating push
    assert cluster.telemetry is not None and cluster.telemetry.pushes == []
    assert records == 20                         # the consumer itself is unaffected


@pytest.mark.parametrize("code", [ErrorCode.TELEMETRY_TOO_LARGE,
                                  ErrorCode.THROTTLING_QUOTA_EXCEEDED])
def test_too_large_or_throttled_asks_again_one_interval_later(
        make_cluster: Callable[..., FakeCluster], code: int) -> None:
    cluster = make_cluster(interval_ms=300)
    cluster.inject(PUSH, code)
    with consumer(cluster) as c:
        poll_for(c, 10, lambda: len(cluster.requests_of(PUSH)) >= 2)
    seen = telemetry_requests(cluster)
    assert [r.api for r in seen[:4]] == [GET, PUSH, GET, PUSH]
    assert 0.3 - 0.02 <= seen[2].at - seen[1].at <= 0.3 + 0.3
    assert cluster.telemetry is not None and len(cluster.telemetry.pushes) >= 1


def test_a_responses_throttle_time_delays_the_next_request(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(interval_ms=100)
    answered: list[float] = []

    def throttle(req: Any) -> dict[str, Any] | None:
        if answered:
            return None
        answer = cluster.default_answer(req)
        answered.append(time.monotonic())
        return {**answer, "throttle_time_ms": 800}

    cluster.control(PUSH, throttle)
    with consumer(cluster) as c:
        poll_for(c, 10, lambda: len(cluster.requests_of(PUSH)) >= 2)
    first, second = cluster.requests_of(PUSH)[:2]
    assert second.at - first.at >= 0.8 - 0.02          # not the 100 ms interval


def test_a_push_lost_with_its_connection_is_retried_one_interval_later(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(interval_ms=300)
    cluster.drop_next(PUSH)
    with consumer(cluster) as c:
        poll_for(c, 10, lambda: len(cluster.telemetry.pushes) >= 1)   # type: ignore[union-attr]
    seen = telemetry_requests(cluster)
    assert [r.api for r in seen[:4]] == [GET, PUSH, GET, PUSH]
    assert seen[2].at - seen[1].at >= 0.3 - 0.02


def test_no_telemetry_when_disabled(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(interval_ms=100)
    with consumer(cluster, enable_metrics_push=False) as c:
        poll_for(c, 0.8)
    assert telemetry_requests(cluster) == []


def test_a_broker_without_the_apis_gets_none_and_the_consumer_works(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(telemetry=False)
    with consumer(cluster) as c:
        got = 0
        end = time.monotonic() + 10
        while got < 20 and time.monotonic() < end:
            got += sum(map(len, c.poll(50).values()))
        assert got == 20
        assert c.client_instance_id(timeout_ms=2000) is None
    assert cluster.rejected == [] and telemetry_requests(cluster) == []


# ---------------------------------------------------------------------- the state machine


def _subscription(**fields: Any) -> dict[str, Any]:
    body = {"throttle_time_ms": 0, "error_code": 0,
            "client_instance_id": uuid.UUID(int=7), "subscription_id": 5,
            "accepted_compression_types": [4], "push_interval_ms": 1000,
            "telemetry_max_bytes": 1 << 20, "delta_temporality": True,
            "requested_metrics": ["org.apache.kafka."]}
    return {**body, **fields}


def test_the_state_machine_schedules_as_java() -> None:
    draws: list[tuple[float, float]] = []
    sender = TelemetrySender(jitter=lambda lo, hi: draws.append((lo, hi)) or 1.25)
    assert sender.time_to_next_update(100.0) == 0.0
    assert sender.begin_subscription() == uuid.UUID(int=0)
    assert sender.state is TelemetryState.SUBSCRIPTION_IN_PROGRESS
    assert sender.time_to_next_update(100.0) == float("inf")
    assert not sender.on_subscription(_subscription(), 100.0)
    assert draws == [(0.5, 1.5)] and sender.state is TelemetryState.PUSH_NEEDED
    assert sender.time_to_next_update(100.0) == pytest.approx(1.25)
    begun = sender.begin_push()
    assert begun is not None and begun[1] is False
    sender.on_push({"throttle_time_ms": 0, "error_code": 0}, 101.25)
    assert sender.time_to_next_update(101.25) == pytest.approx(1.0)
    # a changed temporality says so (the sums' history is reset)
    sender.state = TelemetryState.SUBSCRIPTION_NEEDED
    assert sender.begin_subscription() == uuid.UUID(int=7)
    assert sender.on_subscription(_subscription(delta_temporality=False), 102.0)
    # closing: a terminating push at once, then nothing
    assert sender.initiate_close() and sender.time_to_next_update(102.0) == 0.0
    begun = sender.begin_push()
    assert begun is not None and begun[1] is True
    assert not sender.initiate_close()
    sender.on_push({"throttle_time_ms": 0, "error_code": 0}, 102.5)
    assert sender.state is TelemetryState.TERMINATING_PUSH_IN_PROGRESS
    sender.close()
    assert sender.state is TelemetryState.TERMINATED
    assert sender.time_to_next_update(103.0) == float("inf")


def test_the_state_machine_edge_answers() -> None:
    sender = TelemetrySender(jitter=lambda lo, hi: 1.0)
    sender.begin_subscription()
    sender.on_subscription(_subscription(push_interval_ms=0), 0.0)       # Java's default then
    assert sender.subscription is not None
    assert sender.subscription.push_interval_ms == DEFAULT_PUSH_INTERVAL_MS
    # no subscription yet: no terminating push on close
    fresh = TelemetrySender()
    assert not fresh.initiate_close()
    # a zero instance id cannot be pushed for: stop
    bad = TelemetrySender()
    bad.begin_subscription()
    bad.on_subscription(_subscription(client_instance_id=uuid.UUID(int=0)), 0.0)
    assert not bad.enabled and bad.time_to_next_update(0.0) == float("inf")
    assert error_interval_ms(ErrorCode.UNKNOWN_SUBSCRIPTION_ID, 1000) == 0.0
    assert error_interval_ms(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, 1000) == 0.0
    assert error_interval_ms(ErrorCode.TELEMETRY_TOO_LARGE, 1000) == 1000
    assert error_interval_ms(ErrorCode.THROTTLING_QUOTA_EXCEEDED, -1) == DEFAULT_PUSH_INTERVAL_MS
    assert error_interval_ms(ErrorCode.INVALID_RECORD, 1000) == float("inf")


def test_the_heartbeat_thread_pushes_while_the_application_is_away(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(interval_ms=150)
    t = cluster.telemetry
    assert t is not None
    with KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g", client_id="tele",
                       **FAST_CONSUMER) as c:
        poll_for(c, 10, lambda: bool(c.assignment()) and len(t.pushes) >= 1)
        before = len(t.pushes)
        time.sleep(1.2)                 # no poll(): only the heartbeat thread polls
        during = len(t.pushes) - before
        member_id = c.group_metadata().member_id
    assert during >= 4, during          # every 150 ms
    resource = decoded(t.pushes[-1]).resource_metrics[0].resource
    assert {a.key: a.value.string_value for a in resource.attributes} == {
        "group_id": "g", "group_member_id": member_id}


def test_the_instance_id_of_a_consumer_that_asked_nothing_else(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(interval_ms=100)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST_CONSUMER) as c:
        instance = c.client_instance_id(timeout_ms=5000)   # no assignment, no metadata asked
    assert cluster.telemetry is not None and instance == cluster.telemetry.instances[0]
