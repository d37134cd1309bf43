"""SASL pieces on their own: JAAS parsing, the settings object, the PLAIN and SCRAM client
mechanisms against the test peer's server sides (scramp), and the connection's SASL states
against scripted peers (broker answers the real brokers here cannot give: ILLEGAL_SASL_STATE,
a forged SCRAM server signature, no SaslHandshake at all, silence, KIP-368 ordering)."""
from __future__ import annotations

import base64
import logging
import select
import time
from typing import Any

import pytest

from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import (
    AuthenticationError,
    ConfigurationError,
    ErrorCode,
    KafkaConnectionError,
    SaslAuthenticationError,
)
from pyconsumer.net import NetworkClient
from pyconsumer.net.sasl import SaslSettings, build_mechanism
from pyconsumer.config.jaas import JaasEntry, parse_jaas
from pyconsumer.net.sasl.plain import PlainMechanism
from pyconsumer.net.sasl.scram import ScramMechanism
from pyconsumer.protocol import SUPPORTED_VERSIONS, ApiKey, encode_response
from pyconsumer.testing import (
    PlainServer,
    SaslServerRejected,
    ScramServer,
    scram_credentials,
)

from tests.peers import PeerConnection, ScriptedPeer

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
KRB5 = "com.sun.security.auth.module.Krb5LoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


# --------------------------------------------------------------------------- JAAS


@pytest.mark.parametrize("text,expected", [
    (f'{PLAIN} required username="alice" password="pw";',
     JaasEntry(PLAIN, "required", {"username": "alice", "password": "pw"})),
    # escapes in quoted values, a ';' and '=' inside quotes, spacing and newlines around
    (f'  {SCRAM}\n  required\n  username = "a\\"b"  password="x;y=z\\\\" ; ',
     JaasEntry(SCRAM, "required", {"username": 'a"b', "password": "x;y=z\\"})),
    # bare values, several options, another flag
    (f'{KRB5} optional useKeyTab=true storeKey=true keyTab="/etc/k.keytab" '
     f'principal="kafka-client@EXAMPLE.COM";',
     JaasEntry(KRB5, "optional", {"useKeyTab": "true", "storeKey": "true",
                                  "keyTab": "/etc/k.keytab",
                                  "principal": "kafka-client@EXAMPLE.COM"})),
    (f"{OAUTH} required unsecuredLoginStringClaim_sub=thePrincipalName;",
     JaasEntry(OAUTH, "required", {"unsecuredLoginStringClaim_sub": "thePrincipalName"})),
    (f"{PLAIN} sufficient;", JaasEntry(PLAIN, "sufficient", {})),
    (f'{PLAIN} requisite password="";', JaasEntry(PLAIN, "requisite", {"password": ""})),
])
def test_jaas_vectors(text: str, expected: JaasEntry) -> None:
    assert parse_jaas(text) == expected


