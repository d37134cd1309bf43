"""TLS for broker connections: the ``ssl.SSLContext`` built from the consumer settings (the
``ssl.context`` setting's parser and the TLS versions the settings name are in
:mod:`pyconsumer.config.values`, below the settings table this module reads).

``security.protocol=SSL`` and ``SASL_SSL`` wrap every broker connection in TLS (SASL itself is
in :mod:`pyconsumer.net.sasl`, run by the connection after TLS and ApiVersions). The
context is ``ssl.context`` when given; otherwise a client context with certificate checks on,
CAs from ``ssl.truststore.location``/``ssl.truststore.certificates`` (PEM) or the system's, a
client certificate for mutual TLS from ``ssl.keystore.location`` (PEM with the key) or
``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``, the TLS versions bounded by
``ssl.enabled.protocols`` and capped by ``ssl.protocol``, ``ssl.cipher.suites`` when set, and host name checks unless
``ssl.endpoint.identification.algorithm`` is empty (as in Java).
"""
from __future__ import annotations

import os
import ssl
import tempfile

from pyconsumer.config.consumer_config import ConsumerConfig
from pyconsumer.errors import ConfigurationError

_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


def check_security(config: ConsumerConfig) -> None:
    """Refuse what the network layer cannot do, before any connection is made: every
    security.protocol is implemented; the SASL settings were checked by the config."""


def build_ssl_context(config: ConsumerConfig) -> ssl.SSLContext | None:
    """The TLS context for ``security.protocol=SSL``/``SASL_SSL``, None for the plaintext ones."""
    check_security(config)
    if config.security_protocol not in ("SSL", "SASL_SSL"):
        return None
    if config.ssl_context is not None:
        return config.ssl_context
    try:
        ctx = ssl.create_default_context(
            ssl.Purpose.SERVER_AUTH,
            cafile=config.ssl_truststore_location,
            cadata=config.ssl_truststore_certificates)
    except (OSError, ssl.SSLError) as e:
        raise ConfigurationError(f"ssl.truststore: cannot load the CA certificates: {e}") from None
    versions = [_VERSIONS[v] for v in config.ssl_enabled_protocols if v in _VERSIONS]
    # Java: an SSLContext for ssl.protocol=TLSv1.2 never speaks TLSv1.3, whatever
    # ssl.enabled.protocols lists ("TLS" sets no ceiling)
    ceiling = _VERSIONS.get(config.ssl_protocol)
    if ceiling is not None:
        versions = [v for v in versions if v <= ceiling]
        if not versions:
            raise ConfigurationError(
                f"ssl.protocol={config.ssl_protocol} allows none of ssl.enabled.protocols="
                f"{','.join(config.ssl_enabled_protocols)}")
    if versions:
        ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)
    if config.ssl_cipher_suites:
        try:
            ctx.set_ciphers(":".join(config.ssl_cipher_suites))
        except ssl.SSLError as e:
            raise ConfigurationError(f"ssl.cipher.suites: {e}") from None
    ctx.check_hostname = config.ssl_endpoint_identification_algorithm == "https"
    password = config.ssl_key_password or config.ssl_keystore_password
    try:
        if config.ssl_keystore_location:
            ctx.load_cert_chain(config.ssl_keystore_location, password=password)
        elif config.ssl_keystore_key is not None:
            _load_pem_pair(ctx, config.ssl_keystore_certificate_chain or "",
                           config.ssl_keystore_key, password)
    except (OSError, ssl.SSLError) as e:
        raise ConfigurationError(f"ssl.keystore: cannot load the client certificate: {e}") from None
    return ctx


def _load_pem_pair(ctx: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    # load_cert_chain reads files only: a private temporary file, removed at once
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(chain.strip() + "\n" + key.strip() + "\n")
        ctx.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


__all__ = ["build_ssl_context", "check_security"]
