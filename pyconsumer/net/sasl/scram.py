"""SASL SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802/7677, Kafka's KIP-84) through ``scramp``.

client-first -> server-first (salt, iterations, nonce) -> client-final (proof) -> server-final
(the server signature, checked here: a server that does not know the password cannot forge
it). No channel binding (``n,,``), as Kafka's ``ScramSaslClient``.
"""
from __future__ import annotations

from scramp import ScramClient
from scramp.core import ScramException

from pyconsumer.config.jaas import MODULE_MECHANISMS, SCRAM_MODULE
from pyconsumer.errors import ConfigurationError, SaslAuthenticationError
from pyconsumer.net.sasl import SaslSettings

MECHANISMS = MODULE_MECHANISMS[SCRAM_MODULE]


class ScramMechanism:
    def __init__(self, name: str, username: str, password: str) -> None:
        if name not in MECHANISMS:
            raise ConfigurationError(f"sasl.mechanism {name!r} is not a SCRAM mechanism")
        self.name = name
        self._username = username
        self._client = ScramClient([name], username, password)
        self._stage = 0         # 0 before start, 1 client-first sent, 2 client-final sent
        self._done = False

    def __repr__(self) -> str:
        return f"ScramMechanism({self.name!r}, username={self._username!r})"

    def start(self, host: str) -> bytes:
        self._stage = 1
        return str(self._client.get_client_first()).encode()

    def step(self, challenge: bytes) -> bytes | None:
        try:
            text = challenge.decode()
        except UnicodeDecodeError:
            raise SaslAuthenticationError("the server's SCRAM message is not UTF-8") from None
        try:
            if self._stage == 1:
                self._client.set_server_first(text)
                self._stage = 2
                return str(self._client.get_client_final()).encode()
            if self._stage == 2:
                self._client.set_server_final(text)   # checks the server signature
                self._stage = 3
                self._done = True
                return None
        except ScramException as e:
            # scramp's messages name the protocol step, never the password
            raise SaslAuthenticationError(str(e)) from None
        raise SaslAuthenticationError("a server message after the end of the SCRAM exchange")

    def complete(self) -> bool:
        return self._done


def create(settings: SaslSettings) -> ScramMechanism:
    if settings.username is None or settings.password is None:
        raise ConfigurationError(
            f"sasl.mechanism={settings.mechanism} needs sasl.username and sasl.password")
    return ScramMechanism(settings.mechanism, settings.username, settings.password)


__all__ = ["MECHANISMS", "ScramMechanism", "create"]
