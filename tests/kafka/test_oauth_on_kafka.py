"""OAUTHBEARER against Apache Kafka itself: a SASL_PLAINTEXT listener whose tokens Kafka's own
``OAuthBearerValidatorCallbackHandler`` validates (signature with the keys of a JWKS endpoint,
expiry, issued-at, audience and issuer), not a proxy in front of another broker.

The identity provider is the test's, on 127.0.0.1: an RSA key pair; a JWKS endpoint serving its
public half (what the broker fetches); the client-credentials token endpoint of the OAuth tests
handing out RS256 JWTs signed with its private half (what the consumer fetches).
"""
from __future__ import annotations

import base64
import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import SaslAuthenticationError
from pyconsumer.testing import KafkaCluster, OAuthValidation, TestRecord, produce
from tests.backends import start_or_skip
from tests.conftest import unique_topic_name
from tests.integration.test_sasl_oauth import CLIENT_ID, CLIENT_SECRET, TokenEndpoint

pytestmark = pytest.mark.kafka

AUDIENCE = "kafka-broker"
ISSUER = "https://idp.test/"
KID = "test-key-1"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def uint(n: int) -> str:
    return b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))


class IdentityProvider:
    """An RSA signing key, its JWKS endpoint (GET ``jwks_url``) and RS256 JWTs signed with it."""

    def __init__(self) -> None:
        rsa = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        numbers = self.key.public_key().public_numbers()
        jwks = json.dumps({"keys": [{"kty": "RSA", "kid": KID, "use": "sig", "alg": "RS256",
                                     "n": uint(numbers.n), "e": uint(numbers.e)}]}).encode()
        self.fetches = 0
        idp = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                idp.fetches += 1
                found = self.path == "/jwks"
                body = jwks if found else b"{}"
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.jwks_url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, scope: str, *, key: Any = None, audience: str = AUDIENCE,
              lifetime_s: int = 600) -> str:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        now = int(time.time())
        head = b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": KID}).encode())
        body = b64(json.dumps({"sub": CLIENT_ID, "scope": scope, "iat": now, "exp": now + lifetime_s,
                               "iss": ISSUER, "aud": audience}).encode())
        signature = (key or self.key).sign(f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{head}.{body}.{b64(signature)}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    made = IdentityProvider()
    yield made
    made.close()


@pytest.fixture(scope="module")
def oauth_kafka(idp: IdentityProvider) -> Iterator[KafkaCluster]:
    pytest.importorskip("confluent_kafka", reason="confluent-kafka produces the test records")
    kafka = KafkaCluster(oauth=OAuthValidation(idp.jwks_url, expected_audience=AUDIENCE,
                                               expected_issuer=ISSUER))
    try:
        yield start_or_skip(kafka)
    finally:
        kafka.close()


@pytest.fixture
def endpoint(idp: IdentityProvider) -> Iterator[TokenEndpoint]:
    made = TokenEndpoint(token=idp.token)
    yield made
    made.close()


def oauth_settings(cluster: KafkaCluster, url: str, secret: str = CLIENT_SECRET,
                   **extra: Any) -> dict[str, Any]:
    return cluster.client_settings("OAUTH", **{
        "sasl.oauthbearer.token.endpoint.url": url,
        "sasl.oauthbearer.client.credentials.client.id": CLIENT_ID,
        "sasl.oauthbearer.client.credentials.client.secret": secret,
        "auto_offset_reset": "earliest", "fetch_max_wait_ms": 100,
        "request_timeout_ms": 10_000, "default_api_timeout_ms": 20_000, **extra})


def test_a_client_credentials_consumer_reads_exact_records(
        oauth_kafka: KafkaCluster, idp: IdentityProvider, endpoint: TokenEndpoint) -> None:
    topic = oauth_kafka.create_topic(unique_topic_name("oauth"), 2)
    sent = [TestRecord(key=b"k%d" % i, value=b"v%d" % i, partition=i % 2) for i in range(20)]
    produce(oauth_kafka.bootstrap_servers, topic, sent)
    rows: dict[int, list[tuple[int, bytes | None, bytes | None]]] = {0: [], 1: []}
    # a group member: the coordinator's connection authenticates too
    with KafkaConsumer(topic, **oauth_settings(oauth_kafka, endpoint.url, group_id=unique_topic_name("g"),
                                               **{"sasl.oauthbearer.scope": "kafka"})) as consumer:
        deadline = time.monotonic() + 60
        while sum(map(len, rows.values())) < 20 and time.monotonic() < deadline:
            for tp, recs in consumer.poll(timeout_ms=500).items():
                rows[tp.partition] += [(r.offset, r.key, r.value) for r in recs]
        consumer.commit()
        committed = consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    assert {tp.partition: om and om.offset for tp, om in committed.items()} == {0: 10, 1: 10}
    assert rows == {p: [(i // 2, b"k%d" % i, b"v%d" % i) for i in range(p, 20, 2)] for p in (0, 1)}
    assert idp.fetches >= 1                  # the broker checked the signature with its keys
    assert endpoint.requests
    assert {tuple(r["form"]["grant_type"]) for r in endpoint.requests} == {("client_credentials",)}
    assert {tuple(r["form"]["scope"]) for r in endpoint.requests} == {("kafka",)}


def test_a_wrong_secret_fails_naming_the_endpoint_never_the_secret(
        oauth_kafka: KafkaCluster, endpoint: TokenEndpoint) -> None:
    wrong = "wrong-Secret-7"
    with KafkaConsumer(**oauth_settings(oauth_kafka, endpoint.url, secret=wrong)) as consumer:
        consumer.assign([TopicPartition("anything", 0)])
        with pytest.raises(SaslAuthenticationError) as info:
            consumer.poll(timeout_ms=10_000)
    assert str(info.value) == (
        f"the OAuth token endpoint {endpoint.url} (client {CLIENT_ID}) refused the client "
        "credentials: HTTP 401 Unauthorized (check "
        "sasl.oauthbearer.client.credentials.client.id/secret or clientId/clientSecret in "
        "sasl.jaas.config)")
    assert wrong not in str(info.value) and CLIENT_SECRET not in str(info.value)


@pytest.mark.parametrize("why", ["another key signed it", "meant for another audience"])
def test_a_token_kafka_does_not_accept_is_refused_by_the_broker(
        oauth_kafka: KafkaCluster, idp: IdentityProvider, why: str) -> None:
    """The endpoint hands out a token, but Kafka's validator refuses it: the consumer says the
    broker refused OAUTHBEARER, with Kafka's own reason."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    make = ((lambda scope: idp.token(scope, key=other)) if why == "another key signed it"
            else (lambda scope: idp.token(scope, audience="someone-else")))
    endpoint = TokenEndpoint(token=make)
    try:
        with KafkaConsumer(**oauth_settings(oauth_kafka, endpoint.url)) as consumer:
            consumer.assign([TopicPartition("anything", 0)])
            with pytest.raises(SaslAuthenticationError) as info:
                consumer.poll(timeout_ms=10_000)
    finally:
        endpoint.close()
    # Kafka says no more than the status (its reason stays in the broker's log)
    assert str(info.value) == (f"SASL OAUTHBEARER authentication with node -1 "
                               f"({oauth_kafka.listener('OAUTH')}) failed: {{\"status\":\"invalid_token\"}}")
