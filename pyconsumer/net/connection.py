"""One non-blocking TCP connection to one broker.

State machine (Java ``ConnectionState`` + ``ClusterConnectionStates``)::

    DISCONNECTED --connect()--> CONNECTING --writable--> NEGOTIATING --ApiVersions--> READY
         ^                          |                        |                          |
         +--------- failure, close, timeout (reconnect backoff starts) ---------------+

``AUTHENTICATING`` is the TLS handshake (``security.protocol=SSL``/``SASL_SSL``), between
CONNECTING and NEGOTIATING, and, with ``SASL_PLAINTEXT``/``SASL_SSL``, the SASL exchange after
ApiVersions: SaslHandshake (v1; v0 makes the tokens raw length-prefixed frames), then
SaslAuthenticate rounds driven by a :class:`~pyconsumer.net.sasl.SaslMechanism`, then READY.
A SASL failure closes the connection with a :class:`~pyconsumer.errors.SaslAuthenticationError`,
a TLS handshake refused (a certificate, a protocol, an alert) with a
:class:`~pyconsumer.errors.SslAuthenticationError` (both not retriable: the requests waiting
for the connection fail with it, and the next attempt waits for the reconnect backoff).
KIP-368: when the broker gives a session lifetime, a READY connection re-authenticates at
85-95 % of it: new requests are held, the ones in flight are answered, the exchange runs on
the same connection, then the held requests go.

A connection tries every address its host name resolves to, in turn, re-resolving once all
were tried (``client.dns.lookup=use_all_dns_ips``). The setup (TCP connect, TLS handshake,
ApiVersions) must finish within the connection setup timeout: ``socket.connection.setup.
timeout.ms`` with +-20 % jitter, doubling per attempt that failed while connecting up to
``socket.connection.setup.timeout.max.ms`` (Java ``ClusterConnectionStates``).

The connection owns framing (4-byte length prefix; a length above ``max.response.size`` is
refused before anything is allocated), correlation ids (responses must come back in the
order sent, as Kafka guarantees per connection), the in-flight limit, request deadlines
(``request.timeout.ms``; an expired in-flight request closes the connection, as in Java, since
the stream can no longer be trusted) and the connection state. Socket set-up (DNS, connect,
TLS) is :mod:`pyconsumer.net.transport`; what the ApiVersions answer allows,
:mod:`pyconsumer.net.versions`; the SASL exchange, :mod:`pyconsumer.net.sasl.authenticator`.
It does no I/O of its own accord:
:class:`~pyconsumer.net.client.NetworkClient` calls :meth:`on_writable`, :meth:`on_readable`
and :meth:`check_timeouts` from its selector loop.
"""
from __future__ import annotations

import collections
import enum
import logging
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from pyconsumer import protocol
from pyconsumer.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    SaslAuthenticationError,
)
from pyconsumer.net import transport
from pyconsumer.net.backoff import ExponentialBackoff
from pyconsumer.net.future import Future
from pyconsumer.net.sasl import SaslSettings
from pyconsumer.net.sasl.authenticator import SaslAuthenticator, SaslHandler
from pyconsumer.net.transport import NO_TLS_ANSWER, WOULD_BLOCK, Address, SetupFailure
from pyconsumer.net.versions import FIRST_API_VERSIONS, BrokerVersions, read_api_versions
from pyconsumer.protocol import ApiKey
from pyconsumer.protocol.bodies import ApiVersionsRequest, SaslAuthenticateRequest, SaslHandshakeRequest
from pyconsumer.structs import BrokerInfo

log = logging.getLogger(__name__)


#: a response frame as read: a bytearray, or a view onto a pooled buffer (FramePool)
Frame = bytearray | memoryview

#: frames of at least this many bytes are read into pooled buffers (FramePool)
_REUSE_FRAME_BYTES = 1 << 20


