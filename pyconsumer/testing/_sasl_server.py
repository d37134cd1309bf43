"""Server sides of SASL mechanisms, for the SASL-terminating test peer.

The peer (:class:`~pyconsumer.testing.SaslProxy`) answers SaslHandshake and SaslAuthenticate
itself and forwards everything else to a real broker once the client is authenticated. It
runs one :class:`ServerMechanism` per authentication, made by a factory picked by the
mechanism name the client asked for (``mechanisms={"PLAIN": factory, ...}``): PLAIN and SCRAM
live here; OAUTHBEARER and GSSAPI server sides plug in the same way from their own modules.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class SaslServerRejected(Exception):
    """The server side refuses the client; the message goes to the client as the
    SaslAuthenticate ``error_message`` (SASL_AUTHENTICATION_FAILED)."""


class ServerMechanism(Protocol):
    """The server side of one SASL exchange (one object per authentication)."""

    def step(self, client_token: bytes) -> tuple[bytes, bool]:
        """A client token in; the server token out and whether the exchange is finished
        (successfully). Raises :class:`SaslServerRejected` to fail it."""
        ...


#: mechanism name -> a factory of a fresh server mechanism
ServerMechanismFactory = Callable[[], ServerMechanism]

__all__ = ["SaslServerRejected", "ServerMechanism", "ServerMechanismFactory"]
