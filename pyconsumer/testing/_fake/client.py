""":class:`RawClient`: one blocking connection to a fake broker speaking exact protocol
versions, for tests of the fake itself."""
from __future__ import annotations

import itertools
import socket

from pyconsumer.errors import ErrorCode
from pyconsumer.protocol import ApiKey, api_versions_error_code, decode_response, encode_request

from .cluster import FakeCluster
from .common import HOST, Body


class RawClient:
    """One blocking connection speaking exact protocol versions, for tests of the fake itself
    (no negotiation: the test picks each version). ``send``/``receive`` split a call whose
    answer the broker holds (JoinGroup, SyncGroup, Fetch)."""

    def __init__(self, cluster: FakeCluster, node: int = 0, client_id: str = "raw",
                 timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((HOST, cluster.brokers[node].port), timeout=timeout)
        self.client_id = client_id
        self._ids = itertools.count(1)
        self._sent: list[tuple[int, ApiKey, int]] = []

    def send(self, api: ApiKey, version: int, body: Body) -> None:
        cid = next(self._ids)
        self.sock.sendall(encode_request(api, version, cid, self.client_id, body))
        self._sent.append((cid, api, version))

    def receive(self) -> Body:
        """The answer to the oldest request sent; EOFError when the broker hung up."""
        cid, api, version = self._sent.pop(0)
        payload = self._read(int.from_bytes(self._read(4), "big"))
        if api == ApiKey.API_VERSIONS and \
                api_versions_error_code(payload) == ErrorCode.UNSUPPORTED_VERSION:
            version = 0                  # KIP-511: the refusal comes as a v0 body
        got, body = decode_response(api, version, payload)
        assert got == cid, f"correlation id {got}, expected {cid}"
        return body

    def call(self, api: ApiKey, version: int, body: Body) -> Body:
        self.send(api, version, body)
        return self.receive()

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise EOFError("the fake broker closed the connection")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["RawClient"]
