"""The client's signed JWT of the JWT-bearer grant (RFC 7523; Kafka's KIP-1139): made for
each token request from a private key (RS256 or ES256), the configured claims over those of
an optional template file, or read as it is from an assertion file. Signing needs the
``cryptography`` package (the ``oauth`` extra), imported only here.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import time
import uuid
from typing import Any

from pyconsumer._install import install_hint
from pyconsumer.errors import ConfigurationError

ALGORITHMS = ("RS256", "ES256")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _read(path: str, setting: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ConfigurationError(f"{setting} {path}: cannot read it ({e.strerror})") from None


@dataclasses.dataclass(frozen=True)
class AssertionSettings:
    """Java's ``sasl.oauthbearer.assertion.*`` settings."""

    algorithm: str = "RS256"
    private_key_file: str | None = None
    private_key_passphrase: str | None = dataclasses.field(default=None, repr=False)
    template_file: str | None = None
    assertion_file: str | None = None
    aud: str | None = None
    iss: str | None = None
    sub: str | None = None
    exp_seconds: int = 300
    nbf_seconds: int = 60
    jti_include: bool = False


class AssertionMaker:
    """Gives the assertion of one token request; the key and template are read once."""

    def __init__(self, settings: AssertionSettings) -> None:
        self._settings = settings
        self._key: Any = None
        self._template: dict[str, Any] = {}
        if settings.assertion_file is not None:
            return
        if settings.private_key_file is None:
            raise ConfigurationError(
                "the JWT-bearer grant needs sasl.oauthbearer.assertion.private.key.file (or a "
                "ready assertion in sasl.oauthbearer.assertion.file)")
        if settings.algorithm not in ALGORITHMS:
            raise ConfigurationError(f"sasl.oauthbearer.assertion.algorithm "
                                     f"{settings.algorithm!r}: one of {', '.join(ALGORITHMS)}")
        self._key = self._load_key(settings)
        if settings.template_file is not None:
            self._template = self._load_template(settings.template_file)

    @staticmethod
    def _load_key(s: AssertionSettings) -> Any:
        try:
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import ec, rsa
        except ImportError:
            raise ConfigurationError(
                "sasl.oauthbearer.assertion.private.key.file needs the cryptography package: "
                f"{install_hint('oauth')}") from None
        setting = "sasl.oauthbearer.assertion.private.key.file"
        pem = _read(s.private_key_file or "", setting)
        password = None if s.private_key_passphrase is None else s.private_key_passphrase.encode()
        passphrase = "sasl.oauthbearer.assertion.private.key.passphrase"
        try:
            key = serialization.load_pem_private_key(pem, password=password)
        except TypeError:
            # the library's words differ between versions: say it in ours
            state = ("encrypted, and " + passphrase + " is not set" if password is None
                     else "not encrypted, but " + passphrase + " is set")
            raise ConfigurationError(f"{setting} {s.private_key_file}: the key is "
                                     f"{state}") from None
        except ValueError:
            raise ConfigurationError(f"{setting} {s.private_key_file}: not a PEM private key"
                                     + ("" if password is None else
                                        f", or {passphrase} does not decrypt it")) from None
        wanted = rsa.RSAPrivateKey if s.algorithm == "RS256" else ec.EllipticCurvePrivateKey
        if not isinstance(key, wanted):
            raise ConfigurationError(f"{setting} {s.private_key_file}: a {type(key).__name__} "
                                     f"cannot sign sasl.oauthbearer.assertion.algorithm="
                                     f"{s.algorithm}")
        if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name != "secp256r1":
            raise ConfigurationError(f"{setting} {s.private_key_file}: ES256 needs a P-256 key, "
                                     f"not {key.curve.name}")
        return key

    @staticmethod
    def _load_template(path: str) -> dict[str, Any]:
        setting = "sasl.oauthbearer.assertion.template.file"
        try:
            template = json.loads(_read(path, setting))
        except ValueError as e:
            raise ConfigurationError(f"{setting} {path}: not JSON ({e})") from None
        if not isinstance(template, dict) or not all(
                isinstance(template.get(part, {}), dict) for part in ("header", "payload")):
            raise ConfigurationError(f"{setting} {path}: a JSON object with 'header' and/or "
                                     "'payload' objects is expected")
        return template

    def __call__(self) -> str:
        s = self._settings
        if s.assertion_file is not None:
            text = _read(s.assertion_file, "sasl.oauthbearer.assertion.file").decode().strip()
            if text.count(".") != 2:
                raise ConfigurationError(f"sasl.oauthbearer.assertion.file {s.assertion_file}: "
                                         "not a JWT")
            return text
        now = int(time.time())
        header = {**self._template.get("header", {}), "alg": s.algorithm, "typ": "JWT"}
        claims: dict[str, Any] = dict(self._template.get("payload", {}))
        claims.update({"iat": now, "exp": now + s.exp_seconds, "nbf": now - s.nbf_seconds})
        for name, value in (("aud", s.aud), ("iss", s.iss), ("sub", s.sub)):
            if value is not None:
                claims[name] = value
        if s.jti_include:
            claims["jti"] = str(uuid.uuid4())
        signing_input = (f"{_b64url(json.dumps(header, separators=(',', ':')).encode())}."
                         f"{_b64url(json.dumps(claims, separators=(',', ':')).encode())}")
        return f"{signing_input}.{_b64url(self._sign(signing_input.encode()))}"

    def _sign(self, data: bytes) -> bytes:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, padding
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

        if self._settings.algorithm == "RS256":
            signature: bytes = self._key.sign(data, padding.PKCS1v15(), hashes.SHA256())
            return signature
        # JWS wants ES256 as the two 32-byte integers, not DER
        r, s = decode_dss_signature(self._key.sign(data, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")


__all__ = ["ALGORITHMS", "AssertionMaker", "AssertionSettings"]
