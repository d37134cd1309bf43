"""A TCP fault proxy for tests: 127.0.0.1 in front of one Kafka broker.

The proxy forwards bytes unchanged in both directions, except the broker addresses in
Metadata and FindCoordinator answers: a broker advertises its own host:port, and a client
told that address would go around the proxy, so answers naming the upstream broker are
decoded with :mod:`pyconsumer.protocol` and re-encoded naming the proxy instead.

Faults, each for every connection open at the time (and those accepted during it):

- :meth:`FaultProxy.stall`: forward nothing, in either direction, for a while (connections
  stay open; what is in flight waits, like a broker that hangs);
- :meth:`FaultProxy.drop`: close both sides of every connection; with ``mid_frame=True``
  each connection is cut inside its next response frame, after part of it was forwarded;
- :meth:`FaultProxy.delay`: hold every chunk for some time before forwarding it.

:class:`FaultInjector` plays a seeded random schedule of these faults on a proxy from a
background thread and records what it did.

Everything runs on one daemon thread with non-blocking sockets. The proxy listens on
127.0.0.1 only and stops by itself after ``lifetime`` seconds, closing every connection.
"""
from __future__ import annotations

import collections
import dataclasses
import logging
import random
import select
import socket
import ssl
import threading
import time
from types import TracebackType
from typing import Any, Self

__all__ = ["FaultInjector", "FaultProxy", "ProxyStats"]

log = logging.getLogger(__name__)

_METADATA = 3
_FIND_COORDINATOR = 10
_MAX_QUEUED = 1 << 20        # bytes waiting for a slow reader before the proxy stops reading
_READ_SIZE = 65536
_MAX_FRAME = 1 << 30         # a larger length prefix is not Kafka: the proxy stops parsing
# nothing to read or write on a non-blocking socket right now (TCP, or TLS mid-record)
_WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


@dataclasses.dataclass
class ProxyStats:
    """What the proxy did so far."""

    connections: int = 0          # accepted from clients
    stalls: int = 0
    drops: int = 0                # drop() calls
    mid_frame_cuts: int = 0       # connections cut inside a response frame
    connections_dropped: int = 0  # connections closed by drop() (cut or not)
    delays: int = 0
    rewritten: int = 0            # Metadata / FindCoordinator answers re-encoded
    bytes_to_broker: int = 0
    bytes_to_client: int = 0
    #: requests forwarded, by api key
    requests: dict[int, int] = dataclasses.field(default_factory=dict)


class _Direction:
    """One direction of a proxied connection: what waits to be written, and where the
    current frame stands (frames are followed only to find their boundaries)."""

    def __init__(self, header_size: int) -> None:
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.queued = 0
        self.header_size = header_size    # bytes read before deciding how to pass a frame
        self.header = bytearray()
        self.remaining = 0                # bytes of the current frame still to pass through
        self.frame_at = 0                 # bytes of the current frame passed so far
        self.whole: bytearray | None = None  # a frame held back whole, to be rewritten
        self.whole_key: tuple[int, int] = (0, 0)
        self.lost = False                 # the stream made no sense: pass bytes blindly


class _Link:
    """A client connection and its connection to the broker."""

    def __init__(self, client: socket.socket, broker: socket.socket) -> None:
        self.client = client
        self.broker = broker
        self.up = _Direction(12)          # size, api key, version, correlation id
        self.down = _Direction(8)         # size, correlation id
        self.requests: dict[int, tuple[int, int]] = {}   # correlation id -> (key, version)
        self.cut_armed_until: float | None = None        # a mid-frame drop is waiting
        self.cut_at: int | None = None    # frame offset after which to cut this response
        self.closing = False              # close once what is queued for the client is out
        self.closed = False


