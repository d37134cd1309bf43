"""Java key and trust stores for the TLS tests, written by Java's own ``keytool`` from a PEM
PKI (a CA, a client certificate and its key: :class:`~pyconsumer.testing._kafka.TlsFiles`).

keytool cannot read a PEM key, so the client's key and chain go through one PKCS12 made by
``openssl pkcs12 -export``; every store the tests read is then written by keytool
(``-importkeystore`` for the key stores, ``-importcert`` for the trust stores), as a Java
deployment makes them. Without keytool or openssl the tests skip saying what to install,
except under ``CI=true``, where they fail.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyconsumer.testing._kafka import TlsFiles

STORE_PASSWORD = "store-secret-1"
KEY_PASSWORD = "key-secret-2"       # the key's own password in keystore-keypass.jks
TRUST_PASSWORD = "trust-secret-3"
ALIAS = "client"

_INSTALL = {"keytool": "install Java 17 or newer (apt-get install openjdk-17-jre-headless)",
            "openssl": "install openssl (apt-get install openssl)"}
# a JVM per keytool run: start it small and fast
_JVM = ["-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-J-Xshare:auto"]


@dataclass(frozen=True)
class Stores:
    """The stores made from one PKI; the key stores hold the client's key and its chain
    (client, CA), the trust stores the CA alone."""

    truststore_jks: Path
    truststore_p12: Path
    keystore_jks: Path          # key password = store password
    keystore_keypass_jks: Path  # key password KEY_PASSWORD
    keystore_p12: Path
    two_keys_jks: Path          # the client's key twice, under two aliases


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        message = f"the keystore tests need '{name}' on PATH: {_INSTALL[name]}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run them: {message}", pytrace=False)
        pytest.skip(message)
    return found


def run(*args: str) -> None:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{Path(args[0]).name} {args[1]} failed: "
                           f"{(done.stdout + done.stderr).strip()}")


def make_stores(folder: Path, tls: TlsFiles) -> Stores:
    """Write the stores of :class:`Stores` into ``folder`` from ``tls``."""
    keytool, openssl = tool("keytool"), tool("openssl")
    folder.mkdir(parents=True, exist_ok=True)
    pem_p12 = folder / "from-openssl.p12"
    run(openssl, "pkcs12", "-export", "-in", str(tls.client_cert), "-inkey", str(tls.client_key),
        "-certfile", str(tls.ca), "-name", ALIAS, "-passout", f"pass:{STORE_PASSWORD}",
        "-out", str(pem_p12))
    stores = Stores(*(folder / name for name in (
        "truststore.jks", "truststore.p12", "keystore.jks", "keystore-keypass.jks",
        "keystore.p12", "two-keys.jks")))

    def import_key(dest: Path, kind: str, key_password: str, alias: str = ALIAS) -> None:
        run(keytool, *_JVM, "-importkeystore", "-noprompt",
            "-srckeystore", str(pem_p12), "-srcstoretype", "PKCS12",
            "-srcstorepass", STORE_PASSWORD, "-srcalias", ALIAS,
            "-destkeystore", str(dest), "-deststoretype", kind,
            "-deststorepass", STORE_PASSWORD, "-destkeypass", key_password,
            "-destalias", alias)

    import_key(stores.keystore_p12, "PKCS12", STORE_PASSWORD)
    import_key(stores.keystore_jks, "JKS", STORE_PASSWORD)
    import_key(stores.keystore_keypass_jks, "JKS", KEY_PASSWORD)
    shutil.copy(stores.keystore_jks, stores.two_keys_jks)
    import_key(stores.two_keys_jks, "JKS", STORE_PASSWORD, alias="second")
    for dest, kind in ((stores.truststore_jks, "JKS"), (stores.truststore_p12, "PKCS12")):
        run(keytool, *_JVM, "-importcert", "-noprompt", "-alias", "ca", "-file", str(tls.ca),
            "-keystore", str(dest), "-storetype", kind, "-storepass", TRUST_PASSWORD)
    pem_p12.unlink()
    return stores
