"""SASL OAUTHBEARER (RFC 7628, KIP-255): one client message carrying a bearer token.

Where the token comes from, first match wins:

* ``sasl.oauth.token.provider``: a callable returning the token (a str, or a ``(token,
  lifetime_ms)`` pair), or an object with a ``token()`` method (kafka-python's
  AbstractTokenProvider); called for each authentication, so it decides about caching;
* ``sasl.oauthbearer.token.endpoint.url``: an OAuth 2 client-credentials grant (KIP-768) with
  ``clientId``, ``clientSecret`` and optionally ``scope`` from an OAuthBearerLoginModule
  ``sasl.jaas.config``; the token is cached until 80 % of its lifetime has passed;
* an OAuthBearerLoginModule line with ``unsecuredLoginStringClaim_sub``: Java's unsecured
  JWT (``alg: none``) for tests and development, never for production.

SASL extensions come from ``extension_<name>`` JAAS options (Java's). A broker refusing the
token answers with a JSON error; the client then sends the ``%x01`` that ends the exchange
and the broker's refusal is raised as SaslAuthenticationError with its status.
"""
from __future__ import annotations

import base64
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from pyconsumer.errors import ConfigurationError, SaslAuthenticationError
from pyconsumer.net.sasl import SaslSettings

_KVSEP = b"\x01"
_OIDC_TIMEOUT_S = 10.0


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


class _OidcClient:
    """client_credentials against a token endpoint; one cached token per process and client."""

    _cache: dict[tuple[str, str, str], tuple[str, float]] = {}
    _lock = threading.Lock()

    def __init__(self, url: str, client_id: str, client_secret: str, scope: str | None) -> None:
        self.url, self.client_id, self._secret, self.scope = url, client_id, client_secret, scope

    def __repr__(self) -> str:
        return f"_OidcClient(url={self.url!r}, client_id={self.client_id!r})"

    def token(self) -> str:
        key = (self.url, self.client_id, self.scope or "")
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and time.monotonic() < cached[1]:
            return cached[0]
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        basic = base64.b64encode(f"{urllib.parse.quote(self.client_id)}:"
                                 f"{urllib.parse.quote(self._secret)}".encode()).decode()
        request = urllib.request.Request(
            self.url, data=urllib.parse.urlencode(form).encode(), method="POST",
            headers={"Authorization": f"Basic {basic}", "Accept": "application/json",
                     "Content-Type": "application/x-www-form-urlencoded"})
        where = f"the OAuth token endpoint {self.url} (client {self.client_id})"
        try:
            with urllib.request.urlopen(request, timeout=_OIDC_TIMEOUT_S) as answer:
                body = json.loads(answer.read())
        except urllib.error.HTTPError as e:
            raise SaslAuthenticationError(f"{where} refused the client credentials: HTTP "
                                          f"{e.code} {e.reason}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise SaslAuthenticationError(f"cannot get a token from {where}: {e}") from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise SaslAuthenticationError(f"{where} answered without an access_token")
        lifetime = float(body.get("expires_in", 300))
        with self._lock:
            self._cache[key] = (token, time.monotonic() + 0.8 * lifetime)
        return token


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


def create(settings: SaslSettings) -> OAuthBearerMechanism:
    opts = settings.jaas_options
    extensions = {k[len("extension_"):]: v for k, v in opts.items() if k.startswith("extension_")}
    url = settings.oauthbearer["sasl.oauthbearer.token.endpoint.url"]
    provider = settings.token_provider
    if provider is not None:
        return OAuthBearerMechanism(lambda: _call_provider(provider), extensions)
    if url:
        client_id, secret = opts.get("clientId"), opts.get("clientSecret")
        if not client_id or not secret:
            raise ConfigurationError(
                "sasl.oauthbearer.token.endpoint.url needs clientId and clientSecret in an "
                "OAuthBearerLoginModule sasl.jaas.config")
        return OAuthBearerMechanism(_OidcClient(url, client_id, secret, opts.get("scope")).token,
                                    extensions)
    if any(k.startswith("unsecuredLogin") for k in opts):
        return OAuthBearerMechanism(lambda: unsecured_jwt(opts), extensions)
    raise ConfigurationError(
        "sasl.mechanism=OAUTHBEARER needs a token: sasl.oauth.token.provider, "
        "sasl.oauthbearer.token.endpoint.url with clientId/clientSecret in sasl.jaas.config, "
        "or an unsecured token (unsecuredLoginStringClaim_sub in sasl.jaas.config)")


__all__ = ["OAuthBearerMechanism", "create", "unsecured_jwt"]