class FaultProxy:
    """A fault-injecting TCP proxy on 127.0.0.1 in front of ``upstream`` ("host:port")."""

    def __init__(self, upstream: str | tuple[str, int], *, lifetime: float = 300.0,
                 rewrite_addresses: bool = True, mid_frame_wait: float = 2.0,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        """``ssl_context``: a server context; clients then speak TLS to the proxy (which
        speaks plaintext to the broker), e.g. for SASL_SSL in front of a plaintext broker."""
        self.ssl_context = ssl_context
        if isinstance(upstream, str):
            host, _, port = upstream.rpartition(":")
            upstream = (host, int(port))
        self.upstream: tuple[str, int] = upstream
        self.lifetime = lifetime
        self.rewrite_addresses = rewrite_addresses
        #: a mid-frame drop waits this long for a response to cut, then drops plainly
        self.mid_frame_wait = mid_frame_wait
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.setblocking(False)
        self.host, self.port = "127.0.0.1", int(self._listener.getsockname()[1])
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._lock = threading.Lock()
        self._links: list[_Link] = []
        self._stall_until = 0.0
        self._delay = 0.0
        self._delay_until = 0.0
        self._drop_now = False
        self._cut_requested = False
        self._stop = False
        self._stats = ProxyStats()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ public

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> Self:
        if self._thread is None:
            self._deadline = time.monotonic() + self.lifetime
            self._thread = threading.Thread(target=self._run, name=f"fault-proxy-{self.port}",
                                            daemon=True)
            self._thread.start()
        return self

    def point_at(self, upstream: str | tuple[str, int]) -> None:
        """Connections accepted from now on go to ``upstream`` (open ones stay where they are):
        the proxy's address stands for a bootstrap name that now means another cluster."""
        if isinstance(upstream, str):
            host, _, port = upstream.rpartition(":")
            upstream = (host, int(port))
        with self._lock:
            self.upstream = upstream

    def stall(self, seconds: float) -> None:
        """Forward nothing for ``seconds`` (from now; a longer running stall is kept)."""
        with self._lock:
            self._stall_until = max(self._stall_until, time.monotonic() + seconds)
            self._stats.stalls += 1
        self._wake()

    def drop(self, mid_frame: bool = False) -> None:
        """Close every connection (both sides). ``mid_frame``: cut each connection open now
        inside its next response frame instead, once part of the frame was forwarded; one
        that gets no response within ``mid_frame_wait`` seconds is dropped plainly then."""
        with self._lock:
            if mid_frame:
                self._cut_requested = True
            else:
                self._drop_now = True
            self._stats.drops += 1
        self._wake()

    def delay(self, seconds: float, duration: float) -> None:
        """For the next ``duration`` seconds, hold every chunk ``seconds`` before sending it."""
        with self._lock:
            self._delay = seconds
            self._delay_until = time.monotonic() + duration
            self._stats.delays += 1
        self._wake()

    @property
    def stats(self) -> ProxyStats:
        with self._lock:
            return dataclasses.replace(self._stats, requests=dict(self._stats.requests))

    @property
    def open_connections(self) -> int:
        with self._lock:
            return sum(1 for link in self._links if not link.closed)

    def close(self) -> None:
        self._stop = True
        self._wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5.0)
        self._shutdown()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FaultProxy({self.bootstrap} -> {self.upstream[0]}:{self.upstream[1]})"

    # ------------------------------------------------------------------ loop

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass

    def _run(self) -> None:
        try:
            while not self._stop and time.monotonic() < self._deadline:
                self._turn()
        except Exception:                          # a bug here must not hang the test
            log.exception("fault proxy %s failed", self.bootstrap)
        finally:
            self._shutdown()

    def _turn(self) -> None:
        now = time.monotonic()
        with self._lock:
            stalled = now < self._stall_until
            delay = self._delay if now < self._delay_until else 0.0
            drop_now, self._drop_now = self._drop_now, False
            cut, self._cut_requested = self._cut_requested, False
            links = [link for link in self._links if not link.closed]
            self._links = links
        if drop_now:
            for link in links:
                self._close_link(link, dropped=True)
            links = []
        if cut:
            for link in links:
                if link.cut_at is None:
                    link.cut_armed_until = now + self.mid_frame_wait
        readers: list[Any] = [self._listener, self._wake_r]
        writers: list[Any] = []
        timeout = max(0.0, min(0.5, self._deadline - now))
        if stalled:
            timeout = min(timeout, self._stall_until - now)
        for link in links:
            if link.cut_armed_until is not None:
                if now >= link.cut_armed_until and link.cut_at is None:
                    self._close_link(link, dropped=True)   # no response came to cut
                    continue
                timeout = min(timeout, max(0.0, link.cut_armed_until - now))
            if stalled:
                continue
            for sock, direction, other in ((link.client, link.up, link.down),
                                           (link.broker, link.down, link.up)):
                if direction.queued < _MAX_QUEUED and not link.closing:
                    readers.append(sock)
                if other.queue:
                    release = other.queue[0][0]
                    if release <= now:
                        writers.append(link.broker if other is link.up else link.client)
                    else:
                        timeout = min(timeout, release - now)
        if delay and not stalled:
            timeout = min(timeout, max(0.0, self._delay_until - now))
        readable, writable, _ = select.select(readers, writers, [], max(0.0, timeout))
        now = time.monotonic()
        for sock in readable:
            if sock is self._listener:
                self._accept()
            elif sock is self._wake_r:
                try:
                    while self._wake_r.recv(4096):
                        pass
                except OSError:
                    pass
        if stalled:
            return
        for link in links:
            if link.closed:
                continue
            if link.client in writable:
                self._flush(link, link.down, link.client)
            if not link.closed and link.broker in writable:
                self._flush(link, link.up, link.broker)
            if not link.closed and link.client in readable:
                self._read(link, link.client, now, delay)
            if not link.closed and link.broker in readable:
                self._read(link, link.broker, now, delay)
            if link.closing and not link.closed and not link.down.queue:
                self._close_link(link, dropped=False)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            try:
                broker = socket.create_connection(self.upstream, timeout=5.0)
            except OSError as e:
                log.info("fault proxy %s: upstream %s unreachable: %s", self.bootstrap,
                         self.upstream, e)
                client.close()
                continue
            if self.ssl_context is not None:
                try:
                    # a short blocking handshake: the proxy is a test tool, one client at once
                    client.settimeout(5.0)
                    client = self.ssl_context.wrap_socket(client, server_side=True)
                except (OSError, ssl.SSLError) as e:
                    log.info("fault proxy %s: TLS handshake failed: %s", self.bootstrap, e)
                    client.close()
                    broker.close()
                    with self._lock:
                        self._stats.connections += 1
                    continue
            for s in (client, broker):
                s.setblocking(False)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link = _Link(client, broker)
            with self._lock:
                self._links.append(link)
                self._stats.connections += 1

    def _read(self, link: _Link, sock: socket.socket, now: float, delay: float) -> None:
        try:
            data = sock.recv(_READ_SIZE)
            # TLS may hold decrypted bytes that select() will not announce
            while isinstance(sock, ssl.SSLSocket) and data and sock.pending():
                data += sock.recv(sock.pending())
        except _WOULD_BLOCK:
            return
        except OSError:
            data = b""
        if not data:
            if sock is link.broker and link.down.queue:
                link.closing = True          # let the client have what the broker sent
            else:
                self._close_link(link, dropped=False)
            return
        release = now + delay
        if sock is link.client:
            self._pass_requests(link, data, release)
        else:
            self._pass_responses(link, data, release, now)

    def _flush(self, link: _Link, direction: _Direction, sock: socket.socket) -> None:
        now = time.monotonic()
        while direction.queue and direction.queue[0][0] <= now:
            release, chunk = direction.queue[0]
            try:
                sent = sock.send(chunk)
            except _WOULD_BLOCK:
                return
            except OSError:
                self._close_link(link, dropped=False)
                return
            with self._lock:
                if sock is link.broker:
                    self._stats.bytes_to_broker += sent
                else:
                    self._stats.bytes_to_client += sent
            direction.queued -= sent
            if sent < len(chunk):
                direction.queue[0] = (release, chunk[sent:])
                return
            direction.queue.popleft()

    @staticmethod
    def _enqueue(direction: _Direction, data: bytes, release: float) -> None:
        if data:
            direction.queue.append((release, data))
            direction.queued += len(data)

    # ------------------------------------------------------------------ framing

    def _pass_requests(self, link: _Link, data: bytes, release: float) -> None:
        """Client to broker: passed unchanged; request headers are noted so that answers can
        be decoded."""
        up = link.up
        if up.lost:
            self._enqueue(up, data, release)
            return
        pos = 0
        while pos < len(data):
            if up.remaining:
                n = min(up.remaining, len(data) - pos)
                up.remaining -= n
                pos += n
                continue
            need = up.header_size - len(up.header)
            up.header += data[pos:pos + need]
            pos += min(need, len(data) - pos)
            if len(up.header) < up.header_size:
                break
            size = int.from_bytes(up.header[0:4], "big", signed=True)
            key = int.from_bytes(up.header[4:6], "big", signed=True)
            version = int.from_bytes(up.header[6:8], "big", signed=True)
            correlation = int.from_bytes(up.header[8:12], "big", signed=True)
            up.header.clear()
            if not 8 <= size <= _MAX_FRAME:
                up.lost = link.down.lost = True      # not Kafka framing: stop interpreting
                break
            link.requests[correlation] = (key, version)
            with self._lock:
                self._stats.requests[key] = self._stats.requests.get(key, 0) + 1
            up.remaining = size - 8
        self._enqueue(up, data, release)

    def _pass_responses(self, link: _Link, data: bytes, release: float, now: float) -> None:
        """Broker to client: passed as they come, frame by frame; Metadata and
        FindCoordinator answers are held whole and rewritten; a mid-frame drop cuts here."""
        down = link.down
        if down.lost:
            self._enqueue(down, data, release)
            return
        pos = 0
        out = bytearray()
        while pos < len(data) and not link.closing:
            if down.whole is not None:                     # a frame to rewrite, held whole
                n = min(down.remaining, len(data) - pos)
                down.whole += data[pos:pos + n]
                down.remaining -= n
                pos += n
                if not down.remaining:
                    out += self._rewrite(down.whole_key, bytes(down.whole))
                    down.whole = None
                continue
            if down.remaining:                             # streaming a frame through
                n = min(down.remaining, len(data) - pos)
                if link.cut_at is not None and down.frame_at + n >= link.cut_at:
                    n = link.cut_at - down.frame_at
                    out += data[pos:pos + n]
                    link.closing = True                    # the rest never arrives
                    with self._lock:
                        self._stats.mid_frame_cuts += 1
                        self._stats.connections_dropped += 1
                    break
                out += data[pos:pos + n]
                down.remaining -= n
                down.frame_at += n
                pos += n
                continue
            need = down.header_size - len(down.header)
            down.header += data[pos:pos + need]
            pos += min(need, len(data) - pos)
            if len(down.header) < down.header_size:
                break
            size = int.from_bytes(down.header[0:4], "big", signed=True)
            correlation = int.from_bytes(down.header[4:8], "big", signed=True)
            header = bytes(down.header)
            down.header.clear()
            if not 4 <= size <= _MAX_FRAME:
                down.lost = link.up.lost = True
                out += header + data[pos:]
                break
            key_version = link.requests.pop(correlation, None)
            if key_version is not None and self._holds_whole(key_version[0]):
                down.whole = bytearray(header[4:])
                down.whole_key = key_version
                down.remaining = size - 4
                if not down.remaining:
                    out += self._rewrite(key_version, bytes(down.whole))
                    down.whole = None
                continue
            if link.cut_armed_until is not None and size > 4:
                # forward the length, the correlation id and half the body, then cut
                link.cut_armed_until = None
                link.cut_at = 8 + (size - 4) // 2
            out += header
            down.frame_at = 8
            down.remaining = size - 4
            if link.cut_at is not None and down.frame_at >= link.cut_at:
                link.closing = True
                with self._lock:
                    self._stats.mid_frame_cuts += 1
                    self._stats.connections_dropped += 1
                break
        self._enqueue(down, bytes(out), release)

    def _holds_whole(self, api_key: int) -> bool:
        """Answers to this API are held whole and passed through :meth:`_rewrite`."""
        return self.rewrite_addresses and api_key in (_METADATA, _FIND_COORDINATOR)

    def _rewrite(self, key_version: tuple[int, int], payload: bytes) -> bytes:
        """A Metadata / FindCoordinator answer naming the proxy where it named the broker
        (a whole frame, length prefix included)."""
        from pyconsumer import protocol

        key, version = key_version
        correlation, body = protocol.decode_response(key, version, payload)
        target = self.upstream
        entries: list[dict[str, Any]]
        if key == _METADATA:
            entries = body["brokers"]
        elif version >= 4:
            entries = body["coordinators"]
        else:
            entries = [body]
        for entry in entries:
            if (entry.get("host"), entry.get("port")) == target:
                entry["host"], entry["port"] = self.host, self.port
        with self._lock:
            self._stats.rewritten += 1
        return protocol.encode_response(key, version, correlation, body)

    # ------------------------------------------------------------------ close

    def _close_link(self, link: _Link, dropped: bool) -> None:
        if link.closed:
            return
        link.closed = True
        for s in (link.client, link.broker):
            try:
                s.close()
            except OSError:
                pass
        if dropped:
            with self._lock:
                self._stats.connections_dropped += 1

    def _shutdown(self) -> None:
        with self._lock:
            links, self._links = self._links, []
        for link in links:
            self._close_link(link, dropped=False)
        for s in (self._listener, self._wake_r, self._wake_w):
            try:
                s.close()
            except OSError:
                pass


