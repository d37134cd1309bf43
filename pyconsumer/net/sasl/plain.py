"""SASL PLAIN (RFC 4616): one client token ``authzid NUL authcid NUL password``, as Java's
``PlainSaslClient`` sends it (empty authorization id). Over a plaintext listener the password
crosses the network in clear: use SASL_SSL outside tests."""
from __future__ import annotations

from pyconsumer.errors import ConfigurationError
from pyconsumer.net.sasl import SaslSettings


class PlainMechanism:
    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        if "\x00" in username or "\x00" in password:
            raise ConfigurationError("sasl.username/sasl.password must not contain NUL")
        self._username = username
        self._password = password
        self._sent = False
        self._done = False

    def __repr__(self) -> str:
        return f"PlainMechanism(username={self._username!r})"

    def start(self, host: str) -> bytes:
        self._sent = True
        return b"\x00" + self._username.encode() + b"\x00" + self._password.encode()

    def step(self, challenge: bytes) -> bytes | None:
        # the broker answers the single token with empty bytes; nothing more to say
        self._done = self._sent
        return None

    def complete(self) -> bool:
        return self._done


def create(settings: SaslSettings) -> PlainMechanism:
    if settings.username is None or settings.password is None:
        raise ConfigurationError("sasl.mechanism=PLAIN needs sasl.username and sasl.password")
    return PlainMechanism(settings.username, settings.password)


__all__ = ["PlainMechanism", "create"]
