"""The SASL authentication state machine of one broker connection (Java
``SaslClientAuthenticator``): SaslHandshake (v1; v0 makes the tokens raw length-prefixed
frames), then SaslAuthenticate rounds driven by a :class:`~pyconsumer.net.sasl.SaslMechanism`,
and KIP-368 re-authentication at 85-95 % of the session lifetime the broker gives.

It owns no socket: it talks through the :class:`SaslConnection` seam that
:class:`~pyconsumer.net.connection.BrokerConnection` implements (send a request, write a raw
frame, fail, done). A failure is a :class:`~pyconsumer.errors.SaslAuthenticationError` saying
where and why.
"""
from __future__ import annotations

import logging
import random
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from pyconsumer.errors import (
    ErrorCode,
    KafkaError,
    SaslAuthenticationError,
    UnsupportedVersionError,
    error_for_code,
)
from pyconsumer.net.sasl import SaslMechanism, SaslSettings, build_mechanism
from pyconsumer.protocol import ApiKey

if TYPE_CHECKING:
    from pyconsumer.protocol.bodies import (
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
        SaslHandshakeRequest,
        SaslHandshakeResponse,
    )

log = logging.getLogger(__name__)

#: KIP-368 (Java SaslClientAuthenticator): re-authenticate at a random 85-95 % of the
#: session lifetime, so connections opened together do not all re-authenticate at once
REAUTH_FRACTION = (0.85, 0.95)

#: the decoded body of an answer to a SASL request, with the time it came
SaslHandler = Callable[[dict[str, Any], float], None]


class SaslConnection(Protocol):
    """What the authenticator needs of its connection."""

    @property
    def describe(self) -> str: ...

    def version_for(self, api_key: int, min_version: int = 0,
                    max_version: int | None = None) -> int: ...

    def send_sasl_request(self, api_key: ApiKey, version: int,
                          body: SaslHandshakeRequest | SaslAuthenticateRequest,
                          handler: SaslHandler, now: float) -> None:
        """Write an internal request now; its decoded answer goes to ``handler``."""
        ...

    def send_sasl_raw(self, token: bytes) -> None:
        """Write ``token`` as a raw length-prefixed frame (SaslHandshake v0)."""
        ...

    def sasl_failed(self, error: KafkaError, now: float) -> None:
        """Close the connection with ``error``."""
        ...

    def sasl_done(self, now: float, reauth: bool) -> None:
        """Authenticated: READY (first time) or send the held requests (re-authentication)."""
        ...


def _code_name(code: int) -> str:
    try:
        return str(ErrorCode(code).name)
    except ValueError:
        return f"error code {code}"


class _SaslExchange:
    """One SASL authentication in progress on a connection."""

    __slots__ = ("mechanism", "handshake_version", "raw", "reauth", "raw_waiting")

    def __init__(self, handshake_version: int, reauth: bool) -> None:
        self.mechanism: SaslMechanism | None = None
        self.handshake_version = handshake_version
        self.raw = handshake_version == 0     # v0: tokens are raw length-prefixed frames
        self.reauth = reauth
        self.raw_waiting = False              # a raw server token is due


