"""Client telemetry against librdkafka's mock cluster, an independent KIP-714 broker side:
with a subscription set, our pushes are taken (no error answer: the mock would send the
client back to GetTelemetrySubscriptions), one interval apart after the jittered first; with
a subscription requesting no metrics nothing is pushed and the subscription is asked again
each interval. (The mock's request log has API keys only: the pushes' contents are checked on
Apache Kafka and the fake.)"""
from __future__ import annotations

import time

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import MockCluster

GET, PUSH = int(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS), int(ApiKey.PUSH_TELEMETRY)


def _run(mock: MockCluster, seconds: float) -> list[int]:
    mock.create_topic("t", 1)
    mock.start_request_tracking()
    with KafkaConsumer(bootstrap_servers=mock.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition("t", 0)])
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            c.poll(50)
        assert c.client_instance_id() is not None
    return [r.api_key for r in mock.get_requests() if r.api_key in (GET, PUSH)]


def test_pushes_are_taken_by_the_mock(mock_cluster: MockCluster) -> None:
    mock_cluster.set_telemetry(["org.apache.kafka.consumer."], 300)
    seen = _run(mock_cluster, 1.6)
    # one subscription, then pushes only: the first at 0.5 to 1.5 intervals, then every
    # 300 ms, and close()'s terminating one
    assert seen[0] == GET and seen.count(GET) == 1, seen
    assert 3 <= seen.count(PUSH) <= 7, seen


def test_no_push_for_a_subscription_without_metrics(mock_cluster: MockCluster) -> None:
    mock_cluster.set_telemetry([], 300)
    seen = _run(mock_cluster, 1.0)
    assert PUSH not in seen and seen.count(GET) >= 2, seen
