"""net/transport on its own: the set-up steps' failures, each with what it says and whether
the peer refused for sure (a refusal marks the broker refused, a timeout does not)."""
from __future__ import annotations

import errno
import os
import socket
from typing import Any

import pytest

from pyconsumer.errors import KafkaConnectionError
from pyconsumer.net import transport


def test_address_text() -> None:
    assert transport.address_text(("10.0.0.1", 9092)) == "10.0.0.1:9092"
    assert transport.address_text(("::1", 9092, 0, 0)) == "[::1]:9092"
    assert transport.address_text(None) == "?"


def test_a_refused_connect_is_definite_other_failures_are_not() -> None:
    refused = transport.connect_failure(errno.ECONNREFUSED, "node 1 (b1:9092)",
                                        ("10.0.0.1", 9092))
    assert refused.refused and isinstance(refused.error, KafkaConnectionError)
    assert str(refused.error) == (f"cannot connect to node 1 (b1:9092) at 10.0.0.1:9092: "
                                  f"ECONNREFUSED ({os.strerror(errno.ECONNREFUSED)})")
    unreachable = transport.connect_failure(errno.EHOSTUNREACH, "node 1 (b1:9092)",
                                            ("10.0.0.1", 9092))
    assert not unreachable.refused


def test_connect_codes_still_under_way() -> None:
    assert all(transport.connect_in_progress(c)
               for c in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY))
    assert not transport.connect_in_progress(errno.ECONNREFUSED)


def test_a_host_that_does_not_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    def getaddrinfo(*args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(transport.SetupFailure) as caught:
        transport.resolve("nowhere.example", 9092, "node 1 (nowhere.example:9092)")
    assert str(caught.value.error) == ("cannot resolve node 1 (nowhere.example:9092): "
                                       "Name or service not known")
    assert not caught.value.refused


def test_every_address_in_the_resolvers_order(monkeypatch: pytest.MonkeyPatch) -> None:
    infos = [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", 9092, 0, 0)),
             (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 9092))]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: infos)
    assert transport.resolve("localhost", 9092, "node 1") == [
        (socket.AF_INET6, socket.SOCK_STREAM, 6, ("::1", 9092, 0, 0)),
        (socket.AF_INET, socket.SOCK_STREAM, 6, ("127.0.0.1", 9092))]


def test_a_tls_record_to_a_plaintext_client_is_a_refusal() -> None:
    failure = transport.tls_answer_to_plaintext("node 1 (b1:9092)", ("10.0.0.1", 9092),
                                                "a TLS alert record")
    assert failure.refused
    assert str(failure.error) == (
        "node 1 (b1:9092): the broker at 10.0.0.1:9092 answered with TLS (a TLS alert record) "
        "to a plaintext request: is security.protocol=PLAINTEXT right for this listener? (a "
        "TLS listener needs security.protocol=SSL)")
