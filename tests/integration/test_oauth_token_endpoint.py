"""The OAUTHBEARER client's calls to a token endpoint, seen from the endpoint (a real HTTP
server on 127.0.0.1): the request it receives, Java's ``sasl.login.*`` timeouts and retry
backoffs, the claim names, and the exact errors. The token is taken as a connection's
OAUTHBEARER mechanism takes it, from the consumer's settings; the broker's side is in
``test_sasl_oauth.py``.
"""
from __future__ import annotations

import base64
import contextlib
import json
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import ConfigurationError, SaslAuthenticationError
from pyconsumer.net.sasl import SaslSettings, build_mechanism

from tests.integration.test_sasl_oauth import (
    CLIENT_ID,
    CLIENT_SECRET,
    TokenEndpoint,
    b64,
    basic,
    signed_jwt,
)


def first_message(**settings: Any) -> bytes:
    """The client's first OAUTHBEARER message (it carries the token)."""
    config = ConsumerConfig(bootstrap_servers="127.0.0.1:9", security_protocol="SASL_PLAINTEXT",
                            sasl_mechanism="OAUTHBEARER", **settings)
    return build_mechanism(SaslSettings.from_config(config)).start("127.0.0.1")


def client(url: str, secret: str = CLIENT_SECRET, **more: Any) -> dict[str, Any]:
    return {"sasl.oauthbearer.token.endpoint.url": url,
            "sasl.oauthbearer.client.credentials.client.id": CLIENT_ID,
            "sasl.oauthbearer.client.credentials.client.secret": secret, **more}


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def make(**kw: Any) -> Iterator[TokenEndpoint]:
    endpoint = TokenEndpoint(**kw)
    try:
        yield endpoint
    finally:
        endpoint.close()


@pytest.fixture
def endpoint() -> Iterator[TokenEndpoint]:
    with make() as made:
        yield made


def test_the_request_the_endpoint_receives(endpoint: TokenEndpoint) -> None:
    message = first_message(**client(endpoint.url, **{"sasl.oauthbearer.scope": "kafka read"}))
    (request,) = endpoint.requests
    assert request["path"] == "/oauth2/token"
    assert request["form"] == {"grant_type": ["client_credentials"], "scope": ["kafka read"]}
    assert request["auth"] == basic(CLIENT_ID, CLIENT_SECRET)
    assert message.startswith(b"n,,\x01auth=Bearer ey")
    # no scope anywhere: no scope parameter
    first_message(**client(endpoint.url.replace("/oauth2/", "/oauth2//")))
    assert endpoint.requests[1]["form"] == {"grant_type": ["client_credentials"]}


def test_the_settings_win_over_the_jaas_options(endpoint: TokenEndpoint) -> None:
    first_message(**client(endpoint.url, **{"sasl.oauthbearer.scope": "from-setting"}),
                  sasl_jaas_config="org.apache.kafka.common.security.oauthbearer."
                  'OAuthBearerLoginModule required clientId="other" clientSecret="other-Secret" '
                  'scope="from-jaas";')
    assert [(r["form"]["scope"], r["auth"]) for r in endpoint.requests] == [
        (["from-setting"], basic(CLIENT_ID, CLIENT_SECRET))]


@pytest.mark.parametrize("urlencode, sent", [(False, "s3cret:+/@x"),
                                             (True, "s3cret%3A%2B%2F%40x")])
def test_header_urlencode(urlencode: bool, sent: str) -> None:
    with make(secret=sent) as endpoint:
        first_message(**client(endpoint.url, secret="s3cret:+/@x",
                               **{"sasl.oauthbearer.header.urlencode": urlencode}))
        assert [r["auth"] for r in endpoint.requests] == [basic(CLIENT_ID, sent)]


def test_5xx_is_retried_with_doubling_waits() -> None:
    with make(script=[503, 500, 503]) as endpoint:
        first_message(**client(endpoint.url, **{"sasl.login.retry.backoff.ms": 100}))
        at = [r["at"] for r in endpoint.requests]
        assert len(at) == 4
        waits = [b - a for a, b in zip(at, at[1:])]
        assert [round(w, 1) for w in waits] == [0.1, 0.2, 0.4], waits


