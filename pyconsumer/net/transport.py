"""Socket set-up for a broker connection: DNS resolution, the non-blocking TCP connect, the
TLS wrap and handshake, and what the bytes of a peer speaking the other security protocol
look like. No state: :class:`~pyconsumer.net.connection.BrokerConnection` owns the socket
and calls these at each step of CONNECTING and AUTHENTICATING (TLS).

Errors come back as :class:`SetupFailure` (the error to close the connection with, and
whether the peer refused for sure, see ``BrokerConnection.refused_at``).
"""
from __future__ import annotations

import errno
import logging
import os
import socket
import ssl
from typing import Any

from pyconsumer.errors import (
    ConfigurationError,
    KafkaConnectionError,
    KafkaError,
    SslAuthenticationError,
)

log = logging.getLogger(__name__)

#: a non-blocking socket (plain or TLS) has nothing more to give or take right now
WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)

#: one resolved address of a host: (family, type, proto, sockaddr), as socket.socket takes it
Address = tuple[int, int, int, Any]


class SetupFailure(Exception):
    """A step of the connection set-up failed: close with :attr:`error`; :attr:`refused`
    when the peer refused for sure (connection refused, the other security protocol)."""

    def __init__(self, error: KafkaError, refused: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.refused = refused


# ---------------------------------------------------------------------- DNS

def canonical_bootstrap_servers(servers: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """``client.dns.lookup=resolve_canonical_bootstrap_servers_only`` (Java ``ClientUtils.
    parseAndValidateAddresses``): each bootstrap host becomes the canonical names of the
    addresses it resolves to, each a bootstrap server of its own (so TLS host name checks see
    the canonical name). An address without a reverse name stays an address; a canonical name
    that does not resolve is skipped with a warning. A host that does not resolve, or no usable
    server at all, is a :class:`~pyconsumer.errors.ConfigurationError`, as in Java."""
    result: list[tuple[str, int]] = []
    for host, port in servers:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as e:
            raise ConfigurationError(
                f"bootstrap.servers entry {host}:{port} does not resolve "
                f"(client.dns.lookup=resolve_canonical_bootstrap_servers_only): "
                f"{e.strerror or e}") from None
        for info in infos:
            ip = str(info[4][0])
            try:
                canonical = socket.gethostbyaddr(ip)[0]
            except OSError:
                canonical = ip           # Java's getCanonicalHostName gives the address text
            try:
                socket.getaddrinfo(canonical, port, type=socket.SOCK_STREAM)
            except OSError as e:
                log.warning("bootstrap.servers entry %s:%d: canonical name %s of %s does not "
                            "resolve (%s); skipped", host, port, canonical, ip, e.strerror or e)
                continue
            if (canonical, port) not in result:
                result.append((canonical, port))
    if not result:
        raise ConfigurationError(
            "no bootstrap.servers entry resolved to a usable canonical name "
            "(client.dns.lookup=resolve_canonical_bootstrap_servers_only)")
    return result


def resolve_bootstrap_servers(servers: list[tuple[str, int]]
                              ) -> tuple[list[tuple[str, int]], list[tuple[str, int, str]]]:
    """Resolve each bootstrap host once (``client.dns.lookup=use_all_dns_ips``, Java
    ``ClientUtils.parseAndValidateAddresses``): the servers that resolve, and (host, port,
    reason) of those that do not. The servers keep their names: a connection resolves its
    host again each time it connects."""
    resolved: list[tuple[str, int]] = []
    failed: list[tuple[str, int, str]] = []
    for host, port in servers:
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as e:
            failed.append((host, port, str(e.strerror or e)))
        else:
            resolved.append((host, port))
    return resolved, failed


def unresolved_text(failed: list[tuple[str, int, str]]) -> str:
    """``host:port (reason), ...`` of the bootstrap servers that did not resolve."""
    return ", ".join(f"{host}:{port} ({reason})" for host, port, reason in failed)


def resolve(host: str, port: int, describe: str) -> list[Address]:
    """Every address ``host`` resolves to, in the resolver's order; a failure to resolve is a
    :class:`SetupFailure`."""
    try:
        return [(i[0], i[1], i[2], i[4])
                for i in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]
    except OSError as e:
        raise SetupFailure(KafkaConnectionError(
            f"cannot resolve {describe}: {e.strerror or e}")) from None


def address_text(address: Any) -> str:
    """``host:port`` of a socket address (``[v6]:port`` for IPv6), ``?`` for none."""
    a = address
    return "?" if a is None else (f"[{a[0]}]:{a[1]}" if ":" in str(a[0]) else f"{a[0]}:{a[1]}")


# ---------------------------------------------------------------------- TCP

def start_connect(address: Address, send_buffer_bytes: int, receive_buffer_bytes: int
                  ) -> tuple[socket.socket, int]:
    """A non-blocking socket (TCP_NODELAY, the configured buffer sizes; -1 or 0 keeps the OS
    default) with its connect started: the socket and ``connect_ex``'s code."""
    family, kind, proto, sockaddr = address
    sock = socket.socket(family, kind, proto)
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if send_buffer_bytes > 0:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer_bytes)
    if receive_buffer_bytes > 0:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
    return sock, sock.connect_ex(sockaddr)


def connect_in_progress(code: int) -> bool:
    """``connect_ex`` gave a code of a connect that succeeded or is still under way."""
    return code in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY)


def connect_failure(code: int, describe: str, address: Any) -> SetupFailure:
    """The TCP connect failed with errno ``code``; a refusal is definite."""
    return SetupFailure(KafkaConnectionError(
        f"cannot connect to {describe} at {address_text(address)}: "
        f"{errno.errorcode.get(code, code)} ({os.strerror(code)})"),
        refused=code == errno.ECONNREFUSED)


