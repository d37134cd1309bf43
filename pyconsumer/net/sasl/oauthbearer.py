"""SASL OAUTHBEARER (RFC 7628, KIP-255): one client message carrying a bearer token.

Where the token comes from, first match wins:

* ``sasl.oauth.token.provider``: a callable returning the token (a str, or a ``(token,
  lifetime_ms)`` pair), or an object with a ``token()`` method (kafka-python's
  AbstractTokenProvider); called for each authentication, so it decides about caching;
* ``sasl.oauthbearer.token.endpoint.url``: an OAuth 2 client-credentials grant (KIP-768,
  :mod:`pyconsumer.oauth`) with ``sasl.oauthbearer.client.credentials.client.id``/``secret``
  and ``sasl.oauthbearer.scope``, or ``clientId``, ``clientSecret`` and ``scope`` from an
  OAuthBearerLoginModule ``sasl.jaas.config``; or, with
  ``sasl.oauthbearer.jwt.retriever.class=JwtBearerJwtRetriever``, the JWT-bearer grant
  (KIP-1139) with an assertion signed by ``sasl.oauthbearer.assertion.private.key.file``; the
  token is cached until 80 % of its lifetime has passed; a ``file:`` URL names a file holding
  the token (read for each authentication, as Java's file retriever);
* an OAuthBearerLoginModule line with ``unsecuredLoginStringClaim_sub``: Java's unsecured
  JWT (``alg: none``) for tests and development, never for production.

SASL extensions come from ``extension_<name>`` JAAS options (Java's). A broker refusing the
token answers with a JSON error; the client then sends the ``%x01`` that ends the exchange
and the broker's refusal is raised as SaslAuthenticationError with its status.
"""
from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from pyconsumer.errors import ConfigurationError, SaslAuthenticationError
from pyconsumer.net.sasl import SaslSettings
from pyconsumer.oauth.assertion import AssertionMaker, AssertionSettings
from pyconsumer.oauth.token_file import read_token_file
from pyconsumer.oauth.token_endpoint import (
    DEFAULT_TIMEOUT_MS,
    TokenEndpointClient,
    TokenEndpointSettings,
)

_KVSEP = b"\x01"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsecured_jwt(options: Mapping[str, str], now: float | None = None) -> str:
    """Java's OAuthBearerUnsecuredLoginCallbackHandler token: ``alg: none``, the
    ``unsecuredLoginStringClaim_<name>`` claims, ``iat`` and ``exp`` (lifetime
    ``unsecuredLoginLifetimeSeconds``, default 3600) and the scope claim
    (``unsecuredLoginListClaim_scope`` style lists are given as space-separated strings)."""
    now = time.time() if now is None else now
    claims: dict[str, Any] = {}
    for key, value in options.items():
        if key.startswith("unsecuredLoginStringClaim_"):
            claims[key[len("unsecuredLoginStringClaim_"):]] = value
        elif key.startswith("unsecuredLoginNumberClaim_"):
            claims[key[len("unsecuredLoginNumberClaim_"):]] = float(value) if "." in value else int(value)
        elif key.startswith("unsecuredLoginListClaim_"):
            claims[key[len("unsecuredLoginListClaim_"):]] = value.split()
    principal_claim = options.get("unsecuredLoginPrincipalClaimName", "sub")
    if not claims.get(principal_claim):
        raise ConfigurationError(f"sasl.jaas.config: the unsecured token needs "
                                 f"unsecuredLoginStringClaim_{principal_claim}")
    lifetime = int(options.get("unsecuredLoginLifetimeSeconds", "3600"))
    claims.setdefault("iat", int(now))
    claims.setdefault("exp", int(now) + lifetime)
    header = _b64url(json.dumps({"alg": "none"}, separators=(",", ":")).encode())
    payload = _b64url(json.dumps(claims, separators=(",", ":")).encode())
    return f"{header}.{payload}."


def _call_provider(provider: Any) -> str:
    got = provider.token() if hasattr(provider, "token") and callable(provider.token) else provider()
    if isinstance(got, tuple):
        got = got[0]
    if not isinstance(got, str) or not got:
        raise SaslAuthenticationError(
            f"sasl.oauth.token.provider returned {type(got).__name__}, not a token string")
    return got


class OAuthBearerMechanism:
    name = "OAUTHBEARER"

    def __init__(self, token: Callable[[], str], extensions: Mapping[str, str]) -> None:
        self._token = token
        self._extensions = dict(extensions)
        self._sent = False
        self._refused: str | None = None
        self._done = False

    def __repr__(self) -> str:
        return f"OAuthBearerMechanism(extensions={sorted(self._extensions)})"

    def start(self, host: str) -> bytes:
        token = self._token()
        ext = b"".join(f"{k}={v}".encode() + _KVSEP for k, v in sorted(self._extensions.items()))
        self._sent = True
        return b"n,," + _KVSEP + b"auth=Bearer " + token.encode() + _KVSEP + ext + _KVSEP

    def step(self, challenge: bytes) -> bytes | None:
        if self._done or self._refused is not None:
            return None
        if challenge:
            # RFC 7628 3.2.2: an error; answer %x01 and the broker ends it with its refusal
            try:
                status = json.loads(challenge).get("status", "invalid_token")
            except (ValueError, AttributeError):
                status = "invalid_token"
            self._refused = str(status)
            return _KVSEP
        self._done = self._sent
        return None

    def complete(self) -> bool:
        return self._done


