"""Java key and trust stores (JKS, PKCS12) in the TLS context, against stores written by Java's
own keytool (tests/keystores.py) from a throw-away PKI made as the Kafka tier makes its own.

A store gives the context what its PEM twin gives (the same CAs; the same client certificate,
seen by a server in an in-memory mutual-TLS handshake); each way a store can be wrong is an
exact error naming the setting and the file, never a password.
"""
from __future__ import annotations

import os
import ssl
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.config import ConsumerConfig
from pyconsumer.config.ssl import build_ssl_context
from pyconsumer.errors import ConfigurationError
from pyconsumer.testing._kafka import TlsFiles, _make_tls

from tests.tls_memory import handshake
from tests.keystores import (
    KEY_PASSWORD,
    STORE_PASSWORD,
    TRUST_PASSWORD,
    Stores,
    make_stores,
    tool,
)

PASSWORDS = (STORE_PASSWORD, KEY_PASSWORD, TRUST_PASSWORD, "not-the-password")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    tool("openssl")
    return _make_tls(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def stores(pki: TlsFiles, tmp_path_factory: pytest.TempPathFactory) -> Stores:
    return make_stores(tmp_path_factory.mktemp("stores"), pki)


def context(**settings: Any) -> ssl.SSLContext:
    ctx = build_ssl_context(ConsumerConfig(bootstrap_servers="127.0.0.1:9093",
                                           security_protocol="SSL", **settings))
    assert ctx is not None
    return ctx


def refused(**settings: Any) -> str:
    """The ConfigurationError text of building the context; no password anywhere in it."""
    with pytest.raises(ConfigurationError) as info:
        context(**settings)
    text = str(info.value)
    assert not any(p in text for p in PASSWORDS), text
    return text


def mutual_tls_peer(client: ssl.SSLContext, pki: TlsFiles) -> bytes | None:
    """An in-memory handshake with a server that requires a client certificate signed by the
    PKI's CA: the certificate the server received (DER)."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.broker_keystore)
    server.load_verify_locations(pki.ca)
    server.verify_mode = ssl.CERT_REQUIRED
    _, s = handshake(client, server)       # the server has checked the client's certificate
    return s.getpeercert(binary_form=True)


def der(pem_file: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(pem_file.read_text())


# --------------------------------------------------------------------------- trust stores


@pytest.mark.parametrize("which,kind", [
    ("truststore_jks", "JKS"),
    ("truststore_p12", "PKCS12"),
    ("truststore_p12", None),           # Java's default type, JKS, reads PKCS12 too
    ("truststore_p12", "JKS"),
    ("truststore_jks", "PKCS12"),
])
def test_a_trust_store_gives_the_cas_of_its_pem_twin(stores: Stores, pki: TlsFiles, which: str,
                                                     kind: str | None) -> None:
    typed = {} if kind is None else {"ssl_truststore_type": kind}
    ctx = context(ssl_truststore_location=str(getattr(stores, which)),
                  ssl_truststore_password=TRUST_PASSWORD, **typed)
    pem = context(ssl_truststore_location=str(pki.ca))
    assert pem.get_ca_certs() != []
    assert ctx.get_ca_certs() == pem.get_ca_certs()
    assert ctx.get_ca_certs(binary_form=True) == [der(pki.ca)]
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname


def test_either_type_reads_either_format_in_java_too(stores: Stores) -> None:
    """The rule followed above is Java's: keytool opens the PKCS12 store as type JKS and the
    JKS store as type PKCS12 (Java's dual-format key stores)."""
    for path, kind in ((stores.truststore_p12, "JKS"), (stores.truststore_jks, "PKCS12")):
        done = subprocess.run([tool("keytool"), "-list", "-keystore", str(path), "-storetype",
                               kind, "-storepass", TRUST_PASSWORD],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"Keystore type: {kind}" in done.stdout


def test_a_jks_trust_store_without_its_password_is_read_unchecked_as_in_java(
        stores: Stores, pki: TlsFiles) -> None:
    ctx = context(ssl_truststore_location=str(stores.truststore_jks))
    assert ctx.get_ca_certs(binary_form=True) == [der(pki.ca)]


def test_a_key_store_used_as_trust_store_trusts_its_key_entrys_certificate(
        stores: Stores, pki: TlsFiles) -> None:
    """Java's rule: a JKS trust store's key entries count by their own certificate."""
    ctx = context(ssl_truststore_location=str(stores.keystore_jks),
                  ssl_truststore_password=STORE_PASSWORD)
    # the client certificate alone (not the CA of its chain); get_ca_certs lists CAs only
    assert ctx.cert_store_stats() == {"crl": 0, "x509_ca": 0, "x509": 1}


def test_a_pkcs12_trust_store_needs_its_password(stores: Stores) -> None:
    path = stores.truststore_p12
    assert refused(ssl_truststore_location=str(path)) == (
        f"ssl.truststore.location={path}: cannot open the PKCS12 store without a password: "
        f"set ssl.truststore.password")


@pytest.mark.parametrize("which,kind", [("truststore_jks", "JKS"), ("truststore_p12", "PKCS12")])
def test_a_wrong_trust_store_password(stores: Stores, which: str, kind: str) -> None:
    path = getattr(stores, which)
    assert refused(ssl_truststore_location=str(path), ssl_truststore_password="not-the-password"
                   ) == (f"ssl.truststore.location={path}: cannot open the {kind} store: "
                         f"ssl.truststore.password is wrong (or the file is damaged)")


def test_a_pem_trust_store_takes_no_password(pki: TlsFiles) -> None:
    assert refused(ssl_truststore_location=str(pki.ca), ssl_truststore_password=TRUST_PASSWORD
                   ) == (f"ssl.truststore.location={pki.ca} is PEM text, which has no password: "
                         f"leave ssl.truststore.password unset (Java refuses it too)")
    assert refused(ssl_truststore_password=TRUST_PASSWORD) == (
        "ssl.truststore.password is set, but ssl.truststore.location is not (as in Java, a "
        "password needs a trust store)")


# --------------------------------------------------------------------------- key stores


def test_each_key_store_presents_the_client_certificate(stores: Stores, pki: TlsFiles,
                                                        tmp_path: Path) -> None:
    """JKS (its key under the store password, or under its own), PKCS12 and the PEM file: the
    server sees the same client certificate."""
    pem_store = tmp_path / "client-store.pem"
    pem_store.write_text(pki.client_key.read_text() + pki.client_cert.read_text())
    trust = {"ssl_truststore_location": str(pki.ca)}
    variants: dict[str, dict[str, Any]] = {
        "jks": dict(ssl_keystore_location=str(stores.keystore_jks),
                    ssl_keystore_password=STORE_PASSWORD),
        "jks, own key password": dict(ssl_keystore_location=str(stores.keystore_keypass_jks),
                                      ssl_keystore_password=STORE_PASSWORD,
                                      ssl_key_password=KEY_PASSWORD),
        "pkcs12": dict(ssl_keystore_location=str(stores.keystore_p12),
                       ssl_keystore_type="PKCS12", ssl_keystore_password=STORE_PASSWORD),
        "pkcs12 declared jks": dict(ssl_keystore_location=str(stores.keystore_p12),
                                    ssl_keystore_type="JKS", ssl_keystore_password=STORE_PASSWORD),
        "pem": dict(ssl_keystore_location=str(pem_store), ssl_keystore_type="PEM"),
    }
    seen = {name: mutual_tls_peer(context(**trust, **v), pki) for name, v in variants.items()}
    assert seen == dict.fromkeys(variants, der(pki.client_cert))
    # and without a key store the server refuses the handshake: the test above can fail
    with pytest.raises(ssl.SSLError):
        mutual_tls_peer(context(**trust), pki)


def test_a_key_store_needs_its_password(stores: Stores) -> None:
    path = stores.keystore_jks
    assert refused(ssl_keystore_location=str(path)) == (
        f"ssl.keystore.location={path} is a JKS store: set ssl.keystore.password (Java "
        f"requires it for a key store)")


@pytest.mark.parametrize("which,kind", [("keystore_jks", "JKS"), ("keystore_p12", "PKCS12")])
def test_a_wrong_key_store_password(stores: Stores, which: str, kind: str) -> None:
    path = getattr(stores, which)
    assert refused(ssl_keystore_location=str(path), ssl_keystore_password="not-the-password"
                   ) == (f"ssl.keystore.location={path}: cannot open the {kind} store: "
                         f"ssl.keystore.password is wrong (or the file is damaged)")


def test_a_wrong_or_missing_key_password(stores: Stores) -> None:
    path = stores.keystore_keypass_jks
    assert refused(ssl_keystore_location=str(path), ssl_keystore_password=STORE_PASSWORD,
                   ssl_key_password="not-the-password") == (
        f"ssl.keystore.location={path}: cannot decrypt the private key 'client': "
        f"ssl.key.password is wrong")
    assert refused(ssl_keystore_location=str(path), ssl_keystore_password=STORE_PASSWORD) == (
        f"ssl.keystore.location={path}: cannot decrypt the private key 'client': "
        f"ssl.keystore.password does not decrypt it: give the key's own password in "
        f"ssl.key.password")


@pytest.mark.parametrize("which,kind", [("truststore_jks", "JKS"), ("truststore_p12", "PKCS12")])
def test_a_key_store_without_a_private_key(stores: Stores, which: str, kind: str) -> None:
    path = getattr(stores, which)
    assert refused(ssl_keystore_location=str(path), ssl_keystore_password=TRUST_PASSWORD) == (
        f"ssl.keystore.location={path}: the {kind} store holds no private key (ssl.keystore is "
        f"the client's key and certificate; trusted certificates go in ssl.truststore)")


def test_a_key_store_with_two_keys(stores: Stores) -> None:
    path = stores.two_keys_jks
    assert refused(ssl_keystore_location=str(path), ssl_keystore_password=STORE_PASSWORD) == (
        f"ssl.keystore.location={path}: the JKS store holds 2 private keys (client, second); "
        f"pyconsumer presents one client certificate: keep one key in the store")


# --------------------------------------------------------------------------- files and types


@pytest.mark.parametrize("store", ["truststore", "keystore"])
def test_a_missing_file(store: str, tmp_path: Path) -> None:
    path = tmp_path / f"no-{store}.jks"
    assert refused(**{f"ssl_{store}_location": str(path),
                      f"ssl_{store}_password": STORE_PASSWORD}) == (
        f"ssl.{store}.location={path}: cannot read the file: No such file or directory")


def test_a_type_the_file_contradicts(stores: Stores, pki: TlsFiles, tmp_path: Path) -> None:
    assert refused(ssl_truststore_location=str(pki.ca), ssl_truststore_type="JKS") == (
        f"ssl.truststore.location={pki.ca}: ssl.truststore.type=JKS, but the file is PEM "
        f"text; set ssl.truststore.type=PEM")
    assert refused(ssl_truststore_location=str(stores.truststore_jks),
                   ssl_truststore_type="PEM") == (
        f"ssl.truststore.location={stores.truststore_jks}: ssl.truststore.type=PEM, but the "
        f"file is a JKS store; set ssl.truststore.type=JKS")
    assert refused(ssl_keystore_location=str(stores.keystore_p12), ssl_keystore_type="pem",
                   ssl_keystore_password=STORE_PASSWORD) == (
        f"ssl.keystore.location={stores.keystore_p12}: ssl.keystore.type=PEM, but the file "
        f"is a PKCS12 store; set ssl.keystore.type=PKCS12")
    junk = tmp_path / "junk.jks"
    junk.write_bytes(b"\x00\x01 not a store at all")
    assert refused(ssl_truststore_location=str(junk), ssl_truststore_type="PKCS12") == (
        f"ssl.truststore.location={junk}: the file is neither a JKS or PKCS12 store nor PEM "
        f"text (ssl.truststore.type=PKCS12)")


def test_store_types_java_names_only() -> None:
    with pytest.raises(ConfigurationError) as info:
        ConsumerConfig(bootstrap_servers="127.0.0.1:9093", ssl_truststore_type="BKS")
    assert str(info.value) == (
        "Invalid value 'BKS' for setting ssl.truststore.type (ssl_truststore_type): not one of "
        "the accepted values; accepted: one of JKS, PKCS12, PEM (any case)")
    assert ConsumerConfig(bootstrap_servers="127.0.0.1:9093",
                          ssl_keystore_type="pkcs12").ssl_keystore_type == "PKCS12"


def test_pem_text_settings_refuse_another_store_type(pki: TlsFiles) -> None:
    with pytest.raises(ConfigurationError) as info:
        ConsumerConfig(bootstrap_servers="127.0.0.1:9093", ssl_keystore_type="JKS",
                       ssl_keystore_key=pki.client_key.read_text(),
                       ssl_keystore_certificate_chain=pki.client_cert.read_text())
    assert str(info.value) == ("ssl.keystore.key is PEM text, but ssl.keystore.type=JKS: set "
                               "ssl.keystore.type=PEM or leave it unset")


# --------------------------------------------------------------------------- the optional extra


@pytest.mark.parametrize("module,package,which", [
    ("jks", "pyjks", "keystore_jks"),
    ("cryptography.hazmat.primitives.serialization.pkcs12", "cryptography", "keystore_p12"),
])
def test_without_the_extra(stores: Stores, monkeypatch: pytest.MonkeyPatch, module: str,
                           package: str, which: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)      # import fails as if not installed
    path = getattr(stores, which)
    kind = "JKS" if package == "pyjks" else "PKCS12"
    assert refused(ssl_keystore_location=str(path), ssl_keystore_password=STORE_PASSWORD) == (
        f"ssl.keystore.location={path} is a {kind} store: reading it needs the {package} "
        f"package: pip install -e '.[keystores]' (in pyconsumer's clone)")


# --------------------------------------------------------------------------- the key on its way


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """What load_cert_chain was given: the path, its mode and link, and the text."""
    seen: list[dict[str, Any]] = []
    real = ssl.SSLContext.load_cert_chain

    def spy(self: ssl.SSLContext, certfile: Any, keyfile: Any = None, password: Any = None
            ) -> None:
        info = os.stat(certfile)
        seen.append({"path": str(certfile), "mode": stat.S_IMODE(info.st_mode),
                     "link": os.readlink(certfile) if os.path.islink(certfile) else None,
                     "text": Path(certfile).read_text()})
        real(self, certfile, keyfile, password)

    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", spy)
    yield seen


def test_the_key_reaches_openssl_in_memory_and_encrypted(stores: Stores,
                                                         loads: list[dict[str, Any]]) -> None:
    if not hasattr(os, "memfd_create"):
        pytest.skip("no memfd_create on this system: the temporary file test covers it")
    context(ssl_keystore_location=str(stores.keystore_jks), ssl_keystore_password=STORE_PASSWORD)
    (seen,) = loads
    assert seen["path"].startswith("/proc/self/fd/")
    assert seen["link"] == "/memfd:pyconsumer-tls (deleted)"
    assert "-----BEGIN ENCRYPTED PRIVATE KEY-----" in seen["text"]
    assert "-----BEGIN PRIVATE KEY-----" not in seen["text"]
    assert seen["text"].count("-----BEGIN CERTIFICATE-----") == 2      # client, CA


def test_without_memfd_a_private_temporary_file_removed_at_once(
        stores: Stores, loads: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.delattr(os, "memfd_create", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    context(ssl_keystore_location=str(stores.keystore_p12), ssl_keystore_password=STORE_PASSWORD)
    (seen,) = loads
    assert Path(seen["path"]).parent == tmp_path
    assert seen["mode"] == 0o600
    assert "-----BEGIN ENCRYPTED PRIVATE KEY-----" in seen["text"]
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- the Spark source


def test_spark_kafka_ssl_options_reach_the_context(stores: Stores, pki: TlsFiles) -> None:
    """``kafka.ssl.*`` options are the same settings: the consumer the source builds presents
    the key store's certificate."""
    from pyconsumer.spark.options import parse_options

    options = {
        "kafka.bootstrap.servers": "127.0.0.1:9093", "subscribe": "orders",
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.location": str(stores.truststore_jks),
        "kafka.ssl.truststore.password": TRUST_PASSWORD,
        "kafka.ssl.keystore.location": str(stores.keystore_keypass_jks),
        "kafka.ssl.keystore.type": "JKS",
        "kafka.ssl.keystore.password": STORE_PASSWORD,
        "kafka.ssl.key.password": KEY_PASSWORD,
    }
    settings = parse_options(options, streaming=False).consumer_settings()
    assert {k: v for k, v in settings.items() if k.startswith("ssl.")} == {
        k[len("kafka."):]: v for k, v in options.items() if k.startswith("kafka.ssl.")}
    ctx = build_ssl_context(ConsumerConfig(**settings))
    assert ctx is not None and ctx.get_ca_certs(binary_form=True) == [der(pki.ca)]
    assert mutual_tls_peer(ctx, pki) == der(pki.client_cert)


def test_spark_names_the_option_of_a_wrong_store_password(stores: Stores) -> None:
    from pyconsumer.spark.options import parse_options

    path = stores.keystore_p12
    with pytest.raises(ConfigurationError) as info:
        parse_options({"kafka.bootstrap.servers": "127.0.0.1:9093", "subscribe": "orders",
                       "kafka.security.protocol": "SSL",
                       "kafka.ssl.keystore.location": str(path),
                       "kafka.ssl.keystore.password": "not-the-password"}, streaming=True)
    assert str(info.value) == (
        f"Option 'kafka.ssl.keystore.location', 'kafka.ssl.keystore.password': "
        f"ssl.keystore.location={path}: cannot open the PKCS12 store: ssl.keystore.password "
        f"is wrong (or the file is damaged)")
