"""SASL OAUTHBEARER against Tansu behind :class:`~pyconsumer.testing.SaslProxy`, whose
OAUTHBEARER side checks the tokens for real: HS256 signatures with the identity provider's
key (or Java's unsecured ``alg: none`` tokens where allowed), expiry, subject and scope; and
an OAuth 2 token endpoint (a local HTTP server checking the client's Basic credentials and
the form) for the client-credentials flow.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.errors import SaslAuthenticationError
from pyconsumer.net.sasl.oauthbearer import unsecured_jwt
from pyconsumer.testing import SaslProxy, SaslServerRejected, TansuBroker, sample_records

from tests.integration.test_sasl import consume, expected_rows, produce_via

pytestmark = pytest.mark.tansu

KEY = b"identity-provider-signing-key"
CLIENT_ID, CLIENT_SECRET = "ingest-app", "client-Secret-9"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def signed_jwt(sub: str, lifetime_s: float = 600, scope: str = "kafka",
               sub_claim: str = "sub", scope_claim: str = "scope") -> str:
    now = time.time()
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps({sub_claim: sub, scope_claim: scope, "iat": int(now),
                           "exp": int(now + lifetime_s)}).encode())
    sig = b64(hmac.new(KEY, f"{head}.{body}".encode(), hashlib.sha256).digest())
    return f"{head}.{body}.{sig}"


class OAuthBearerServer:
    """The broker's side (Kafka's OAuthBearerValidatorCallbackHandler in spirit)."""

    def __init__(self, allow_unsecured: bool, required_scope: str | None = None,
                 required_extensions: dict[str, str] | None = None,
                 sub_claim: str = "sub", scope_claim: str = "scope") -> None:
        self._sub_claim, self._scope_claim = sub_claim, scope_claim
        self._allow_unsecured = allow_unsecured
        self._scope = required_scope
        self._extensions = required_extensions or {}
        self._failed: str | None = None
        self.username: str | None = None

    def _refuse(self, status: str) -> tuple[bytes, bool]:
        self._failed = status
        return json.dumps({"status": status, "scope": self._scope or ""}).encode(), False

    def step(self, client_token: bytes) -> tuple[bytes, bool]:
        if self._failed is not None:
            assert client_token == b"\x01"
            raise SaslServerRejected(f"Authentication failed: {self._failed}")
        assert client_token.startswith(b"n,,\x01") and client_token.endswith(b"\x01\x01")
        fields = dict(kv.split("=", 1) for kv in client_token[4:-2].decode().split("\x01"))
        auth = fields.pop("auth", "")
        if not auth.startswith("Bearer "):
            return self._refuse("invalid_request")
        if any(fields.get(k) != v for k, v in self._extensions.items()):
            return self._refuse("invalid_extensions")
        try:
            head_s, body_s, sig = auth[len("Bearer "):].split(".")
            head, claims = json.loads(unb64(head_s)), json.loads(unb64(body_s))
        except ValueError:
            return self._refuse("invalid_token")
        if head.get("alg") == "none":
            if not self._allow_unsecured or sig:
                return self._refuse("invalid_token")
        elif head.get("alg") != "HS256" or not hmac.compare_digest(
                unb64(sig), hmac.new(KEY, f"{head_s}.{body_s}".encode(), hashlib.sha256).digest()):
            return self._refuse("invalid_token")
        if claims.get("exp", 0) <= time.time() or not claims.get(self._sub_claim):
            return self._refuse("invalid_token")
        scope = claims.get(self._scope_claim, "")
        scopes = scope.split() if isinstance(scope, str) else list(scope)
        if self._scope is not None and self._scope not in scopes:
            return self._refuse("insufficient_scope")
        self.username = claims[self._sub_claim]
        return b"", True


class TokenEndpoint:
    """A client-credentials token endpoint on 127.0.0.1 (real HTTP, checks the request).

    ``script`` says what the first requests get, one entry each: an HTTP status to fail
    with, or seconds to wait before answering; later requests are answered at once.
    ``token`` makes the access token from the scope asked for (default: a signed JWT)."""

    def __init__(self, lifetime_s: int = 600, script: list[int | float] | None = None,
                 secret: str = CLIENT_SECRET,
                 token: Callable[[str], str] | None = None, client_id: str = CLIENT_ID,
                 assertion_ok: Callable[[str], bool] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self._script = list(script or [])
        make_token = token or (lambda scope: signed_jwt(CLIENT_ID, lifetime_s, scope))
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                basic = self.headers.get("Authorization", "")
                endpoint.requests.append({"form": form, "auth": basic, "at": time.monotonic(),
                                          "path": self.path})
                step = endpoint._script.pop(0) if endpoint._script else None
                if isinstance(step, int):
                    self.answer(step, b'{"error":"temporarily_unavailable"}')
                    return
                if isinstance(step, float):
                    time.sleep(step)
                want = "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()
                if form.get("grant_type") == [JWT_BEARER]:
                    # RFC 7523: the signed assertion is the client's proof, no Basic header
                    if (assertion_ok is None or basic
                            or not assertion_ok(form.get("assertion", [""])[0])):
                        self.answer(401, b'{"error":"invalid_grant"}')
                        return
                elif basic != want or form.get("grant_type") != ["client_credentials"]:
                    self.answer(401, b'{"error":"invalid_client"}')
                    return
                self.answer(200, json.dumps({
                    "access_token": make_token(" ".join(form.get("scope", []))),
                    "token_type": "bearer", "expires_in": lifetime_s}).encode())

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/oauth2/token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def oauth_proxy(tansu: TansuBroker) -> Iterator[Callable[..., SaslProxy]]:
    made: list[SaslProxy] = []

    def make(**server: Any) -> SaslProxy:
        proxy = SaslProxy(tansu.bootstrap, users={"bob": "bob-Secret-2"}, lifetime=120.0,
                          mechanisms={"OAUTHBEARER": lambda: OAuthBearerServer(**server)}).start()
        made.append(proxy)
        return proxy

    yield make
    for p in made:
        p.close()


def oauth_settings(**extra: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER",
        "auto_offset_reset": "earliest", "request_timeout_ms": 5000,
        "default_api_timeout_ms": 5000, "fetch_max_wait_ms": 100}
    settings.update(extra)
    return settings


def read_all(proxy: SaslProxy, topic: str, settings: dict[str, Any]) -> None:
    records = sample_records(60, partitions=2, seed=3)
    expected = expected_rows(topic, records, produce_via(proxy, topic, records, "PLAIN"))
    with KafkaConsumer(bootstrap_servers=proxy.bootstrap, **settings) as c:
        c.assign(sorted(expected))
        assert consume(c, 60) == expected


def oauth_users(proxy: SaslProxy) -> set[str | None]:
    return {u for m, u in proxy.sasl_stats.users if m == "OAUTHBEARER"}


def test_unsecured_jwt_from_the_jaas_line(oauth_proxy: Callable[..., SaslProxy],
                                          make_tansu_topic: Callable[..., str]) -> None:
    proxy = oauth_proxy(allow_unsecured=True, required_extensions={"traceId": "abc"})
    read_all(proxy, make_tansu_topic(2), oauth_settings(sasl_jaas_config=(
        f'{OAUTH_MODULE} required unsecuredLoginStringClaim_sub="alice" '
        'unsecuredLoginLifetimeSeconds="60" extension_traceId="abc";')))
    assert oauth_users(proxy) == {"alice"}


@pytest.mark.parametrize("shape", ["callable", "pair", "object"])
def test_token_provider(oauth_proxy: Callable[..., SaslProxy],
                        make_tansu_topic: Callable[..., str], shape: str) -> None:
    proxy = oauth_proxy(allow_unsecured=False, required_scope="kafka")
    calls: list[int] = []

    def token() -> str:
        calls.append(1)
        return signed_jwt("svc-reader")

    class Provider:
        def token(self) -> str:
            return token()

    provider: Any = {"callable": token, "pair": lambda: (token(), 600_000), "object": Provider()}[shape]
    read_all(proxy, make_tansu_topic(2), oauth_settings(sasl_oauth_token_provider=provider))
    assert oauth_users(proxy) == {"svc-reader"} and calls


def test_client_credentials_from_a_token_endpoint(oauth_proxy: Callable[..., SaslProxy],
                                                  make_tansu_topic: Callable[..., str],
                                                  caplog: pytest.LogCaptureFixture) -> None:
    endpoint = TokenEndpoint()
    try:
        proxy = oauth_proxy(allow_unsecured=False, required_scope="kafka")
        with caplog.at_level(logging.DEBUG, logger="pyconsumer"):
            read_all(proxy, make_tansu_topic(2), oauth_settings(
                sasl_oauthbearer_token_endpoint_url=endpoint.url,
                sasl_jaas_config=f'{OAUTH_MODULE} required clientId="{CLIENT_ID}" '
                                 f'clientSecret="{CLIENT_SECRET}" scope="kafka";'))
        assert oauth_users(proxy) == {CLIENT_ID}
        # one grant for all the connections (cached until 80 % of its lifetime)
        assert len(endpoint.requests) == 1
        assert endpoint.requests[0]["form"] == {"grant_type": ["client_credentials"], "scope": ["kafka"]}
        assert CLIENT_SECRET not in caplog.text
    finally:
        endpoint.close()


def test_wrong_client_secret_names_the_endpoint_not_the_secret(
        oauth_proxy: Callable[..., SaslProxy]) -> None:
    endpoint = TokenEndpoint()
    try:
        proxy = oauth_proxy(allow_unsecured=False)
        settings = oauth_settings(
            sasl_oauthbearer_token_endpoint_url=endpoint.url,
            sasl_jaas_config=f'{OAUTH_MODULE} required clientId="{CLIENT_ID}" '
                             'clientSecret="wrong-Secret-0";')
        with KafkaConsumer(bootstrap_servers=proxy.bootstrap, **settings) as c:
            with pytest.raises(SaslAuthenticationError) as info:
                c.topics()
        assert f"the OAuth token endpoint {endpoint.url} (client {CLIENT_ID}) refused the " \
               "client credentials: HTTP 401" in str(info.value)
        assert "wrong-Secret-0" not in str(info.value)
        assert oauth_users(proxy) == set()
    finally:
        endpoint.close()


@pytest.mark.parametrize("token, status", [
    (lambda: signed_jwt("late", lifetime_s=-5), "invalid_token"),
    (lambda: signed_jwt("narrow", scope="other"), "insufficient_scope"),
    (lambda: unsecured_jwt({"unsecuredLoginStringClaim_sub": "anon"}), "invalid_token"),
], ids=["expired", "scope", "unsecured-refused"])
def test_a_refused_token_gives_the_brokers_status_promptly(
        oauth_proxy: Callable[..., SaslProxy], token: Callable[[], str], status: str) -> None:
    proxy = oauth_proxy(allow_unsecured=False, required_scope="kafka")
    started = time.monotonic()
    with KafkaConsumer(bootstrap_servers=proxy.bootstrap,
                       **oauth_settings(sasl_oauth_token_provider=token)) as c:
        with pytest.raises(SaslAuthenticationError, match=f"Authentication failed: {status}"):
            c.topics()
    assert time.monotonic() - started < 5
    assert oauth_users(proxy) == set() and proxy.sasl_stats.failures >= 1


def test_unsecured_token_shape() -> None:
    tok = unsecured_jwt({"unsecuredLoginStringClaim_sub": "alice",
                         "unsecuredLoginListClaim_scope": "a b"}, now=1000.0)
    head, body, sig = tok.split(".")
    assert json.loads(unb64(head)) == {"alg": "none"} and sig == ""
    assert json.loads(unb64(body)) == {"sub": "alice", "scope": ["a", "b"], "iat": 1000, "exp": 4600}


def basic(client_id: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def test_client_credentials_and_scope_as_settings(oauth_proxy: Callable[..., SaslProxy],
                                                  make_tansu_topic: Callable[..., str],
                                                  caplog: pytest.LogCaptureFixture) -> None:
    endpoint = TokenEndpoint()
    try:
        proxy = oauth_proxy(allow_unsecured=False, required_scope="kafka")
        with caplog.at_level(logging.DEBUG, logger="pyconsumer"):
            read_all(proxy, make_tansu_topic(2), oauth_settings(**{
                "sasl.oauthbearer.token.endpoint.url": endpoint.url,
                "sasl.oauthbearer.client.credentials.client.id": CLIENT_ID,
                "sasl.oauthbearer.client.credentials.client.secret": CLIENT_SECRET,
                "sasl.oauthbearer.scope": "kafka"}))
        assert oauth_users(proxy) == {CLIENT_ID}
        assert [(r["path"], r["form"], r["auth"]) for r in endpoint.requests] == [
            ("/oauth2/token", {"grant_type": ["client_credentials"], "scope": ["kafka"]},
             basic(CLIENT_ID, CLIENT_SECRET))]
        assert CLIENT_SECRET not in caplog.text
    finally:
        endpoint.close()


def test_claim_names_of_a_provider_without_sub_and_scope(
        oauth_proxy: Callable[..., SaslProxy], make_tansu_topic: Callable[..., str]) -> None:
    endpoint = TokenEndpoint(token=lambda scope: signed_jwt(
        CLIENT_ID, scope=scope, sub_claim="principal", scope_claim="scp"))
    try:
        proxy = oauth_proxy(allow_unsecured=False, required_scope="kafka",
                            sub_claim="principal", scope_claim="scp")
        settings = oauth_settings(**{
            "sasl.oauthbearer.token.endpoint.url": endpoint.url,
            "sasl.oauthbearer.client.credentials.client.id": CLIENT_ID,
            "sasl.oauthbearer.client.credentials.client.secret": CLIENT_SECRET,
            "sasl.oauthbearer.scope": "kafka"})
        # with Java's default claim name the client refuses the token before sending it
        with KafkaConsumer(bootstrap_servers=proxy.bootstrap, **settings) as c:
            with pytest.raises(SaslAuthenticationError) as info:
                c.topics()
        assert str(info.value) == (
            f"the access_token from the OAuth token endpoint {endpoint.url} (client {CLIENT_ID}) "
            "has no 'sub' claim with a subject (sasl.oauthbearer.sub.claim.name=sub)")
        assert oauth_users(proxy) == set() and proxy.sasl_stats.failures == 0
        read_all(proxy, make_tansu_topic(2), {
            **settings, "sasl.oauthbearer.sub.claim.name": "principal",
            "sasl.oauthbearer.scope.claim.name": "scp"})
        assert oauth_users(proxy) == {CLIENT_ID}
    finally:
        endpoint.close()


def test_a_token_endpoint_failing_twice_is_retried(
        oauth_proxy: Callable[..., SaslProxy], make_tansu_topic: Callable[..., str]) -> None:
    endpoint = TokenEndpoint(script=[503, 502])
    try:
        proxy = oauth_proxy(allow_unsecured=False, required_scope="kafka")
        read_all(proxy, make_tansu_topic(2), oauth_settings(**{
            "sasl.oauthbearer.token.endpoint.url": endpoint.url,
            "sasl.oauthbearer.client.credentials.client.id": CLIENT_ID,
            "sasl.oauthbearer.client.credentials.client.secret": CLIENT_SECRET,
            "sasl.oauthbearer.scope": "kafka", "sasl.login.retry.backoff.ms": 50}))
        assert oauth_users(proxy) == {CLIENT_ID}
        assert len(endpoint.requests) == 3
    finally:
        endpoint.close()
