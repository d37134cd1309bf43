"""A scripted TCP peer for bad-broker tests: each accepted connection runs the next script.

Scripts are functions ``(conn: PeerConnection) -> None`` run in the server's thread; they read
request frames and answer whatever the test wants (valid frames, garbage, truncated frames,
nothing). The valid answers are built with pyconsumer.protocol's encoder; what is under test
here is the network client's handling of the peer, not the codec.
"""
from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pyconsumer.protocol import ApiKey, SUPPORTED_VERSIONS, decode_request, encode_response


#: the APIs a scripted peer does not offer: it plays a broker without client telemetry, so a
#: consumer (enable.metrics.push defaults to true) sends none of these between scripted requests
NOT_OFFERED = (ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY)


def advertised_api_keys(ranges: Mapping[ApiKey, tuple[int, int]] | None = None
                        ) -> list[dict[str, int]]:
    """The ApiVersions answer's api_keys of a scripted peer: every version pyconsumer supports
    (or ``ranges``), but the APIs in :data:`NOT_OFFERED`."""
    return [{"api_key": int(k), "min_version": lo, "max_version": hi}
            for k, (lo, hi) in (SUPPORTED_VERSIONS if ranges is None else ranges).items()
            if k not in NOT_OFFERED]


class PeerHangup(Exception):
    """The client closed the connection where a script expected a request: not an error."""


class PeerConnection:
    def __init__(self, sock: socket.socket, peer: ScriptedPeer) -> None:
        self.sock = sock
        self.peer = peer

    def read_request(self) -> tuple[ApiKey, int, int, dict[str, Any]] | None:
        """(api key, version, correlation id, body) of the next request; None at EOF."""
        head = self._read(4)
        if head is None:
            return None
        payload = self._read(int.from_bytes(head, "big"))
        if payload is None:
            return None
        api_key, version, correlation_id, _, body = decode_request(payload)
        self.peer.requests.append((api_key, version))
        return api_key, version, correlation_id, body

    def _read(self, n: int) -> bytes | None:
        out = bytearray()
        while len(out) < n:
            try:
                chunk = self.sock.recv(n - len(out))
            except OSError:
                return None
            if not chunk:
                return None
            out += chunk
        return bytes(out)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def answer_api_versions(self) -> None:
        """Read the ApiVersions request and answer it (v0 body listing our versions when the
        version asked is above 3, as a KIP-511 broker would, else at the version asked)."""
        request = self.read_request()
        if request is None:
            raise PeerHangup()
        assert request[0] == ApiKey.API_VERSIONS, request
        _, version, correlation_id, _ = request
        self.send(encode_response(ApiKey.API_VERSIONS, version, correlation_id,
                                  {"error_code": 0, "api_keys": advertised_api_keys()}))

    def answer_metadata(self, port: int, topics: Iterable[tuple[str, int]] = ()) -> None:
        request = self.read_request()
        if request is None:
            raise PeerHangup()
        assert request[0] == ApiKey.METADATA, request
        _, version, correlation_id, _ = request
        body = {
            "brokers": [{"node_id": 7, "host": "127.0.0.1", "port": port}],
            "controller_id": 7,
            "topics": [
                {"error_code": 0, "name": name, "partitions": [
                    {"error_code": 0, "partition_index": p, "leader_id": 7, "leader_epoch": 0,
                     "replica_nodes": [7], "isr_nodes": [7]} for p in range(n)]}
                for name, n in topics
            ],
        }
        self.send(encode_response(ApiKey.METADATA, version, correlation_id, body))

    def serve(self, handlers: dict[ApiKey, Callable[[int, dict[str, Any]], dict[str, Any]]]
              ) -> None:
        """Answer requests until the client hangs up: ``handlers[api](version, body)`` gives
        the response body; an API without a handler is a test failure."""
        while True:
            request = self.read_request()
            if request is None:
                return
            api, version, correlation_id, body = request
            if api not in handlers:
                raise AssertionError(f"unexpected {api!r} v{version}")
            self.send(encode_response(api, version, correlation_id, handlers[api](version, body)))

    def one_partition_metadata(self, topic: str = "t", leader_epoch: int = 0) -> dict[str, Any]:
        """A Metadata body: this peer as broker 7, leading partition 0 of ``topic``."""
        return {
            "brokers": [{"node_id": 7, "host": "127.0.0.1", "port": self.peer.port}],
            "topics": [{"error_code": 0, "name": topic, "partitions": [
                {"error_code": 0, "partition_index": 0, "leader_id": 7,
                 "leader_epoch": leader_epoch, "replica_nodes": [7], "isr_nodes": [7]}]}],
        }

    def hold(self) -> None:
        """Keep the connection open, reading and ignoring, until the client closes it."""
        while self._read(1) is not None:
            pass


Script = Callable[[PeerConnection], None]


class ScriptedPeer:
    """A listening socket on 127.0.0.1; connection number i runs ``scripts[i]`` (the last one
    repeats)."""

    def __init__(self, scripts: list[Script], tls: ssl.SSLContext | None = None) -> None:
        self.scripts = scripts
        self.tls = tls
        self.requests: list[tuple[ApiKey, int]] = []
        self.connections = 0
        self.errors: list[BaseException] = []
        self.handshake_errors: list[BaseException] = []
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(8)
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _serve(self) -> None:
        self._server.settimeout(0.1)
        while not self._stop.is_set():
            try:
                sock, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            script = self.scripts[min(self.connections, len(self.scripts) - 1)]
            self.connections += 1
            self._socks.append(sock)
            t = threading.Thread(target=self._run, args=(script, sock), daemon=True)
            t.start()
            self._threads.append(t)

    def _run(self, script: Script, sock: socket.socket) -> None:
        try:
            if self.tls is not None:
                sock.settimeout(10)
                try:
                    sock = self.tls.wrap_socket(sock, server_side=True)
                except (ssl.SSLError, OSError) as e:   # the client refused us: its test checks why
                    self.handshake_errors.append(e)
                    return
                sock.settimeout(None)
            script(PeerConnection(sock, self))
        except PeerHangup:
            pass
        except BaseException as e:  # surfaced by the test through .errors
            if not self._stop.is_set():
                self.errors.append(e)
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def close(self) -> None:
        self._stop.set()
        self._server.close()
        for s in self._socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            t.join(2)
        self._accept.join(2)

    def __enter__(self) -> ScriptedPeer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