def test_a_4xx_is_not_retried_and_names_the_endpoint_not_the_secret() -> None:
    with make(secret="the-right-Secret") as endpoint:
        with pytest.raises(SaslAuthenticationError) as info:
            first_message(**client(endpoint.url, secret="wrong-Secret-7"))
        assert len(endpoint.requests) == 1
        assert str(info.value) == (
            f"the OAuth token endpoint {endpoint.url} (client {CLIENT_ID}) refused the client "
            "credentials: HTTP 401 Unauthorized (check "
            "sasl.oauthbearer.client.credentials.client.id/secret or clientId/clientSecret in "
            "sasl.jaas.config)")


def test_the_retries_stop_after_backoff_max() -> None:
    with make(script=[503] * 10) as endpoint:
        started = time.monotonic()
        with pytest.raises(SaslAuthenticationError) as info:
            first_message(**client(endpoint.url, **{"sasl.login.retry.backoff.ms": 200,
                                                    "sasl.login.retry.backoff.max.ms": 600}))
        assert 0.55 < time.monotonic() - started < 2
        # waits of 200 ms then 400 ms fill the 600 ms: three attempts
        assert len(endpoint.requests) == 3
        assert re.fullmatch(
            re.escape(f"cannot get a token from the OAuth token endpoint {endpoint.url} "
                      f"(client {CLIENT_ID}): 3 attempt(s) in ") + r"\d+" + re.escape(
                " ms (sasl.login.retry.backoff.max.ms=600), the last: HTTP 503 Service "
                "Unavailable"), str(info.value)), str(info.value)
        assert CLIENT_SECRET not in str(info.value)


