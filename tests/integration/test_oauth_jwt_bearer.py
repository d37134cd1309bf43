"""The JWT-bearer grant (KIP-1139, RFC 7523): the consumer signs an assertion with its private
key and the test token endpoint on 127.0.0.1 checks it with the public key (signature, claims,
times) before it issues a token; keys are made here with ``cryptography``."""
from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.errors import ConfigurationError, SaslAuthenticationError

from tests.integration.test_oauth_token_endpoint import first_message
from pyconsumer.testing import SaslProxy, TansuBroker

from tests.integration.test_sasl_oauth import (
    CLIENT_ID,
    JWT_BEARER,
    OAuthBearerServer,
    TokenEndpoint,
    oauth_settings,
    oauth_users,
    read_all,
)

crypto = pytest.importorskip("cryptography")

from cryptography.exceptions import InvalidSignature  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature  # noqa: E402

PASSPHRASE = "key-Passphrase-5"


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def write_key(path: Path, key: Any, passphrase: str | None = None) -> str:
    encryption: Any = (serialization.NoEncryption() if passphrase is None
                       else serialization.BestAvailableEncryption(passphrase.encode()))
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8, encryption))
    return str(path)


class Verifier:
    """The endpoint's check of an assertion: the signature with the public key; the
    header and claims are kept for the test to look at."""

    def __init__(self, key: Any, algorithm: str) -> None:
        self.public, self.algorithm = key.public_key(), algorithm
        self.seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def __call__(self, assertion: str) -> bool:
        head_s, body_s, sig_s = assertion.split(".")
        data, sig = f"{head_s}.{body_s}".encode(), unb64(sig_s)
        try:
            if self.algorithm == "RS256":
                self.public.verify(sig, data, padding.PKCS1v15(), hashes.SHA256())
            else:
                der = encode_dss_signature(int.from_bytes(sig[:32], "big"),
                                           int.from_bytes(sig[32:], "big"))
                self.public.verify(der, data, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return False
        header, claims = json.loads(unb64(head_s)), json.loads(unb64(body_s))
        self.seen.append((header, claims))
        return bool(header.get("alg") == self.algorithm and claims["exp"] > time.time())


@pytest.fixture
def rsa_key() -> Any:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def bearer_settings(url: str, **more: Any) -> dict[str, Any]:
    return {"sasl.oauthbearer.token.endpoint.url": url,
            "sasl.oauthbearer.jwt.retriever.class":
                "org.apache.kafka.common.security.oauthbearer.JwtBearerJwtRetriever", **more}


@pytest.fixture
def endpoints() -> Iterator[list[TokenEndpoint]]:
    made: list[TokenEndpoint] = []
    yield made
    for e in made:
        e.close()


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_a_signed_assertion_gets_a_token(tmp_path: Path, endpoints: list[TokenEndpoint],
                                         algorithm: str) -> None:
    key = (rsa.generate_private_key(public_exponent=65537, key_size=2048) if algorithm == "RS256"
           else ec.generate_private_key(ec.SECP256R1()))
    verifier = Verifier(key, algorithm)
    endpoint = TokenEndpoint(assertion_ok=verifier)
    endpoints.append(endpoint)
    template = tmp_path / "template.json"
    template.write_text(json.dumps({"header": {"kid": "key-1"},
                                    "payload": {"tenant": "t-9", "sub": "from-template"}}))
    before = int(time.time())
    message = first_message(**bearer_settings(endpoint.url, **{
        "sasl.oauthbearer.assertion.algorithm": algorithm,
        "sasl.oauthbearer.assertion.private.key.file": write_key(tmp_path / "k.pem", key, PASSPHRASE),
        "sasl.oauthbearer.assertion.private.key.passphrase": PASSPHRASE,
        "sasl.oauthbearer.assertion.template.file": str(template),
        "sasl.oauthbearer.assertion.claim.iss": "ingest-app",
        "sasl.oauthbearer.assertion.claim.sub": "ingest-app",
        "sasl.oauthbearer.assertion.claim.aud": endpoint.url,
        "sasl.oauthbearer.assertion.claim.jti.include": True,
        "sasl.oauthbearer.scope": "kafka"}))
    after = int(time.time())
    assert message.startswith(b"n,,\x01auth=Bearer ey")
    (request,) = endpoint.requests
    assert request["auth"] == ""
    assert sorted(request["form"]) == ["assertion", "grant_type", "scope"]
    assert (request["form"]["grant_type"], request["form"]["scope"]) == ([JWT_BEARER], ["kafka"])
    ((header, claims),) = verifier.seen
    assert header == {"kid": "key-1", "alg": algorithm, "typ": "JWT"}
    iat = claims.pop("iat")
    assert before <= iat <= after
    assert len(claims.pop("jti")) == 36
    # Java's defaults: expires 300 s after, not before 60 s before
    assert claims == {"tenant": "t-9", "sub": "ingest-app", "iss": "ingest-app",
                      "aud": endpoint.url, "exp": iat + 300, "nbf": iat - 60}


def test_a_ready_assertion_file(tmp_path: Path, endpoints: list[TokenEndpoint],
                                rsa_key: Any) -> None:
    verifier = Verifier(rsa_key, "RS256")
    endpoint = TokenEndpoint(assertion_ok=verifier)
    endpoints.append(endpoint)
    head = base64.urlsafe_b64encode(b'{"alg":"RS256","typ":"JWT"}').rstrip(b"=")
    body = base64.urlsafe_b64encode(json.dumps(
        {"sub": "made-elsewhere", "exp": int(time.time()) + 60}).encode()).rstrip(b"=")
    sig = rsa_key.sign(head + b"." + body, padding.PKCS1v15(), hashes.SHA256())
    ready = tmp_path / "assertion.jwt"
    ready.write_bytes(head + b"." + body + b"." + base64.urlsafe_b64encode(sig).rstrip(b"=") + b"\n")
    first_message(**bearer_settings(endpoint.url, **{"sasl.oauthbearer.assertion.file": str(ready)}))
    assert [c["sub"] for _, c in verifier.seen] == ["made-elsewhere"]


def test_an_assertion_signed_by_another_key_is_refused(tmp_path: Path,
                                                      endpoints: list[TokenEndpoint],
                                                      rsa_key: Any) -> None:
    endpoint = TokenEndpoint(assertion_ok=Verifier(rsa_key, "RS256"))
    endpoints.append(endpoint)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(SaslAuthenticationError) as info:
        first_message(**bearer_settings(endpoint.url, **{
            "sasl.oauthbearer.assertion.private.key.file": write_key(tmp_path / "o.pem", other)}))
    assert str(info.value) == (
        f"the OAuth token endpoint {endpoint.url} (JWT-bearer grant) refused the assertion: "
        "HTTP 401 Unauthorized (check the sasl.oauthbearer.assertion.* settings)")
    assert len(endpoint.requests) == 1


@pytest.mark.parametrize("case, error", [
    ("wrong-passphrase", "sasl.oauthbearer.assertion.private.key.file {path}: not a PEM "
                         "private key, or sasl.oauthbearer.assertion.private.key.passphrase "
                         "does not decrypt it"),
    ("no-passphrase", "sasl.oauthbearer.assertion.private.key.file {path}: the key is "
                      "encrypted, and sasl.oauthbearer.assertion.private.key.passphrase is "
                      "not set"),
    ("rsa-for-es256", "sasl.oauthbearer.assertion.private.key.file {path}: a "
                      "{kind} cannot sign sasl.oauthbearer.assertion.algorithm=ES256"),
    ("missing", "sasl.oauthbearer.assertion.private.key.file {path}: cannot read it "
                "(No such file or directory)"),
])
def test_key_errors_name_the_setting_and_never_the_passphrase(
        tmp_path: Path, rsa_key: Any, case: str, error: str) -> None:
    path = tmp_path / "k.pem"
    if case != "missing":
        write_key(path, rsa_key, PASSPHRASE)
    settings = bearer_settings("http://127.0.0.1:9/token", **{
        "sasl.oauthbearer.assertion.private.key.file": str(path),
        "sasl.oauthbearer.assertion.private.key.passphrase":
            {"wrong-passphrase": "not-the-Passphrase", "no-passphrase": None}.get(case, PASSPHRASE),
        "sasl.oauthbearer.assertion.algorithm": "ES256" if case == "rsa-for-es256" else "RS256"})
    with pytest.raises(ConfigurationError) as info:
        first_message(**settings)
    assert str(info.value) == error.format(path=path, kind=type(rsa_key).__name__)
    assert PASSPHRASE not in str(info.value) and "not-the-Passphrase" not in str(info.value)


@pytest.mark.tansu
def test_records_read_with_a_jwt_bearer_token(tmp_path: Path, rsa_key: Any, tansu: TansuBroker,
                                              make_tansu_topic: Any) -> None:
    verifier = Verifier(rsa_key, "RS256")
    endpoint = TokenEndpoint(assertion_ok=verifier)
    proxy = SaslProxy(tansu.bootstrap, users={"bob": "bob-Secret-2"}, lifetime=120.0, mechanisms={
        "OAUTHBEARER": lambda: OAuthBearerServer(allow_unsecured=False, required_scope="kafka")})
    proxy.start()
    try:
        read_all(proxy, make_tansu_topic(2), oauth_settings(**bearer_settings(endpoint.url, **{
            "sasl.oauthbearer.assertion.private.key.file": write_key(tmp_path / "k.pem", rsa_key),
            "sasl.oauthbearer.assertion.claim.sub": "ingest-app",
            "sasl.oauthbearer.scope": "kafka"})))
        assert oauth_users(proxy) == {CLIENT_ID}
        # one assertion, one grant, for every connection of the consumer
        assert len(verifier.seen) == 1 and len(endpoint.requests) == 1
    finally:
        proxy.close()
        endpoint.close()
