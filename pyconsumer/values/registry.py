"""A Confluent Schema Registry client: writer schemas by id or GUID, subject versions, references.

Stdlib only (urllib, ssl), so the decode threads can call it without an extra package. Schemas are
immutable once registered, so what is fetched by id, by GUID or by a numbered subject version is
cached for the life of the process; ``latest`` is asked every time (it moves). An outage is an
error after retries, never ``None``: a decoder must not turn a registry that is down into null rows.
"""
from __future__ import annotations

import base64
import enum
import os
import http.client
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
import ssl
from ssl import SSLContext
from typing import Any

from pyconsumer.errors import AuthenticationError, ConfigurationError, KafkaClientError
from pyconsumer.oauth.jwt_claims import ClaimNames
from pyconsumer.oauth.token_endpoint import SettingNames, TokenEndpointClient, TokenEndpointSettings

__all__ = [
    "CONTENT_TYPE",
    "RegisteredSchema",
    "SchemaReference",
    "SchemaNotFoundError",
    "SchemaRegistryAuthenticationError",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "SchemaRegistryUnavailableError",
    "SubjectNameStrategy",
    "shared_client",
    "subject_name",
]

#: the media type a Confluent registry speaks (requests and answers)
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_ACCEPT = f"{CONTENT_TYPE}, application/vnd.schemaregistry+json; qs=0.9, application/json; qs=0.5"

# Confluent's error code for a 404 that means the subject, not the version, is missing
_SUBJECT_NOT_FOUND = 40401

#: how deep references may nest before we call it a cycle
_MAX_REFERENCE_DEPTH = 32


