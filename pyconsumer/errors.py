"""Errors: one table of Kafka broker error codes, and client errors kept apart.

Broker errors are classes generated from ``BROKER_ERRORS`` (code, name, retriable,
description); look one up with :func:`for_code`. Client errors (``KafkaProtocolError``,
``CorruptRecordError``, ...) never carry a broker code.
"""
from __future__ import annotations

from typing import ClassVar


class KafkaError(Exception):
    """Base of every pyconsumer error."""

    retriable: ClassVar[bool] = False
    #: the metadata should be refreshed before a retry (leader moved, unknown partition)
    invalid_metadata: ClassVar[bool] = False


# --------------------------------------------------------------------------- client errors


class KafkaClientError(KafkaError):
    """An error raised by this client, not sent by a broker."""


class ConfigurationError(KafkaClientError, ValueError):
    """A setting is unknown, ill-typed or out of range."""


class KafkaProtocolError(KafkaClientError):
    """A peer sent bytes that do not parse as the Kafka protocol (or a frame too large)."""


class CorruptRecordError(KafkaClientError):
    """A record set is malformed, truncated mid-stream or fails its CRC.

    ``topic``, ``partition`` and ``offset`` say where, when known.
    """

    def __init__(
        self,
        message: str,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> None:
        where = []
        if topic is not None:
            where.append(f"topic={topic}")
        if partition is not None:
            where.append(f"partition={partition}")
        if offset is not None:
            where.append(f"offset={offset}")
        full = f"{message} ({', '.join(where)})" if where else message
        super().__init__(full)
        self.reason = message
        self.topic = topic
        self.partition = partition
        self.offset = offset


class UnsupportedCodecError(CorruptRecordError):
    """A batch names a compression codec this client does not know."""


class KafkaConnectionError(KafkaClientError):
    """A connection failed, was refused or closed by the peer."""

    retriable = True
    invalid_metadata = True


class KafkaTimeoutError(KafkaClientError):
    """An operation did not finish within its timeout (request.timeout.ms, a poll...)."""

    retriable = True


class NoBrokersAvailable(KafkaClientError):
    """None of the bootstrap servers (or known brokers) could be reached."""

    retriable = True


class UnsupportedVersionError(KafkaClientError):
    """Client and broker share no version of an API this client needs."""


class IllegalStateError(KafkaClientError):
    """A call made in a state that forbids it (closed consumer, no assignment...)."""


class WakeupError(KafkaClientError):
    """``wakeup()`` interrupted a blocking call."""


# --------------------------------------------------------------------------- broker errors


class BrokerResponseError(KafkaError):
    """An error code sent by a broker. Subclasses are generated from ``BROKER_ERRORS``."""

    errno: ClassVar[int] = -1
    message: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    description: ClassVar[str] = ""

    def __str__(self) -> str:
        extra = super().__str__()
        base = f"[Error {self.errno}] {self.message}: {self.description}"
        return f"{base} - {extra}" if extra else base