def test_a_closed_port_is_retried_then_named(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/token"
    with pytest.raises(SaslAuthenticationError) as info:
        first_message(**client(url, **{"sasl.login.retry.backoff.ms": 50,
                                       "sasl.login.retry.backoff.max.ms": 120}))
    assert re.fullmatch(
        re.escape(f"cannot get a token from the OAuth token endpoint {url} (client {CLIENT_ID}): "
                  "3 attempt(s) in ") + r"\d+" + re.escape(
            " ms (sasl.login.retry.backoff.max.ms=120), the last: cannot connect: "
            "Connection refused"), str(info.value)), str(info.value)


def test_read_timeout_then_a_retry() -> None:
    with make(script=[1.5]) as endpoint:
        started = time.monotonic()
        first_message(**client(endpoint.url, **{"sasl.login.read.timeout.ms": 300,
                                                "sasl.login.retry.backoff.ms": 50}))
        assert 0.3 < time.monotonic() - started < 1.2
        assert len(endpoint.requests) == 2


def test_read_timeout_without_retries_is_named() -> None:
    with make(script=[1.5]) as endpoint:
        with pytest.raises(SaslAuthenticationError) as info:
            first_message(**client(endpoint.url, **{"sasl.login.read.timeout.ms": 300,
                                                    "sasl.login.retry.backoff.max.ms": 0}))
        assert len(endpoint.requests) == 1
        assert re.fullmatch(
            re.escape(f"cannot get a token from the OAuth token endpoint {endpoint.url} "
                      f"(client {CLIENT_ID}): 1 attempt(s) in ") + r"\d+" + re.escape(
                " ms (sasl.login.retry.backoff.max.ms=0), the last: no answer within 300 ms "
                "(sasl.login.read.timeout.ms)"), str(info.value)), str(info.value)


def unsigned(claims: dict[str, Any]) -> str:
    return f"{b64(b'{}')}.{b64(json.dumps(claims).encode())}.sig"


@pytest.mark.parametrize("token, settings, error", [
    (lambda s: signed_jwt(CLIENT_ID, sub_claim="principal"), {},
     "has no 'sub' claim with a subject (sasl.oauthbearer.sub.claim.name=sub)"),
    (lambda s: signed_jwt(CLIENT_ID), {"sasl.oauthbearer.sub.claim.name": "principal"},
     "has no 'principal' claim with a subject (sasl.oauthbearer.sub.claim.name=principal)"),
    (lambda s: unsigned({"sub": "a", "exp": 2e9, "scp": 7}),
     {"sasl.oauthbearer.scope.claim.name": "scp"},
     "has a 'scp' claim that is neither a string nor a list of strings "
     "(sasl.oauthbearer.scope.claim.name=scp)"),
    (lambda s: unsigned({"sub": "a"}), {}, "has no numeric 'exp' claim"),
    (lambda s: "opaque-token", {}, "is not a usable JWT: ValueError"),
], ids=["default-sub", "named-sub", "scope-type", "no-exp", "not-a-jwt"])
def test_the_token_claims_are_checked(token: Any, settings: dict[str, Any], error: str) -> None:
    with make(token=token) as endpoint:
        with pytest.raises(SaslAuthenticationError) as info:
            first_message(**client(endpoint.url, **settings))
        assert str(info.value) == (f"the access_token from the OAuth token endpoint "
                                   f"{endpoint.url} (client {CLIENT_ID}) {error}")


def test_named_claims_are_read() -> None:
    with make(token=lambda s: signed_jwt(CLIENT_ID, scope=s, sub_claim="principal",
                                                    scope_claim="scp")) as endpoint:
        message = first_message(**client(endpoint.url, **{
            "sasl.oauthbearer.sub.claim.name": "principal",
            "sasl.oauthbearer.scope.claim.name": "scp", "sasl.oauthbearer.scope": "kafka"}))
        token = message.split(b"auth=Bearer ")[1].split(b"\x01")[0].decode()
        body = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        assert (claims["principal"], claims["scp"]) == (CLIENT_ID, "kafka")


def test_connect_timeout_is_named() -> None:
    # a listener whose accept queue is full: the next connection attempts wait, unanswered
    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        with socket.create_connection(full.getsockname()):
            url = f"http://127.0.0.1:{full.getsockname()[1]}/token"
            started = time.monotonic()
            with pytest.raises(SaslAuthenticationError) as info:
                first_message(**client(url, **{"sasl.login.connect.timeout.ms": 300,
                                               "sasl.login.read.timeout.ms": 5000,
                                               "sasl.login.retry.backoff.max.ms": 0}))
            assert 0.25 < time.monotonic() - started < 2
    assert re.fullmatch(
        re.escape(f"cannot get a token from the OAuth token endpoint {url} (client {CLIENT_ID}): "
                  "1 attempt(s) in ") + r"\d+" + re.escape(
            " ms (sasl.login.retry.backoff.max.ms=0), the last: no connection within 300 ms "
            "(sasl.login.connect.timeout.ms)"), str(info.value)), str(info.value)


def test_a_token_file_is_read_for_each_authentication(tmp_path: Any) -> None:
    path = tmp_path / "token.jwt"
    url = path.as_uri()
    for sub in ("first", "rotated"):
        token = signed_jwt(sub)
        path.write_text(token + "\n")
        assert first_message(**{"sasl.oauthbearer.token.endpoint.url": url}) == (
            b"n,,\x01auth=Bearer " + token.encode() + b"\x01\x01")


def test_token_file_errors_name_the_setting(tmp_path: Any) -> None:
    missing = (tmp_path / "none.jwt").as_uri()
    with pytest.raises(SaslAuthenticationError) as info:
        first_message(**{"sasl.oauthbearer.token.endpoint.url": missing})
    assert str(info.value) == (f"sasl.oauthbearer.token.endpoint.url {missing}: cannot read "
                               "the token file (No such file or directory)")
    path = tmp_path / "token.jwt"
    path.write_text(signed_jwt("x", sub_claim="principal"))
    with pytest.raises(SaslAuthenticationError) as info:
        first_message(**{"sasl.oauthbearer.token.endpoint.url": path.as_uri()})
    assert str(info.value) == (
        f"the access_token from the token file {path} (sasl.oauthbearer.token.endpoint.url) "
        "has no 'sub' claim with a subject (sasl.oauthbearer.sub.claim.name=sub)")


def test_an_endpoint_url_of_another_scheme_is_refused_at_once() -> None:
    with pytest.raises(ConfigurationError) as info:
        first_message(**client("ftp://127.0.0.1:9/token"))
    assert str(info.value).endswith(
        "sasl.oauthbearer.token.endpoint.url 'ftp://127.0.0.1:9/token': an http(s) token "
        "endpoint or a file:/// token file is expected")
