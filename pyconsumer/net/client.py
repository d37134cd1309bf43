"""The network client: connections to every broker, one selector loop, the metadata cache.

Like Java's ``NetworkClient``: requests are queued with :meth:`NetworkClient.send` (which
returns a :class:`~pyconsumer.net.future.Future`) and completed inside
:meth:`NetworkClient.poll`. Threads (see :mod:`pyconsumer.threads`): ``lock`` serialises every
use; the heartbeat thread polls with ``background=True`` (callbacks not marked thread-safe wait
for the application's next poll); poll hooks run on every poll, whoever polls;
:meth:`NetworkClient.wakeup` makes the application's blocking poll raise WakeupError.
"""
from __future__ import annotations

import logging
import random
import re
import selectors
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pyconsumer import _version
from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import (
    AuthenticationError,
    ConfigurationError,
    KafkaConnectionError,
    WakeupError,
    KafkaError,
    KafkaTimeoutError,
    NoBrokersAvailable,
)
from pyconsumer.net.connection import (
    BrokerConnection,
    ConnectionSettings,
    ConnectionState,
    RequestBody,
    Response,
)
from pyconsumer.net.backoff import ExponentialBackoff
from pyconsumer.net.future import Callback, Future, defer_callbacks
from pyconsumer.net.metadata import ClusterMetadata
from pyconsumer.net.responses import body_of
from pyconsumer.net.sasl import SaslSettings
from pyconsumer.config.ssl import build_ssl_context
from pyconsumer.net.transport import (
    NO_TLS_ANSWER,
    canonical_bootstrap_servers,
    resolve_bootstrap_servers,
    unresolved_text,
)
from pyconsumer.protocol import ApiKey
from pyconsumer.protocol.bodies import MetadataRequest, MetadataRequestTopic
from pyconsumer.structs import BrokerInfo
from pyconsumer.threads import ClientLock

log = logging.getLogger(__name__)

SOFTWARE_NAME = "pyconsumer"


def _software_version() -> str:
    """``pyconsumer.__version__`` as KIP-511 lets a client name it (letters, digits, '.' and
    '-', alphanumeric at both ends; brokers refuse ApiVersions otherwise): a local version
    such as ``0.2.0+g1a2b`` is sent as ``0.2.0-g1a2b``."""
    return re.sub(r"[^a-zA-Z0-9.-]", "-", _version.__version__).strip(".-") or "0"


def metadata_request_body(version: int, topics: Iterable[str] | None,
                          allow_auto_create: bool) -> MetadataRequest:
    """A Metadata request for ``topics`` (None: every topic) at ``version``."""
    listed: list[MetadataRequestTopic] | None
    if topics is None:
        # "all topics" is a null array from v1 on; v0 could only say it with an empty one
        listed = None if version >= 1 else []
    else:
        listed = [{"name": t} for t in topics]
    return {"topics": listed, "allow_auto_topic_creation": allow_auto_create,
            "include_topic_authorized_operations": False}