class SchemaRegistryError(KafkaClientError):
    """The Schema Registry refused or failed a request. ``url`` is the registry that answered
    (or the last one tried); ``status`` the HTTP status when there was one."""

    def __init__(self, message: str, *, url: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class SchemaNotFoundError(SchemaRegistryError):
    """A 404: the id, GUID, subject or version is not in the registry (not retried)."""


class SchemaRegistryAuthenticationError(SchemaRegistryError, AuthenticationError):
    """A 401 or 403: the registry refused the credentials (not retried)."""


class SchemaRegistryUnavailableError(SchemaRegistryError):
    """Every URL failed with a 5xx, a refused connection or a timeout on every attempt."""

    retriable = True

    def __init__(self, message: str, *, url: str, attempts: int, cause: BaseException | str) -> None:
        super().__init__(message, url=url)
        self.attempts = attempts
        self.cause = cause


@dataclass(frozen=True)
class SchemaReference:
    """A named reference of a schema to a subject's version, with that version resolved.

    ``name`` is how the referring schema names it (an Avro full name, a .proto import path, a
    JSON Schema ``$ref``); ``schema`` is the referenced version, its own references resolved too.
    """

    name: str
    subject: str
    version: int
    schema: RegisteredSchema


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry serves it.

    ``schema_type`` is ``AVRO`` (the registry omits it for Avro), ``JSON`` or ``PROTOBUF``.
    ``id``/``guid``/``subject``/``version`` are what the answer carried (a lookup by id has no
    subject; an older registry has no GUID).
    """

    id: int | None
    schema_type: str
    schema_text: str
    references: tuple[SchemaReference, ...] = ()
    guid: str | None = None
    subject: str | None = None
    version: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def dependencies(self) -> list[SchemaReference]:
        """Every schema this one references, transitively, each once, a dependency before what
        uses it (the order an Avro parser must see named types in)."""
        seen: set[tuple[str, int]] = set()
        ordered: list[SchemaReference] = []

        def visit(schema: RegisteredSchema) -> None:
            for ref in schema.references:
                key = (ref.subject, ref.version)
                if key in seen:
                    continue
                seen.add(key)
                visit(ref.schema)
                ordered.append(ref)

        visit(self)
        return ordered


class SubjectNameStrategy(enum.Enum):
    """How a subject name is made from the topic and the record's full name."""

    TOPIC = "TopicNameStrategy"
    RECORD = "RecordNameStrategy"
    TOPIC_RECORD = "TopicRecordNameStrategy"


# Every spelling a Confluent user may bring: the Java class (simple and qualified, the
# serializer config value), and confluent-kafka-python's strategy function names.
_STRATEGY_NAMES: dict[str, SubjectNameStrategy] = {}
for _strategy, _python in ((SubjectNameStrategy.TOPIC, "topic_subject_name_strategy"),
                           (SubjectNameStrategy.RECORD, "record_subject_name_strategy"),
                           (SubjectNameStrategy.TOPIC_RECORD, "topic_record_subject_name_strategy")):
    _STRATEGY_NAMES[_strategy.value] = _strategy
    _STRATEGY_NAMES[f"io.confluent.kafka.serializers.subject.{_strategy.value}"] = _strategy
    _STRATEGY_NAMES[_python] = _strategy


def subject_name(strategy: SubjectNameStrategy | str | None, topic: str, is_key: bool,
                 record_name: str | None = None) -> str:
    """The subject of a topic's key or value under ``strategy`` (TopicNameStrategy when None).

    ``record_name`` is the record's full name (Avro ``namespace.name``); the record strategies
    need it. Raises ConfigurationError for an unknown strategy or a missing record name.
    """
    if strategy is None:
        chosen = SubjectNameStrategy.TOPIC
    elif isinstance(strategy, SubjectNameStrategy):
        chosen = strategy
    else:
        found = _STRATEGY_NAMES.get(strategy)
        if found is None:
            raise ConfigurationError(
                f"unknown subject name strategy {strategy!r}: one of TopicNameStrategy, "
                "RecordNameStrategy, TopicRecordNameStrategy")
        chosen = found
    if chosen is SubjectNameStrategy.TOPIC:
        return f"{topic}-{'key' if is_key else 'value'}"
    if not record_name:
        raise ConfigurationError(f"{chosen.value} needs the record's full name, and it has none")
    if chosen is SubjectNameStrategy.RECORD:
        return record_name
    return f"{topic}-{record_name}"


def _split_urls(url: str) -> list[tuple[str, str | None]]:
    """(base url without credentials, 'user:password' from the URL or None) per comma-separated URL."""
    out: list[tuple[str, str | None]] = []
    for raw in url.split(","):
        raw = raw.strip()
        if not raw:
            continue
        parts = urllib.parse.urlsplit(raw)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"a schema registry URL is http(s)://host[:port][/path], got {raw!r}")
        userinfo = None
        netloc = parts.netloc
        if "@" in netloc:
            creds, netloc = netloc.rsplit("@", 1)
            userinfo = urllib.parse.unquote(creds)
        base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
        out.append((base, userinfo))
    if not out:
        raise ConfigurationError("schema registry URL is empty")
    return out


def _canonical_guid(guid: str | uuid.UUID) -> str:
    try:
        return str(guid if isinstance(guid, uuid.UUID) else uuid.UUID(guid))
    except ValueError:
        raise ValueError(f"a schema GUID is a UUID, got {guid!r}") from None


