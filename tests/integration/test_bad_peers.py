"""The network client against peers that misbehave: garbage, truncated and huge frames, silence,
refused connections, wrong correlation ids. Each gets a clear error naming the node, the
connection is closed and the next request reconnects; nothing waits past request.timeout.ms.
"""
from __future__ import annotations

import socket
import time
import tracemalloc
from typing import Any

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import (
    KafkaConnectionError,
    KafkaProtocolError,
    KafkaTimeoutError,
    NoBrokersAvailable,
    UnsupportedVersionError,
)
from pyconsumer.net import ConnectionState, NetworkClient
from pyconsumer.net.client import metadata_request_body
from pyconsumer.protocol import ApiKey, encode_response

from tests.peers import PeerConnection, ScriptedPeer

REQUEST_TIMEOUT_MS = 600


def make_client(bootstrap: str, **overrides: Any) -> NetworkClient:
    settings: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "request_timeout_ms": REQUEST_TIMEOUT_MS,
        "reconnect_backoff_ms": 20,
        "reconnect_backoff_max_ms": 100,
        "default_api_timeout_ms": 5000,
    }
    settings.update(overrides)
    return NetworkClient(ConsumerConfig(**settings))


def metadata(client: NetworkClient, node: int = -1) -> Any:
    """Send one Metadata request to ``node`` and poll until it completes."""
    fut = client.send(node, ApiKey.METADATA, lambda v: metadata_request_body(v, ["t"], False))
    started = time.monotonic()
    client.poll(timeout_ms=REQUEST_TIMEOUT_MS * 4, future=fut)
    assert fut.done, "the request neither completed nor failed within 4x request.timeout.ms"
    return fut, time.monotonic() - started


def good(conn: PeerConnection) -> None:
    conn.answer_api_versions()
    while True:
        conn.answer_metadata(conn.peer.port, [("t", 2)])


def reconnects(client: NetworkClient, peer: ScriptedPeer) -> None:
    """After the failure, the next request (once the backoff ends) connects again and works."""
    time.sleep(0.15)  # past reconnect.backoff.max.ms
    fut, _ = metadata(client)
    assert fut.succeeded(), fut.exception
    assert [t["name"] for t in fut.value.body["topics"]] == ["t"]
    assert client.connection_state(-1) is ConnectionState.READY
    assert peer.connections == 2