class SaslAuthenticator:
    """SASL for one connection (its whole life: every reconnect calls :meth:`reset`)."""

    def __init__(self, conn: SaslConnection, settings: SaslSettings | None, host: str,
                 tls: bool) -> None:
        # the connection owns this authenticator: a strong reference back would make the
        # pair a cycle that only the cyclic collector frees (with all a client holds)
        self._conn: SaslConnection = weakref.proxy(conn)
        self._settings = settings
        self._host = host                    # GSSAPI's service principal needs it
        self._tls = tls                      # for the hint naming security.protocol
        #: the exchange in progress (first authentication or re-authentication)
        self._sasl: _SaslExchange | None = None
        #: KIP-368: monotonic time to re-authenticate at (None: no session lifetime)
        self._reauth_at: float | None = None
        self._reauth_wanted = False           # due: hold new requests until it is done
        #: exchanges completed (first ones and re-authentications)
        self.authentications = 0
        self.reauthentications = 0
        #: the session lifetime the broker gave at the last authentication, ms (0: none)
        self.session_lifetime_ms = 0

    # ------------------------------------------------------------------ status

    @property
    def in_progress(self) -> bool:
        """An exchange runs (first authentication or KIP-368 re-authentication)."""
        return self._sasl is not None

    @property
    def holds_requests(self) -> bool:
        """New requests must wait: an exchange runs or a re-authentication is due."""
        return self._sasl is not None or self._reauth_wanted

    @property
    def reauth_wanted(self) -> bool:
        return self._reauth_wanted

    @property
    def raw(self) -> bool:
        """The exchange in progress uses raw frames (SaslHandshake v0)."""
        return self._sasl is not None and self._sasl.raw

    @property
    def raw_waiting(self) -> bool:
        """The next frame is a raw server token, not a response."""
        return self._sasl is not None and self._sasl.raw_waiting

    def mechanism_name(self) -> str:
        return "?" if self._settings is None else self._settings.mechanism

    def next_deadline(self) -> float | None:
        """When a re-authentication falls due, unless it already is."""
        return None if self._reauth_wanted else self._reauth_at

    def reset(self) -> None:
        """The connection closed: no exchange, no re-authentication due."""
        self._sasl = None
        self._reauth_at = None
        self._reauth_wanted = False

    # ------------------------------------------------------------------ the exchange

    def start(self, now: float, reauth: bool) -> None:
        """SaslHandshake: name the mechanism (the connection is AUTHENTICATING, or READY for
        KIP-368)."""
        conn = self._conn
        try:
            # KIP-368 re-authentication needs SaslHandshake v1 (and SaslAuthenticate v1)
            version = conn.version_for(ApiKey.SASL_HANDSHAKE, min_version=1 if reauth else 0)
        except UnsupportedVersionError as e:
            conn.sasl_failed(SaslAuthenticationError(
                f"{conn.describe} cannot do SASL: {e}; is security.protocol="
                f"{'SASL_SSL' if self._tls else 'SASL_PLAINTEXT'} right for "
                f"this listener?"), now)
            return
        self._sasl = _SaslExchange(version, reauth)
        conn.send_sasl_request(ApiKey.SASL_HANDSHAKE, version,
                               {"mechanism": self.mechanism_name()}, self._on_handshake, now)
        log.debug("%s: SASL %s %s (SaslHandshake v%d)", conn.describe, self.mechanism_name(),
                  "re-authentication" if reauth else "authentication", version)

    def _on_handshake(self, decoded: dict[str, Any], now: float) -> None:
        body = cast("SaslHandshakeResponse", decoded)
        conn = self._conn
        name = self.mechanism_name()
        code = body["error_code"]
        if code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
            enabled = ", ".join(body["mechanisms"]) or "none"
            odd = (" (it lists the mechanism yet refuses it: is SASL enabled on this "
                   "listener?)" if name in body["mechanisms"] else "")
            conn.sasl_failed(SaslAuthenticationError(
                f"SASL mechanism {name} (sasl.mechanism) is not enabled on {conn.describe}; "
                f"the broker enables: {enabled}{odd}"), now)
            return
        if code == ErrorCode.ILLEGAL_SASL_STATE:
            conn.sasl_failed(SaslAuthenticationError(
                f"{conn.describe} refused the SASL handshake for {name} (ILLEGAL_SASL_STATE): "
                f"is this listener a SASL one?"), now)
            return
        if code:
            err = error_for_code(code, f"SaslHandshake from {conn.describe}")
            conn.sasl_failed(SaslAuthenticationError(
                f"SASL handshake for {name} failed: {err}"), now)
            return
        assert self._sasl is not None and self._settings is not None
        try:
            mechanism = build_mechanism(self._settings)
            self._sasl.mechanism = mechanism
            token = mechanism.start(self._host)
        except KafkaError as e:
            conn.sasl_failed(e if isinstance(e, SaslAuthenticationError) else
                             SaslAuthenticationError(f"SASL {name} for {conn.describe}: {e}"),
                             now)
            return
        except Exception as e:  # noqa: BLE001 - a mechanism's library failed: say so, no storm
            conn.sasl_failed(SaslAuthenticationError(
                f"SASL {name} for {conn.describe} failed on the client side: "
                f"{type(e).__name__}: {e}"), now)
            return
        self._send(token, now)

    def _send(self, token: bytes, now: float) -> None:
        assert self._sasl is not None
        conn = self._conn
        if self._sasl.raw:
            conn.send_sasl_raw(token)
            self._sasl.raw_waiting = True
            return
        try:
            # re-authentication needs v1+ (the session lifetime); first ones take the best
            version = conn.version_for(ApiKey.SASL_AUTHENTICATE,
                                       min_version=1 if self._sasl.reauth else 0)
        except UnsupportedVersionError as e:
            conn.sasl_failed(SaslAuthenticationError(f"{conn.describe}: {e}"), now)
            return
        conn.send_sasl_request(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token},
                               self._on_authenticate, now)

    def _on_authenticate(self, decoded: dict[str, Any], now: float) -> None:
        body = cast("SaslAuthenticateResponse", decoded)
        code = body["error_code"]
        if code:
            reason = body.get("error_message") or "no reason given"
            what = ("failed" if code == ErrorCode.SASL_AUTHENTICATION_FAILED
                    else f"failed ({_code_name(code)})")
            self._conn.sasl_failed(SaslAuthenticationError(
                f"SASL {self.mechanism_name()} authentication with {self._conn.describe} "
                f"{what}: {reason}"), now)
            return
        self.session_lifetime_ms = int(body.get("session_lifetime_ms", 0))
        self._step(bytes(body["auth_bytes"]), now)

    def raw_token(self, token: bytes, now: float) -> None:
        """A raw server token arrived (SaslHandshake v0)."""
        assert self._sasl is not None
        self._sasl.raw_waiting = False
        self._step(token, now)

    def _step(self, challenge: bytes, now: float) -> None:
        """The server's bytes to the mechanism; its answer to the server, or done."""
        assert self._sasl is not None and self._sasl.mechanism is not None
        conn = self._conn
        mechanism = self._sasl.mechanism
        try:
            token = mechanism.step(challenge)
            finished = token is None and mechanism.complete()
        except SaslAuthenticationError as e:
            # the mechanism says what was wrong; say where
            conn.sasl_failed(SaslAuthenticationError(
                f"SASL {self.mechanism_name()} authentication with {conn.describe} failed: "
                f"{e}"), now)
            return
        except Exception as e:  # noqa: BLE001 - a library error must not kill the loop
            conn.sasl_failed(SaslAuthenticationError(
                f"SASL {self.mechanism_name()} with {conn.describe} failed on the client "
                f"side: {type(e).__name__}: {e}"), now)
            return
        if token is not None:
            self._send(token, now)
            return
        if not finished:
            conn.sasl_failed(SaslAuthenticationError(
                f"SASL {self.mechanism_name()} with {conn.describe}: the exchange ended "
                f"before the client side completed"), now)
            return
        self._done(now)

    def _done(self, now: float) -> None:
        assert self._sasl is not None
        reauth = self._sasl.reauth
        self._sasl = None
        self._reauth_wanted = False
        self.authentications += 1
        lifetime = self.session_lifetime_ms
        self._reauth_at = (None if lifetime <= 0 else
                           now + lifetime * random.uniform(*REAUTH_FRACTION) / 1000.0)
        log.debug("%s: SASL %s %s (session lifetime %d ms)", self._conn.describe,
                  self.mechanism_name(), "re-authenticated" if reauth else "authenticated",
                  lifetime)
        if reauth:
            self.reauthentications += 1
        self._conn.sasl_done(now, reauth)

    # ------------------------------------------------------------------ KIP-368

    def check_due(self, now: float) -> bool:
        """True when a re-authentication fell due just now: new requests wait from now on
        (the ones in flight finish first). Call only on a READY connection."""
        if self._reauth_at is not None and now >= self._reauth_at and self._sasl is None:
            self._reauth_wanted = True
            return True
        return False

    def maybe_reauthenticate(self, now: float, idle: bool) -> None:
        """Once due and nothing is in flight (``idle``, on a READY connection),
        re-authenticate in place."""
        if self._reauth_wanted and self._sasl is None and idle:
            self._reauth_at = None
            self.start(now, reauth=True)


__all__ = ["REAUTH_FRACTION", "SaslAuthenticator", "SaslConnection", "SaslHandler"]
