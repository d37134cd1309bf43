"""Server sides of SASL mechanisms, for the SASL-terminating test peer.

The peer (:class:`~pyconsumer.testing.SaslProxy`) answers SaslHandshake and SaslAuthenticate
itself and forwards everything else to a real broker once the client is authenticated. It
runs one :class:`ServerMechanism` per authentication, made by a factory picked by the
mechanism name the client asked for (``mechanisms={"PLAIN": factory, ...}``): PLAIN and SCRAM
live here; OAUTHBEARER and GSSAPI server sides plug in the same way from their own modules.
"""
from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from typing import Any, Protocol


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

__all__ = ["PlainServer", "SaslServerRejected", "ScramServer", "ServerMechanism",
           "ServerMechanismFactory", "scram_credentials", "standard_mechanisms"]


# ---------------------------------------------------------------------------- PLAIN, SCRAM


class PlainServer:
    """RFC 4616 PLAIN, checked against ``users`` (name -> password) as Kafka's
    ``PlainSaslServer`` does (an authorization id, when given, must be the user itself)."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.username: str | None = None

    def step(self, client_token: bytes) -> tuple[bytes, bool]:
        parts = client_token.split(b"\x00")
        if len(parts) != 3:
            raise SaslServerRejected("Invalid SASL/PLAIN response: expected 3 tokens")
        try:
            authzid, user, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            raise SaslServerRejected("Invalid SASL/PLAIN response: not UTF-8") from None
        if not user or not password:
            raise SaslServerRejected("Authentication failed: username or password not specified")
        expected = self._users.get(user)
        # one message for both: a broker does not tell which users exist
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslServerRejected("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslServerRejected("Authentication failed: Client requested an authorization "
                                     "id that is different from username")
        self.username = user
        return b"", True


class ScramServer:
    """SCRAM-SHA-256/512 through ``scramp``'s server side (credentials made once by
    :func:`scram_credentials`); the message on failure is the one Kafka brokers send."""

    def __init__(self, mechanism: str, credentials: Mapping[str, Any]) -> None:
        self._mechanism = mechanism
        self._credentials = credentials
        self._server: Any = None
        self._claimed: str | None = None
        self.username: str | None = None

    def _failed(self) -> SaslServerRejected:
        return SaslServerRejected(
            f"Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {self._mechanism}")

    def _auth_info(self, username: str) -> Any:
        info = self._credentials.get(username)
        if info is None:
            raise _UnknownUser(username)
        self._claimed = username
        return info

    def step(self, client_token: bytes) -> tuple[bytes, bool]:
        from scramp import ScramMechanism
        from scramp.core import ScramException

        try:
            text = client_token.decode()
        except UnicodeDecodeError:
            raise SaslServerRejected(f"{self._mechanism}: the client's message is not UTF-8") \
                from None
        try:
            if self._server is None:
                self._server = ScramMechanism(self._mechanism).make_server(self._auth_info)
                self._server.set_client_first(text)
                return self._server.get_server_first().encode(), False
            self._server.set_client_final(text)       # checks the client proof
            self.username = self._claimed
            return self._server.get_server_final().encode(), True
        except _UnknownUser:
            raise self._failed() from None
        except ScramException:
            raise self._failed() from None


class _UnknownUser(Exception):
    pass


def scram_credentials(mechanism: str, users: Mapping[str, str],
                      iterations: int = 4096) -> dict[str, Any]:
    """name -> scramp auth info (salt, stored key, server key, iterations): what a broker
    stores (no password)."""
    from scramp import ScramMechanism

    m = ScramMechanism(mechanism)
    return {name: m.make_auth_info(password, iteration_count=iterations)
            for name, password in users.items()}


def standard_mechanisms(users: Mapping[str, str],
                        names: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
                        ) -> dict[str, ServerMechanismFactory]:
    """Server factories for PLAIN and SCRAM over the same ``users`` (name -> password)."""
    out: dict[str, ServerMechanismFactory] = {}
    for name in names:
        if name == "PLAIN":
            out[name] = lambda: PlainServer(users)
        elif name in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            creds = scram_credentials(name, users)
            out[name] = lambda name=name, creds=creds: ScramServer(name, creds)  # type: ignore[misc]
        else:
            raise ValueError(f"no built-in server side for {name}; pass a factory")
    return out
