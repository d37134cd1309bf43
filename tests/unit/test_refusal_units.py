"""When a refusal is definite: a host whose every address refuses (not just the first one),
and what the network client does with it (loopback sockets, a fake resolver)."""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import NoBrokersAvailable
from pyconsumer.net import NetworkClient
from pyconsumer.net.transport import tls_record_kind
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import free_port

from tests.peers import PeerConnection, ScriptedPeer


@pytest.fixture
def two_addresses(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``two.invalid`` resolves to 127.0.0.2 first (nothing listens there), then 127.0.0.1."""
    real = socket.getaddrinfo

    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "two.invalid":
            return real("127.0.0.2", port, *args, **kwargs) + real("127.0.0.1", port, *args,
                                                                   **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield


def answers(conn: PeerConnection) -> None:
    conn.answer_api_versions()
    conn.serve({ApiKey.METADATA: lambda version, body: conn.one_partition_metadata("t")})


def test_one_refusing_address_of_a_host_is_not_a_refusal_of_the_host(two_addresses: None
                                                                      ) -> None:
    with ScriptedPeer([answers]) as peer:
        client = NetworkClient(ConsumerConfig(bootstrap_servers=f"two.invalid:{peer.port}"))
        try:
            md = client.update_metadata(["t"], timeout_ms=5000)
            assert [p.partition for p in md.partitions_for("t") or []] == [0]
            conn = client.connection(-1)
            assert conn is not None and conn.refused_at is None and not conn.unreachable
            assert "127.0.0.2" in str(conn.last_error)          # the first address refused
        finally:
            client.close()


def test_every_address_refusing_is_a_refusal(two_addresses: None) -> None:
    port = free_port()
    client = NetworkClient(ConsumerConfig(bootstrap_servers=f"two.invalid:{port}"))
    try:
        started = time.monotonic()
        with pytest.raises(NoBrokersAvailable) as info:
            client.update_metadata(timeout_ms=30_000)
        assert time.monotonic() - started < 1.0
        # the round's last address is the one named; both were tried
        assert str(info.value) == (
            f"every bootstrap server refused the connection (two.invalid:{port}): cannot "
            f"connect to node -1 (two.invalid:{port}) at 127.0.0.1:{port}: ECONNREFUSED "
            f"(Connection refused)")
        conn = client.connection(-1)
        assert conn is not None and conn.failures == 1 and conn.unreachable
    finally:
        client.close()


@pytest.mark.parametrize("header, kind", [
    (b"\x15\x03\x03\x00", "a TLS alert record"), (b"\x16\x03\x01\x00", "a TLS handshake record"),
    (b"\x15\x03", "a TLS alert record"), (b"\x00\x00\x00\x15", None), (b"\x15\x02\x00\x00", None),
    (b"\x17\x03\x03\x00", None), (b"\x15", None)])
def test_tls_record_headers(header: bytes, kind: str | None) -> None:
    assert tls_record_kind(header) == kind