# ---------------------------------------------------------------------- TLS

#: what OpenSSL says when the bytes answering a ClientHello are not TLS at all
_NOT_TLS_REASONS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE",
                              "PACKET_LENGTH_TOO_LONG", "UNKNOWN_PROTOCOL", "HTTP_REQUEST",
                              "HTTPS_PROXY_REQUEST", "RECORD_LENGTH_MISMATCH"})


#: why a TLS handshake may get no answer at all
NO_TLS_ANSWER = ("; the TLS handshake got no answer: is security.protocol=SSL right for this "
                  "listener? (a plaintext Kafka listener takes the handshake for the start "
                  "of a huge request and waits for the rest)")


def wrap_tls(ctx: ssl.SSLContext, sock: socket.socket, host: str, describe: str
             ) -> ssl.SSLSocket:
    """The connected socket wrapped for a non-blocking handshake checking ``host``."""
    try:
        return ctx.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
    except (ssl.SSLError, OSError, ValueError) as e:
        raise SetupFailure(KafkaConnectionError(f"TLS setup for {describe} failed: {e}")) \
            from None


def tls_handshake(sock: ssl.SSLSocket, describe: str, address: Any) -> bool | None:
    """One step of the non-blocking TLS handshake: None when it is done, else whether it
    waits to write (False: to read). A refusal is a :class:`SetupFailure` saying why."""
    try:
        sock.do_handshake()
    except ssl.SSLWantReadError:
        return False
    except ssl.SSLWantWriteError:
        return True
    except ssl.SSLCertVerificationError as e:
        raise SetupFailure(SslAuthenticationError(
            f"TLS handshake with {describe} failed: the broker's certificate was "
            f"refused ({e.verify_message}); check ssl.truststore.* and "
            f"ssl.endpoint.identification.algorithm")) from None
    except (ssl.SSLEOFError, ConnectionError) as e:
        # a plaintext Kafka listener reads a ClientHello as a huge frame length and
        # closes (or resets) the connection without a TLS answer
        raise SetupFailure(KafkaConnectionError(
            f"TLS handshake with {describe} failed: the broker at "
            f"{address_text(address)} closed the connection without a TLS answer ({e}): "
            f"is security.protocol=SSL right for this listener?")) from None
    except ssl.SSLError as e:
        if e.reason in _NOT_TLS_REASONS:
            raise SetupFailure(KafkaConnectionError(
                f"TLS handshake with {describe} failed: the broker at "
                f"{address_text(address)} answered in plaintext to a TLS handshake: is "
                f"security.protocol=SSL right for this listener? ({e})"), refused=True) from None
        # an alert (bad certificate, no common protocol or cipher): Java makes every
        # SSLException of the handshake an SslAuthenticationException, fatal at once
        raise SetupFailure(SslAuthenticationError(
            f"TLS handshake with {describe} failed: {e}")) from None
    except OSError as e:
        raise SetupFailure(KafkaConnectionError(
            f"TLS handshake with {describe} failed: {e}")) from None
    log.debug("%s: TLS %s established", describe, sock.version())
    return None


def tls_refused_after_handshake(describe: str, e: ssl.SSLError) -> SslAuthenticationError:
    """An SSL error on the first read: TLS 1.3 ends the client's handshake before the broker
    checks the client's certificate, so a refusal is the first read's alert (Java:
    POST_HANDSHAKE, an SslAuthenticationException); say it is the handshake that failed."""
    return SslAuthenticationError(
        f"TLS handshake with {describe} failed: the broker refused the "
        f"connection at the end of the handshake ({e.reason or e}): does the "
        f"listener require a client certificate (ssl.client.auth=required)? give "
        f"one with ssl.keystore.location or ssl.keystore.certificate.chain and "
        f"ssl.keystore.key ({e})")


# ---------------------------------------------------------------------- the other protocol

def tls_record_kind(header: bytes | bytearray) -> str | None:
    """The TLS record a plaintext client got instead of a Kafka frame length: an alert
    (0x15) or a handshake (0x16) record of TLS 1.x (major version 3), else None."""
    if len(header) >= 2 and header[1] == 0x03:
        return {0x15: "a TLS alert record", 0x16: "a TLS handshake record"}.get(header[0])
    return None


def tls_answer_to_plaintext(describe: str, address: Any, kind: str) -> SetupFailure:
    """A plaintext client read a TLS record (``kind``, from :func:`tls_record_kind`)."""
    return SetupFailure(KafkaConnectionError(
        f"{describe}: the broker at {address_text(address)} answered "
        f"with TLS ({kind}) to a plaintext request: is "
        f"security.protocol=PLAINTEXT right for this listener? (a TLS "
        f"listener needs security.protocol=SSL)"), refused=True)


#: why a peer may drop a plaintext connection before answering its first request
SILENT_CLOSE_HINT = (" before answering the first request (a TLS or SASL listener closes a "
                     "plaintext connection this way: is security.protocol=PLAINTEXT right for "
                     "this listener?)")


__all__ = ["Address", "NO_TLS_ANSWER", "SILENT_CLOSE_HINT", "SetupFailure", "WOULD_BLOCK",
           "address_text", "canonical_bootstrap_servers", "connect_failure",
           "connect_in_progress", "resolve", "resolve_bootstrap_servers", "start_connect",
           "tls_answer_to_plaintext", "tls_handshake", "tls_record_kind",
           "tls_refused_after_handshake", "unresolved_text", "wrap_tls"]
