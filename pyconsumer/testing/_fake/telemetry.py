"""GetTelemetrySubscriptions (API key 71) and PushTelemetry (72): a broker's KIP-714 side, as
Kafka's ClientMetricsManager answers. Served only by a cluster made with
``client_telemetry=`` a :class:`~.client_metrics.TelemetrySubscriptionConfig`: Kafka offers
these APIs only with a telemetry receiver configured."""
from __future__ import annotations

import uuid

from pyconsumer.errors import ErrorCode

from .client_metrics import Push
from .common import ZERO_UUID, Body, Request
from .listener import Broker
from .state import ClusterState


def handle_get(state: ClusterState, b: Broker, req: Request) -> Body:
    t = state.telemetry
    assert t is not None
    instance = req.body["client_instance_id"]
    if instance == ZERO_UUID:
        instance = uuid.uuid4()
        t.instances.append(instance)
    c = t.config
    return {"throttle_time_ms": 0, "error_code": 0, "client_instance_id": instance,
            "subscription_id": t.subscription_id(instance),
            "accepted_compression_types": list(c.compression_types),
            "push_interval_ms": c.interval_ms, "telemetry_max_bytes": c.max_bytes,
            "delta_temporality": c.delta_temporality, "requested_metrics": list(c.metrics)}


def handle_push(state: ClusterState, b: Broker, req: Request) -> Body:
    t = state.telemetry
    assert t is not None
    body = req.body
    instance = body["client_instance_id"]
    if instance == ZERO_UUID or instance in t.terminated:
        return {"error_code": ErrorCode.INVALID_REQUEST}
    if body["subscription_id"] != t.subscription_id(instance):
        return {"error_code": ErrorCode.UNKNOWN_SUBSCRIPTION_ID}
    if len(body["metrics"]) > t.config.max_bytes:
        return {"error_code": ErrorCode.TELEMETRY_TOO_LARGE}
    if body["compression_type"] not in (0, *t.config.compression_types):
        return {"error_code": ErrorCode.UNSUPPORTED_COMPRESSION_TYPE}
    if body["terminating"]:
        t.terminated.add(instance)
    t.pushes.append(Push(b.node_id, req.client_id, instance, body["subscription_id"],
                         body["terminating"], body["compression_type"], bytes(body["metrics"]),
                         req.at))
    state.cond.notify_all()
    return {"throttle_time_ms": 0, "error_code": 0}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    return {"error_code": code}
