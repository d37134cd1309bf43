"""SASL GSSAPI (Kerberos V5, RFC 4752) through the ``gssapi`` package (the ``gssapi`` extra).

The exchange Kafka brokers expect: GSS-API context tokens with the service
``<sasl.kerberos.service.name>@<broker host>`` (so the principal ``<service>/<host>@REALM``),
mutual authentication; once the context is established the client sends an empty token, the
broker sends a wrapped 4-byte security-layer offer, and the client answers with a wrapped
"no security layer" (Kafka runs none: TLS is SASL_SSL's business) plus the authorization id.

Credentials: a keytab and principal (``sasl.kerberos.keytab``/``sasl.kerberos.principal``, or
``useKeyTab=true keyTab=... principal=...`` in a Krb5LoginModule ``sasl.jaas.config``), else
whatever the ticket cache holds (``kinit``, ``KRB5CCNAME``).
"""
from __future__ import annotations

from typing import Any

from pyconsumer._install import install_hint
from pyconsumer.errors import ConfigurationError, SaslAuthenticationError
from pyconsumer.net.sasl import SaslSettings

_NO_SECURITY_LAYER = 1          # RFC 4752 security layer bit: none


def _gssapi() -> Any:
    try:
        import gssapi
    except ImportError:
        raise ConfigurationError(
            f"sasl.mechanism=GSSAPI needs the gssapi package: {install_hint('gssapi')}; it "
            "builds against MIT Kerberos: install libkrb5-dev or your system's krb5 "
            "development package first") from None
    return gssapi


class GssapiMechanism:
    name = "GSSAPI"

    def __init__(self, service: str, principal: str | None, keytab: str | None,
                 authzid: str = "") -> None:
        self._service = service
        self._principal = principal
        self._keytab = keytab
        self._authzid = authzid
        self._ctx: Any = None
        self._host = ""
        self._layer_sent = False
        self._done = False

    def __repr__(self) -> str:
        return (f"GssapiMechanism(service={self._service!r}, principal={self._principal!r}, "
                f"keytab={'set' if self._keytab else None})")

    def _failed(self, what: str, e: Exception) -> SaslAuthenticationError:
        return SaslAuthenticationError(
            f"GSSAPI authentication to {self._service}/{self._host} failed {what}: {e}")

    def start(self, host: str) -> bytes:
        gssapi = _gssapi()
        self._host = host
        try:
            target = gssapi.Name(f"{self._service}@{host}", gssapi.NameType.hostbased_service)
            creds = None
            if self._keytab is not None or self._principal is not None:
                name = None if self._principal is None else \
                    gssapi.Name(self._principal, gssapi.NameType.kerberos_principal)
                # tickets from a keytab go to a private in-memory cache, never the user's
                store = None if self._keytab is None else {
                    "client_keytab": self._keytab, "ccache": f"MEMORY:pyconsumer-{id(self):x}"}
                creds = gssapi.Credentials(name=name, usage="initiate", store=store)
            flags = gssapi.RequirementFlag.mutual_authentication | \
                gssapi.RequirementFlag.out_of_sequence_detection
            self._ctx = gssapi.SecurityContext(name=target, creds=creds, usage="initiate",
                                               flags=flags)
            token = self._ctx.step()
        except gssapi.exceptions.GSSError as e:
            raise self._failed("getting the client's credentials or a service ticket", e) from None
        return bytes(token or b"")

    def step(self, challenge: bytes) -> bytes | None:
        gssapi = _gssapi()
        ctx = self._ctx
        if ctx is None:
            raise SaslAuthenticationError("GSSAPI: a challenge came before the first token")
        if self._done:
            return None                        # the broker's last, empty answer
        try:
            if not ctx.complete:
                token = ctx.step(challenge)
                return bytes(token or b"")     # an empty token once established (Java)
            offer = ctx.unwrap(challenge).message
        except gssapi.exceptions.GSSError as e:
            raise self._failed("establishing the security context", e) from None
        if len(offer) != 4 or not offer[0] & _NO_SECURITY_LAYER:
            raise SaslAuthenticationError(
                f"GSSAPI: the broker {self._host} offered security layers {offer[:1].hex()} "
                "without 'none' (Kafka runs no SASL security layer)")
        reply = bytes([_NO_SECURITY_LAYER, 0, 0, 0]) + self._authzid.encode()
        try:
            wrapped = ctx.wrap(reply, False).message
        except gssapi.exceptions.GSSError as e:
            raise self._failed("answering the security layer offer", e) from None
        self._done = True
        return bytes(wrapped)

    def complete(self) -> bool:
        return self._done


def create(settings: SaslSettings) -> GssapiMechanism:
    opts = settings.jaas_options
    kerberos = settings.kerberos
    service = kerberos["sasl.kerberos.service.name"] or opts.get("serviceName")
    if not service:
        raise ConfigurationError(
            "sasl.mechanism=GSSAPI needs the brokers' Kerberos service name: set "
            "sasl.kerberos.service.name (usually 'kafka') or serviceName in sasl.jaas.config")
    keytab = kerberos["sasl.kerberos.keytab"]
    principal = kerberos["sasl.kerberos.principal"]
    if opts.get("useKeyTab", "false").lower() == "true":
        keytab = keytab or opts.get("keyTab")
        if not keytab:
            raise ConfigurationError("sasl.jaas.config: useKeyTab=true needs keyTab=<file>")
    principal = principal or opts.get("principal")
    _gssapi()                                     # a missing package is a setting's error
    return GssapiMechanism(service, principal, keytab)


__all__ = ["GssapiMechanism", "create"]