class FramePool:
    """Large frame buffers (Fetch answers) kept for reuse, shared by every connection of the
    process: a fresh 50 MB bytearray costs a page fault per 4 KB (~35 ms), more than reading
    the answer. A frame is a memoryview of exactly its size onto a kept buffer at least that
    large (never shrunk: an answer of 17 MB after one of 50 MB must not cost the next 50 MB
    one a new buffer). A buffer is reused once nothing refers to it any more (every record of
    its answer handed out: every view of it released). At most ``keep`` are kept (one answer
    draining, the next arriving), so the memory held is bounded per process (``keep`` x the
    largest answer), not per connection; a consumer made after another one closed (a Spark
    task after the previous one) starts with warm buffers."""

    def __init__(self, keep: int = 2) -> None:
        self.keep = keep
        self._frames: list[bytearray] = []
        self._lock = threading.Lock()

    def take(self, size: int) -> Frame:
        """A frame of exactly ``size`` bytes (contents undefined): a bytearray below
        _REUSE_FRAME_BYTES, else a view onto a pooled buffer."""
        if size < _REUSE_FRAME_BYTES:
            return bytearray(size)
        with self._lock:
            frames = self._frames
            best = -1
            for i in range(len(frames)):        # (enumerate's tuple would hold a reference)
                # referenced by the list and getrefcount's argument only: free to reuse
                if sys.getrefcount(frames[i]) == 2 and len(frames[i]) >= size \
                        and (best < 0 or len(frames[i]) < len(frames[best])):
                    best = i
            if best >= 0:
                return memoryview(frames[best])[:size]
            frame = bytearray(size)
            if len(frames) < self.keep:
                frames.append(frame)
            else:
                # larger than every free kept buffer: kept in place of the smallest free one
                free = [i for i in range(len(frames)) if sys.getrefcount(frames[i]) == 2]
                if free:
                    frames[min(free, key=lambda i: len(frames[i]))] = frame
            return memoryview(frame)[:size]

    def clear(self) -> None:
        """Drop the kept buffers (their memory goes once nothing else refers to them)."""
        with self._lock:
            self._frames.clear()


#: the process's pool of large frame buffers
FRAMES = FramePool()


class ConnectionState(enum.Enum):
    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    NEGOTIATING = "negotiating"
    AUTHENTICATING = "authenticating"
    READY = "ready"


class Response(NamedTuple):
    """A decoded response: which API and version it answers, from which node, and its body
    (a dict of snake_case field names; a Fetch's ``records`` are zero-copy memoryviews)."""

    api_key: ApiKey
    version: int
    node_id: int
    body: dict[str, Any]


#: a request body (a dict, or a TypedDict of protocol.bodies), or a function of the version
#: (chosen when the request is sent) giving one
RequestBody = Mapping[str, Any] | Callable[[int], Mapping[str, Any]]


class _Request:
    __slots__ = ("api_key", "version", "body", "future", "deadline", "correlation_id",
                 "internal", "max_version", "handler")

    def __init__(self, api_key: ApiKey, version: int | None, body: RequestBody,
                 future: Future[Response], deadline: float, internal: bool = False,
                 max_version: int | None = None,
                 handler: Callable[[_Request, Frame, float], None] | None = None) -> None:
        #: internal requests (ApiVersions, SASL) are answered to this, not to a future
        self.handler = handler
        self.api_key = api_key
        self.max_version = max_version
        self.version = version
        self.body = body
        self.future = future
        self.deadline = deadline
        self.correlation_id = -1
        self.internal = internal


class ConnectionSettings(NamedTuple):
    """What a connection needs from the consumer settings (times in ms)."""

    client_id: str | None
    request_timeout_ms: int
    connection_setup_timeout_ms: int
    max_in_flight: int
    max_response_size: int
    reconnect_backoff_ms: int
    reconnect_backoff_max_ms: int
    connections_max_idle_ms: int = -1
    send_buffer_bytes: int = -1
    receive_buffer_bytes: int = -1
    #: ceiling of the connection setup timeout, which doubles per failed attempt (Java
    #: socket.connection.setup.timeout.max.ms); -1: a constant connection_setup_timeout_ms
    connection_setup_timeout_max_ms: int = -1
    software_name: str = "pyconsumer"
    software_version: str = "0"
    ssl_context: ssl.SSLContext | None = None      # security.protocol=SSL / SASL_SSL
    sasl: SaslSettings | None = None                # security.protocol=SASL_*


