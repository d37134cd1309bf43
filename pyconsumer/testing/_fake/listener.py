"""One broker's network side: a listening socket with an accept thread and a thread per
connection, which reads size-prefixed frames and answers them in order, one at a time, as
Kafka does. What a frame is answered with is the cluster's business (``serve``)."""
from __future__ import annotations

import socket
import threading
from collections.abc import Callable

from .common import HOST


class Broker:
    """One listener: an accept thread and a thread per connection. ``serve(broker, frame)``
    answers a request frame (None: hang up); an exception it raises (a bug in the fake or a
    test's handler) lands in ``errors``."""

    def __init__(self, node_id: int, serve: Callable[[Broker, bytes], bytes | None],
                 errors: list[BaseException]) -> None:
        self.node_id = node_id
        self.port = 0
        self.running = False
        self._serve_frame = serve
        self._errors = errors
        self._server: socket.socket | None = None
        self._conns: set[socket.socket] = set()

    def start(self) -> None:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((HOST, self.port))
        server.listen(16)
        server.settimeout(0.05)
        self.port = server.getsockname()[1]
        self._server = server
        self.running = True
        threading.Thread(target=self._accept, args=(server,), daemon=True,
                         name=f"fake-broker-{self.node_id}").start()

    def _accept(self, server: socket.socket) -> None:
        while self.running and self._server is server:
            try:
                sock, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            sock.settimeout(None)
            self._conns.add(sock)
            threading.Thread(target=self._serve, args=(sock,), daemon=True,
                             name=f"fake-broker-{self.node_id}-conn").start()

    def _read(self, sock: socket.socket, n: int) -> bytes | None:
        out = bytearray()
        while len(out) < n:
            try:
                chunk = sock.recv(n - len(out))
            except OSError:
                return None
            if not chunk:
                return None
            out += chunk
        return bytes(out)

    def _serve(self, sock: socket.socket) -> None:
        try:
            while self.running:
                head = self._read(sock, 4)
                frame = None if head is None else self._read(sock, int.from_bytes(head, "big"))
                if frame is None:
                    return
                answer = self._serve_frame(self, frame)
                if answer is None:
                    return
                sock.sendall(answer)
        except OSError:
            pass
        except BaseException as e:   # a bug in the fake or a test's handler: fail the test
            self._errors.append(e)
        finally:
            self._conns.discard(sock)
            sock.close()

    def drop_connections(self) -> None:
        for s in list(self._conns):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self) -> None:
        self.running = False
        server, self._server = self._server, None
        if server is not None:
            try:
                # stop listening now: a close() alone leaves the socket listening (and
                # accepting into its backlog) until the accept thread's wait ends
                server.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            server.close()
        self.drop_connections()


__all__ = ["Broker"]
