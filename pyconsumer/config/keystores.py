"""Java key and trust stores (JKS, PKCS12) read into what Python's ssl module loads: DER
certificates and a private key.

As in Java (whose JKS and PKCS12 key stores read either format), ``ssl.*.type`` JKS and PKCS12
both open a JKS or a PKCS12 file; what a type contradicts is PEM text given as JKS/PKCS12, or a
store given as PEM. A type left at Java's default (JKS) reads PEM text too, as pyconsumer always
has. A JKS trust store trusts its certificate entries and the certificate of each key entry
(Java's rule); a PKCS12 trust store trusts every certificate in it. A key store gives one
client certificate: a JKS store with several keys is refused naming them; of a PKCS12 store
with several, OpenSSL's reader takes the first.

The readers are an optional extra (``keystores``): ``pyjks`` for JKS, ``cryptography`` for
PKCS12 and for the keys. Errors name the setting and the file, never a password.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyconsumer._install import install_hint
from pyconsumer.errors import ConfigurationError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

#: the store types pyconsumer reads (Java's names)
STORE_TYPES = ("JKS", "PKCS12", "PEM")

_JKS_MAGIC = b"\xfe\xed\xfe\xed"
_DESCRIBED = {"JKS": "a JKS store", "PKCS12": "a PKCS12 store", "PEM": "PEM text"}


@dataclass(frozen=True)
class StoreFile:
    """A store file as read: ``setting`` is ``ssl.truststore`` or ``ssl.keystore``, ``form``
    the format found in it (JKS, PKCS12 or PEM)."""

    setting: str
    path: str
    data: bytes
    form: str

    @property
    def where(self) -> str:
        return f"{self.setting}.location={self.path}"


@dataclass(frozen=True)
class KeyEntry:
    """The client's private key and its certificate chain (DER, the client's own first)."""

    alias: str
    key: PrivateKeyTypes
    chain: list[bytes]


def open_store(setting: str, path: str, declared: str, explicit: bool) -> StoreFile:
    """Read ``path`` and tell its format; an explicitly set ``<setting>.type`` that the file
    contradicts is an error naming both."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigurationError(
            f"{setting}.location={path}: cannot read the file: {e.strerror or e}") from None
    form = _format_of(data)
    if form is None:
        raise ConfigurationError(
            f"{setting}.location={path}: the file is neither a JKS or PKCS12 store nor PEM "
            f"text ({setting}.type={declared})")
    if explicit and (form == "PEM") != (declared == "PEM"):
        raise ConfigurationError(
            f"{setting}.location={path}: {setting}.type={declared}, but the file is "
            f"{_DESCRIBED[form]}; set {setting}.type={form}")
    return StoreFile(setting, path, data, form)


def _format_of(data: bytes) -> str | None:
    if data[:4] == _JKS_MAGIC:
        return "JKS"
    if _is_pfx(data):
        return "PKCS12"
    if b"-----BEGIN " in data:
        return "PEM"
    return None


def _is_pfx(data: bytes) -> bool:
    """A DER SEQUENCE whose first element is INTEGER 3: the version of a PKCS#12 PFX."""
    if len(data) < 5 or data[0] != 0x30:
        return False
    size = data[1]
    offset = 2 + (size & 0x7F if size & 0x80 else 0)
    return data[offset:offset + 3] == b"\x02\x01\x03"


# --------------------------------------------------------------------------- trust


def trusted_certificates(store: StoreFile, password: str | None) -> list[bytes]:
    """The DER certificates a JKS/PKCS12 trust store trusts. Without a password a JKS store is
    read unchecked, as Java does; a PKCS12 one needs it to decrypt its certificates."""
    if store.form == "JKS":
        keystore = _load_jks(store, password)
        certs = [entry.cert for entry in keystore.certs.values()]
        certs += [entry.cert_chain[0][1] for entry in keystore.private_keys.values()
                  if entry.cert_chain]
    else:
        loaded = _load_pkcs12(store, password)
        certs = [_der(c.certificate) for c in ([loaded.cert] if loaded.cert else [])]
        certs += [_der(c.certificate) for c in loaded.additional_certs]
    if not certs:
        raise ConfigurationError(f"{store.where}: the {store.form} store holds no certificates")
    return certs


# --------------------------------------------------------------------------- key


def key_entry(store: StoreFile, password: str | None, key_password: str | None) -> KeyEntry:
    """The one private key of a JKS/PKCS12 key store and its chain. As in Java the store
    needs ``ssl.keystore.password``; a JKS key is decrypted with ``ssl.key.password``, or the
    store password when that is unset; a PKCS12 store has one password for both (as keytool
    writes them)."""
    if password is None:
        raise ConfigurationError(
            f"{store.where} is {_DESCRIBED[store.form]}: set ssl.keystore.password (Java "
            f"requires it for a key store)")
    if store.form == "JKS":
        return _jks_key(store, password, key_password)
    loaded = _load_pkcs12(store, password)
    if loaded.key is None or loaded.cert is None:
        raise _no_key(store)
    leaf = _der(loaded.cert.certificate)
    alias = (loaded.cert.friendly_name or b"").decode("utf-8", "replace")
    return KeyEntry(alias, loaded.key,
                    _chain(leaf, [_der(c.certificate) for c in loaded.additional_certs]))