class BrokerConnection:
    """A connection to ``node``; see the module doc. Not thread-safe: the client serialises."""

    def __init__(self, node: BrokerInfo, settings: ConnectionSettings,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.node = node
        self.settings = settings
        self._clock = clock
        self.state = ConnectionState.DISCONNECTED
        self.sock: socket.socket | None = None
        self._backoff = ExponentialBackoff(settings.reconnect_backoff_ms,
                                           settings.reconnect_backoff_max_ms)
        self.failures = 0                    # consecutive failed attempts, for the backoff
        # connection setup timeout (Java ClusterConnectionStates): socket.connection.setup.
        # timeout.ms with jitter, doubling per attempt that failed while connecting (TCP or
        # TLS) up to socket.connection.setup.timeout.max.ms; back to the first value once a
        # connection is up. A slow network gets longer attempts instead of endless short ones.
        top = settings.connection_setup_timeout_max_ms
        self._setup_timeout = ExponentialBackoff(
            settings.connection_setup_timeout_ms,
            settings.connection_setup_timeout_ms if top < 0 else top)
        #: consecutive attempts that failed while connecting (Java failedConnectAttempts)
        self.setup_failures = 0
        #: the setup timeout of the current (or next) attempt, ms
        self.setup_timeout_ms = self._setup_timeout.backoff_ms(0)
        self.backoff_until = 0.0             # monotonic seconds; no reconnect before this
        #: the last error that closed this connection (kept after a reconnect, for diagnosis)
        self.last_error: KafkaError | None = None
        self._setup_deadline = 0.0
        #: resolved addresses of the host, tried in turn; index of the one in use
        self._addresses: list[Address] = []
        self._address_index = 0
        self._address: Any = None
        self._next_correlation_id = 0
        self._pending: collections.deque[_Request] = collections.deque()   # not yet sent
        self._in_flight: collections.deque[_Request] = collections.deque()  # sent, in order
        self._out = bytearray()
        self._out_pos = 0
        self._header = bytearray()
        self._frame: Frame | None = None
        self._frame_view: memoryview | None = None
        self._frame_filled = 0
        #: what the broker advertises (ApiVersions), the versions requests use
        self._versions = BrokerVersions()
        #: monotonic time of the last byte sent or received (connections.max.idle.ms)
        self.last_activity = 0.0
        self._hs_wants_write = False           # the TLS handshake waits to write
        #: called after a failure closed the connection (the client refreshes metadata)
        self.on_failure: Callable[[BrokerConnection], None] | None = None
        #: the last round of attempts (every address of the host) failed before the
        #: connection was ready: the broker is unreachable for now; cleared when READY
        self.unreachable = False
        #: when the last round ended with every address refusing for sure (connection
        #: refused, or a peer speaking the other security protocol): None otherwise. A
        #: refusal is definite where a timeout is not (a slow broker may still answer).
        self.refused_at: float | None = None
        self._round_refused = True            # every attempt of this round so far refused
        #: SASL (first authentication and KIP-368 re-authentication); idle without SASL
        self._auth = SaslAuthenticator(self, settings.sasl, node.host,
                                       tls=settings.ssl_context is not None)

    # ------------------------------------------------------------------ status

    def __repr__(self) -> str:
        return (f"<BrokerConnection {self.node} {self.state.value} "
                f"in_flight={len(self._in_flight)} pending={len(self._pending)}>")

    @property
    def describe(self) -> str:
        return f"node {self.node.node_id} ({self.node.host}:{self.node.port})"

    @property
    def in_flight_count(self) -> int:
        return len(self._in_flight)

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def is_ready(self) -> bool:
        return self.state is ConnectionState.READY

    def _authenticating(self) -> bool:
        """The TLS handshake is in progress (the SASL part of AUTHENTICATING is not)."""
        return self.state is ConnectionState.AUTHENTICATING and not self._auth.in_progress

    @property
    def tls_handshaking(self) -> bool:
        return self._authenticating()

    @property
    def sasl_in_progress(self) -> bool:
        """A SASL exchange runs (first authentication or KIP-368 re-authentication)."""
        return self._auth.in_progress

    @property
    def sasl_authentications(self) -> int:
        """SASL exchanges completed on this object (first ones and re-authentications)."""
        return self._auth.authentications

    @property
    def sasl_reauthentications(self) -> int:
        return self._auth.reauthentications

    @property
    def sasl_session_lifetime_ms(self) -> int:
        """The session lifetime the broker gave at the last authentication, ms (0: none)."""
        return self._auth.session_lifetime_ms

    def can_send_more(self) -> bool:
        return (self.is_ready() and not self._auth.holds_requests
                and len(self._in_flight) < self.settings.max_in_flight)

    def in_backoff(self, now: float | None = None) -> bool:
        now = self._clock() if now is None else now
        return self.state is ConnectionState.DISCONNECTED and now < self.backoff_until

    def wants_write(self) -> bool:
        if self._authenticating():
            return self._hs_wants_write
        return self.state is ConnectionState.CONNECTING or self._out_pos < len(self._out)

    def fileno(self) -> int:
        return -1 if self.sock is None else self.sock.fileno()

    def next_deadline(self) -> float | None:
        """The earliest monotonic time at which :meth:`check_timeouts` has work."""
        times = []
        if self.state in (ConnectionState.CONNECTING, ConnectionState.NEGOTIATING,
                          ConnectionState.AUTHENTICATING):
            times.append(self._setup_deadline)
        if self._in_flight:
            times.append(min(r.deadline for r in self._in_flight))
        elif self.is_ready() and self.settings.connections_max_idle_ms >= 0:
            times.append(self.last_activity + self.settings.connections_max_idle_ms / 1000.0)
        reauth_at = self._auth.next_deadline()
        if self.is_ready() and reauth_at is not None:
            times.append(reauth_at)
        if self._pending:
            times.append(min(r.deadline for r in self._pending))
        return min(times) if times else None

    # ------------------------------------------------------------------ versions

    @property
    def broker_versions(self) -> dict[int, tuple[int, int]]:
        """api key -> (min, max) the broker advertises; filled by negotiation."""
        return self._versions.ranges

    @property
    def finalized_features(self) -> dict[str, int]:
        """Feature name -> finalized level the broker advertised (empty: none, or not yet)."""
        return self._versions.finalized_features

    @property
    def api_versions_version(self) -> int | None:
        """The ApiVersions version the broker answered without error."""
        return self._versions.answered

    def version_for(self, api_key: int, min_version: int = 0, max_version: int | None = None) -> int:
        """The highest version of ``api_key`` both sides support (within the given bounds)."""
        return self._versions.version_for(api_key, self.describe, min_version, max_version)

    def negotiated_versions(self) -> dict[str, int]:
        """API name -> version this connection uses, for every API both sides share."""
        return self._versions.negotiated(self.describe)

    # ------------------------------------------------------------------ connect

    def connect(self, now: float | None = None) -> None:
        """Start a non-blocking connect (DISCONNECTED -> CONNECTING)."""
        if self.state is not ConnectionState.DISCONNECTED:
            return
        now = self._clock() if now is None else now
        if self._address_index >= len(self._addresses):
            # (re)resolve once every address of the last lookup has been tried: DNS may
            # have changed (client.dns.lookup=use_all_dns_ips)
            try:
                self._addresses = transport.resolve(self.node.host, self.node.port,
                                                    self.describe)
            except SetupFailure as f:
                self._fail(f.error, now)
                return
            self._address_index = 0
        if self._address_index == 0:
            self._round_refused = True          # a new round over the host's addresses
        address = self._addresses[self._address_index]
        self._address = address[3]
        log.debug("connecting to %s", self.describe)
        sock, code = transport.start_connect(address, self.settings.send_buffer_bytes,
                                             self.settings.receive_buffer_bytes)
        self.sock = sock
        self.state = ConnectionState.CONNECTING
        self._setup_deadline = now + self.setup_timeout_ms / 1000.0
        if not transport.connect_in_progress(code):
            self._setup_failed(transport.connect_failure(code, self.describe, self._address),
                               now)

    def _setup_failed(self, failure: SetupFailure, now: float) -> None:
        self._fail(failure.error, now, refused=failure.refused)

    def _connected(self, now: float) -> None:
        """TCP is up: TLS first when configured, then negotiate versions with ApiVersions."""
        ctx = self.settings.ssl_context
        if ctx is not None:
            assert self.sock is not None
            try:
                self.sock = transport.wrap_tls(ctx, self.sock, self.node.host, self.describe)
            except SetupFailure as f:
                self._setup_failed(f, now)
                return
            self.state = ConnectionState.AUTHENTICATING
            self._handshake(now)
            return
        self._start_negotiation(now)

    def _start_negotiation(self, now: float) -> None:
        self.state = ConnectionState.NEGOTIATING
        self._reset_setup_timeout()   # connected (Java: CHECKING_API_VERSIONS)
        self._send_api_versions(FIRST_API_VERSIONS, now)

    def _handshake(self, now: float) -> None:
        """One step of the non-blocking TLS handshake."""
        assert isinstance(self.sock, ssl.SSLSocket)
        try:
            wants_write = transport.tls_handshake(self.sock, self.describe, self._address)
        except SetupFailure as f:
            self._setup_failed(f, now)
            return
        self._hs_wants_write = bool(wants_write)
        if wants_write is None:
            self._start_negotiation(now)

    def _send_api_versions(self, version: int, now: float) -> None:
        body: ApiVersionsRequest = {}
        if version >= 3:
            body = {"client_software_name": self.settings.software_name,
                    "client_software_version": self.settings.software_version}
        fut: Future[Response] = Future()
        req = _Request(ApiKey.API_VERSIONS, version, body, fut,
                       now + self.settings.request_timeout_ms / 1000.0, internal=True,
                       handler=self._handle_api_versions)
        self._write_request(req)

    # ------------------------------------------------------------------ requests

    def send(self, api_key: int, body: RequestBody, version: int | None = None,
             timeout_ms: float | None = None, now: float | None = None,
             max_version: int | None = None) -> Future[Response]:
        """Queue a request; it goes on the wire when the connection is READY and under the
        in-flight limit. ``version`` None means the negotiated one (at most ``max_version``).
        The future completes with a :class:`Response` or fails with a :class:`KafkaError`."""
        now = self._clock() if now is None else now
        timeout = self.settings.request_timeout_ms if timeout_ms is None else timeout_ms
        fut: Future[Response] = Future()
        self._pending.append(_Request(ApiKey(api_key), version, body, fut, now + timeout / 1000.0,
                                      max_version=max_version))
        self._flush_pending(now)
        self._write_eagerly(now)
        return fut

    def _write_eagerly(self, now: float) -> None:
        """Put queued requests on the wire now instead of after the next select (the socket
        is nearly always writable). Errors are left to on_writable, which fails the
        connection in the poll loop rather than inside a caller's send()."""
        if self.state is not ConnectionState.READY or self.sock is None:
            return
        try:
            self._write_out(now)
        except OSError:
            pass

    def _write_out(self, now: float) -> None:
        """Write the queued bytes until none are left or the socket would block; other
        errors are raised."""
        assert self.sock is not None
        while self._out_pos < len(self._out):
            try:
                sent = self.sock.send(memoryview(self._out)[self._out_pos:])
            except WOULD_BLOCK:
                return
            self._out_pos += sent
            self.last_activity = now
        self._out.clear()
        self._out_pos = 0

    def _flush_pending(self, now: float) -> None:
        while self._pending and self.can_send_more():
            req = self._pending.popleft()
            try:
                if req.version is None:
                    req.version = self.version_for(req.api_key, max_version=req.max_version)
                else:
                    self._versions.check(req.api_key, req.version, self.describe)
                self._write_request(req)
            except KafkaError as e:
                req.future.failure(e)
            except (KeyError, TypeError, ValueError, OverflowError) as e:
                # a body that does not encode is the caller's bug; say which request it was
                req.future.failure(KafkaProtocolError(
                    f"cannot encode {req.api_key.name} v{req.version} for {self.describe}: "
                    f"{type(e).__name__}: {e}"))

    def _write_request(self, req: _Request) -> None:
        assert req.version is not None
        correlation_id = self._next_correlation_id
        body = req.body(req.version) if callable(req.body) else req.body
        frame = protocol.encode_request(req.api_key, req.version, correlation_id,
                                        self.settings.client_id, body)
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        req.correlation_id = correlation_id
        if self._out_pos == len(self._out):
            self._out.clear()
            self._out_pos = 0
        self._out += frame
        self._in_flight.append(req)

    # ------------------------------------------------------------------ I/O events

    def on_writable(self, now: float | None = None) -> None:
        now = self._clock() if now is None else now
        if self.sock is None:
            return
        if self.state is ConnectionState.CONNECTING:
            code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                self._setup_failed(
                    transport.connect_failure(code, self.describe, self._address), now)
                return
            self._connected(now)
            if self.sock is None or self._authenticating():
                return
        elif self._authenticating():
            self._handshake(now)
            if self.sock is None or self._authenticating():
                return
        try:
            self._write_out(now)
        except OSError as e:
            self._fail(KafkaConnectionError(
                f"error writing to {self.describe}: {e.strerror or e}"), now)

    def on_readable(self, now: float | None = None) -> None:
        """Read what the socket has and complete the requests it answers."""
        now = self._clock() if now is None else now
        if self._authenticating():
            self._handshake(now)
            if self._authenticating():
                return
            self.on_writable(now)            # the ApiVersions request just queued
        while self.sock is not None:
            try:
                if self._frame is None:
                    chunk = self.sock.recv(4 - len(self._header))
                    if not chunk:
                        self._peer_closed(now)
                        return
                    self._header += chunk
                    if len(self._header) < 4:
                        continue
                    size = int.from_bytes(self._header, "big", signed=True)
                    tls = (transport.tls_record_kind(self._header)
                           if self._first_answer_pending()
                           and self.settings.ssl_context is None else None)
                    if tls is not None:
                        self._setup_failed(transport.tls_answer_to_plaintext(
                            self.describe, self._address, tls), now)
                        return
                    if self._auth.raw_waiting:
                        # SaslHandshake v0: a raw server token, which may be empty
                        if not 0 <= size <= self.settings.max_response_size:
                            self._fail(KafkaProtocolError(
                                f"{self.describe} sent a SASL token frame of {size} bytes"), now)
                            return
                        if size == 0:
                            self._header.clear()
                            self._sasl_raw_token(b"", now)
                            continue
                    elif size < 4 or size > self.settings.max_response_size:
                        self._fail(KafkaProtocolError(
                            f"{self.describe} sent a response frame of {size} bytes; a frame "
                            f"must hold 4 to max.response.size="
                            f"{self.settings.max_response_size} bytes (is it a Kafka broker, "
                            f"on a plaintext listener?)"), now)
                        return
                    self._frame = FRAMES.take(size)
                    self._frame_view = memoryview(self._frame)
                    self._frame_filled = 0
                assert self._frame_view is not None
                n = self.sock.recv_into(self._frame_view[self._frame_filled:])
                if n == 0:
                    self._peer_closed(now)
                    return
                self._frame_filled += n
                self.last_activity = now
                if self._frame_filled == len(self._frame):
                    frame = self._frame
                    self._frame_view.release()
                    self._frame = self._frame_view = None
                    self._header.clear()
                    self._complete(frame, now)
            except WOULD_BLOCK:
                return
            except ssl.SSLError as e:
                if not self._first_answer_pending():
                    self._fail(KafkaConnectionError(
                        f"error reading from {self.describe}: {e.strerror or e}"), now)
                    return
                # the first read's alert: a TLS 1.3 handshake refused after the fact
                self._fail(transport.tls_refused_after_handshake(self.describe, e), now)
                return
            except OSError as e:
                self._fail(KafkaConnectionError(
                    f"error reading from {self.describe}: {e.strerror or e}"
                    + self._silent_close_hint()), now)
                return

    def _first_answer_pending(self) -> bool:
        """Nothing has been read on this connection yet: the ApiVersions answer is due."""
        return (self.state is ConnectionState.NEGOTIATING and self.api_versions_version is None
                and self._frame is None)

    def _silent_close_hint(self) -> str:
        """Why a peer may drop a plaintext connection before answering its first request."""
        if self.settings.ssl_context is not None or not self._first_answer_pending() \
                or len(self._header) > 0:
            return ""
        return transport.SILENT_CLOSE_HINT

    def _peer_closed(self, now: float) -> None:
        if self._auth.raw:
            # SaslHandshake v0 has no way to say why: the broker just closes
            self._fail(SaslAuthenticationError(
                f"{self.describe} closed the connection during SASL {self._auth.mechanism_name()} "
                f"authentication (SaslHandshake v0 gives no reason; most likely the "
                f"credentials were refused)"), now)
            return
        if self._frame is not None:
            what = (f"closed the connection after {self._frame_filled} of {len(self._frame)} "
                    f"bytes of a response frame (truncated frame)")
        elif self._header:
            what = f"closed the connection inside a frame length ({len(self._header)} of 4 bytes)"
        elif self._in_flight:
            what = f"closed the connection with {len(self._in_flight)} request(s) unanswered"
        else:
            what = "closed the connection" + self._silent_close_hint()
        if self._auth.in_progress:
            # Java says the same: a broker may drop a client it will not authenticate, or
            # the network failed; retried after the backoff like any disconnect
            what += (f" during SASL {self._auth.mechanism_name()} authentication (the broker may "
                     f"not support this mechanism, or refused the credentials)")
        self._fail(KafkaConnectionError(f"{self.describe} {what}"), now)

    def _complete(self, frame: Frame, now: float) -> None:
        if self._auth.raw_waiting:
            self._sasl_raw_token(bytes(frame), now)
            return
        if not self._in_flight:
            self._fail(KafkaProtocolError(
                f"{self.describe} sent a response of {len(frame)} bytes with no request "
                f"outstanding"), now)
            return
        req = self._in_flight[0]
        correlation_id = int.from_bytes(frame[:4], "big", signed=True)
        if correlation_id != req.correlation_id:
            self._fail(KafkaProtocolError(
                f"{self.describe} answered correlation id {correlation_id}, expected "
                f"{req.correlation_id} ({req.api_key.name} v{req.version})"), now)
            return
        self._in_flight.popleft()
        assert req.version is not None
        if req.internal:
            assert req.handler is not None
            req.handler(req, frame, now)
            return
        try:
            _, body = protocol.decode_response(req.api_key, req.version, frame)
        except KafkaProtocolError as e:
            # a body that does not parse means the peer does not speak our protocol version:
            # do not trust the rest of the stream either
            err = KafkaProtocolError(f"{self.describe}: {e}")
            self._fail(err, now, first=req)
            return
        req.future.success(Response(req.api_key, req.version, self.node.node_id, body))
        if self._auth.reauth_wanted:
            self._maybe_reauthenticate(now)
        self._flush_pending(now)

    def _handle_api_versions(self, req: _Request, frame: Frame, now: float) -> None:
        assert req.version is not None
        try:
            answer = read_api_versions(req.version, frame, self.describe)
        except KafkaError as e:
            self._fail(e, now)
            return
        if isinstance(answer, int):
            log.debug("%s refused ApiVersions v%d; retrying with v%d", self.describe,
                      req.version, answer)
            self._send_api_versions(answer, now)
            return
        self._versions.accept(req.version, answer)
        if self.settings.sasl is not None:
            self.state = ConnectionState.AUTHENTICATING
            self._auth.start(now, reauth=False)
            return
        self._become_ready(now)

    def _become_ready(self, now: float) -> None:
        self.state = ConnectionState.READY
        self.failures = 0
        self.unreachable = False
        self.refused_at = None
        log.debug("%s ready (ApiVersions v%s, %d APIs)", self.describe,
                  self.api_versions_version, len(self.broker_versions))
        self._flush_pending(now)

    # ------------------------------------------------------------------ SASL seam
    # (the SaslConnection protocol of pyconsumer.net.sasl.authenticator)

    def send_sasl_request(self, api_key: ApiKey, version: int,
                          body: SaslHandshakeRequest | SaslAuthenticateRequest,
                          handler: SaslHandler, now: float) -> None:
        """Write an internal SASL request; its decoded body goes to ``handler``."""
        def answered(req: _Request, frame: Frame, at: float) -> None:
            decoded = self._decode_internal(req, frame, at)
            if decoded is not None:
                handler(decoded, at)

        self._write_request(_Request(api_key, version, body, Future(),
                                     now + self.settings.request_timeout_ms / 1000.0,
                                     internal=True, handler=answered))

    def send_sasl_raw(self, token: bytes) -> None:
        """Write a raw length-prefixed token (SaslHandshake v0)."""
        if self._out_pos == len(self._out):
            self._out.clear()
            self._out_pos = 0
        self._out += len(token).to_bytes(4, "big") + token

    def sasl_failed(self, error: KafkaError, now: float) -> None:
        self._fail(error, now)

    def sasl_done(self, now: float, reauth: bool) -> None:
        if reauth:
            self._flush_pending(now)
        else:
            self._become_ready(now)

    def _decode_internal(self, req: _Request, frame: Frame, now: float
                         ) -> dict[str, Any] | None:
        assert req.version is not None
        try:
            return protocol.decode_response(req.api_key, req.version, frame)[1]
        except KafkaProtocolError as e:
            self._fail(KafkaProtocolError(f"{self.describe}: {e}"), now)
            return None

    def _sasl_raw_token(self, token: bytes, now: float) -> None:
        self.last_activity = now
        self._auth.raw_token(token, now)

    def _maybe_reauthenticate(self, now: float) -> None:
        """KIP-368: once due and nothing is in flight, re-authenticate in place."""
        self._auth.maybe_reauthenticate(now, idle=not self._in_flight and self.is_ready())


    # ------------------------------------------------------------------ timeouts, close

    def is_idle_expired(self, now: float) -> bool:
        """READY, nothing outstanding and silent for longer than connections.max.idle.ms."""
        limit = self.settings.connections_max_idle_ms
        return (limit >= 0 and self.is_ready() and not self._in_flight and not self._pending
                and (now - self.last_activity) * 1000.0 > limit)

    def check_timeouts(self, now: float | None = None) -> None:
        now = self._clock() if now is None else now
        if self.is_ready() and self._auth.check_due(now):
            # new requests wait; in-flight ones finish first
            self._maybe_reauthenticate(now)
        if (self.state in (ConnectionState.CONNECTING, ConnectionState.NEGOTIATING,
                           ConnectionState.AUTHENTICATING) and now >= self._setup_deadline):
            self._fail(KafkaTimeoutError(
                f"connection setup to {self.describe} did not finish within "
                f"socket.connection.setup.timeout.ms="
                f"{self.settings.connection_setup_timeout_ms} ({self.state.value})"
                + self._setup_timeout_text()
                + (NO_TLS_ANSWER if self._authenticating() else "")
                + (self.no_api_versions_answer()
                   if self.state is ConnectionState.NEGOTIATING else "")), now)
            return
        for req in self._in_flight:
            if now >= req.deadline:
                self._fail(KafkaTimeoutError(
                    f"{req.api_key.name} v{req.version} to {self.describe} got no answer within "
                    f"request.timeout.ms (correlation id {req.correlation_id}); disconnecting"),
                    now, first=req)
                return
        if self._pending:
            keep: collections.deque[_Request] = collections.deque()
            for req in self._pending:
                if now >= req.deadline:
                    req.future.failure(KafkaTimeoutError(
                        f"{req.api_key.name} to {self.describe} could not be sent within its "
                        f"timeout (connection {self.state.value}"
                        + (f", last error: {self.last_error}" if self.last_error else "") + ")"))
                else:
                    keep.append(req)
            self._pending = keep

    def _fail(self, error: KafkaError, now: float, first: _Request | None = None, *,
              refused: bool = False) -> None:
        """Close after an error: the request that caused it fails with ``error``, the others
        sent or queued with a connection error saying why (Java fails unsent requests to a
        disconnected node too); the backoff before the next attempt grows. ``refused``: the
        peer refused for sure (see :attr:`refused_at`)."""
        log.info("%s: %s", self.describe, error)
        self.last_error = error
        was_connecting = self.state is ConnectionState.CONNECTING
        in_setup = self.state is not ConnectionState.READY
        self._round_refused = self._round_refused and refused
        if self.state is ConnectionState.CONNECTING or self._authenticating():
            # Java: a failure before the connection is up lengthens the next setup timeout
            self.setup_failures += 1
            self.setup_timeout_ms = self._setup_timeout.backoff_ms(self.setup_failures)
        elif self.state in (ConnectionState.NEGOTIATING, ConnectionState.READY):
            self._reset_setup_timeout()
        self._close_socket()
        if was_connecting:
            self._address_index += 1
        if was_connecting and self._address_index < len(self._addresses):
            self.backoff_until = now   # another address of this host may answer: try it now
        else:
            self.failures += 1
            self.backoff_until = now + self._backoff.backoff_ms(self.failures - 1) / 1000.0
            # the round over the host's addresses is over
            self.unreachable = in_setup
            self.refused_at = now if in_setup and self._round_refused else None
        in_flight, self._in_flight = self._in_flight, collections.deque()
        if first is not None and first.internal is False and not first.future.done:
            first.future.failure(error)
        for req in in_flight:
            if not req.future.done and not req.internal:
                req.future.failure(error if req is first or first is None else
                                   KafkaConnectionError(f"{self.describe} disconnected: {error}"))
        # an authentication error is final for what waited on this connection (Java fails
        # those requests with the AuthenticationException): never a retriable wrapper
        self.fail_pending(error if isinstance(error, (KafkaConnectionError,
                                                      AuthenticationError)) else
                          KafkaConnectionError(f"{self.describe} disconnected: {error}"))
        if self.on_failure is not None:
            self.on_failure(self)

    def _reset_setup_timeout(self) -> None:
        self.setup_failures = 0
        self.setup_timeout_ms = self._setup_timeout.backoff_ms(0)

    def _setup_timeout_text(self) -> str:
        """How long this attempt had, when that is not socket.connection.setup.timeout.ms,
        and what the next one gets: the timeout grows only after a failure before TCP and
        TLS are up (see :meth:`_fail`), so the text says so only then."""
        first = self.settings.connection_setup_timeout_ms
        top = self.settings.connection_setup_timeout_max_ms
        if top < 0 or top == first:
            return ""
        if top < first:
            return f"; capped at socket.connection.setup.timeout.max.ms={top}"
        had = f"; this attempt had {self.setup_timeout_ms:.0f} ms"
        if self.state is ConnectionState.CONNECTING or self._authenticating():
            return (f"{had} (the timeout doubles per failed attempt up to "
                    f"socket.connection.setup.timeout.max.ms={top})")
        # past TCP and TLS a failure does not lengthen the next attempt (Java resets it)
        return f"{had} (the timeout grows only while attempts fail before TCP and TLS are up)"

    def no_api_versions_answer(self, *, waiting: bool = False) -> str:
        """The hint for a setup that stopped at ApiVersions: TCP (and TLS) were up, so
        something listens there, but it does not answer as a Kafka broker would.
        ``waiting``: the attempt is still on (a caller's own timeout ended first), so it
        only says what has not happened yet."""
        where = f"{self.node.host}:{self.node.port}"
        if waiting:
            return (f"; {where} accepted the connection and has not answered ApiVersions "
                    f"(the first Kafka request) yet")
        return (f"; {where} accepted the connection but did not answer ApiVersions (the "
                f"first Kafka request): is it a Kafka listener?")

    def fail_pending(self, error: KafkaError) -> None:
        """Fail the requests not yet sent (the client gives up on a node)."""
        pending, self._pending = self._pending, collections.deque()
        for req in pending:
            req.future.failure(error)

    def close(self, error: KafkaError | None = None) -> None:
        """Close now; every outstanding request fails with ``error`` (a connection error by
        default). No backoff: the caller chose to close."""
        error = error or KafkaConnectionError(f"connection to {self.describe} closed")
        self._close_socket()
        in_flight, self._in_flight = self._in_flight, collections.deque()
        for req in in_flight:
            if not req.future.done and not req.internal:
                req.future.failure(error)
        self.fail_pending(error)

    def _close_socket(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None
        self.state = ConnectionState.DISCONNECTED
        self._versions.clear()
        self._out.clear()
        self._out_pos = 0
        self._header.clear()
        if self._frame_view is not None:
            self._frame_view.release()
        self._frame = self._frame_view = None
        self._frame_filled = 0
        self._auth.reset()


__all__ = ["BrokerConnection", "ConnectionSettings", "ConnectionState", "RequestBody",
           "Response"]