def _assertion(o: Mapping[str, Any]) -> AssertionMaker:
    return AssertionMaker(AssertionSettings(
        algorithm=o["sasl.oauthbearer.assertion.algorithm"],
        private_key_file=o["sasl.oauthbearer.assertion.private.key.file"],
        private_key_passphrase=o["sasl.oauthbearer.assertion.private.key.passphrase"],
        template_file=o["sasl.oauthbearer.assertion.template.file"],
        assertion_file=o["sasl.oauthbearer.assertion.file"],
        aud=o["sasl.oauthbearer.assertion.claim.aud"],
        iss=o["sasl.oauthbearer.assertion.claim.iss"],
        sub=o["sasl.oauthbearer.assertion.claim.sub"],
        exp_seconds=o["sasl.oauthbearer.assertion.claim.exp.seconds"],
        nbf_seconds=o["sasl.oauthbearer.assertion.claim.nbf.seconds"],
        jti_include=o["sasl.oauthbearer.assertion.claim.jti.include"]))


def _endpoint_client(settings: SaslSettings, url: str) -> TokenEndpointClient:
    # the settings win over the JAAS options (Kafka 4.x keeps those for older configs)
    opts, o = settings.jaas_options, settings.oauthbearer
    client_id = o["sasl.oauthbearer.client.credentials.client.id"] or opts.get("clientId")
    secret = o["sasl.oauthbearer.client.credentials.client.secret"] or opts.get("clientSecret")
    jwt_bearer = o["sasl.oauthbearer.jwt.retriever.class"].endswith("JwtBearerJwtRetriever")
    if jwt_bearer:
        client_id, secret = client_id or "", secret or ""
    elif not client_id or not secret:
        raise ConfigurationError(
            f"sasl.oauthbearer.token.endpoint.url {url} needs a client id and secret: "
            "sasl.oauthbearer.client.credentials.client.id and "
            "sasl.oauthbearer.client.credentials.client.secret, or clientId and clientSecret "
            "in an OAuthBearerLoginModule sasl.jaas.config")
    connect_ms, read_ms = o["sasl.login.connect.timeout.ms"], o["sasl.login.read.timeout.ms"]
    return TokenEndpointClient(TokenEndpointSettings(
        url=url, client_id=client_id, client_secret=secret,
        scope=o["sasl.oauthbearer.scope"] or opts.get("scope"),
        urlencode=o["sasl.oauthbearer.header.urlencode"],
        connect_timeout_ms=DEFAULT_TIMEOUT_MS if connect_ms is None else connect_ms,
        read_timeout_ms=DEFAULT_TIMEOUT_MS if read_ms is None else read_ms,
        retry_backoff_ms=o["sasl.login.retry.backoff.ms"],
        retry_backoff_max_ms=o["sasl.login.retry.backoff.max.ms"],
        sub_claim=o["sasl.oauthbearer.sub.claim.name"],
        scope_claim=o["sasl.oauthbearer.scope.claim.name"],
        assertion=_assertion(o) if jwt_bearer else None), SaslAuthenticationError)


def create(settings: SaslSettings) -> OAuthBearerMechanism:
    opts = settings.jaas_options
    extensions = {k[len("extension_"):]: v for k, v in opts.items() if k.startswith("extension_")}
    url = settings.oauthbearer["sasl.oauthbearer.token.endpoint.url"]
    provider = settings.token_provider
    if provider is not None:
        return OAuthBearerMechanism(lambda: _call_provider(provider), extensions)
    if url and url.lower().startswith("file:"):
        o = settings.oauthbearer
        return OAuthBearerMechanism(lambda: read_token_file(
            url, o["sasl.oauthbearer.sub.claim.name"], o["sasl.oauthbearer.scope.claim.name"],
            error=SaslAuthenticationError), extensions)
    if url:
        return OAuthBearerMechanism(_endpoint_client(settings, url).token, extensions)
    if settings.oauthbearer["sasl.login.callback.handler.class"]:
        # the handler named is the token-endpoint client, never the unsecured token: Java's
        # fails without the endpoint's URL too
        raise ConfigurationError(
            "sasl.login.callback.handler.class=OAuthBearerLoginCallbackHandler needs "
            "sasl.oauthbearer.token.endpoint.url (the OAuth token endpoint)")
    if any(k.startswith("unsecuredLogin") for k in opts):
        return OAuthBearerMechanism(lambda: unsecured_jwt(opts), extensions)
    raise ConfigurationError(
        "sasl.mechanism=OAUTHBEARER needs a token: sasl.oauth.token.provider, "
        "sasl.oauthbearer.token.endpoint.url with clientId/clientSecret in sasl.jaas.config, "
        "or an unsecured token (unsecuredLoginStringClaim_sub in sasl.jaas.config)")


__all__ = ["OAuthBearerMechanism", "create", "unsecured_jwt"]
