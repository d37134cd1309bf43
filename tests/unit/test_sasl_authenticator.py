"""The SASL state machine on its own, through its SaslConnection seam: a recording connection
stands in for BrokerConnection (no socket), so each step of an exchange is seen as it goes."""
from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from pyconsumer.errors import ErrorCode, KafkaError, SaslAuthenticationError, UnsupportedVersionError
from pyconsumer.net.sasl import SaslSettings
from pyconsumer.net.sasl.authenticator import SaslAuthenticator, SaslHandler
from pyconsumer.protocol import ApiKey

PLAIN = SaslSettings(mechanism="PLAIN", username="alice", password="secret")
TOKEN = b"\x00alice\x00secret"


class RecordingConnection:
    """A SaslConnection that writes nothing: it keeps what the authenticator asked for."""

    describe = "node 1 (b1:9092)"

    def __init__(self, versions: dict[ApiKey, int] | None = None) -> None:
        #: api -> the highest version the broker takes (absent: not supported)
        self.versions = {ApiKey.SASL_HANDSHAKE: 1, ApiKey.SASL_AUTHENTICATE: 2} \
            if versions is None else versions
        self.sent: list[tuple[ApiKey, int, dict[str, Any]]] = []
        self.handlers: list[SaslHandler] = []
        self.raw: list[bytes] = []
        self.failed: list[KafkaError] = []
        self.done: list[bool] = []

    def version_for(self, api_key: int, min_version: int = 0,
                    max_version: int | None = None) -> int:
        best = self.versions.get(ApiKey(api_key))
        if best is None or best < min_version:
            raise UnsupportedVersionError(f"no {ApiKey(api_key).name} v{min_version}+")
        return best

    def send_sasl_request(self, api_key: ApiKey, version: int, body: dict[str, Any],
                          handler: SaslHandler, now: float) -> None:
        self.sent.append((api_key, version, body))
        self.handlers.append(handler)

    def send_sasl_raw(self, token: bytes) -> None:
        self.raw.append(token)

    def sasl_failed(self, error: KafkaError, now: float) -> None:
        self.failed.append(error)

    def sasl_done(self, now: float, reauth: bool) -> None:
        self.done.append(reauth)

    def answer(self, body: dict[str, Any], now: float = 0.0) -> None:
        self.handlers.pop(0)(body, now)


def authenticated(conn: RecordingConnection, lifetime_ms: int, now: float = 0.0
                  ) -> SaslAuthenticator:
    auth = SaslAuthenticator(conn, PLAIN, "b1", tls=False)
    auth.start(now, reauth=False)
    conn.answer({"error_code": 0, "mechanisms": ["PLAIN"]}, now)
    conn.answer({"error_code": 0, "error_message": None, "auth_bytes": b"",
                 "session_lifetime_ms": lifetime_ms}, now)
    return auth


def test_a_plain_exchange_step_by_step() -> None:
    conn = RecordingConnection()
    auth = SaslAuthenticator(conn, PLAIN, "b1", tls=False)
    assert not auth.in_progress and not auth.holds_requests
    auth.start(0.0, reauth=False)
    assert conn.sent == [(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})]
    assert auth.in_progress and auth.holds_requests and not auth.raw
    conn.answer({"error_code": 0, "mechanisms": ["PLAIN"]})
    assert conn.sent[1] == (ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": TOKEN})
    assert conn.done == []
    conn.answer({"error_code": 0, "error_message": None, "auth_bytes": b"",
                 "session_lifetime_ms": 0})
    assert conn.done == [False] and conn.failed == []
    assert (auth.authentications, auth.reauthentications, auth.session_lifetime_ms) == (1, 0, 0)
    assert not auth.in_progress and auth.next_deadline() is None


def test_handshake_v0_sends_raw_tokens() -> None:
    conn = RecordingConnection({ApiKey.SASL_HANDSHAKE: 0, ApiKey.SASL_AUTHENTICATE: 0})
    auth = SaslAuthenticator(conn, PLAIN, "b1", tls=False)
    auth.start(0.0, reauth=False)
    conn.answer({"error_code": 0, "mechanisms": ["PLAIN"]})
    assert conn.raw == [TOKEN] and len(conn.sent) == 1      # no SaslAuthenticate
    assert auth.raw and auth.raw_waiting
    auth.raw_token(b"", 0.0)
    assert conn.done == [False] and not auth.raw_waiting


def test_reauthentication_falls_due_within_85_to_95_percent_of_the_lifetime() -> None:
    conn = RecordingConnection()
    with mock.patch("random.uniform", return_value=0.9):
        auth = authenticated(conn, lifetime_ms=10_000, now=100.0)
    assert auth.next_deadline() == pytest.approx(109.0)
    assert not auth.check_due(108.9) and not auth.holds_requests
    assert auth.check_due(109.0) and auth.holds_requests and auth.next_deadline() is None
    auth.maybe_reauthenticate(109.0, idle=False)             # requests in flight: wait
    assert len(conn.sent) == 2
    auth.maybe_reauthenticate(109.5, idle=True)
    assert conn.sent[2] == (ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    conn.answer({"error_code": 0, "mechanisms": ["PLAIN"]})
    conn.answer({"error_code": 0, "error_message": None, "auth_bytes": b"",
                 "session_lifetime_ms": 10_000})
    assert conn.done == [False, True]
    assert (auth.authentications, auth.reauthentications) == (2, 1)
    assert not auth.holds_requests


def test_reset_forgets_the_exchange_and_the_due_reauthentication() -> None:
    conn = RecordingConnection()
    auth = authenticated(conn, lifetime_ms=1000)
    assert auth.check_due(10.0) and auth.holds_requests
    auth.reset()
    assert not auth.holds_requests and auth.next_deadline() is None
    assert not auth.check_due(20.0)


def test_a_mechanism_the_broker_does_not_enable() -> None:
    conn = RecordingConnection()
    auth = SaslAuthenticator(conn, PLAIN, "b1", tls=False)
    auth.start(0.0, reauth=False)
    conn.answer({"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                 "mechanisms": ["SCRAM-SHA-512"]})
    assert [str(e) for e in conn.failed] == [
        "SASL mechanism PLAIN (sasl.mechanism) is not enabled on node 1 (b1:9092); the broker "
        "enables: SCRAM-SHA-512"]
    assert isinstance(conn.failed[0], SaslAuthenticationError) and conn.done == []


def test_refused_credentials_say_why() -> None:
    conn = RecordingConnection()
    auth = SaslAuthenticator(conn, PLAIN, "b1", tls=False)
    auth.start(0.0, reauth=False)
    conn.answer({"error_code": 0, "mechanisms": ["PLAIN"]})
    conn.answer({"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
                 "error_message": "Invalid username or password", "auth_bytes": b""})
    assert [str(e) for e in conn.failed] == [
        "SASL PLAIN authentication with node 1 (b1:9092) failed: Invalid username or password"]


@pytest.mark.parametrize(("tls", "protocol"), [(False, "SASL_PLAINTEXT"), (True, "SASL_SSL")])
def test_a_broker_without_sasl_handshake(tls: bool, protocol: str) -> None:
    conn = RecordingConnection({})
    SaslAuthenticator(conn, PLAIN, "b1", tls=tls).start(0.0, reauth=False)
    assert len(conn.failed) == 1 and conn.sent == []
    assert str(conn.failed[0]).startswith("node 1 (b1:9092) cannot do SASL: ")
    assert str(conn.failed[0]).endswith(f"; is security.protocol={protocol} right for this "
                                        f"listener?")
