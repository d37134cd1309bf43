"""The consumer's KIP-714 client telemetry on the wire: :class:`ClientTelemetryReporter`.

It runs as a poll hook of the network client (:meth:`NetworkClient.add_poll_hook`), so it is
driven by whoever polls, the application's poll() or the heartbeat thread, and costs a poll
one time comparison until a request is due: nothing is done per record. When one is due it
picks a node (the least loaded, then the same one for as long as it can take requests, as
Java's NetworkClient), asks it GetTelemetrySubscriptions, and at
the push interval sends PushTelemetry: the subscription's metrics (read from ``metrics()``
then) as OTLP, compressed with the first of the broker's accepted types that we write.
Answers are handled where they complete (they only change the reporter's own state, under
the client lock). :meth:`close` sends the terminating push and waits for its answer.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping

from pyconsumer import _version
from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.telemetry import codecs
from pyconsumer.consumer.telemetry.state import (
    TelemetrySender,
    TelemetryState,
    TelemetrySubscription,
)
from pyconsumer.errors import UnsupportedVersionError
from pyconsumer.metrics import MetricName
from pyconsumer.metrics.otlp import encode_metrics_data
from pyconsumer.metrics.telemetry import TelemetryCollector
from pyconsumer.net.client import NetworkClient
from pyconsumer.net.connection import Response
from pyconsumer.net.future import Future
from pyconsumer.net.responses import body_of
from pyconsumer.protocol import ApiKey

log = logging.getLogger(__name__)

#: the OTLP instrumentation scope of every push
SCOPE_NAME = "pyconsumer"


class ClientTelemetryReporter:
    """Pushes one consumer's metrics to the cluster while a client-metrics subscription asks
    for them. ``metrics()`` reads the consumer's metrics; ``resource()`` gives the OTLP
    resource attributes at push time (Java's: group_id, group_instance_id, client_rack,
    group_member_id once the member has one)."""

    def __init__(self, client: NetworkClient, config: ConsumerConfig,
                 metrics: Callable[[], Mapping[MetricName, float]],
                 resource: Callable[[], dict[str, str]], *,
                 sender: TelemetrySender | None = None,
                 collector: TelemetryCollector | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._metrics = metrics
        self._resource = resource
        self._clock = clock
        self.sender = sender if sender is not None else TelemetrySender()
        self._collector = collector if collector is not None else TelemetryCollector()
        self._backoff = config.reconnect_backoff_ms / 1000.0
        #: the broker telemetry goes to while it can take requests
        self._node: int | None = None
        self._in_flight: Future[Response] | None = None
        self._started = False

    # ------------------------------------------------------------------ public

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._client.add_poll_hook(self._step)

    @property
    def client_instance_id(self) -> uuid.UUID | None:
        """The id the broker gave this client (None before a subscription arrived)."""
        sub = self.sender.subscription
        return None if sub is None else sub.client_instance_id

    def close(self, timeout_ms: float) -> None:
        """Send the terminating push (when a subscription asked for metrics) and wait up to
        ``timeout_ms`` for it to be answered; then stop."""
        client = self._client
        with client.lock:
            try:
                if self._started and self.sender.initiate_close():
                    client.poll(timeout_ms=timeout_ms, until=self._terminated, wakeup=False)
            finally:
                self.sender.close()
                if self._started:
                    client.remove_poll_hook(self._step)

    def _terminated(self) -> bool:
        """The terminating push was answered (or failed, or will never go)."""
        if not self.sender.enabled:
            return True
        return (self.sender.state is not TelemetryState.TERMINATING_PUSH_NEEDED
                and (self._in_flight is None or self._in_flight.done))

    # ------------------------------------------------------------------ the poll hook

    def _step(self, now: float) -> float | None:
        sender = self.sender
        if not sender.enabled:
            # stopped for good: polls need not ask any more
            self._client.remove_poll_hook(self._step)
            return None
        wait = sender.time_to_next_update(now)
        if wait > 0:
            return None if wait == float("inf") else wait
        if self._in_flight is not None and not self._in_flight.done:
            return None
        node = self._pick_node()
        if node is None or not self._client.ready(node):
            self._node = None                  # another broker next time
            return self._backoff
        try:
            api = (ApiKey.GET_TELEMETRY_SUBSCRIPTIONS
                   if sender.state is TelemetryState.SUBSCRIPTION_NEEDED else ApiKey.PUSH_TELEMETRY)
            self._client.api_version(node, api)
        except UnsupportedVersionError:
            # a broker without the APIs (KIP-714 brokers offer them only with a telemetry
            # receiver configured): quietly no telemetry, for good
            sender.stop(f"node {node} does not offer {api.name}")
            log.debug("no client telemetry: %s", sender.stopped)
            return None
        if api is ApiKey.GET_TELEMETRY_SUBSCRIPTIONS:
            self._ask(node)
        else:
            self._push(node, now)
        return None

    def _pick_node(self) -> int | None:
        # Java's leastLoadedNode over the metadata's nodes: the bootstrap servers until the
        # brokers are known, then the brokers
        nodes = self._client.metadata.nodes()
        if self._node is None or all(n.node_id != self._node for n in nodes):
            self._node = self._client.least_loaded_node(nodes)
        return self._node

    def _ask(self, node: int) -> None:
        instance = self.sender.begin_subscription()
        if instance is None:
            return
        fut = self._client.send(node, ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
                                {"client_instance_id": instance})
        self._in_flight = fut
        fut.add_callback(self._on_subscription, any_thread=True)

    def _push(self, node: int, now: float) -> None:
        begun = self.sender.begin_push()
        if begun is None:
            return
        sub, terminating = begun
        try:
            codec, payload = self._payload(sub)
        except Exception:   # noqa: BLE001 - a bad reading must not break the poll
            log.warning("could not build the telemetry payload", exc_info=True)
            self.sender.push_not_built(now)
            return
        fut = self._client.send(node, ApiKey.PUSH_TELEMETRY, {
            "client_instance_id": sub.client_instance_id,
            "subscription_id": sub.subscription_id, "terminating": terminating,
            "compression_type": codec, "metrics": payload})
        self._in_flight = fut
        fut.add_callback(self._on_push, any_thread=True)

    def _payload(self, sub: TelemetrySubscription) -> tuple[int, bytes]:
        metrics = self._collector.collect(self._metrics(), sub.requested_metrics,
                                          sub.delta_temporality)
        data = encode_metrics_data(self._resource(), SCOPE_NAME, _version.__version__, metrics)
        codec = codecs.preferred(sub.accepted_compression_types)
        try:
            packed = codecs.compress(codec, data)
        except Exception:   # noqa: BLE001 - Java sends it uncompressed then
            log.info("compressing the telemetry payload with %s failed; sending it as is",
                     codecs.SUPPORTED.get(codec), exc_info=True)
            return codecs.NONE, data
        return codec, packed

    # ------------------------------------------------------------------ answers

    def _on_subscription(self, fut: Future[Response]) -> None:
        now = self._clock()
        if fut.exception is not None:
            self._failed(fut.exception, now)
            return
        body = body_of(fut.result(), ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)
        if self.sender.on_subscription(body, now):
            self._collector.reset()
        if self.sender.stopped:
            log.info("client telemetry stopped: %s", self.sender.stopped)

    def _on_push(self, fut: Future[Response]) -> None:
        now = self._clock()
        if fut.exception is not None:
            self._failed(fut.exception, now)
            return
        self.sender.on_push(body_of(fut.result(), ApiKey.PUSH_TELEMETRY), now)
        if self.sender.stopped:
            log.info("client telemetry stopped: %s", self.sender.stopped)

    def _failed(self, error: BaseException, now: float) -> None:
        self._node = None
        log.debug("a telemetry request failed: %s", error)
        self.sender.on_failure(now, unsupported=isinstance(error, UnsupportedVersionError))


__all__ = ["ClientTelemetryReporter", "SCOPE_NAME"]