class _Attempt(Exception):
    """One URL failed in a way worth trying elsewhere or again (5xx, refused, timeout)."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class SchemaRegistryClient:
    """A thread-safe client of one Schema Registry (several URLs: tried in turn).

    ``url``: ``http(s)://host:port[/path]``, comma-separated for several; credentials in a URL
    (``https://user:pw@host``) count as basic auth. ``basic_auth_user_info``: ``user:password``
    (confluent-kafka's ``basic.auth.user.info``); ``bearer_auth_token``: a static bearer token;
    ``bearer_auth_token_source``: a callable giving the bearer token for each request (an OAuth
    token endpoint's client, which caches); ``bearer_auth_headers``: headers sent with a bearer
    token (Confluent's ``target-sr-cluster`` and ``Confluent-Identity-Pool-Id``).
    ``timeout_s`` bounds each socket wait (connect, and each read of the answer). An answer that
    is a 5xx, a refused connection or a timeout moves on to the next URL; when all failed, the
    round is retried ``retries`` times after ``backoff_s`` doubling up to ``max_backoff_s``.
    A 404 or a 401/403 is final at once.
    """

    def __init__(self, url: str, *, basic_auth_user_info: str | None = None,
                 bearer_auth_token: str | None = None, ssl_context: SSLContext | None = None,
                 timeout_s: float = 10.0, retries: int = 3, backoff_s: float = 0.2,
                 max_backoff_s: float = 5.0, sleep: Callable[[float], None] = time.sleep,
                 bearer_auth_token_source: Callable[[], str] | None = None,
                 bearer_auth_headers: Mapping[str, str] | None = None) -> None:
        self._urls = _split_urls(url)
        if bearer_auth_token is not None and bearer_auth_token_source is not None:
            raise ConfigurationError("schema registry: a static bearer token and a bearer token "
                                     "source are exclusive")
        if basic_auth_user_info is not None and (bearer_auth_token is not None
                                                 or bearer_auth_token_source is not None):
            raise ConfigurationError("schema registry: basic auth and a bearer token are exclusive")
        if basic_auth_user_info is not None and ":" not in basic_auth_user_info:
            raise ConfigurationError("schema registry basic auth user info is 'user:password'")
        if timeout_s <= 0:
            raise ConfigurationError(f"schema registry timeout must be > 0 s, got {timeout_s}")
        if retries < 0 or backoff_s < 0 or max_backoff_s < 0:
            raise ConfigurationError("schema registry retries and backoff must be >= 0")
        self._basic = basic_auth_user_info
        self._bearer = bearer_auth_token
        self._bearer_source = bearer_auth_token_source
        self._bearer_headers = dict(bearer_auth_headers or {})
        self._timeout_s = timeout_s
        self._retries = retries
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._sleep = sleep
        handlers: list[urllib.request.BaseHandler] = []
        if ssl_context is not None:
            handlers.append(urllib.request.HTTPSHandler(context=ssl_context))
        # no ProxyHandler from the environment: a registry address is meant literally
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), *handlers)
        self._lock = threading.Lock()
        self._by_id: dict[int, RegisteredSchema] = {}
        self._by_guid: dict[str, RegisteredSchema] = {}
        self._by_version: dict[tuple[str, int], RegisteredSchema] = {}
        # one lock per key being fetched, so concurrent decode threads ask the registry once
        self._inflight: dict[object, threading.Lock] = {}
        self.requests_sent = 0

    @classmethod
    def from_config(cls, conf: Mapping[str, object]) -> SchemaRegistryClient:
        """A client from confluent-kafka's registry settings, each name bare or with the
        ``schema.registry.`` prefix the consumer settings use: ``url``, ``basic.auth.user.info``,
        ``basic.auth.credentials.source`` (USER_INFO or URL), ``bearer.auth.token``,
        ``bearer.auth.credentials.source`` (STATIC_TOKEN, or OAUTHBEARER: a client-credentials
        grant at ``bearer.auth.issuer.endpoint.url`` with ``bearer.auth.client.id``,
        ``bearer.auth.client.secret``, optionally ``bearer.auth.scope`` and the claim names
        ``bearer.auth.sub.claim.name``/``bearer.auth.scope.claim.name``, retried with the
        registry's waits), ``bearer.auth.logical.cluster`` and ``bearer.auth.identity.pool.id``
        (sent as Confluent's headers with the token), ``ssl.ca.location``,
        ``ssl.certificate.location``, ``ssl.key.location``, ``ssl.key.password``, ``timeout``
        (seconds), ``max.retries``, ``retries.wait.ms``, ``retries.max.wait.ms``.
        Raises ConfigurationError naming an unknown or ill-typed setting."""
        settings: dict[str, object] = {}
        for name, value in conf.items():
            bare = name.removeprefix("schema.registry.")
            if bare not in _CONFIG_NAMES:
                raise ConfigurationError(f"unknown schema registry setting {name!r}: one of "
                                         f"{', '.join(sorted(_CONFIG_NAMES))}")
            settings[bare] = value
        if "url" not in settings:
            raise ConfigurationError("schema registry setting 'url' is required")
        source = str(settings.get("basic.auth.credentials.source", "USER_INFO")).upper()
        if source not in ("USER_INFO", "URL"):
            raise ConfigurationError(f"basic.auth.credentials.source {source!r} is not supported "
                                     "(USER_INFO or URL)")
        bearer_source = str(settings.get("bearer.auth.credentials.source", "STATIC_TOKEN")).upper()
        if bearer_source not in ("STATIC_TOKEN", "OAUTHBEARER"):
            raise ConfigurationError(f"bearer.auth.credentials.source {bearer_source!r} is not supported "
                                     "(STATIC_TOKEN or OAUTHBEARER)")
        kwargs: dict[str, Any] = {}
        if "timeout" in settings:
            kwargs["timeout_s"] = _number(settings, "timeout")
        if "max.retries" in settings:
            kwargs["retries"] = int(_number(settings, "max.retries"))
        if "retries.wait.ms" in settings:
            kwargs["backoff_s"] = _number(settings, "retries.wait.ms") / 1000
        if "retries.max.wait.ms" in settings:
            kwargs["max_backoff_s"] = _number(settings, "retries.max.wait.ms") / 1000
        user_info = settings.get("basic.auth.user.info")
        bearer = settings.get("bearer.auth.token")
        if bearer_source == "OAUTHBEARER":
            if bearer is not None:
                raise ConfigurationError("bearer.auth.token is for bearer.auth.credentials.source "
                                         "STATIC_TOKEN, not OAUTHBEARER")
            kwargs["bearer_auth_token_source"] = _oauth_token_source(settings, kwargs)
        headers = {header: str(settings[name]) for name, header in _BEARER_HEADERS.items()
                   if settings.get(name) is not None}
        if headers and bearer is None and bearer_source != "OAUTHBEARER":
            raise ConfigurationError(f"{', '.join(n for n in _BEARER_HEADERS if n in settings)} "
                                     "go with a bearer token (bearer.auth.credentials.source)")
        return cls(str(settings["url"]),
                   basic_auth_user_info=None if user_info is None or source == "URL" else str(user_info),
                   bearer_auth_token=None if bearer is None else str(bearer),
                   ssl_context=_ssl_context(settings), bearer_auth_headers=headers, **kwargs)

    @property
    def urls(self) -> list[str]:
        """The base URLs, without credentials, in the order they are tried."""
        return [base for base, _ in self._urls]

    # ------------------------------------------------------------------ lookups

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        """The schema with this id (``GET /schemas/ids/{id}``), references resolved."""
        if isinstance(schema_id, bool) or not isinstance(schema_id, int) or schema_id < 0:
            raise ValueError(f"a schema id is an int >= 0, got {schema_id!r}")
        return self._cached(("id", schema_id), self._by_id, schema_id,
                            lambda: self._fetch_schema(f"/schemas/ids/{schema_id}",
                                                       f"unknown schema id {schema_id}", schema_id=schema_id))

    def schema_by_guid(self, guid: str | uuid.UUID) -> RegisteredSchema:
        """The schema with this GUID (``GET /schemas/guids/{guid}``), references resolved."""
        key = _canonical_guid(guid)
        return self._cached(("guid", key), self._by_guid, key,
                            lambda: self._fetch_schema(f"/schemas/guids/{key}",
                                                       f"unknown schema guid {key}", guid=key))

    def latest(self, subject: str) -> RegisteredSchema:
        """The subject's latest version, asked every call (it changes); cached by its version."""
        schema = self._fetch_version(subject, "latest")
        with self._lock:
            self._remember(schema)
        return schema

    def version(self, subject: str, version: int) -> RegisteredSchema:
        """A numbered version of a subject (``GET /subjects/{s}/versions/{v}``), cached."""
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"a subject version is an int >= 1 (or use latest()), got {version!r}")
        return self._cached(("version", subject, version), self._by_version, (subject, version),
                            lambda: self._fetch_version(subject, str(version)))

    def subjects(self) -> list[str]:
        """Every subject the registry holds (``GET /subjects``)."""
        answer = self._request("GET", "/subjects", not_found="no subjects")
        if not isinstance(answer, list) or not all(isinstance(s, str) for s in answer):
            raise SchemaRegistryError(f"GET /subjects answered {answer!r}, not a list of subjects",
                                      url=self.urls[0])
        return list(answer)

    def register(self, subject: str, schema_text: str, schema_type: str = "AVRO",
                 references: tuple[tuple[str, str, int], ...] = ()) -> int:
        """Register a schema under ``subject`` (``POST /subjects/{s}/versions``): its id.

        ``references`` are (name, subject, version). For tests and tools; decoders only read.
        """
        body: dict[str, Any] = {"schema": schema_text}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        if references:
            body["references"] = [{"name": n, "subject": s, "version": v} for n, s, v in references]
        answer = self._request("POST", f"/subjects/{_quote(subject)}/versions", body=body,
                               not_found=f"cannot register under subject {subject!r}")
        if not isinstance(answer, dict) or not isinstance(answer.get("id"), int):
            raise SchemaRegistryError(f"register answered {answer!r} without an id", url=self.urls[0])
        return int(answer["id"])

    def clear_cache(self) -> None:
        """Forget every cached schema (the next lookups ask the registry)."""
        with self._lock:
            self._by_id.clear()
            self._by_guid.clear()
            self._by_version.clear()

    # ------------------------------------------------------------------ cache

    def _cached(self, key: object, table: dict[Any, RegisteredSchema], table_key: Any,
                fetch: Callable[[], RegisteredSchema]) -> RegisteredSchema:
        with self._lock:
            hit = table.get(table_key)
            if hit is not None:
                return hit
            gate = self._inflight.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                hit = table.get(table_key)
                if hit is not None:
                    return hit
            try:
                schema = fetch()
            finally:
                with self._lock:
                    self._inflight.pop(key, None)
            with self._lock:
                table[table_key] = schema
                self._remember(schema)
            return schema

    def _remember(self, schema: RegisteredSchema) -> None:
        """Cache ``schema`` under its id and GUID too (the caller holds the lock)."""
        if schema.id is not None:
            self._by_id.setdefault(schema.id, schema)
        if schema.guid is not None:
            self._by_guid.setdefault(schema.guid, schema)
        if schema.subject is not None and schema.version is not None:
            self._by_version.setdefault((schema.subject, schema.version), schema)

    # ------------------------------------------------------------------ answers to schemas

    def _fetch_schema(self, path: str, what: str, *, schema_id: int | None = None,
                      guid: str | None = None) -> RegisteredSchema:
        answer = self._request("GET", path, not_found=what)
        return self._parse(answer, path, schema_id=schema_id, guid=guid, depth=0)

    def _fetch_version(self, subject: str, version: str, depth: int = 0) -> RegisteredSchema:
        path = f"/subjects/{_quote(subject)}/versions/{version}"
        answer = self._request("GET", path, not_found=f"unknown version {version} of subject {subject!r}",
                               subject=subject)
        return self._parse(answer, path, depth=depth)

    def _parse(self, answer: Any, path: str, *, schema_id: int | None = None, guid: str | None = None,
               depth: int) -> RegisteredSchema:
        if not isinstance(answer, dict) or not isinstance(answer.get("schema"), str):
            raise SchemaRegistryError(f"GET {path} answered {str(answer)[:200]!r}, with no schema text",
                                      url=self.urls[0])
        refs_raw = answer.get("references") or []
        if not isinstance(refs_raw, list):
            raise SchemaRegistryError(f"GET {path}: references is not a list", url=self.urls[0])
        references = tuple(self._resolve(ref, path, depth) for ref in refs_raw)
        answered_id = answer.get("id")
        answered_guid = answer.get("guid")
        version = answer.get("version")
        return RegisteredSchema(
            id=answered_id if isinstance(answered_id, int) else schema_id,
            schema_type=str(answer.get("schemaType") or "AVRO"),
            schema_text=answer["schema"],
            references=references,
            guid=_canonical_guid(answered_guid) if isinstance(answered_guid, str) else guid,
            subject=answer.get("subject") if isinstance(answer.get("subject"), str) else None,
            version=version if isinstance(version, int) else None,
            extra={k: v for k, v in answer.items()
                   if k not in ("schema", "schemaType", "references", "id", "guid", "subject", "version")},
        )

    def _resolve(self, ref: Any, path: str, depth: int) -> SchemaReference:
        if (not isinstance(ref, dict) or not isinstance(ref.get("name"), str)
                or not isinstance(ref.get("subject"), str) or not isinstance(ref.get("version"), int)):
            raise SchemaRegistryError(f"GET {path}: a reference is not {{name, subject, version}}: {ref!r}",
                                      url=self.urls[0])
        if depth >= _MAX_REFERENCE_DEPTH:
            raise SchemaRegistryError(
                f"schema references nest deeper than {_MAX_REFERENCE_DEPTH} at {ref['subject']!r} "
                f"version {ref['version']} (a reference cycle?)", url=self.urls[0])
        key = (ref["subject"], ref["version"])
        with self._lock:
            schema = self._by_version.get(key)
        if schema is None:
            schema = self._fetch_version(ref["subject"], str(ref["version"]), depth + 1)
            with self._lock:
                self._by_version.setdefault(key, schema)
                self._remember(schema)
        return SchemaReference(ref["name"], ref["subject"], ref["version"], schema)

    # ------------------------------------------------------------------ HTTP

    def _request(self, method: str, path: str, *, not_found: str, body: Any = None,
                 subject: str | None = None) -> Any:
        """The decoded JSON answer of the first URL that answers; errors as the class says."""
        data = None if body is None else json.dumps(body).encode()
        last_url, last_cause = self.urls[0], "no attempt"
        attempts = 0
        for round_no in range(self._retries + 1):
            if round_no:
                self._sleep(min(self._max_backoff_s, self._backoff_s * 2 ** (round_no - 1)))
            for base, userinfo in self._urls:
                attempts += 1
                last_url = base
                try:
                    return self._once(method, base, userinfo, path, data, not_found, subject)
                except _Attempt as failed:
                    last_cause = failed.cause
        raise SchemaRegistryUnavailableError(
            f"schema registry at {', '.join(self.urls)} did not answer {method} {path} after "
            f"{attempts} attempts (last at {last_url}: {last_cause})",
            url=last_url, attempts=attempts, cause=last_cause)

    def _headers(self, userinfo: str | None, has_body: bool) -> dict[str, str]:
        headers = {"Accept": _ACCEPT}
        if has_body:
            headers["Content-Type"] = CONTENT_TYPE
        basic = self._basic if self._basic is not None else userinfo
        if basic is not None:
            headers["Authorization"] = "Basic " + base64.b64encode(basic.encode()).decode("ascii")
        elif self._bearer is not None or self._bearer_source is not None:
            token = self._bearer if self._bearer_source is None else self._bearer_source()
            headers["Authorization"] = f"Bearer {token}"
            headers.update(self._bearer_headers)
        return headers

    def _once(self, method: str, base: str, userinfo: str | None, path: str, data: bytes | None,
              not_found: str, subject: str | None) -> Any:
        request = urllib.request.Request(base + path, data=data, method=method,
                                         headers=self._headers(userinfo, data is not None))
        with self._lock:
            self.requests_sent += 1
        try:
            with self._opener.open(request, timeout=self._timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as answer:
            status = answer.code
            detail = _error_body(answer)
            if status >= 500:
                raise _Attempt(f"HTTP {status} {detail}".rstrip()) from None
            if status in (401, 403):
                raise SchemaRegistryAuthenticationError(
                    f"schema registry at {base} refused the credentials (HTTP {status}"
                    f"{': ' + detail if detail else ''}); set basic auth user info or a bearer token",
                    url=base, status=status) from None
            if status == 404:
                raise SchemaNotFoundError(_not_found_message(not_found, subject, detail, base),
                                          url=base, status=status) from None
            raise SchemaRegistryError(f"schema registry at {base} answered {method} {path} with HTTP "
                                      f"{status}: {detail}", url=base, status=status) from None
        except (urllib.error.URLError, OSError) as failed:
            reason = failed.reason if isinstance(failed, urllib.error.URLError) else failed
            if isinstance(reason, ssl.SSLCertVerificationError):
                # a certificate we do not trust will not become trusted by retrying
                raise SchemaRegistryError(f"schema registry at {base}: TLS certificate not trusted "
                                          f"({reason.verify_message or reason})", url=base) from None
            if isinstance(reason, TimeoutError):
                raise _Attempt(f"no answer within {self._timeout_s:g} s") from None
            raise _Attempt(str(reason) or type(reason).__name__) from None
        except (http.client.HTTPException, ValueError) as bad:   # a malformed or cut answer
            raise _Attempt(f"malformed HTTP answer: {bad}") from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise SchemaRegistryError(f"schema registry at {base} answered {method} {path} with "
                                      f"non-JSON {raw[:100]!r}", url=base) from None


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _error_body(answer: urllib.error.HTTPError) -> str:
    """The registry's own message (``{"error_code", "message"}``), else the start of the body."""
    try:
        raw = answer.read(2000)
    except OSError:
        return ""
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace").strip()[:200]
    if isinstance(parsed, dict) and "message" in parsed:
        code = parsed.get("error_code")
        return f"{parsed['message']}" + (f" (error {code})" if code is not None else "")
    return str(parsed)[:200]


def _not_found_message(what: str, subject: str | None, detail: str, base: str) -> str:
    # a version lookup's 404 may mean the subject itself is missing: say which
    if subject is not None and f"error {_SUBJECT_NOT_FOUND})" in detail:
        return f"unknown subject {subject!r} at {base}"
    return f"{what} at {base}"



_OAUTH_NAMES = ("bearer.auth.issuer.endpoint.url", "bearer.auth.client.id",
                "bearer.auth.client.secret", "bearer.auth.scope", "bearer.auth.scope.claim.name",
                "bearer.auth.sub.claim.name")
#: setting -> the header Confluent's registries read it from, sent with the bearer token
_BEARER_HEADERS = {"bearer.auth.logical.cluster": "target-sr-cluster",
                   "bearer.auth.identity.pool.id": "Confluent-Identity-Pool-Id"}
_CONFIG_NAMES = frozenset({
    "url", "basic.auth.user.info", "basic.auth.credentials.source", "bearer.auth.token",
    "bearer.auth.credentials.source", "ssl.ca.location", "ssl.certificate.location",
    "ssl.key.location", "ssl.key.password", "timeout", "max.retries", "retries.wait.ms",
    "retries.max.wait.ms", *_OAUTH_NAMES, *_BEARER_HEADERS,
})
_OAUTH_SETTING_NAMES = SettingNames(
    url="bearer.auth.issuer.endpoint.url",
    credentials="bearer.auth.client.id and bearer.auth.client.secret",
    connect_timeout="timeout", read_timeout="timeout", retry_backoff_max="retries.max.wait.ms",
    claims=ClaimNames(sub="bearer.auth.sub.claim.name", scope="bearer.auth.scope.claim.name"))


def _oauth_token_source(settings: Mapping[str, object], kwargs: Mapping[str, Any]
                        ) -> Callable[[], str]:
    """bearer.auth.credentials.source=OAUTHBEARER: a client-credentials grant at the issuer
    endpoint, with the registry client's timeout and retry waits."""
    missing = [n for n in _OAUTH_NAMES[:3] if not settings.get(n)]
    if missing:
        raise ConfigurationError("bearer.auth.credentials.source OAUTHBEARER needs "
                                 f"{', '.join(missing)}")
    scope = settings.get("bearer.auth.scope")
    timeout_ms = round(kwargs.get("timeout_s", 10.0) * 1000)
    client = TokenEndpointClient(TokenEndpointSettings(
        url=str(settings["bearer.auth.issuer.endpoint.url"]),
        client_id=str(settings["bearer.auth.client.id"]),
        client_secret=str(settings["bearer.auth.client.secret"]),
        scope=None if scope is None else str(scope), urlencode=False,
        connect_timeout_ms=timeout_ms, read_timeout_ms=timeout_ms,
        retry_backoff_ms=round(kwargs.get("backoff_s", 0.2) * 1000),
        retry_backoff_max_ms=round(kwargs.get("max_backoff_s", 5.0) * 1000),
        sub_claim=str(settings.get("bearer.auth.sub.claim.name", "sub")),
        scope_claim=str(settings.get("bearer.auth.scope.claim.name", "scope")),
        names=_OAUTH_SETTING_NAMES), SchemaRegistryAuthenticationError)
    return client.token


def _number(settings: Mapping[str, object], name: str) -> float:
    value = settings[name]
    try:
        if isinstance(value, bool):
            raise TypeError
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigurationError(f"schema registry setting {name!r} is a number, got {value!r}") from None
    if number < 0:
        raise ConfigurationError(f"schema registry setting {name!r} must be >= 0, got {value!r}")
    return number


def _ssl_context(settings: Mapping[str, object]) -> SSLContext | None:
    """An SSLContext from the ssl.* settings, or None when there are none (system defaults)."""
    ca, cert = settings.get("ssl.ca.location"), settings.get("ssl.certificate.location")
    key, password = settings.get("ssl.key.location"), settings.get("ssl.key.password")
    if ca is None and cert is None and key is None and password is None:
        return None
    if cert is None and (key is not None or password is not None):
        raise ConfigurationError("ssl.certificate.location is required with ssl.key.location or ssl.key.password")
    try:
        if ca is None:
            context = ssl.create_default_context()
        elif str(ca) and os.path.isdir(str(ca)):
            context = ssl.create_default_context(capath=str(ca))
        else:
            context = ssl.create_default_context(cafile=str(ca))
        if cert is not None:
            context.load_cert_chain(str(cert), None if key is None else str(key),
                                    None if password is None else str(password))
    except (OSError, ssl.SSLError) as bad:
        raise ConfigurationError(f"schema registry TLS settings: {bad}") from None
    return context


_shared: dict[tuple[tuple[str, str], ...], SchemaRegistryClient] = {}
_shared_lock = threading.Lock()


def shared_client(conf: Mapping[str, object]) -> SchemaRegistryClient:
    """The one client of this process for these settings (:meth:`SchemaRegistryClient.from_config`),
    so every reader and decode thread of a process shares one cache of schemas."""
    key = tuple(sorted((name.removeprefix("schema.registry."), str(value)) for name, value in conf.items()))
    with _shared_lock:
        found = _shared.get(key)
        if found is None:
            found = _shared[key] = SchemaRegistryClient.from_config(conf)
        return found
