"""A SASL-terminating proxy for tests: a :class:`~pyconsumer.testing.FaultProxy` in front of a
real broker that authenticates clients itself, as a SASL listener of a Kafka broker does.

What it checks, per connection (Java ``SaslServerAuthenticator``):

- before authentication only ApiVersions (forwarded; the answer is rewritten to advertise
  SaslHandshake/SaslAuthenticate) and SaslHandshake may come; anything else closes the
  connection (counted in :attr:`SaslStats.unauthenticated_requests`);
- SaslHandshake names a mechanism of ``mechanisms`` (name -> server factory), else
  UNSUPPORTED_SASL_MECHANISM with the enabled ones, then the connection closes;
- SaslAuthenticate rounds go to a fresh :class:`~pyconsumer.testing.ServerMechanism`; a
  :class:`~pyconsumer.testing.SaslServerRejected` becomes SASL_AUTHENTICATION_FAILED with its
  message, then the connection closes. Handshake v0 (``handshake_max_version=0``) makes the
  tokens raw length-prefixed frames and a refusal a plain close, as in Kafka;
- ``session_lifetime_ms`` (KIP-368): given in SaslAuthenticate v1+; a request other than
  SaslHandshake after the session expired closes the connection (counted in
  :attr:`SaslStats.expired_requests`); a new handshake + authenticate on the authenticated
  connection re-authenticates it (counted in :attr:`SaslStats.reauthentications`); it must
  come with no request outstanding at the broker (else :attr:`SaslStats.interleaved`, close).

Connection attempts are :attr:`ProxyStats.connections` (``proxy.stats``).
"""
from __future__ import annotations

import dataclasses
import logging
import ssl
import time
from collections.abc import Mapping
from typing import Any

from ._proxy import FaultProxy, _Link
from ._sasl_server import (
    SaslServerRejected,
    ServerMechanism,
    ServerMechanismFactory,
    standard_mechanisms,
)

__all__ = ["SaslProxy", "SaslStats"]

log = logging.getLogger(__name__)

_API_VERSIONS = 18
_SASL_HANDSHAKE = 17
_SASL_AUTHENTICATE = 36
_MAX_FRAME = 100 * 1024 * 1024
# error codes as Kafka names them (pyconsumer.errors.ErrorCode, imported lazily)


@dataclasses.dataclass
class SaslStats:
    """What the SASL side of the proxy saw."""

    handshakes: int = 0
    authentications: int = 0        # successful exchanges, first ones and re-authentications
    reauthentications: int = 0      # successful exchanges on an already authenticated link
    failures: int = 0               # refused credentials (SaslServerRejected)
    unsupported: int = 0            # handshakes naming a mechanism not enabled
    unauthenticated_requests: int = 0
    expired_requests: int = 0
    interleaved: int = 0
    #: (mechanism, user) of each successful exchange, in order
    users: list[tuple[str, str | None]] = dataclasses.field(default_factory=list)
    #: monotonic times of the successful exchanges
    times: list[float] = dataclasses.field(default_factory=list)


class _LinkSasl:
    __slots__ = ("buf", "server", "mechanism", "raw", "authenticated", "expires_at")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.server: ServerMechanism | None = None
        self.mechanism = ""
        self.raw = False                 # SaslHandshake v0: the next client frames are tokens
        self.authenticated = False
        self.expires_at: float | None = None