@pytest.mark.parametrize("text,message", [
    ("", "sasl.jaas.config: expected a login module class name at character 0"),
    (f"{PLAIN} mandatory;", "expected a control flag (required, requisite, sufficient, "
                            f"optional) at character {len(PLAIN) + 1}"),
    (f'{PLAIN} required username="u" password="hunter2"',
     f"missing ';' at the end of the login module at character {len(PLAIN) + 41}"),
    (f'{PLAIN} required username="u" password="hunter2;',
     f"unterminated quoted value of option password at character {len(PLAIN) + 32}"),
    (f'{PLAIN} required username "u";',
     f"expected '=' after option username at character {len(PLAIN) + 19}"),
    (f'{PLAIN} required username="u"; {SCRAM} required;',
     f"text after ';' (only one login module is allowed) at character {len(PLAIN) + 24}"),
    (f'{PLAIN} required username="u" username="v";',
     f"option username given twice at character {len(PLAIN) + 23}"),
    (f'{PLAIN} required password=;',
     f"expected a value for option password at character {len(PLAIN) + 19}"),
])
def test_jaas_errors_name_the_position_not_the_text(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_jaas(text)
    assert str(info.value) == (message if message.startswith("sasl.jaas.config")
                               else f"sasl.jaas.config: {message}")
    assert "hunter2" not in str(info.value)


def test_jaas_entry_repr_hides_option_values() -> None:
    entry = parse_jaas(f'{PLAIN} required username="alice" password="hunter2";')
    assert "hunter2" not in repr(entry) and "alice" not in repr(entry)
    assert repr(entry) == (f"JaasEntry(module='{PLAIN}', flag='required', "
                           f"options=<2 hidden>)")


# --------------------------------------------------------------------------- settings


def test_sasl_settings_from_config_and_hidden_secrets() -> None:
    cfg = ConsumerConfig(bootstrap_servers="h:1", security_protocol="SASL_SSL",
                         sasl_mechanism="SCRAM-SHA-512",
                         sasl_jaas_config=f'{SCRAM} required username="bob" password="hunter2";')
    s = SaslSettings.from_config(cfg)
    assert (s.mechanism, s.username, s.password) == ("SCRAM-SHA-512", "bob", "hunter2")
    assert s.jaas is not None and s.jaas.module == SCRAM and s.jaas_options["username"] == "bob"
    assert "hunter2" not in repr(s) and "hunter2" not in str(s)
    assert repr(s) == "SaslSettings(mechanism='SCRAM-SHA-512', username='bob')"
    assert "hunter2" not in repr(build_mechanism(s))


def test_build_mechanism_dispatches_by_name() -> None:
    assert isinstance(build_mechanism(SaslSettings("PLAIN", "u", "p")), PlainMechanism)
    for name in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        mech = build_mechanism(SaslSettings(name, "u", "p"))
        assert isinstance(mech, ScramMechanism) and mech.name == name
    with pytest.raises(ConfigurationError, match="sasl.mechanism 'NTLM' is not supported"):
        build_mechanism(SaslSettings("NTLM", "u", "p"))


# --------------------------------------------------------------------------- mechanisms


def run_exchange(client: Any, server: Any) -> None:
    token = client.start("broker-host")
    while token is not None:
        answer, finished = server.step(token)
        token = client.step(answer)
        if finished:
            assert token is None
    assert client.complete()


def test_plain_token_and_server_check() -> None:
    mech = PlainMechanism("alice", "pw")
    assert mech.start("h") == b"\x00alice\x00pw"
    assert not mech.complete()
    assert mech.step(b"") is None and mech.complete()
    server = PlainServer({"alice": "pw"})
    assert server.step(b"\x00alice\x00pw") == (b"", True) and server.username == "alice"
    for token in (b"\x00alice\x00nope", b"\x00eve\x00pw"):
        with pytest.raises(SaslServerRejected,
                           match="^Authentication failed: Invalid username or password$"):
            PlainServer({"alice": "pw"}).step(token)
    with pytest.raises(SaslServerRejected, match="expected 3 tokens"):
        PlainServer({"alice": "pw"}).step(b"alice:pw")
    with pytest.raises(ConfigurationError, match="must not contain NUL"):
        PlainMechanism("al\x00ice", "pw")


@pytest.mark.parametrize("name", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_against_scramp_server(name: str) -> None:
    creds = scram_credentials(name, {"alice": "pw", "b,o=b": "pw2"})
    server = ScramServer(name, creds)
    run_exchange(ScramMechanism(name, "alice", "pw"), server)
    assert server.username == "alice"
    # a name with ',' and '=' goes escaped (=2C, =3D) and comes back as it was
    server = ScramServer(name, creds)
    run_exchange(ScramMechanism(name, "b,o=b", "pw2"), server)
    assert server.username == "b,o=b"
    client = ScramMechanism(name, "alice", "wrong")
    server = ScramServer(name, creds)
    first, finished = server.step(client.start("h"))
    final = client.step(first)
    assert not finished and final is not None
    with pytest.raises(SaslServerRejected) as info:
        server.step(final)                      # the proof does not match
    assert str(info.value) == (
        f"Authentication failed during authentication due to invalid credentials with "
        f"SASL mechanism {name}")


def test_scram_unknown_user_is_refused_at_the_first_message() -> None:
    server = ScramServer("SCRAM-SHA-256", scram_credentials("SCRAM-SHA-256", {"alice": "pw"}))
    with pytest.raises(SaslServerRejected, match="invalid credentials with SASL mechanism "
                                                 "SCRAM-SHA-256"):
        server.step(ScramMechanism("SCRAM-SHA-256", "eve", "pw").start("h"))


def test_scram_client_checks_the_server_signature() -> None:
    """A server that does not know the password cannot finish the exchange: the client
    refuses a server-final whose signature is wrong."""
    creds = scram_credentials("SCRAM-SHA-256", {"alice": "pw"})
    client = ScramMechanism("SCRAM-SHA-256", "alice", "pw")
    server = ScramServer("SCRAM-SHA-256", creds)
    first, _ = server.step(client.start("h"))
    final = client.step(first)
    assert final is not None
    good, finished = server.step(final)
    assert finished and good.startswith(b"v=")
    forged = b"v=" + base64.b64encode(bytes(len(base64.b64decode(good[2:]))))
    with pytest.raises(SaslAuthenticationError, match="signature"):
        client.step(forged)
    assert not client.complete()


# --------------------------------------------------------------------------- connection


def api_keys(without: tuple[ApiKey, ...] = ()) -> list[dict[str, int]]:
    return [{"api_key": int(k), "min_version": lo, "max_version": hi}
            for k, (lo, hi) in SUPPORTED_VERSIONS.items() if k not in without]


def answer(conn: PeerConnection, api: ApiKey, body: dict[str, Any]) -> dict[str, Any]:
    request = conn.read_request()
    assert request is not None and request[0] == api, request
    _, version, correlation, req_body = request
    conn.send(encode_response(api, version, correlation, body))
    return req_body


def handshake_ok(conn: PeerConnection, lifetime_ms: int = 0) -> None:
    assert answer(conn, ApiKey.SASL_HANDSHAKE,
                  {"error_code": 0, "mechanisms": ["PLAIN"]}) == {"mechanism": "PLAIN"}
    assert answer(conn, ApiKey.SASL_AUTHENTICATE,
                  {"error_code": 0, "error_message": None, "auth_bytes": b"",
                   "session_lifetime_ms": lifetime_ms}) == {"auth_bytes": b"\x00u\x00hunter2-pw"}


def client_for(peer: ScriptedPeer, **extra: Any) -> NetworkClient:
    settings: dict[str, Any] = dict(
        bootstrap_servers=peer.bootstrap, security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN", sasl_username="u", sasl_password="hunter2-pw",
        request_timeout_ms=3000, reconnect_backoff_ms=500, reconnect_backoff_max_ms=500)
    settings.update(extra)
    return NetworkClient(ConsumerConfig(**settings))


def test_illegal_sasl_state_is_an_authentication_error() -> None:
    def script(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        answer(conn, ApiKey.SASL_HANDSHAKE, {"error_code": 0, "mechanisms": ["PLAIN"]})
        answer(conn, ApiKey.SASL_AUTHENTICATE,
               {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
                "error_message": "Unexpected SaslAuthenticate", "auth_bytes": b""})
        conn.hold()

    with ScriptedPeer([script]) as peer:
        client = client_for(peer)
        try:
            with pytest.raises(SaslAuthenticationError) as info:
                client.update_metadata(timeout_ms=3000)
            assert str(info.value) == (
                f"SASL PLAIN authentication with node -1 ({peer.bootstrap}) failed "
                f"(ILLEGAL_SASL_STATE): Unexpected SaslAuthenticate")
            assert isinstance(info.value, AuthenticationError) and not info.value.retriable
            # within the reconnect backoff a request to that node fails with the same error
            fut = client.send(-1, ApiKey.METADATA, {"topics": []})
            assert fut.exception is info.value
        finally:
            client.close()


def test_a_broker_without_sasl_handshake() -> None:
    def script(conn: PeerConnection) -> None:
        request = conn.read_request()
        assert request is not None
        conn.send(encode_response(ApiKey.API_VERSIONS, request[1], request[2], {
            "error_code": 0, "api_keys": api_keys(without=(ApiKey.SASL_HANDSHAKE,
                                                           ApiKey.SASL_AUTHENTICATE))}))
        conn.hold()

    with ScriptedPeer([script]) as peer:
        client = client_for(peer)
        try:
            with pytest.raises(SaslAuthenticationError) as info:
                client.update_metadata(timeout_ms=3000)
        finally:
            client.close()
    assert str(info.value) == (
        f"node -1 ({peer.bootstrap}) cannot do SASL: node -1 ({peer.bootstrap}) does not "
        f"support SASL_HANDSHAKE (not in its ApiVersions answer); is "
        f"security.protocol=SASL_PLAINTEXT right for this listener?")


def test_a_silent_sasl_handshake_hits_the_setup_timeout() -> None:
    def script(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        conn.hold()                              # the SaslHandshake is never answered

    with ScriptedPeer([script]) as peer:
        client = client_for(peer, socket_connection_setup_timeout_ms=400,
                            socket_connection_setup_timeout_max_ms=400)
        try:
            start = time.monotonic()
            fut = client.send(-1, ApiKey.METADATA, {"topics": []})
            client.poll(timeout_ms=2000, future=fut)
            assert 0.3 < time.monotonic() - start < 1.5
            # a timeout is no verdict on the credentials: retriable, like any setup timeout
            err = fut.exception
            assert isinstance(err, KafkaConnectionError) and err.retriable
            assert str(err) == (
                f"node -1 ({peer.bootstrap}) disconnected: connection setup to node -1 "
                f"({peer.bootstrap}) did not finish within socket.connection.setup.timeout.ms="
                f"400 (authenticating)")
        finally:
            client.close()


def test_reauthentication_waits_for_in_flight_and_holds_new_requests(
        caplog: pytest.LogCaptureFixture) -> None:
    """KIP-368 on one connection: the re-authentication comes after the answer to the
    request in flight when it fell due, and the request sent meanwhile waits for it."""
    order: list[str] = []

    def script(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        handshake_ok(conn, lifetime_ms=300)
        metadata = conn.one_partition_metadata("t")
        request = conn.read_request()                 # the first Metadata...
        assert request is not None and request[0] == ApiKey.METADATA
        order.append("metadata-1 read")
        time.sleep(0.6)                               # ...answered after the re-auth is due
        # the client sent nothing while its request was in flight (no early SaslHandshake)
        quiet = not select.select([conn.sock], [], [], 0.0)[0]
        order.append("quiet while in flight" if quiet else "sent while in flight")
        order.append("metadata-1 answered")
        conn.send(encode_response(ApiKey.METADATA, request[1], request[2], metadata))
        handshake_ok(conn, lifetime_ms=300)
        order.append("re-authenticated")
        conn.serve({ApiKey.METADATA: lambda version, body: (order.append("metadata-2"),
                                                            metadata)[1]})

    with ScriptedPeer([script]) as peer:
        client = client_for(peer)
        try:
            with caplog.at_level(logging.DEBUG, logger="pyconsumer"):
                first = client.send(-1, ApiKey.METADATA, {"topics": None})
                client.poll(timeout_ms=3000, future=first)
                assert first.succeeded()
                second = client.send(-1, ApiKey.METADATA, {"topics": None})
                conn = client.connection(-1)
                assert conn is not None and conn.sasl_in_progress
                assert conn.pending_count == 1              # held during the exchange
                client.poll(timeout_ms=3000, future=second)
                assert second.succeeded()
                assert (conn.sasl_authentications, conn.sasl_reauthentications) == (2, 1)
        finally:
            client.close()
    assert order == ["metadata-1 read", "quiet while in flight", "metadata-1 answered",
                     "re-authenticated", "metadata-2"]
    assert [r for r, _ in peer.requests] == [
        ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, ApiKey.METADATA,
        ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, ApiKey.METADATA]
    assert caplog.records and not any("hunter2" in r.getMessage() for r in caplog.records)
