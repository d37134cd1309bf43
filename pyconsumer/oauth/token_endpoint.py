"""The OAuth 2 client-credentials grant (RFC 6749 4.4; Kafka's KIP-768) against a token
endpoint, as Java's Kafka login does it: separate connect and read timeouts, and retries of
connection errors, timeouts and HTTP 5xx with a wait that starts at the retry backoff and
doubles, until the maximum backoff has passed since the first attempt (a 4xx is the
endpoint's answer, never retried). Tokens are cached per process until 80 % of their
lifetime has passed. Errors name the endpoint, the client id and the settings (by the
caller's names), never the secret.
"""
from __future__ import annotations

import base64
import dataclasses
import http.client
import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from pyconsumer.errors import AuthenticationError, ConfigurationError
from pyconsumer.oauth.jwt_claims import ClaimNames, read_claims

#: used when sasl.login.connect/read.timeout.ms is unset (Java then waits without limit)
DEFAULT_TIMEOUT_MS = 10_000
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class _Retryable(Exception):
    """A failed attempt worth another one (connection error, timeout, HTTP 5xx)."""


@dataclasses.dataclass(frozen=True)
class SettingNames:
    """How the caller's users spell each setting, for the errors (Kafka's by default)."""

    url: str = "sasl.oauthbearer.token.endpoint.url"
    credentials: str = ("sasl.oauthbearer.client.credentials.client.id/secret or "
                        "clientId/clientSecret in sasl.jaas.config")
    connect_timeout: str = "sasl.login.connect.timeout.ms"
    read_timeout: str = "sasl.login.read.timeout.ms"
    retry_backoff_max: str = "sasl.login.retry.backoff.max.ms"
    claims: ClaimNames = ClaimNames()


@dataclasses.dataclass(frozen=True)
class TokenEndpointSettings:
    url: str
    client_id: str
    client_secret: str = dataclasses.field(repr=False)
    scope: str | None = None
    urlencode: bool = False
    connect_timeout_ms: int = DEFAULT_TIMEOUT_MS
    read_timeout_ms: int = DEFAULT_TIMEOUT_MS
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 10_000
    sub_claim: str = "sub"
    scope_claim: str = "scope"
    names: SettingNames = SettingNames()
    #: the JWT-bearer grant (RFC 7523) instead of client credentials: gives the assertion
    assertion: Callable[[], str] | None = dataclasses.field(default=None, repr=False)