class SaslProxy(FaultProxy):
    """A SASL listener on 127.0.0.1 in front of ``upstream`` (see the module doc).

    ``users`` (name -> password) enables PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (or the
    ``enabled`` subset); ``mechanisms`` adds or replaces server factories by name (how the
    OAUTHBEARER and GSSAPI server sides plug in). ``ssl_context`` (a server context) makes it a
    SASL_SSL listener."""

    def __init__(self, upstream: str | tuple[str, int], *,
                 users: Mapping[str, str] | None = None,
                 enabled: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
                 mechanisms: Mapping[str, ServerMechanismFactory] | None = None,
                 session_lifetime_ms: int = 0, handshake_max_version: int = 1,
                 ssl_context: ssl.SSLContext | None = None, lifetime: float = 300.0) -> None:
        super().__init__(upstream, lifetime=lifetime, ssl_context=ssl_context)
        self.mechanisms: dict[str, ServerMechanismFactory] = (
            standard_mechanisms(users, enabled) if users is not None else {})
        self.mechanisms.update(mechanisms or {})
        if not self.mechanisms:
            raise ValueError("SaslProxy needs users= or mechanisms=")
        self.session_lifetime_ms = session_lifetime_ms
        self.handshake_max_version = handshake_max_version
        self._sasl_links: dict[int, _LinkSasl] = {}
        self._sasl_stats = SaslStats()

    @property
    def sasl_stats(self) -> SaslStats:
        with self._lock:
            return dataclasses.replace(self._sasl_stats, users=list(self._sasl_stats.users),
                                       times=list(self._sasl_stats.times))

    def __repr__(self) -> str:
        return (f"SaslProxy({self.bootstrap} -> {self.upstream[0]}:{self.upstream[1]}, "
                f"{sorted(self.mechanisms)})")

    # ------------------------------------------------------------------ requests

    def _state(self, link: _Link) -> _LinkSasl:
        st = self._sasl_links.get(id(link))
        if st is None:
            st = self._sasl_links[id(link)] = _LinkSasl()
        return st

    def _close_link(self, link: _Link, dropped: bool) -> None:
        self._sasl_links.pop(id(link), None)
        super()._close_link(link, dropped)

    def _pass_requests(self, link: _Link, data: bytes, release: float) -> None:
        """Client to broker, a whole frame at a time: SASL frames are answered here, the
        rest forwarded once the client is authenticated."""
        st = self._state(link)
        st.buf += data
        while not link.closed and not link.closing and len(st.buf) >= 4:
            size = int.from_bytes(st.buf[:4], "big", signed=True)
            if not 0 <= size <= _MAX_FRAME:
                log.info("sasl proxy %s: frame length %d; closing", self.bootstrap, size)
                self._close_link(link, dropped=False)
                return
            if len(st.buf) < 4 + size:
                return
            frame = bytes(st.buf[4:4 + size])
            del st.buf[:4 + size]
            if st.raw:
                self._raw_token(link, st, frame, release)
                continue
            if size < 8:
                self._close_link(link, dropped=False)
                return
            key = int.from_bytes(frame[0:2], "big", signed=True)
            version = int.from_bytes(frame[2:4], "big", signed=True)
            correlation = int.from_bytes(frame[4:8], "big", signed=True)
            if key in (_SASL_HANDSHAKE, _SASL_AUTHENTICATE):
                if link.requests:
                    # KIP-368: a client re-authenticates with nothing outstanding
                    with self._lock:
                        self._sasl_stats.interleaved += 1
                    self._close_link(link, dropped=False)
                    return
                self._sasl_request(link, st, key, version, correlation, frame, release)
                continue
            if not st.authenticated and key != _API_VERSIONS:
                log.info("sasl proxy %s: api key %d before authentication; closing",
                         self.bootstrap, key)
                with self._lock:
                    self._sasl_stats.unauthenticated_requests += 1
                self._close_link(link, dropped=False)
                return
            if st.expires_at is not None and time.monotonic() >= st.expires_at:
                log.info("sasl proxy %s: session expired; closing", self.bootstrap)
                with self._lock:
                    self._sasl_stats.expired_requests += 1
                self._close_link(link, dropped=False)
                return
            link.requests[correlation] = (key, version)
            self._enqueue(link.up, size.to_bytes(4, "big") + frame, release)

    def _answer(self, link: _Link, key: int, version: int, correlation: int,
                body: dict[str, Any], release: float, close: bool = False) -> None:
        from pyconsumer import protocol

        self._enqueue(link.down, protocol.encode_response(key, version, correlation, body),
                      release)
        if close:
            link.closing = True       # Kafka closes after a failed exchange, answer sent

    def _sasl_request(self, link: _Link, st: _LinkSasl, key: int, version: int,
                      correlation: int, frame: bytes, release: float) -> None:
        from pyconsumer import protocol
        from pyconsumer.errors import ErrorCode

        _, _, _, _, body = protocol.decode_request(frame)
        if key == _SASL_HANDSHAKE:
            enabled = sorted(self.mechanisms)
            with self._lock:
                self._sasl_stats.handshakes += 1
            mechanism = body["mechanism"]
            if st.server is not None or (st.authenticated and version < 1):
                self._answer(link, key, version, correlation,
                             {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": enabled},
                             release, close=True)
                return
            if mechanism not in self.mechanisms or (st.authenticated
                                                   and mechanism != st.mechanism):
                with self._lock:
                    self._sasl_stats.unsupported += 1
                self._answer(link, key, version, correlation,
                             {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                              "mechanisms": enabled}, release, close=True)
                return
            st.server = self.mechanisms[mechanism]()
            st.mechanism = mechanism
            st.raw = version == 0
            self._answer(link, key, version, correlation,
                         {"error_code": 0, "mechanisms": enabled}, release)
            return
        # SaslAuthenticate
        if st.server is None:
            self._answer(link, key, version, correlation,
                         {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
                          "error_message": "SaslAuthenticate before SaslHandshake",
                          "auth_bytes": b""}, release, close=True)
            return
        try:
            token, finished = st.server.step(bytes(body["auth_bytes"]))
        except SaslServerRejected as e:
            with self._lock:
                self._sasl_stats.failures += 1
            self._answer(link, key, version, correlation,
                         {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
                          "error_message": str(e), "auth_bytes": b""}, release, close=True)
            return
        answer: dict[str, Any] = {"error_code": 0, "error_message": None, "auth_bytes": token}
        if finished:
            self._authenticated(st)
            answer["session_lifetime_ms"] = self.session_lifetime_ms
        self._answer(link, key, version, correlation, answer, release)

    def _raw_token(self, link: _Link, st: _LinkSasl, token: bytes, release: float) -> None:
        """SaslHandshake v0: tokens without Kafka headers; a refusal is a close."""
        assert st.server is not None
        try:
            answer, finished = st.server.step(token)
        except SaslServerRejected as e:
            log.info("sasl proxy %s: %s; closing (handshake v0)", self.bootstrap, e)
            with self._lock:
                self._sasl_stats.failures += 1
            self._close_link(link, dropped=False)
            return
        if finished:
            st.raw = False
            self._authenticated(st)
        self._enqueue(link.down, len(answer).to_bytes(4, "big") + answer, release)

    def _authenticated(self, st: _LinkSasl) -> None:
        now = time.monotonic()
        with self._lock:
            self._sasl_stats.authentications += 1
            if st.authenticated:
                self._sasl_stats.reauthentications += 1
            self._sasl_stats.users.append((st.mechanism, getattr(st.server, "username", None)))
            self._sasl_stats.times.append(now)
        st.authenticated = True
        st.server = None
        st.expires_at = (now + self.session_lifetime_ms / 1000.0
                         if self.session_lifetime_ms > 0 else None)

    # ------------------------------------------------------------------ responses

    def _holds_whole(self, api_key: int) -> bool:
        return api_key == _API_VERSIONS or super()._holds_whole(api_key)

    def _rewrite(self, key_version: tuple[int, int], payload: bytes) -> bytes:
        if key_version[0] != _API_VERSIONS:
            return super()._rewrite(key_version, payload)
        from pyconsumer import protocol

        key, version = key_version
        try:
            correlation, body = protocol.decode_response(key, version, payload)
        except Exception:   # noqa: BLE001 - an answer we cannot read goes through as is
            return len(payload).to_bytes(4, "big") + payload
        if body["error_code"]:
            return len(payload).to_bytes(4, "big") + payload
        # advertise what this listener speaks: SaslHandshake v0-N, SaslAuthenticate v0-2
        keys = [k for k in body["api_keys"]
                if k["api_key"] not in (_SASL_HANDSHAKE, _SASL_AUTHENTICATE)]
        keys.append({"api_key": _SASL_HANDSHAKE, "min_version": 0,
                     "max_version": self.handshake_max_version})
        keys.append({"api_key": _SASL_AUTHENTICATE, "min_version": 0, "max_version": 2})
        body["api_keys"] = sorted(keys, key=lambda k: k["api_key"])
        return protocol.encode_response(key, version, correlation, body)
