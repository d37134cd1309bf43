"""TLS for broker connections: the ``ssl.SSLContext`` built from the consumer settings (the
``ssl.context`` setting's parser and the TLS versions the settings name are in
:mod:`pyconsumer.config.values`, below the settings table this module reads).

``security.protocol=SSL`` and ``SASL_SSL`` wrap every broker connection in TLS (SASL itself is
in :mod:`pyconsumer.net.sasl`, run by the connection after TLS and ApiVersions). The
context is ``ssl.context`` when given; otherwise a client context with certificate checks on,
CAs from ``ssl.truststore.location`` (a JKS or PKCS12 store, or PEM) or
``ssl.truststore.certificates`` (PEM text), else the system's; a client certificate for mutual
TLS from ``ssl.keystore.location`` (a JKS or PKCS12 store, or PEM with the key) or
``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``; the TLS versions bounded by
``ssl.enabled.protocols`` and capped by ``ssl.protocol``, ``ssl.cipher.suites`` when set, and
host name checks unless ``ssl.endpoint.identification.algorithm`` is empty (as in Java). The
stores are read by :mod:`pyconsumer.config.keystores`.
"""
from __future__ import annotations

import os
import secrets
import ssl
import tempfile

from pyconsumer.config.consumer_config import ConsumerConfig
from pyconsumer.config.keystores import key_entry, open_store, pem_for_ssl, trusted_certificates
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
    cafile, cadata = _trust_source(config)
    try:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile, cadata=cadata)
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
    _load_client_certificate(ctx, config)
    return ctx


def _explicit_type(config: ConsumerConfig, store: str) -> bool:
    return f"ssl.{store}.type" in config.explicitly_set


def _trust_source(config: ConsumerConfig) -> tuple[str | None, str | bytes | None]:
    """(cafile, cadata) for the context: a PEM file by its path, a store's certificates as
    DER bytes, or the PEM text of ssl.truststore.certificates."""
    location = config.ssl_truststore_location
    if not location:
        if config.ssl_truststore_password is not None:
            raise ConfigurationError(
                "ssl.truststore.password is set, but ssl.truststore.location is not (as in Java, "
                "a password needs a trust store)")
        return None, config.ssl_truststore_certificates
    store = open_store("ssl.truststore", location, config.ssl_truststore_type,
                       _explicit_type(config, "truststore"))
    if store.form == "PEM":
        if config.ssl_truststore_password is not None:
            raise ConfigurationError(
                f"{store.where} is PEM text, which has no password: leave "
                f"ssl.truststore.password unset (Java refuses it too)")
        return location, None
    return None, b"".join(trusted_certificates(store, config.ssl_truststore_password))


def _load_client_certificate(ctx: ssl.SSLContext, config: ConsumerConfig) -> None:
    password = config.ssl_key_password or config.ssl_keystore_password
    location = config.ssl_keystore_location
    try:
        if location:
            store = open_store("ssl.keystore", location, config.ssl_keystore_type,
                               _explicit_type(config, "keystore"))
            if store.form == "PEM":
                ctx.load_cert_chain(location, password=password)
                return
            entry = key_entry(store, config.ssl_keystore_password, config.ssl_key_password)
            secret = secrets.token_hex(32).encode()
            _load_pem(ctx, pem_for_ssl(entry, secret), secret)
        elif config.ssl_keystore_key is not None:
            chain = config.ssl_keystore_certificate_chain or ""
            text = chain.strip() + "\n" + config.ssl_keystore_key.strip() + "\n"
            _load_pem(ctx, text.encode(), password)
    except (OSError, ssl.SSLError) as e:
        where = f"ssl.keystore.location={location}" if location else "ssl.keystore"
        raise ConfigurationError(f"{where}: cannot load the client certificate: {e}") from None


def _load_pem(ctx: ssl.SSLContext, pem: bytes, password: str | bytes | None) -> None:
    """load_cert_chain reads files only: an anonymous in-memory file where the system has one
    (in no directory, gone when closed), else a private temporary file (mode 0600) removed at
    once."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("pyconsumer-tls", os.MFD_CLOEXEC)
        try:
            _write_all(fd, pem)
            ctx.load_cert_chain(f"/proc/self/fd/{fd}", password=password)
        finally:
            os.close(fd)
        return
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        try:
            _write_all(fd, pem)
        finally:
            os.close(fd)
        ctx.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


__all__ = ["build_ssl_context", "check_security"]
