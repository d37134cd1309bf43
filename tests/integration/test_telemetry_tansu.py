"""Client telemetry (on by default, as Java's) against Tansu, a broker that offers
GetTelemetrySubscriptions but not PushTelemetry, and answers it with a subscription that
requests no metrics (interval 5 s, no compression): the consumer gets its instance id, asks
again each interval, pushes nothing (and has nothing to push with), raises nothing, and
reads as ever."""
from __future__ import annotations

import time
from collections.abc import Callable

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.telemetry.state import TelemetryState
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import TansuBroker, TestRecord, produce


def test_a_subscription_without_metrics_and_no_push_api(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(1)
    produce(tansu.bootstrap, topic, [TestRecord(value=b"v%d" % i, partition=0) for i in range(5)])
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, auto_offset_reset="earliest") as c:
        assert c.config.enable_metrics_push
        c.assign([TopicPartition(topic, 0)])
        values: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while len(values) < 5:
            assert time.monotonic() < deadline
            values += [r.value for rs in c.poll(200).values() for r in rs]
        assert values == [b"v%d" % i for i in range(5)]
        for versions in c.negotiated_versions().values():
            assert ApiKey.PUSH_TELEMETRY.name not in versions
        assert c.client_instance_id(timeout_ms=5000) is not None
        reporter = c._telemetry
        assert reporter is not None
        sub = reporter.sender.subscription
        assert sub is not None and sub.requested_metrics == ()
        # no metrics requested: the next subscription request waits an interval, no push
        assert reporter.sender.state is TelemetryState.SUBSCRIPTION_NEEDED
        assert reporter.sender.enabled
        assert c.poll(100) == {}