def _jks_key(store: StoreFile, password: str, key_password: str | None) -> KeyEntry:
    keystore = _load_jks(store, password)
    entries = keystore.private_keys
    if not entries:
        raise _no_key(store)
    if len(entries) > 1:
        raise ConfigurationError(
            f"{store.where}: the JKS store holds {len(entries)} private keys "
            f"({', '.join(sorted(entries))}); pyconsumer presents one client certificate: "
            f"keep one key in the store")
    (alias, entry), = entries.items()
    jks = _import("jks", "pyjks", store)
    try:
        entry.decrypt(key_password if key_password is not None else password)
    except jks.util.DecryptionFailureException:
        which = ("ssl.key.password is wrong" if key_password is not None else
                 "ssl.keystore.password does not decrypt it: give the key's own password in "
                 "ssl.key.password")
        raise ConfigurationError(
            f"{store.where}: cannot decrypt the private key {alias!r}: {which}") from None
    except jks.util.KeystoreException as e:
        raise ConfigurationError(
            f"{store.where}: cannot read the private key {alias!r}: {e}") from None
    if not entry.cert_chain:
        raise ConfigurationError(f"{store.where}: the private key {alias!r} has no certificate")
    serialization = _import("cryptography.hazmat.primitives.serialization", "cryptography",
                            store)
    key = serialization.load_der_private_key(entry.pkey_pkcs8, password=None)
    return KeyEntry(alias, key, [der for _, der in entry.cert_chain])


def _no_key(store: StoreFile) -> ConfigurationError:
    return ConfigurationError(
        f"{store.where}: the {store.form} store holds no private key (ssl.keystore is the "
        f"client's key and certificate; trusted certificates go in ssl.truststore)")


def _chain(leaf: bytes, others: list[bytes]) -> list[bytes]:
    """``leaf`` and the certificates that issued it, in order: the chain Java sends for a key
    entry (the store's other certificates stay behind)."""
    x509 = _import("cryptography.x509", "cryptography", None)
    pool = [x509.load_der_x509_certificate(der) for der in others]
    chain = [x509.load_der_x509_certificate(leaf)]
    while chain[-1].issuer != chain[-1].subject:
        issuer = next((c for c in pool if c.subject == chain[-1].issuer and c not in chain),
                      None)
        if issuer is None:
            break
        chain.append(issuer)
    return [leaf, *(_der(c) for c in chain[1:])]


def pem_for_ssl(entry: KeyEntry, secret: bytes) -> bytes:
    """``entry`` as one PEM text for ``SSLContext.load_cert_chain``: the chain, then the key
    encrypted with ``secret`` (a one-time password), so that the key is never plain text."""
    serialization = _import("cryptography.hazmat.primitives.serialization", "cryptography",
                            None)
    x509 = _import("cryptography.x509", "cryptography", None)
    certs = b"".join(x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM)
                     for der in entry.chain)
    key: bytes = entry.key.private_bytes(serialization.Encoding.PEM,
                                         serialization.PrivateFormat.PKCS8,
                                         serialization.BestAvailableEncryption(secret))
    return certs + key


# --------------------------------------------------------------------------- readers


def _load_jks(store: StoreFile, password: str | None) -> Any:
    jks = _import("jks", "pyjks", store)
    try:
        return jks.KeyStore.loads(store.data, password, try_decrypt_keys=False)
    except jks.util.KeystoreSignatureException:
        raise ConfigurationError(
            f"{store.where}: cannot open the JKS store: {store.setting}.password is wrong "
            f"(or the file is damaged)") from None
    except jks.util.KeystoreException as e:
        raise ConfigurationError(f"{store.where}: cannot read the JKS store: {e}") from None


def _load_pkcs12(store: StoreFile, password: str | None) -> Any:
    pkcs12 = _import("cryptography.hazmat.primitives.serialization.pkcs12", "cryptography",
                     store)
    try:
        return pkcs12.load_pkcs12(store.data, None if password is None else password.encode())
    except ValueError:
        if password is None:
            raise ConfigurationError(
                f"{store.where}: cannot open the PKCS12 store without a password: set "
                f"{store.setting}.password") from None
        raise ConfigurationError(
            f"{store.where}: cannot open the PKCS12 store: {store.setting}.password is wrong "
            f"(or the file is damaged)") from None


def _der(cert: Any) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding

    der: bytes = cert.public_bytes(Encoding.DER)
    return der


def _import(module: str, package: str, store: StoreFile | None) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        what = f"{store.where} is {_DESCRIBED[store.form]}: reading it" if store else \
            "reading a JKS or PKCS12 store"
        raise ConfigurationError(
            f"{what} needs the {package} package: {install_hint('keystores')}") from None


__all__ = ["STORE_TYPES", "KeyEntry", "StoreFile", "key_entry", "open_store", "pem_for_ssl",
           "trusted_certificates"]
