"""security.protocol=SSL against a scripted broker behind TLS (test certificates in
tests/certs): trusted CA, unknown CA, host name checks, TLS against a plaintext peer, a
ready-made ssl.SSLContext. SASL_SSL is in test_sasl.py."""
from __future__ import annotations

import os
import socket
import ssl
from typing import Any

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import (
    SslAuthenticationError,
    NoBrokersAvailable,
)
from pyconsumer.net import NetworkClient
from pyconsumer.protocol import ApiKey

from tests.peers import PeerConnection, ScriptedPeer

CERTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "certs")


def server_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(CERTS, "broker.pem"), os.path.join(CERTS, "broker.key"))
    return ctx


def good(conn: PeerConnection) -> None:
    conn.answer_api_versions()
    metadata = conn.one_partition_metadata("secure")
    metadata["topics"][0]["partitions"] = [
        dict(metadata["topics"][0]["partitions"][0], partition_index=p) for p in range(3)]
    conn.serve({ApiKey.METADATA: lambda version, body: metadata})   # until the client hangs up


def tls_settings(**extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {"security_protocol": "SSL",
                                "ssl_truststore_location": os.path.join(CERTS, "ca.pem"),
                                "request_timeout_ms": 3000, "default_api_timeout_ms": 3000,
                                "reconnect_backoff_ms": 50}
    settings.update(extra)
    return settings


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_tls_with_a_trusted_ca(host: str) -> None:
    with ScriptedPeer([good], tls=server_context()) as peer:
        with KafkaConsumer(bootstrap_servers=f"{host}:{peer.port}", **tls_settings()) as c:
            assert c.partitions_for_topic("secure") == {0, 1, 2}
            client = c._client
            assert client is not None
            conn = client.connection(-1)
            assert conn is not None and isinstance(conn.sock, ssl.SSLSocket)
            assert conn.sock.version() in ("TLSv1.2", "TLSv1.3")
            # checked before closing: a connection cut mid-handshake by close() is no error
            assert not peer.errors and not peer.handshake_errors


def test_unknown_ca_is_refused_clearly() -> None:
    """A refused certificate is an authentication failure (Java: SslAuthenticationException):
    the call fails with it after the first handshake, not after retrying until its timeout."""
    with ScriptedPeer([good], tls=server_context()) as peer:
        client = NetworkClient(ConsumerConfig(
            bootstrap_servers=peer.bootstrap,
            **tls_settings(ssl_truststore_location=os.path.join(CERTS, "other-ca.pem"))))
        try:
            with pytest.raises(SslAuthenticationError) as info:
                client.update_metadata(["secure"], timeout_ms=60_000)
            assert str(info.value) == (
                f"TLS handshake with node -1 ({peer.bootstrap}) failed: the broker's certificate "
                f"was refused (unable to get local issuer certificate); check ssl.truststore.* "
                f"and ssl.endpoint.identification.algorithm")
            conn = client.connection(-1)
            assert conn is not None and conn.last_error is info.value
            assert conn.failures == 1               # one handshake, no retries
        finally:
            client.close()


def test_host_name_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyconsumer.net.connection as connection_module

    real = socket.getaddrinfo

    def resolve(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        return real("127.0.0.1" if host == "kafka.example" else host, port, *args, **kwargs)

    monkeypatch.setattr(connection_module.socket, "getaddrinfo", resolve)
    with ScriptedPeer([good], tls=server_context()) as peer:
        with KafkaConsumer(bootstrap_servers=f"kafka.example:{peer.port}", **tls_settings()) as c:
            with pytest.raises(SslAuthenticationError, match="Hostname mismatch|doesn't match"):
                c.topics(timeout_ms=60_000)
        # Java's ssl.endpoint.identification.algorithm="" turns the check off
        with KafkaConsumer(bootstrap_servers=f"kafka.example:{peer.port}",
                           **tls_settings(ssl_endpoint_identification_algorithm="")) as c:
            assert "secure" in c.topics()


def test_tls_against_a_plaintext_broker_fails_fast() -> None:
    def plain(conn: PeerConnection) -> None:
        conn.hold()                      # reads the ClientHello, answers nothing

    def closes(conn: PeerConnection) -> None:
        conn.sock.recv(10)
        conn.sock.sendall(b"\x00\x00\x00\x04abcd")   # plaintext bytes where TLS records belong

    with ScriptedPeer([closes]) as peer:
        client = NetworkClient(ConsumerConfig(bootstrap_servers=peer.bootstrap, **tls_settings()))
        try:
            with pytest.raises(NoBrokersAvailable, match="TLS handshake with node -1"):
                client.update_metadata(["secure"], timeout_ms=1500)
        finally:
            client.close()
    with ScriptedPeer([plain]) as peer:
        client = NetworkClient(ConsumerConfig(bootstrap_servers=peer.bootstrap,
                                              **tls_settings(socket_connection_setup_timeout_ms=500)))
        try:
            with pytest.raises(NoBrokersAvailable) as info:
                client.update_metadata(["secure"], timeout_ms=1500)
            assert "did not finish within socket.connection.setup.timeout.ms=500 (authenticating)" \
                in str(info.value)
        finally:
            client.close()


def test_a_ready_ssl_context() -> None:
    ctx = ssl.create_default_context(cafile=os.path.join(CERTS, "ca.pem"))
    with ScriptedPeer([good], tls=server_context()) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, security_protocol="SSL",
                           ssl_context=ctx) as c:
            assert c.partitions_for_topic("secure") == {0, 1, 2}