class TokenEndpointClient:
    """Tokens of one client from one endpoint; the cache is shared by all instances."""

    #: (url, client id or "" for the JWT-bearer grant, scope, subject claim, scope claim)
    _cache: dict[tuple[str, ...], tuple[str, float]] = {}
    _lock = threading.Lock()

    def __init__(self, settings: TokenEndpointSettings,
                 error: type[AuthenticationError] = AuthenticationError) -> None:
        parts = urllib.parse.urlsplit(settings.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(
                f"{settings.names.url} {settings.url!r} is not an http(s) URL")
        self._settings = settings
        self._error = error
        self._parts = parts
        who = "JWT-bearer grant" if settings.assertion else f"client {settings.client_id}"
        self._where = f"the OAuth token endpoint {settings.url} ({who})"

    def __repr__(self) -> str:
        s = self._settings
        return f"TokenEndpointClient(url={s.url!r}, client_id={s.client_id!r})"

    def token(self) -> str:
        s = self._settings
        # the claim names are in the key: a token is cached only as checked under them
        key = (s.url, "" if s.assertion else s.client_id, s.scope or "", s.sub_claim,
               s.scope_claim)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and time.monotonic() < cached[1]:
            return cached[0]
        body = self._with_retries()
        token = body.get("access_token")
        if not isinstance(token, str) or not token:
            raise self._error(f"{self._where} answered without an access_token")
        claims = read_claims(token, self._where, s.sub_claim, s.scope_claim, s.names.claims,
                             self._error)
        expires_in = body.get("expires_in")
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
            lifetime = float(expires_in)
        else:
            lifetime = claims.expires_at - time.time()
        with self._lock:
            self._cache[key] = (token, time.monotonic() + 0.8 * max(lifetime, 0.0))
        return token

    def _with_retries(self) -> dict[str, Any]:
        s = self._settings
        started = time.monotonic()
        end = started + s.retry_backoff_max_ms / 1000
        attempts = 0
        while True:
            attempts += 1
            try:
                return self._attempt()
            except _Retryable as e:
                last = str(e)
            remaining = end - time.monotonic()
            wait = min(s.retry_backoff_ms / 1000 * 2 ** (attempts - 1), remaining)
            if wait <= 0:
                break
            time.sleep(wait)
        spent = round((time.monotonic() - started) * 1000)
        raise self._error(
            f"cannot get a token from {self._where}: {attempts} attempt(s) in {spent} ms "
            f"({s.names.retry_backoff_max}={s.retry_backoff_max_ms}), the last: {last}")

    def _request(self) -> tuple[bytes, dict[str, str]]:
        s = self._settings
        headers = {"Accept": "application/json",
                   "Content-Type": "application/x-www-form-urlencoded"}
        if s.assertion is not None:
            try:
                assertion = s.assertion()
            except ConfigurationError as e:
                raise self._error(f"cannot make the assertion for {self._where}: {e}") from None
            form = {"grant_type": JWT_BEARER_GRANT, "assertion": assertion}
            if s.scope:
                form["scope"] = s.scope
            return urllib.parse.urlencode(form).encode(), headers
        form = {"grant_type": "client_credentials"}
        if s.scope:
            form["scope"] = s.scope
        cid, secret = s.client_id, s.client_secret
        if s.urlencode:
            cid, secret = urllib.parse.quote(cid, safe=""), urllib.parse.quote(secret, safe="")
        basic = base64.b64encode(f"{cid}:{secret}".encode()).decode()
        return urllib.parse.urlencode(form).encode(), {**headers, "Authorization": f"Basic {basic}"}

    def _attempt(self) -> dict[str, Any]:
        s, parts = self._settings, self._parts
        data, headers = self._request()
        connection: http.client.HTTPConnection
        timeout = s.connect_timeout_ms / 1000
        if parts.scheme == "https":
            connection = http.client.HTTPSConnection(
                parts.hostname or "", parts.port, timeout=timeout,
                context=ssl.create_default_context())
        else:
            connection = http.client.HTTPConnection(parts.hostname or "", parts.port,
                                                    timeout=timeout)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        try:
            try:
                connection.connect()
            except TimeoutError:
                raise _Retryable(f"no connection within {s.connect_timeout_ms} ms "
                                 f"({s.names.connect_timeout})") from None
            except OSError as e:
                raise _Retryable(f"cannot connect: {e.strerror or e}") from None
            assert connection.sock is not None
            connection.sock.settimeout(s.read_timeout_ms / 1000)
            try:
                connection.request("POST", path, body=data, headers=headers)
                answer = connection.getresponse()
                payload = answer.read()
            except TimeoutError:
                raise _Retryable(f"no answer within {s.read_timeout_ms} ms "
                                 f"({s.names.read_timeout})") from None
            except (OSError, http.client.HTTPException) as e:
                raise _Retryable(f"the connection failed: {e.__class__.__name__}") from None
        finally:
            connection.close()
        if 500 <= answer.status < 600:
            raise _Retryable(f"HTTP {answer.status} {answer.reason}")
        if 400 <= answer.status < 500:
            what, check = (("the assertion", "the sasl.oauthbearer.assertion.* settings")
                           if s.assertion else ("the client credentials", s.names.credentials))
            raise self._error(f"{self._where} refused {what}: HTTP {answer.status} "
                              f"{answer.reason} (check {check})")
        if answer.status != 200:
            raise self._error(f"{self._where} answered HTTP {answer.status} "
                                          f"{answer.reason}, not 200")
        try:
            body = json.loads(payload)
        except ValueError:
            raise self._error(f"{self._where} answered with no JSON object") from None
        if not isinstance(body, dict):
            raise self._error(f"{self._where} answered with no JSON object")
        return body


__all__ = ["DEFAULT_TIMEOUT_MS", "JWT_BEARER_GRANT", "SettingNames", "TokenEndpointClient", "TokenEndpointSettings"]