class NetworkClient:
    """Connections to the cluster's brokers; see the module doc."""

    def __init__(self, config: ConsumerConfig, *,
                 clock: Callable[[], float] = time.monotonic,
                 lock: ClientLock | None = None,
                 bootstrap: list[tuple[str, int]] | None = None) -> None:
        """``bootstrap``: the bootstrap servers, already resolved by the consumer
        (bootstrap.resolve.timeout.ms=0); None: ``config.bootstrap_servers``, resolved in
        the background by :meth:`poll` when bootstrap.resolve.timeout.ms > 0, else by each
        connection (canonical names at once with resolve_canonical_bootstrap_servers_only)."""
        self.config = config
        self._clock = clock
        self.settings = ConnectionSettings(
            client_id=config.client_id,
            request_timeout_ms=config.request_timeout_ms,
            connection_setup_timeout_ms=config.socket_connection_setup_timeout_ms,
            max_in_flight=config.max_in_flight_requests_per_connection,
            max_response_size=config.max_response_size,
            reconnect_backoff_ms=config.reconnect_backoff_ms,
            reconnect_backoff_max_ms=config.reconnect_backoff_max_ms,
            connections_max_idle_ms=config.connections_max_idle_ms,
            send_buffer_bytes=config.send_buffer_bytes,
            receive_buffer_bytes=config.receive_buffer_bytes,
            connection_setup_timeout_max_ms=config.socket_connection_setup_timeout_max_ms,
            software_name=SOFTWARE_NAME,
            software_version=_software_version(),
            ssl_context=build_ssl_context(config),
            sasl=(SaslSettings.from_config(config)
                  if config.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL") else None),
        )
        #: KIP-909 (bootstrap.resolve.timeout.ms > 0): the servers still to resolve, tried
        #: on each poll (reconnect.backoff.ms apart) until the deadline; then the error,
        #: raised by every later poll (Java's BootstrapResolutionException is permanent too)
        self._unresolved: list[tuple[str, int]] | None = None
        self._resolve_error: ConfigurationError | None = None
        self._resolve_deadline = self._resolve_at = 0.0
        self._resolve_attempts = 0
        self._resolve_failed = ""             # the last lookup's failures, for messages
        self._resolve_backoff = ExponentialBackoff(config.reconnect_backoff_ms,
                                                   config.reconnect_backoff_max_ms)
        self._canonical = config.client_dns_lookup == "resolve_canonical_bootstrap_servers_only"
        if bootstrap is None:
            bootstrap = config.bootstrap_servers
            if config.bootstrap_resolve_timeout_ms > 0:
                self._unresolved, bootstrap = bootstrap, []
                self._resolve_deadline = clock() + config.bootstrap_resolve_timeout_ms / 1000.0
            elif self._canonical:
                bootstrap = canonical_bootstrap_servers(bootstrap)
        self.metadata = ClusterMetadata(bootstrap, config.metadata_max_age_ms,
                                        clock=clock,
                                        refresh_backoff_ms=config.retry_backoff_ms,
                                        refresh_backoff_max_ms=config.retry_backoff_max_ms)
        #: topics the periodic refresh asks for; None: every topic; empty: no periodic refresh
        self.metadata_topics: set[str] | None = set()
        self._conns: dict[int, BrokerConnection] = {}
        self._selector = selectors.DefaultSelector()
        #: node -> (fd, events, socket): the socket object too, since a number is reused
        self._registered: dict[int, tuple[int, int, object]] = {}
        self.lock = lock if lock is not None else ClientLock()
        #: run on every poll iteration, in whichever thread polls; each returns the seconds
        #: until it wants to run again (None: no wish), which bounds the poll's sleep
        self._hooks: list[Callable[[float], float | None]] = []
        #: callbacks of requests completed on the heartbeat thread, for the application
        self._deferred: list[tuple[Callback, Future[Any]]] = []
        self._metadata_future: Future[Response] | None = None
        self._closed = False
        self._waker_r, self._waker_w = socket.socketpair()
        self._waker_r.setblocking(False)
        self._waker_w.setblocking(False)
        self._selector.register(self._waker_r, selectors.EVENT_READ, None)
        self._wakeup_requested = False
        #: node id -> why, for the known nodes whose last connection round failed since the
        #: last "cannot reach any broker" warning (one warning per round over all of them)
        self._unreached: dict[int, KafkaError | None] = {}
        #: the last authentication failure of a connection, raised once by the next
        #: application poll (Java: NetworkClient makes it a fatal metadata error)
        self._auth_error: AuthenticationError | None = None

    # ------------------------------------------------------------------ connections

    def _connection(self, node_id: int) -> BrokerConnection:
        node = self.metadata.node(node_id)
        if node is None:
            raise KafkaConnectionError(f"node {node_id} is not a known broker")
        conn = self._conns.get(node_id)
        if conn is not None and (conn.node.host, conn.node.port) != (node.host, node.port):
            # the broker moved: the old socket speaks to the wrong place
            conn.close(KafkaConnectionError(f"{conn.describe} moved to {node.host}:{node.port}"))
            self._unregister(node_id)
            conn = None
        if conn is None:
            conn = BrokerConnection(node, self.settings, clock=self._clock)
            conn.on_failure = self._connection_failed
            self._conns[node_id] = conn
        return conn

    def _connection_failed(self, conn: BrokerConnection) -> None:
        if isinstance(conn.last_error, AuthenticationError):
            # not a broker in trouble but credentials refused: the application hears it
            # from its next call; retrying is left to the reconnect backoff
            self._auth_error = conn.last_error
            return
        # a broker that fails may have lost its partitions: learn who leads them now
        self.metadata.request_update()
        if not conn.unreachable:
            return
        # once every known broker failed to connect, say so at WARNING (each attempt is
        # only logged at INFO): once per round over all of them, so a client left alone
        # with a wrong bootstrap.servers is visible without a warning per attempt
        self._unreached[conn.node.node_id] = conn.last_error
        nodes = self.metadata.nodes()
        if not nodes or any(n.node_id not in self._unreached or self.is_ready(n.node_id)
                            for n in nodes):
            return
        def listed(group: list[BrokerInfo]) -> str:
            return ", ".join(f"{n.host}:{n.port}" for n in group)

        known = [n for n in nodes if n.node_id in self.metadata.brokers]
        if known and len(known) < len(nodes):
            # rebootstrapping tries both lists: name each, so the name is not taken for a broker
            which = (f"the known brokers ({listed(known)}) or bootstrap.servers "
                     f"({listed([n for n in nodes if n.node_id not in self.metadata.brokers])})")
        else:
            which = f"{'the known brokers' if known else 'bootstrap.servers'} ({listed(nodes)})"
        log.warning("cannot connect to any of %s; retrying: %s", which,
                    "; ".join(str(self._unreached[n.node_id]) for n in nodes))
        self._unreached.clear()

    def connection_state(self, node_id: int) -> ConnectionState:
        conn = self._conns.get(node_id)
        return ConnectionState.DISCONNECTED if conn is None else conn.state

    def is_ready(self, node_id: int) -> bool:
        conn = self._conns.get(node_id)
        return conn is not None and conn.is_ready()

    def connection_count(self) -> int:
        """Connections open or being opened (Java's ``connection-count`` metric)."""
        # a copy: metrics() may ask from another thread while connections are added
        return sum(c.state is not ConnectionState.DISCONNECTED
                   for c in list(self._conns.values()))

    def connection(self, node_id: int) -> BrokerConnection | None:
        """The connection object for a node, if one was ever opened (for inspection)."""
        return self._conns.get(node_id)

    def api_version(self, node_id: int, api_key: int) -> int:
        """The negotiated version of ``api_key`` on a READY connection to ``node_id``."""
        conn = self._conns.get(node_id)
        if conn is None or not conn.is_ready():
            raise KafkaConnectionError(f"node {node_id} is not connected")
        return conn.version_for(api_key)

    def negotiated_versions(self, node_id: int) -> dict[str, int]:
        conn = self._conns.get(node_id)
        return {} if conn is None or not conn.is_ready() else conn.negotiated_versions()

    def finalized_features(self, node_id: int) -> dict[str, int]:
        """The cluster features a READY connection's broker advertised as finalized."""
        conn = self._conns.get(node_id)
        return {} if conn is None or not conn.is_ready() else dict(conn.finalized_features)

    def in_flight_count(self, node_id: int | None = None) -> int:
        if node_id is not None:
            conn = self._conns.get(node_id)
            return 0 if conn is None else conn.in_flight_count + conn.pending_count
        return sum(c.in_flight_count + c.pending_count for c in self._conns.values())

    def ready(self, node_id: int) -> bool:
        """True when ``node_id`` can take a request now; otherwise start connecting to it
        (unless it is in reconnect backoff)."""
        with self.lock:
            conn = self._connection(node_id)
            if conn.state is ConnectionState.DISCONNECTED and not conn.in_backoff():
                self._initiate(conn)
            return conn.can_send_more()

    def _initiate(self, conn: BrokerConnection) -> None:
        conn.connect(self._clock())
        self._update_registration(conn)

    def connection_delay_ms(self, node_id: int) -> float:
        """How long until ``node_id`` may be tried again (0: now)."""
        conn = self._conns.get(node_id)
        if conn is None or conn.state is not ConnectionState.DISCONNECTED:
            return 0.0
        return max(0.0, (conn.backoff_until - self._clock()) * 1000.0)

    def least_loaded_node(self, among: list[BrokerInfo] | None = None) -> int | None:
        """The known broker (or one of ``among``) with the fewest outstanding requests (Java
        leastLoadedNode): a ready idle node at once; else the least busy ready node; else one
        that is connecting; else one that may be connected without waiting for its backoff.
        None if every node is backing off."""
        nodes = self.metadata.nodes() if among is None else among
        if not nodes:
            return None
        offset = random.randrange(len(nodes))
        best_ready: tuple[int, int] | None = None
        connecting: int | None = None
        idle: int | None = None
        now = self._clock()
        for i in range(len(nodes)):
            node = nodes[(offset + i) % len(nodes)]
            conn = self._conns.get(node.node_id)
            if conn is not None and conn.is_ready():
                load = conn.in_flight_count + conn.pending_count
                if load == 0:
                    return node.node_id
                if conn.can_send_more() and (best_ready is None or load < best_ready[0]):
                    best_ready = (load, node.node_id)
            elif conn is not None and conn.state is not ConnectionState.DISCONNECTED:
                connecting = node.node_id if connecting is None else connecting
            elif conn is None or not conn.in_backoff(now):
                idle = node.node_id if idle is None else idle
        if best_ready is not None:
            return best_ready[1]
        return connecting if connecting is not None else idle

    # ------------------------------------------------------------------ requests

    def send(self, node_id: int, api_key: int, body: RequestBody, version: int | None = None,
             timeout_ms: float | None = None, max_version: int | None = None
             ) -> Future[Response]:
        """Queue a request to ``node_id``, connecting first if needed. ``body`` is a dict, or a
        function of the version (chosen when the request goes on the wire) returning one. The
        future completes inside :meth:`poll`; it fails at once if the node is in reconnect
        backoff."""
        with self.lock:
            if self._closed:
                fut: Future[Response] = Future()
                fut.failure(KafkaConnectionError("the network client is closed"))
                return fut
            try:
                conn = self._connection(node_id)
            except KafkaConnectionError as e:   # the node left the cluster metadata
                # its partitions may be led elsewhere now, or it may be back: ask (the
                # refresh backoff keeps callers that retry at once from flooding the cluster)
                self.metadata.request_update()
                fut = Future()
                fut.failure(e)
                return fut
            if conn.state is ConnectionState.DISCONNECTED:
                if conn.in_backoff() and isinstance(conn.last_error, AuthenticationError):
                    # Java maybeThrowAuthFailure: the node refused us; say so, not "retry"
                    fut = Future()
                    fut.failure(conn.last_error)
                    return fut
                if conn.in_backoff():
                    fut = Future()
                    fut.failure(KafkaConnectionError(
                        f"{conn.describe} is in reconnect backoff for another "
                        f"{self.connection_delay_ms(node_id):.0f} ms"
                        + (f" after: {conn.last_error}" if conn.last_error else "")))
                    return fut
                self._initiate(conn)
                if conn.state is ConnectionState.DISCONNECTED:
                    # failed at once (the name did not resolve): do not leave the request
                    # queued on a closed connection until its timeout
                    fut = Future()
                    fut.failure(conn.last_error or KafkaConnectionError(
                        f"cannot connect to {conn.describe}"))
                    return fut
            fut = conn.send(api_key, body, version, timeout_ms, now=self._clock(),
                            max_version=max_version)
            self._update_registration(conn)
            return fut

    def request(self, node_id: int, api_key: int, body: RequestBody,
                version: int | None = None, timeout_ms: float | None = None) -> Response:
        """Send and wait: the response, or the request's error raised."""
        fut = self.send(node_id, api_key, body, version, timeout_ms)
        limit = (self.config.request_timeout_ms if timeout_ms is None else timeout_ms)
        # the request's own deadline fires first; the margin only covers scheduling
        self.poll(timeout_ms=limit + 1000, future=fut)
        if not fut.done:
            raise KafkaTimeoutError(
                f"{ApiKey(api_key).name} to node {node_id} not answered within {limit} ms")
        return fut.result()

    # ------------------------------------------------------------------ poll

    def add_poll_hook(self, hook: Callable[[float], float | None]) -> None:
        """Run ``hook(now)`` on every poll iteration (the heartbeat's step)."""
        with self.lock:
            self._hooks.append(hook)

    def remove_poll_hook(self, hook: Callable[[float], float | None]) -> None:
        with self.lock:
            if hook in self._hooks:
                self._hooks.remove(hook)

    def _run_hooks(self, now: float) -> float | None:
        wants = [w for hook in list(self._hooks) if (w := hook(now)) is not None]
        return min(wants) if wants else None

    def run_deferred(self) -> None:
        """Run the callbacks the heartbeat thread left for the application (in order)."""
        while self._deferred:
            fn, fut = self._deferred.pop(0)
            fn(fut)

    def _check_wakeup(self) -> None:
        if self._wakeup_requested:
            self._wakeup_requested = False
            raise WakeupError("the consumer was woken up (wakeup() was called)")

    def poll(self, timeout_ms: float | None = 0, future: Future[Any] | None = None,
             until: Callable[[], bool] | None = None, *, background: bool = False,
             wakeup: bool = True) -> None:
        """Do network I/O for up to ``timeout_ms`` (None: until ``future`` completes), returning
        early when ``future`` completes or ``until()`` turns true. With ``wakeup`` (the
        application's calls), a :meth:`wakeup` raises WakeupError. ``background``: the
        heartbeat thread's poll (no metadata refresh, callbacks deferred, wakeups left alone)."""
        deadline = None if timeout_ms is None else self._clock() + timeout_ms / 1000.0
        while True:
            with self.lock:
                if self._closed:
                    return
                if background:
                    now = self._clock()
                    self._run_hooks(now)
                    with defer_callbacks(self._deferred):
                        self._poll_once(0.0 if timeout_ms is None else
                                        max(0.0, min(timeout_ms / 1000.0, 1.0)))
                    return
                self.run_deferred()
                if wakeup:
                    self._check_wakeup()
                    self._raise_auth_error()
                now = self._clock()
                self._resolve_bootstrap(now)
                hook_wait = self._run_hooks(now)
                self._maybe_update_metadata()
                wait = (0.0 if until is not None and until()
                        else self._poll_wait(now, deadline, future))
                if hook_wait is not None:
                    wait = min(wait, hook_wait)
                self._poll_once(wait)
            if future is not None and future.done:
                return
            if until is not None and until():
                return
            if wakeup:
                self._check_wakeup()
            if deadline is not None and self._clock() >= deadline:
                return

    def _raise_auth_error(self) -> None:
        """An application call (not close, not the heartbeat thread) raises the last
        authentication failure, once."""
        if self._auth_error is not None:
            error, self._auth_error = self._auth_error, None
            raise error

    def _poll_wait(self, now: float, deadline: float | None, future: Future[Any] | None) -> float:
        if future is not None and future.done:
            return 0.0
        limits = [] if deadline is None else [deadline - now]
        for conn in self._conns.values():
            d = conn.next_deadline()
            if d is not None:
                limits.append(d - now)
        if self.metadata_topics is None or self.metadata_topics:
            limits.append(self._metadata_wait(now))
        if self._unresolved is not None:
            limits.append(self._resolve_at - now)      # the next bootstrap lookup
        if not limits:
            return 1.0   # nothing scheduled: wake now and then to re-check (wakeups interrupt)
        return min(max(0.0, min(limits)), 1.0)

    def _poll_once(self, wait: float) -> None:
        for key, events in self._selector.select(wait):
            if key.data is None:
                try:
                    while self._waker_r.recv(1024):
                        pass
                except (BlockingIOError, InterruptedError):
                    pass
                continue
            conn: BrokerConnection = key.data
            now = self._clock()
            if events & selectors.EVENT_WRITE:
                conn.on_writable(now)
            if events & selectors.EVENT_READ and conn.sock is not None:
                conn.on_readable(now)
        now = self._clock()
        for conn in list(self._conns.values()):
            conn.check_timeouts(now)
            if conn.is_idle_expired(now):
                log.debug("closing %s: idle for connections.max.idle.ms", conn.describe)
                conn.close()
            self._update_registration(conn)

    def _update_registration(self, conn: BrokerConnection) -> None:
        node_id = conn.node.node_id
        fd = conn.fileno()
        if fd < 0:
            self._unregister(node_id)
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.wants_write() else 0)
        current = self._registered.get(node_id)
        if current is not None and current[2] is conn.sock:
            if current[1] == events:
                return
            self._selector.modify(conn.sock, events, conn)  # type: ignore[arg-type]
        else:
            self._unregister(node_id)
            # a connection closed behind our back (the coordinator's, when it moves) leaves its
            # registration; the OS hands its number to the next socket
            for other, (other_fd, _, _) in list(self._registered.items()):
                if other_fd == fd:
                    self._unregister(other)
            self._selector.register(conn.sock, events, conn)  # type: ignore[arg-type]
        self._registered[node_id] = (fd, events, conn.sock)

    def _unregister(self, node_id: int) -> None:
        current = self._registered.pop(node_id, None)
        if current is None:
            return
        try:
            self._selector.unregister(current[0])
        except (KeyError, ValueError):
            pass

    def clear_wakeup(self) -> None:
        self._wakeup_requested = False

    def wakeup(self) -> None:
        """Make the application's current (or next) blocking :meth:`poll` raise WakeupError;
        callable from any thread."""
        self._wakeup_requested = True
        try:
            self._waker_w.send(b"\x00")
        except (BlockingIOError, OSError):
            pass

    # ------------------------------------------------------------------ bootstrap

    def _resolve_bootstrap(self, now: float) -> None:
        """bootstrap.resolve.timeout.ms > 0 (KIP-909): look the bootstrap hosts up until one
        resolves, reconnect.backoff.ms apart (growing to reconnect.backoff.max.ms); past
        the deadline raise a ConfigurationError naming them, now and on every later poll."""
        if self._resolve_error is not None:
            raise self._resolve_error
        if self._unresolved is None or now < self._resolve_at:
            return
        resolved, failed = resolve_bootstrap_servers(self._unresolved)
        self._resolve_failed = unresolved_text(failed)
        if resolved:
            if failed:
                log.warning("bootstrap.servers: %s did not resolve and will not be used",
                            unresolved_text(failed))
            self._unresolved = None
            try:
                self.metadata.set_bootstrap(canonical_bootstrap_servers(resolved)
                                            if self._canonical else resolved)
            except ConfigurationError as e:
                self._resolve_error = e
                raise
            return
        if now >= self._resolve_deadline:
            self._resolve_error = ConfigurationError(
                f"no bootstrap.servers entry resolved within bootstrap.resolve.timeout.ms="
                f"{self.config.bootstrap_resolve_timeout_ms}: {unresolved_text(failed)}; this "
                f"consumer cannot recover: close it and create a new one once DNS answers or "
                f"bootstrap.servers is fixed")
            log.warning("%s", self._resolve_error)
            raise self._resolve_error
        wait_ms = self._resolve_backoff.backoff_ms(self._resolve_attempts)
        self._resolve_attempts += 1
        self._resolve_at = min(now + wait_ms / 1000.0, self._resolve_deadline)
        log.info("bootstrap.servers: %s did not resolve; trying again in %.0f ms",
                 unresolved_text(failed), wait_ms)

    # ------------------------------------------------------------------ metadata

    def _metadata_wait(self, now: float) -> float:
        """Seconds until the background metadata refresh needs the loop: while a request is
        out, never (its socket and deadline wake the loop); when one is due but every broker
        is in reconnect backoff, until the first backoff ends (Java's NetworkClient waits
        reconnect.backoff.ms there too), not 0, which would spin."""
        if self._metadata_future is not None and not self._metadata_future.done:
            return float("inf")
        due = self.metadata.time_to_next_update_ms(now) / 1000.0
        if due > 0 or self.least_loaded_node() is not None:
            return due
        delays = [self.connection_delay_ms(n.node_id) for n in self.metadata.nodes()]
        return max(min(delays, default=self.config.reconnect_backoff_ms), 1.0) / 1000.0

    def _maybe_update_metadata(self) -> None:
        """Send a Metadata request in the background when one is due (age or request)."""
        if self.metadata_topics is not None and not self.metadata_topics:
            return
        if self._metadata_future is not None and not self._metadata_future.done:
            return
        if self.metadata.time_to_next_update_ms() > 0:
            return
        node_id = self._metadata_node()
        if node_id is None or self._metadata_stale():
            if not self._maybe_rebootstrap():
                return
            node_id = self._metadata_node()
            if node_id is None:
                return
        self._metadata_future = self._send_metadata(node_id, self.metadata_topics)

    def _metadata_node(self) -> int | None:
        """Where a Metadata request goes: the least loaded node; after a rebootstrap, the least
        loaded bootstrap server (a known broker still answering fetches may be the one whose
        metadata never comes)."""
        if self.metadata.rebootstrapping:
            return self.least_loaded_node(self.metadata.bootstrap_nodes)
        return self.least_loaded_node()

    def _metadata_stale(self) -> bool:
        """No metadata came for metadata.recovery.rebootstrap.trigger.ms of failed attempts."""
        since = self.metadata.failing_since
        return since is not None and (self._clock() - since) * 1000.0 >= \
            self.config.metadata_recovery_rebootstrap_trigger_ms

    def _maybe_rebootstrap(self) -> bool:
        """metadata.recovery.strategy=rebootstrap (Java's): once every known broker backs off
        after failing, or no metadata came for the trigger time, start again from
        bootstrap.servers, looked up again (a cluster whose brokers all moved is found anew
        through the name it is known by). Only from known brokers: on the bootstrap list
        itself (or once it is tried again), the reconnect backoff paces the attempts. True when
        it rebootstrapped."""
        if self.config.metadata_recovery_strategy.lower() != "rebootstrap" \
                or not self.metadata.brokers or self.metadata.rebootstrapping:
            return False
        if self._canonical:
            servers = canonical_bootstrap_servers(self.config.bootstrap_servers)
        else:
            servers, failed = resolve_bootstrap_servers(self.config.bootstrap_servers)
            if not servers:
                log.warning("rebootstrap: no bootstrap.servers entry resolves (%s); asking the "
                            "known brokers again", unresolved_text(failed))
                return False
        log.warning("no known broker could be reached (%s): rebootstrapping from %s",
                    ", ".join(f"{n.host}:{n.port}" for n in self.metadata.brokers.values()),
                    ", ".join(f"{h}:{p}" for h, p in servers))
        self.metadata.rebootstrap(servers)
        return True

    def _send_metadata(self, node_id: int, topics: Iterable[str] | None) -> Future[Response]:
        listed = None if topics is None else sorted(topics)
        allow = self.config.allow_auto_create_topics
        # the body's shape depends on the version, known once the connection negotiated
        fut = self.send(node_id, ApiKey.METADATA,
                        lambda version: metadata_request_body(version, listed, allow))
        def apply(f: Future[Response]) -> None:
            if f.succeeded():
                assert f.value is not None
                try:
                    self.metadata.update(body_of(f.value, ApiKey.METADATA), listed)
                except KafkaError as e:
                    log.warning("metadata from node %d refused: %s", node_id, e)
                    self.metadata.failed_update()
            else:
                self.metadata.failed_update()
        fut.add_callback(apply)
        return fut

    def update_metadata(self, topics: Iterable[str] | None = None,
                        timeout_ms: float | None = None) -> ClusterMetadata:
        """Fetch metadata now (``topics`` None: every topic), trying brokers in turn until one
        answers; raises :class:`KafkaTimeoutError` (or :class:`NoBrokersAvailable` when no
        broker could even be reached) after ``timeout_ms`` (default.api.timeout.ms).

        Before the first answer, a refusal is definite where a timeout is not: once every
        bootstrap server refused the connection during this call (nothing listens there, or
        it speaks the other security protocol), :class:`NoBrokersAvailable` is raised at
        once instead of after ``timeout_ms``; a server that is merely slow is waited for."""
        timeout_ms = self.config.default_api_timeout_ms if timeout_ms is None else timeout_ms
        started = self._clock()
        deadline = started + timeout_ms / 1000.0
        listed = None if topics is None else list(topics)
        errors: dict[int, KafkaError] = {}
        reached = False
        while True:
            with self.lock:
                node_id = self._metadata_node()
                if (node_id is None or self._metadata_stale()) and self._maybe_rebootstrap():
                    node_id = self._metadata_node()
                if node_id is not None:
                    fut = self._send_metadata(node_id, listed)
            if node_id is None:
                # every broker is backing off: wait for the first to come out of it
                delays = [self.connection_delay_ms(n.node_id) for n in self.metadata.nodes()]
                self.poll(timeout_ms=max(1.0, min(delays, default=50.0)))
            else:
                self.poll(timeout_ms=max(0.0, (deadline - self._clock()) * 1000.0), future=fut)
                if fut.succeeded() and fut.value is not None:
                    if self.metadata.last_refresh is not None:
                        return self.metadata
                elif fut.done:
                    assert fut.exception is not None
                    err = fut.exception
                    if isinstance(err, KafkaError):
                        errors[node_id] = err
                    if not isinstance(err, KafkaConnectionError):
                        reached = True
                    if isinstance(err, KafkaError) and not err.retriable:
                        raise err
            refused = self._bootstrap_refused(since=started)
            if refused:
                raise NoBrokersAvailable(
                    f"every bootstrap server refused the connection ({self._bootstrap_text()}): "
                    + "; ".join(str(c.last_error) for c in refused))
            if self._clock() >= deadline:
                unresolved = ([f"no bootstrap.servers entry resolved yet: {self._resolve_failed}"]
                              if self._unresolved is not None and self._resolve_failed else [])
                detail = "; ".join([f"node {n}: {e}" for n, e in errors.items()]
                                   + self._setups_in_progress(errors) + unresolved) or "no answer"
                timed_out: NoBrokersAvailable | KafkaTimeoutError
                if not reached and errors:
                    timed_out = NoBrokersAvailable(
                        f"no broker of {self._bootstrap_text()} could be reached within "
                        f"{timeout_ms:.0f} ms ({detail})")
                else:
                    timed_out = KafkaTimeoutError(
                        f"metadata not received within {timeout_ms:.0f} ms ({detail})")
                timed_out.detail = detail
                raise timed_out
            if self._closed:
                raise KafkaConnectionError("the network client is closed")

    def _bootstrap_refused(self, since: float) -> list[BrokerConnection]:
        """The bootstrap connections, when each one's last round of attempts, ended after
        ``since``, was refused for sure; else []. Only before the first metadata answer:
        brokers known to exist that refuse may be restarting."""
        if self.metadata.brokers or not self.metadata.bootstrap_nodes:
            return []
        conns = [self._conns.get(n.node_id) for n in self.metadata.bootstrap_nodes]
        out = [c for c in conns if c is not None and c.refused_at is not None
               and c.refused_at >= since]
        return out if len(out) == len(conns) else []

    def _setups_in_progress(self, errors: Mapping[int, KafkaError]) -> list[str]:
        """What the connections still being set up are waiting for (for a timeout's text,
        beside ``errors``, the last error of each node)."""
        out = []
        for n in self.metadata.nodes():
            conn = self._conns.get(n.node_id)
            if conn is None or conn.state in (ConnectionState.DISCONNECTED, ConnectionState.READY):
                continue
            hint = NO_TLS_ANSWER if conn.tls_handshaking else ""
            # a node whose last attempt already failed at ApiVersions has it said once
            if conn.state is ConnectionState.NEGOTIATING and \
                    conn.no_api_versions_answer() not in str(errors.get(n.node_id, "")):
                hint = conn.no_api_versions_answer(waiting=True)
            out.append(f"{conn.describe}: connection still {conn.state.value}{hint}")
        return out

    def _bootstrap_text(self) -> str:
        return ", ".join(f"{b.host}:{b.port}" for b in self.metadata.bootstrap_nodes)

    # ------------------------------------------------------------------ close

    def close(self) -> None:
        """Close every connection; outstanding requests fail with a connection error."""
        with self.lock:
            if self._closed:
                return
            self._closed = True
            for node_id, conn in list(self._conns.items()):
                self._unregister(node_id)
                conn.close(KafkaConnectionError("the network client is closed"))
            self._conns.clear()
            self._selector.close()
            self._waker_r.close()
            self._waker_w.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def known_nodes(self) -> list[BrokerInfo]:
        return self.metadata.nodes()

    def ready_nodes(self) -> list[BrokerInfo]:
        """The nodes with a READY connection (bootstrap ones, with negative ids, included)."""
        return [c.node for c in self._conns.values() if c.is_ready()]


__all__ = ["NetworkClient", "metadata_request_body", "SOFTWARE_NAME"]