def test_garbage_instead_of_api_versions() -> None:
    def garbage(conn: PeerConnection) -> None:
        conn.read_request()
        conn.send(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        conn.hold()

    with ScriptedPeer([garbage, good]) as peer:
        client = make_client(peer.bootstrap)
        try:
            fut, elapsed = metadata(client)
            err = fut.exception
            assert isinstance(err, KafkaConnectionError)
            # "HTTP" read as a frame length
            assert f"node -1 (127.0.0.1:{peer.port}) sent a response frame of 1213486160 bytes" in str(err)
            assert "max.response.size=268435456" in str(err)
            assert isinstance(client.connection(-1).last_error, KafkaProtocolError)
            assert elapsed < REQUEST_TIMEOUT_MS / 1000
            reconnects(client, peer)
        finally:
            client.close()


def test_consumer_retries_past_a_garbage_answer() -> None:
    def garbage(conn: PeerConnection) -> None:
        conn.read_request()
        conn.send(bytes(range(256)) * 4)
        conn.hold()

    with ScriptedPeer([garbage, good]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap, reconnect_backoff_ms=20,
                           request_timeout_ms=REQUEST_TIMEOUT_MS) as consumer:
            assert consumer.partitions_for_topic("t") == {0, 1}
        assert peer.connections == 2


def test_huge_frame_length_is_refused_without_allocating() -> None:
    def huge(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        conn.read_request()
        conn.send(b"\x7f\xff\xff\xff" + b"\x00" * 64)
        conn.hold()

    with ScriptedPeer([huge, good]) as peer:
        client = make_client(peer.bootstrap)
        try:
            tracemalloc.start()
            fut, _ = metadata(client)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert isinstance(fut.exception, KafkaProtocolError)
            assert "sent a response frame of 2147483647 bytes" in str(fut.exception)
            assert peak < 8 << 20, f"{peak} bytes allocated for a refused frame"
            reconnects(client, peer)
        finally:
            client.close()


@pytest.mark.parametrize("length", [b"\xff\xff\xff\xff", b"\x00\x00\x00\x02"])
def test_negative_or_tiny_frame_length_is_refused(length: bytes) -> None:
    def bad(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        conn.read_request()
        conn.send(length + b"\x00\x00")
        conn.hold()

    with ScriptedPeer([bad]) as peer:
        client = make_client(peer.bootstrap, max_response_size=1 << 20, fetch_max_bytes=1 << 20)
        try:
            fut, _ = metadata(client)
            size = int.from_bytes(length, "big", signed=True)
            assert isinstance(fut.exception, KafkaProtocolError)
            assert (f"sent a response frame of {size} bytes; a frame must hold 4 to "
                    f"max.response.size=1048576 bytes") in str(fut.exception)
        finally:
            client.close()


def test_truncated_frame_then_close() -> None:
    def truncated(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        conn.read_request()
        conn.send((100).to_bytes(4, "big") + b"\x00" * 10)
        conn.sock.shutdown(socket.SHUT_WR)
        conn.hold()

    with ScriptedPeer([truncated, good]) as peer:
        client = make_client(peer.bootstrap)
        try:
            fut, elapsed = metadata(client)
            assert isinstance(fut.exception, KafkaConnectionError)
            assert "closed the connection after 10 of 100 bytes of a response frame (truncated frame)" \
                in str(fut.exception)
            assert elapsed < REQUEST_TIMEOUT_MS / 1000
            reconnects(client, peer)
        finally:
            client.close()


def test_truncated_frame_left_open_times_out() -> None:
    def stalls(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        conn.read_request()
        conn.send((100).to_bytes(4, "big") + b"\x00" * 10)
        conn.hold()

    with ScriptedPeer([stalls, good]) as peer:
        client = make_client(peer.bootstrap)
        try:
            fut, elapsed = metadata(client)
            assert isinstance(fut.exception, KafkaTimeoutError)
            assert "METADATA" in str(fut.exception) and "request.timeout.ms" in str(fut.exception)
            assert REQUEST_TIMEOUT_MS / 1000 * 0.9 <= elapsed < REQUEST_TIMEOUT_MS / 1000 + 0.5
            assert client.connection_state(-1) is ConnectionState.DISCONNECTED
            reconnects(client, peer)
        finally:
            client.close()


def test_silent_peer_times_out_during_negotiation() -> None:
    with ScriptedPeer([PeerConnection.hold, good]) as peer:
        client = make_client(peer.bootstrap)
        try:
            fut, elapsed = metadata(client)
            assert isinstance(fut.exception, KafkaConnectionError)
            assert "API_VERSIONS" in str(fut.exception) and "request.timeout.ms" in str(fut.exception)
            assert elapsed < REQUEST_TIMEOUT_MS / 1000 + 0.5
            reconnects(client, peer)
        finally:
            client.close()


def test_wrong_correlation_id() -> None:
    def wrong(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        request = conn.read_request()
        assert request is not None
        conn.send(encode_response(ApiKey.METADATA, request[1], request[2] + 5, {}))
        conn.hold()

    with ScriptedPeer([wrong, good]) as peer:
        client = make_client(peer.bootstrap)
        try:
            fut, _ = metadata(client)
            assert isinstance(fut.exception, KafkaProtocolError)
            assert "answered correlation id" in str(fut.exception)
            reconnects(client, peer)
        finally:
            client.close()


def test_body_that_does_not_parse() -> None:
    def bad_body(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        request = conn.read_request()
        assert request is not None
        # the right correlation id, then a topic array claiming 1000 entries and nothing else
        payload = request[2].to_bytes(4, "big") + b"\x00" + b"\x00" * 4 + b"\x01" + b"\xe9\x07"
        conn.send(len(payload).to_bytes(4, "big") + payload)
        conn.hold()

    with ScriptedPeer([bad_body, good]) as peer:
        client = make_client(peer.bootstrap)
        try:
            fut, _ = metadata(client)
            assert isinstance(fut.exception, KafkaProtocolError)
            assert f"node -1 (127.0.0.1:{peer.port}): Malformed MetadataResponse" in str(fut.exception)
            reconnects(client, peer)
        finally:
            client.close()


def test_refused_connection_then_backoff() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    client = make_client(f"127.0.0.1:{port}", reconnect_backoff_ms=1000,
                         reconnect_backoff_max_ms=1000)
    try:
        fut, _ = metadata(client)
        assert isinstance(fut.exception, KafkaConnectionError)
        assert (f"cannot connect to node -1 (127.0.0.1:{port}) at 127.0.0.1:{port}: "
                f"ECONNREFUSED") in str(fut.exception)
        again = client.send(-1, ApiKey.METADATA, {})
        assert again.failed() and "reconnect backoff" in str(again.exception)
        assert 600 < client.connection_delay_ms(-1) <= 1200
    finally:
        client.close()


def test_no_broker_reachable() -> None:
    ports = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        ports.append(s.getsockname()[1])
        s.close()
    servers = ",".join(f"127.0.0.1:{p}" for p in ports)
    with KafkaConsumer(bootstrap_servers=servers, reconnect_backoff_ms=20,
                       reconnect_backoff_max_ms=50) as consumer:
        started = time.monotonic()
        with pytest.raises(NoBrokersAvailable) as info:
            consumer.topics(timeout_ms=800)
        assert time.monotonic() - started < 2.0
        for p in ports:
            assert f"127.0.0.1:{p}" in str(info.value)


def kip511_downgrade(conn: PeerConnection) -> None:
    """A broker that knows ApiVersions up to v2: error 35 with a v0 body saying so."""
    request = conn.read_request()
    assert request is not None and request[1] == 4
    conn.send(encode_response(ApiKey.API_VERSIONS, 0, request[2], {
        "error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 2}]}))
    good(conn)


def mock_style_downgrade(conn: PeerConnection) -> None:
    """librdkafka's mock: error 35 with a body that parses in no version (raw count byte)."""
    request = conn.read_request()
    assert request is not None and request[1] == 4
    payload = request[2].to_bytes(4, "big") + bytes.fromhex("0023 01 0012 0000 0002 00000000")
    conn.send(len(payload).to_bytes(4, "big") + payload)
    good(conn)


@pytest.mark.parametrize("script, expected", [(kip511_downgrade, 2), (mock_style_downgrade, 0)])
def test_api_versions_downgrade(script: Any, expected: int) -> None:
    with ScriptedPeer([script]) as peer:
        client = make_client(peer.bootstrap)
        try:
            fut, _ = metadata(client)
            assert fut.succeeded(), fut.exception
            assert client.connection(-1).api_versions_version == expected
            assert peer.requests[:2] == [(ApiKey.API_VERSIONS, 4), (ApiKey.API_VERSIONS, expected)]
            assert peer.connections == 1
        finally:
            client.close()


def test_no_common_version() -> None:
    def fetch_from_the_future(conn: PeerConnection) -> None:
        request = conn.read_request()
        assert request is not None
        conn.send(encode_response(ApiKey.API_VERSIONS, request[1], request[2], {
            "error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4},
                                          {"api_key": 3, "min_version": 0, "max_version": 12},
                                          {"api_key": 1, "min_version": 20, "max_version": 25}]}))
        conn.hold()

    with ScriptedPeer([fetch_from_the_future]) as peer:
        client = make_client(peer.bootstrap)
        try:
            fut = client.send(-1, ApiKey.FETCH, {})
            client.poll(timeout_ms=2000, future=fut)
            assert isinstance(fut.exception, UnsupportedVersionError)
            assert str(fut.exception) == (f"node -1 (127.0.0.1:{peer.port}) supports FETCH v20-25, "
                                          "pyconsumer needs v0-17: no common version")
            fut = client.send(-1, ApiKey.JOIN_GROUP, {})
            assert isinstance(fut.exception, UnsupportedVersionError)
            assert "does not support JOIN_GROUP" in str(fut.exception)
            assert client.is_ready(-1)  # a version mismatch does not drop the connection
        finally:
            client.close()


def test_pipelined_requests_respect_the_in_flight_limit() -> None:
    seen_in_flight: list[int] = []

    def slow(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        pending = []
        while True:
            request = conn.read_request()
            if request is None:
                return
            pending.append(request)
            # answer in order only once two are queued: proves the client pipelines
            if len(pending) == 2:
                seen_in_flight.append(2)
                for _, version, cid, _ in pending:
                    conn.send(encode_response(ApiKey.METADATA, version, cid, {
                        "brokers": [], "topics": [{"error_code": 0, "name": f"c{cid}",
                                                   "partitions": []}]}))
                pending.clear()

    with ScriptedPeer([slow]) as peer:
        client = make_client(peer.bootstrap, max_in_flight_requests_per_connection=2)
        try:
            futs = [client.send(-1, ApiKey.METADATA, lambda v: metadata_request_body(v, None, False))
                    for _ in range(6)]
            conn = client.connection(-1)
            deadline = time.monotonic() + 3
            while not all(f.done for f in futs) and time.monotonic() < deadline:
                assert conn.in_flight_count <= 2
                client.poll(timeout_ms=50)
            assert all(f.succeeded() for f in futs)
            # correlation ids 1..6 (0 was ApiVersions), answered in order
            assert [f.value.body["topics"][0]["name"] for f in futs] == [f"c{i}" for i in range(1, 7)]
            assert seen_in_flight == [2, 2, 2]
        finally:
            client.close()


def test_a_disconnect_requests_a_metadata_update() -> None:
    def closes_after_metadata(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        conn.answer_metadata(conn.peer.port, [("t", 1)])
        conn.read_request()          # the next request: hang up instead of answering

    with ScriptedPeer([closes_after_metadata]) as peer:
        client = make_client(peer.bootstrap)
        try:
            client.update_metadata(["t"])
            assert not client.metadata.update_requested()
            fut, _ = metadata(client)
            assert isinstance(fut.exception, KafkaConnectionError)
            assert "closed the connection with 1 request(s) unanswered" in str(fut.exception)
            assert client.metadata.update_requested()
        finally:
            client.close()


def test_every_address_of_a_host_is_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    """client.dns.lookup=use_all_dns_ips: a host name resolving to a dead address and a live
    one connects through the live one without waiting for a backoff."""
    import pyconsumer.net.connection as connection_module

    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    dead.close()
    with ScriptedPeer([good]) as peer:
        def resolve(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
            assert host == "kafka.example"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", dead_port)),
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", peer.port))]

        monkeypatch.setattr(connection_module.socket, "getaddrinfo", resolve)
        client = make_client(f"kafka.example:{peer.port}", reconnect_backoff_ms=5000,
                             reconnect_backoff_max_ms=5000)
        try:
            started = time.monotonic()
            client.update_metadata(["t"], timeout_ms=3000)
            assert time.monotonic() - started < 1.0           # no 5 s backoff between addresses
            conn = client.connection(-1)
            assert conn is not None and f"127.0.0.1:{dead_port}: ECONNREFUSED" in str(conn.last_error)
            assert client.is_ready(-1) and conn.failures == 0
        finally:
            client.close()


def test_idle_connections_are_closed() -> None:
    with ScriptedPeer([good]) as peer:
        client = make_client(peer.bootstrap, connections_max_idle_ms=300,
                             max_poll_interval_ms=300, session_timeout_ms=300,
                             heartbeat_interval_ms=100)
        try:
            fut, _ = metadata(client)
            assert fut.succeeded() and client.is_ready(-1)
            client.poll(timeout_ms=150)
            assert client.is_ready(-1)               # not idle long enough yet
            client.poll(timeout_ms=400)
            assert client.connection_state(-1) is ConnectionState.DISCONNECTED
            assert client.connection_delay_ms(-1) == 0   # an idle close is no failure
            fut, _ = metadata(client)                # and the next request reconnects
            assert fut.succeeded() and peer.connections == 2
        finally:
            client.close()