class FaultInjector:
    """Plays random faults on a :class:`FaultProxy` from a background thread: every
    ``interval`` seconds (a random pause in that range) one of stall (a random length from
    ``stalls``; the next fault waits for its end), drop, drop mid-frame, or delay
    (``delays``: (seconds held, for how long)). The kinds come in shuffled rounds, so every
    kind is played once in each run of ``len(kinds)`` faults. Seeded, bounded by
    ``max_faults`` and by the proxy's lifetime; :attr:`log` lists what was done as (seconds
    since start, fault, argument)."""

    KINDS = ("stall", "drop", "drop_mid_frame", "delay")

    def __init__(self, proxy: FaultProxy, *, seed: int = 0,
                 interval: tuple[float, float] = (0.2, 0.5),
                 stalls: tuple[float, ...] = (0.5, 1.0, 4.0),
                 delays: tuple[tuple[float, float], ...] = ((0.05, 1.0), (0.3, 1.0)),
                 kinds: tuple[str, ...] = KINDS, max_faults: int = 1000) -> None:
        unknown = set(kinds) - set(self.KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {self.KINDS}")
        self.proxy = proxy
        self.interval = interval
        self.stalls = stalls
        self.delays = delays
        self.kinds = kinds
        self.max_faults = max_faults
        self.log: list[tuple[float, str, Any]] = []
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="fault-injector", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)

    def counts(self) -> dict[str, int]:
        return dict(collections.Counter(kind for _, kind, _ in self.log))

    def _run(self) -> None:
        rounds: list[str] = []
        while len(self.log) < self.max_faults:
            if self._stop.wait(self._rng.uniform(*self.interval)):
                return
            if not rounds:
                rounds = list(self.kinds)
                self._rng.shuffle(rounds)
            kind = rounds.pop()
            arg: Any = None
            at = time.monotonic() - self._started
            if kind == "stall":
                arg = self._rng.choice(self.stalls)
                self.proxy.stall(arg)
                self.log.append((at, kind, arg))
                if self._stop.wait(arg):          # let the stall play out before the next
                    return
                continue
            elif kind == "drop":
                self.proxy.drop()
            elif kind == "drop_mid_frame":
                self.proxy.drop(mid_frame=True)
            else:
                arg = self._rng.choice(self.delays)
                self.proxy.delay(*arg)
            self.log.append((at, kind, arg))

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
