"""Schema registries for tests, and producers that write through confluent-kafka's own serializers.

- :class:`ApicurioRegistry`: the real Apicurio Registry 3 (a Quarkus application) from Maven
  Central's ``apicurio-registry-app`` ``all`` tarball, in-memory storage, serving the
  Confluent-compatible API; its :attr:`url` ends in ``/apis/ccompat/v7``. Needs Java 21+ (found
  in ``$JAVA_HOME``, on PATH or under ``/usr/lib/jvm``) and Maven.
- :class:`FakeSchemaRegistry`: an in-process registry (http.server on a thread) serving the REST
  calls a client and confluent-kafka's serializers make, including schema GUIDs (which Apicurio
  does not serve), with injectable faults: down (connections refused), slow answers, a status
  for the next requests, credentials required (basic or bearer).
- :func:`produce_avro`, :func:`produce_json`, :func:`produce_protobuf`: records serialized by
  confluent-kafka's ``AvroSerializer`` / ``JSONSerializer`` / ``ProtobufSerializer`` (an
  independent writer of the Confluent framing), prefixed with magic 0 and the id (and, for
  Protobuf, the message-index array), or with the schema GUID in a header.

Both registries have one shape: ``url``, ``start()``, ``stop()``, a context manager.
"""
from __future__ import annotations

import base64
import fcntl
import importlib
import json
import os
import re
import shutil
import ssl
import subprocess
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

from pyconsumer._install import install_hint

from ._errors import BrokerStartError, MissingExtraError
from ._maven import _DEPENDENCY_PLUGIN, MissingToolError, cache_dir, require_tool
from ._process import BrokerProcess

__all__ = ["APICURIO_VERSION", "ApicurioRegistry", "FakeSchemaRegistry", "find_java",
           "produce_avro", "produce_json", "produce_protobuf"]

APICURIO_VERSION = "3.3.3"
#: the Confluent-compatible API's root under an Apicurio base address
CCOMPAT_PATH = "/apis/ccompat/v7"
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


# ====================================================================== the in-process registry


@dataclass
class _Stored:
    id: int
    guid: str
    schema: str
    schema_type: str
    references: list[dict[str, Any]]

    def key(self) -> tuple[str, str, str]:
        return (self.schema_type, self.schema, json.dumps(self.references, sort_keys=True))


@dataclass
class _Faults:
    delay_s: float = 0.0
    status_next: list[int] = field(default_factory=list)
    basic: str | None = None          # "user:password" required
    bearer: str | None = None         # token required


class FakeSchemaRegistry:
    """A Confluent-compatible Schema Registry in this process, on ``127.0.0.1`` (port 0: any).

    Serves ``POST /subjects/{s}/versions`` (register; the same schema under the same subject
    keeps its id), ``POST /subjects/{s}`` (look up), ``GET /schemas/ids/{id}``,
    ``GET /schemas/guids/{guid}``, ``GET /subjects``, ``GET /subjects/{s}/versions``,
    ``GET /subjects/{s}/versions/{v|latest}``, ``GET|PUT /config[/{s}]``, with Confluent's
    error codes (40401 subject, 40402 version, 40403 schema not found).

    With ``ssl_context`` (a server context holding a certificate) it serves https.
    Faults: :meth:`down` / :meth:`up` (the port refuses connections, then listens again),
    ``delay_s`` (every answer waits), :meth:`fail_next` (the next answers get these statuses),
    :meth:`require_basic_auth` / :meth:`require_bearer` (401 otherwise). ``requests`` lists
    (method, path) of every request served, faults included; ``request_headers`` their headers.
    """

    def __init__(self, port: int = 0, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self.host = "127.0.0.1"
        self.port = port
        self._ssl_context = ssl_context          # a server context: the registry speaks https
        self.requests: list[tuple[str, str]] = []
        #: the headers of every request (names lower-cased), in order
        self.request_headers: list[dict[str, str]] = []
        self._faults = _Faults()
        self._lock = threading.Lock()
        self._released = threading.Event()     # set on stop(): a delayed answer gives up waiting
        self._schemas: dict[int, _Stored] = {}
        self._subjects: dict[str, list[int]] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        scheme = "https" if self._ssl_context is not None else "http"
        return f"{scheme}://{self.host}:{self.port}"

    def start(self) -> FakeSchemaRegistry:
        if self._server is not None:
            return self
        self._released.clear()
        server = ThreadingHTTPServer((self.host, self.port), _handler_for(self))
        server.daemon_threads = True
        if self._ssl_context is not None:
            server.socket = self._ssl_context.wrap_socket(server.socket, server_side=True)
        self.port = int(server.server_address[1])
        self._server = server
        # a short poll interval: stop() (and down()) waits for one
        self._thread = threading.Thread(target=server.serve_forever, args=(0.02,),
                                        name=f"fake-registry-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        self._released.set()
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def down(self) -> None:
        """Close the port: connections are refused until :meth:`up` (the schemas are kept)."""
        self.stop()

    def up(self) -> None:
        """Listen again on the same port."""
        self.start()

    def __enter__(self) -> FakeSchemaRegistry:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ------------------------------------------------------------------ faults

    @property
    def delay_s(self) -> float:
        return self._faults.delay_s

    @delay_s.setter
    def delay_s(self, value: float) -> None:
        self._faults.delay_s = value

    def fail_next(self, *statuses: int) -> None:
        """The next ``len(statuses)`` requests are answered with these HTTP statuses, in order."""
        with self._lock:
            self._faults.status_next.extend(statuses)

    def require_basic_auth(self, user_info: str | None) -> None:
        """Answer 401 unless ``Authorization: Basic`` carries ``user:password`` (None: open)."""
        self._faults.basic = user_info

    def require_bearer(self, token: str | None) -> None:
        """Answer 401 unless ``Authorization: Bearer <token>`` (None: open)."""
        self._faults.bearer = token

    def count(self, method: str, path: str) -> int:
        """How many requests were ``method path`` (the path without its query)."""
        with self._lock:
            return sum(1 for m, p in self.requests if m == method and p == path)

    # ------------------------------------------------------------------ content

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: Sequence[Mapping[str, Any]] = ()) -> int:
        """Register directly (no HTTP): the id, as ``POST /subjects/{s}/versions`` would give."""
        return self._register(subject, schema, schema_type, [dict(r) for r in references]).id

    def guid_of(self, schema_id: int) -> str:
        with self._lock:
            return self._schemas[schema_id].guid

    def _register(self, subject: str, schema: str, schema_type: str,
                  references: list[dict[str, Any]]) -> _Stored:
        with self._lock:
            probe = _Stored(0, "", schema, schema_type, references)
            stored = next((s for s in self._schemas.values() if s.key() == probe.key()), None)
            if stored is None:
                stored = _Stored(len(self._schemas) + 1, str(uuid.uuid4()), schema, schema_type, references)
                self._schemas[stored.id] = stored
            versions = self._subjects.setdefault(subject, [])
            if stored.id not in versions:
                versions.append(stored.id)
            return stored

    # ------------------------------------------------------------------ answers

    def _answer(self, method: str, path: str, headers: Mapping[str, str], body: bytes
                ) -> tuple[int, Any]:
        with self._lock:
            self.requests.append((method, path))
            self.request_headers.append({k.lower(): v for k, v in headers.items()})
            status = self._faults.status_next.pop(0) if self._faults.status_next else None
        if self._faults.delay_s:
            self._released.wait(self._faults.delay_s)
        if not self._authorized(headers.get("Authorization")):
            return 401, {"error_code": 40101, "message": "Unauthorized"}
        if status is not None:
            return status, {"error_code": status * 100, "message": f"injected HTTP {status}"}
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
        try:
            return self._route(method, parts, body)
        except (ValueError, KeyError, TypeError) as bad:
            return 422, {"error_code": 42201, "message": f"invalid request: {bad}"}

    def _authorized(self, header: str | None) -> bool:
        if self._faults.basic is not None:
            expected = "Basic " + base64.b64encode(self._faults.basic.encode()).decode("ascii")
            return header == expected
        if self._faults.bearer is not None:
            return header == f"Bearer {self._faults.bearer}"
        return True

    def _route(self, method: str, parts: list[str], body: bytes) -> tuple[int, Any]:
        match method, parts:
            case "GET", ["schemas", "ids", sid] if sid.isdigit():
                return self._schema_answer(self._schemas.get(int(sid)), with_id=False)
            case "GET", ["schemas", "guids", guid]:
                found = next((s for s in self._schemas.values() if s.guid == guid.lower()), None)
                return self._schema_answer(found, with_id=True)
            case "GET", ["subjects"]:
                return 200, sorted(self._subjects)
            case "GET", ["subjects", subject, "versions"]:
                if subject not in self._subjects:
                    return _subject_missing(subject)
                return 200, list(range(1, len(self._subjects[subject]) + 1))
            case "GET", ["subjects", subject, "versions", version]:
                return self._version_answer(subject, version)
            case "POST", ["subjects", subject, "versions"]:
                request = json.loads(body)
                stored = self._register(subject, request["schema"], request.get("schemaType") or "AVRO",
                                        list(request.get("references") or []))
                return 200, {"id": stored.id, "guid": stored.guid}
            case "POST", ["subjects", subject]:
                request = json.loads(body)
                if subject not in self._subjects:
                    return _subject_missing(subject)
                probe = _Stored(0, "", request["schema"], request.get("schemaType") or "AVRO",
                                list(request.get("references") or []))
                for number, known in enumerate(self._subjects[subject], start=1):
                    if self._schemas[known].key() == probe.key():
                        return 200, self._subject_version(subject, number)
                return 404, {"error_code": 40403, "message": "Schema not found"}
            case "GET", ["config", *_]:
                return 200, {"compatibilityLevel": "BACKWARD"}
            case "PUT", ["config", *_]:
                return 200, json.loads(body)
        return 404, {"error_code": 404, "message": f"no route {method} /{'/'.join(parts)}"}

    def _schema_answer(self, stored: _Stored | None, *, with_id: bool) -> tuple[int, Any]:
        if stored is None:
            return 404, {"error_code": 40403, "message": "Schema not found"}
        answer: dict[str, Any] = {"schema": stored.schema, "guid": stored.guid}
        if with_id:
            answer["id"] = stored.id
        if stored.schema_type != "AVRO":         # Confluent omits the type for Avro
            answer["schemaType"] = stored.schema_type
        if stored.references:
            answer["references"] = stored.references
        return 200, answer

    def _version_answer(self, subject: str, version: str) -> tuple[int, Any]:
        versions = self._subjects.get(subject)
        if versions is None:
            return _subject_missing(subject)
        if version in ("latest", "-1"):
            return 200, self._subject_version(subject, len(versions))
        if not version.isdigit() or not 1 <= int(version) <= len(versions):
            return 404, {"error_code": 40402, "message": f"Version {version} not found."}
        return 200, self._subject_version(subject, int(version))

    def _subject_version(self, subject: str, number: int) -> dict[str, Any]:
        schema_id = self._subjects[subject][number - 1]
        _, answer = self._schema_answer(self._schemas[schema_id], with_id=True)
        return {**answer, "subject": subject, "version": number}

    def __repr__(self) -> str:
        state = "running" if self._server is not None else "stopped"
        return f"FakeSchemaRegistry({self.url}, {state}, {len(self._schemas)} schemas)"


def _subject_missing(subject: str) -> tuple[int, Any]:
    return 404, {"error_code": 40401, "message": f"Subject '{subject}' not found."}


def _handler_for(registry: FakeSchemaRegistry) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = urllib.parse.urlsplit(self.path).path
            status, answer = registry._answer(self.command, path, dict(self.headers.items()), body)
            raw = json.dumps(answer).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", _CONTENT_TYPE)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except OSError:          # the client gave up (a timeout test): nothing to tell it
                self.close_connection = True

        do_GET = do_POST = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass                  # requests are in registry.requests; keep test output clean

    return Handler


# ====================================================================== Apicurio Registry


def _java_major(java: str) -> int | None:
    try:
        run = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "(\d+)', run.stderr + run.stdout)
    return int(found.group(1)) if found else None


def find_java(minimum: int) -> str:
    """A ``java`` of at least version ``minimum``: ``$JAVA_HOME``, PATH, then ``/usr/lib/jvm/*``
    (newest first). Raises MissingToolError (a BrokerStartError) saying what to install."""
    candidates: list[str] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(on_path)
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates += [str(p / "bin" / "java") for p in sorted(jvm.iterdir(), reverse=True)]
    for java in candidates:
        if os.access(java, os.X_OK):
            major = _java_major(java)
            if major is not None and major >= minimum:
                return java
    raise MissingToolError(f"needs Java {minimum} or newer (set JAVA_HOME or install one under "
                           f"/usr/lib/jvm); looked at {candidates or 'nothing'}")


def apicurio_home(version: str = APICURIO_VERSION, *, timeout: float = 900.0) -> Path:
    """The unpacked Quarkus layout of Apicurio Registry (``quarkus-run.jar``, ``lib/``...), fetched
    once with Maven (the app's ``all`` tar.gz) into the per-user cache."""
    root = cache_dir() / f"apicurio-registry-{version}"
    home = root / "app"
    done = root / "complete"
    if done.is_file() and (home / "quarkus-run.jar").is_file():
        return home
    mvn = require_tool("ApicurioRegistry", "mvn")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)        # another test process may be fetching it
        if done.is_file() and (home / "quarkus-run.jar").is_file():
            return home
        artifact = f"io.apicurio:apicurio-registry-app:{version}:tar.gz:all"
        with tempfile.TemporaryDirectory(prefix="apicurio-", dir=root) as work:
            cmd = [mvn, "-B", "-q", f"{_DEPENDENCY_PLUGIN}:copy", f"-Dartifact={artifact}",
                   f"-DoutputDirectory={work}"]
            try:
                run = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                raise BrokerStartError(f"Maven did not fetch {artifact} within {timeout:.0f} s") from None
            tarballs = list(Path(work).glob("*.tar.gz"))
            if run.returncode != 0 or len(tarballs) != 1:
                raise BrokerStartError(f"Maven could not fetch {artifact} from Maven Central "
                                       f"(exit {run.returncode}):\n{(run.stdout + run.stderr)[-3000:]}")
            staging = Path(work) / "app"
            with tarfile.open(tarballs[0]) as tar:
                tar.extractall(staging, filter="data")
            if not (staging / "quarkus-run.jar").is_file():
                raise BrokerStartError(f"{artifact} has no quarkus-run.jar at its root")
            if home.exists():
                shutil.rmtree(home)
            staging.rename(home)
        done.write_text(artifact + "\n")
    return home


class ApicurioRegistry(BrokerProcess):
    """Apicurio Registry (real, a JVM process) on 127.0.0.1 with in-memory storage.

    ``url`` is its Confluent-compatible API (``http://127.0.0.1:PORT/apis/ccompat/v7``), what a
    Confluent client or serializer is given. Starting takes 10-30 s (Quarkus boot). It serves no
    ``/schemas/guids`` (the GUID variant needs :class:`FakeSchemaRegistry`).
    """

    _name = "Apicurio Registry"
    _log_prefix: ClassVar[str] = "pyconsumer-apicurio"
    _port_in_use_marker: ClassVar[str] = "seems to be in use"

    def __init__(self, port: int | None = None, *, version: str = APICURIO_VERSION,
                 start_timeout: float = 180.0, stop_timeout: float = 20.0, heap: str = "512m",
                 log_path: Path | None = None) -> None:
        self.version = version
        self.heap = heap
        self.java = find_java(21)                # Apicurio 3.3 is built for Java 21
        super().__init__(port, binary=apicurio_home(version), start_timeout=start_timeout,
                         stop_timeout=stop_timeout, log_path=log_path)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{CCOMPAT_PATH}"

    def _command(self) -> list[str]:
        # management.enabled is fixed when Apicurio is built (it stays on, at 0.0.0.0:9000):
        # port 0 lets two registries (parallel test sessions) start side by side
        return [self.java, f"-Xmx{self.heap}", f"-Dquarkus.http.port={self.port}",
                f"-Dquarkus.http.host={self.host}", "-Dquarkus.management.enabled=false",
                "-Dquarkus.management.port=0",
                "-Dquarkus.http.access-log.enabled=false", "-Dquarkus.otel.enabled=false",
                "-jar", str(self.binary / "quarkus-run.jar")]

    def _ready_in_log(self, text: bytes) -> bool:
        return f"Listening on: http://{self.host}:{self.port}".encode() in text

    def _wait_ready(self) -> None:
        # an HTTP service: ready when the Confluent API answers, not ApiVersions
        deadline = time.monotonic() + self.start_timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            assert self._proc is not None
            code = self._proc.poll()
            if code is not None:
                raise BrokerStartError(f"{self._name} exited with code {code} while starting on "
                                       f"{self.bootstrap}; log {self.log_path}:\n{self.log_tail()}")
            if self._logged_ready():
                try:
                    with urllib.request.urlopen(self.url + "/subjects", timeout=5) as answer:
                        if answer.status == 200:
                            return
                except (urllib.error.URLError, OSError) as exc:
                    last = exc
            time.sleep(0.1)
        raise BrokerStartError(f"{self._name} on {self.bootstrap} did not answer {self.url}/subjects "
                               f"within {self.start_timeout} s (last error: {last!r}); "
                               f"log {self.log_path}:\n{self.log_tail()}")

    def _env(self) -> dict[str, str]:
        env = super()._env()
        env.pop("JAVA_TOOL_OPTIONS", None)
        return env

    def _repr_extra(self) -> str:
        return f"url={self.url}, "


# ====================================================================== producers


def _require_serializers(kind: str) -> None:
    """confluent-kafka's registry serializers import, or one sentence saying what to install
    (they need more than confluent-kafka itself: fastavro, httpx2, authlib, jsonschema...)."""
    module = {"avro": "confluent_kafka.schema_registry.avro",
              "json": "confluent_kafka.schema_registry.json_schema",
              "protobuf": "confluent_kafka.schema_registry.protobuf"}[kind]
    try:
        importlib.import_module(module)
    except ImportError as missing:
        raise MissingExtraError(
            f"produce_{kind}() needs confluent-kafka's schema-registry serializers "
            f"({missing.name or module} is missing): {install_hint('test')}") from None


def _serializing_producer(bootstrap: str, registry_url: str, serializer_kind: str, schema: Any,
                          registry_conf: Mapping[str, Any], serializer_conf: Mapping[str, Any],
                          use_guid_header: bool) -> tuple[Any, Any]:
    """The registry client and serializer; ``schema`` is the schema text (Avro, JSON) or the
    message class (Protobuf: the serializer registers the class's file and its imports)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer

    client = SchemaRegistryClient({"url": registry_url, **registry_conf})
    conf: dict[str, Any] = dict(serializer_conf)
    if use_guid_header:
        conf["schema.id.serializer"] = header_schema_id_serializer
    if serializer_kind == "avro":
        from confluent_kafka.schema_registry.avro import AvroSerializer
        return client, AvroSerializer(client, schema, conf=conf)
    if serializer_kind == "protobuf":
        from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
        return client, ProtobufSerializer(schema, client, conf=conf)
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    return client, JSONSerializer(schema, client, conf=conf)


def _produce_serialized(kind: str, bootstrap: str, topic: str, records: Iterable[Any], schema_str: Any,
                        registry_url: str, *, keys: Iterable[bytes | None] | None,
                        partition: int | None, registry_conf: Mapping[str, Any] | None,
                        serializer_conf: Mapping[str, Any] | None, use_guid_header: bool,
                        timeout: float, producer_conf: Mapping[str, Any]) -> list[tuple[int, int]]:
    _require_serializers(kind)
    from confluent_kafka.serialization import MessageField, SerializationContext

    from ._produce import TestRecord, produce

    _, serializer = _serializing_producer(bootstrap, registry_url, kind, schema_str,
                                          registry_conf or {}, serializer_conf or {}, use_guid_header)
    values = list(records)
    key_list = list(keys) if keys is not None else [None] * len(values)
    if len(key_list) != len(values):
        raise ValueError(f"{len(key_list)} keys for {len(values)} records")
    recs: list[TestRecord] = []
    for key, value in zip(key_list, values):
        headers: list[tuple[str, str | bytes | None]] = []
        # the serializer's real context: it picks the subject and writes a GUID header
        ctx = SerializationContext(topic, MessageField.VALUE, headers)
        payload = None if value is None else serializer(value, ctx)
        recs.append(TestRecord(key=key, value=payload, partition=partition,
                               headers=[(k, v.encode() if isinstance(v, str) else v) for k, v in headers]
                               or None))
    # the one delivery path of the test producers (reports, flush, errors)
    return produce(bootstrap, topic, recs, timeout=timeout, **producer_conf)


def produce_avro(bootstrap: str, topic: str, records: Iterable[Mapping[str, Any] | None], schema_str: str,
                 registry_url: str, *, keys: Iterable[bytes | None] | None = None,
                 partition: int | None = None, registry_conf: Mapping[str, Any] | None = None,
                 serializer_conf: Mapping[str, Any] | None = None, use_guid_header: bool = False,
                 timeout: float = 30.0, **producer_conf: Any) -> list[tuple[int, int]]:
    """Produce ``records`` (dicts; None: a tombstone) serialized by confluent-kafka's AvroSerializer
    against the registry at ``registry_url`` (auto-registering ``schema_str`` under
    ``{topic}-value`` unless ``serializer_conf`` says otherwise, e.g. ``subject.name.strategy``).

    The value is magic 0 + the 4-byte id + the Avro body; with ``use_guid_header`` it is the bare
    body and the schema GUID goes in the ``__value_schema_id`` header (magic 1 + 16 bytes).
    ``registry_conf`` is confluent-kafka's registry client config (``basic.auth.user.info``...).
    Returns (partition, offset) per record, in order; raises ProduceError when a delivery fails.
    """
    return _produce_serialized("avro", bootstrap, topic, records, schema_str, registry_url, keys=keys,
                               partition=partition, registry_conf=registry_conf,
                               serializer_conf=serializer_conf, use_guid_header=use_guid_header,
                               timeout=timeout, producer_conf=producer_conf)


def produce_json(bootstrap: str, topic: str, records: Iterable[Any], schema_str: str, registry_url: str,
                 *, keys: Iterable[bytes | None] | None = None, partition: int | None = None,
                 registry_conf: Mapping[str, Any] | None = None,
                 serializer_conf: Mapping[str, Any] | None = None, use_guid_header: bool = False,
                 timeout: float = 30.0, **producer_conf: Any) -> list[tuple[int, int]]:
    """As :func:`produce_avro`, with confluent-kafka's JSONSerializer and a JSON Schema: the value is
    magic 0 + the id + the UTF-8 JSON text (validated against the schema by the serializer)."""
    return _produce_serialized("json", bootstrap, topic, records, schema_str, registry_url, keys=keys,
                               partition=partition, registry_conf=registry_conf,
                               serializer_conf=serializer_conf, use_guid_header=use_guid_header,
                               timeout=timeout, producer_conf=producer_conf)



def produce_protobuf(bootstrap: str, topic: str, records: Iterable[Any], registry_url: str, *,
                     message_type: Any = None, keys: Iterable[bytes | None] | None = None,
                     partition: int | None = None, registry_conf: Mapping[str, Any] | None = None,
                     serializer_conf: Mapping[str, Any] | None = None, use_guid_header: bool = False,
                     timeout: float = 30.0, **producer_conf: Any) -> list[tuple[int, int]]:
    """Produce ``records`` (messages of the ``protobuf`` runtime, all of one class; None: a
    tombstone) serialized by confluent-kafka's ProtobufSerializer against the registry at
    ``registry_url``: it registers the message's ``.proto`` file under ``{topic}-value`` and
    each file it imports under the import path (well-known types left out), as references.

    The value is magic 0 + the 4-byte id + the message-index array (zig-zag varints; ``0x00``
    alone for the file's first message) + the message bytes; with ``use_guid_header`` the
    schema GUID goes in the ``__value_schema_id`` header instead of the prefix. ``message_type``
    is the class (default: the first record's). Classes of any origin serve, e.g.
    :func:`~pyconsumer.testing.message_classes`. Returns (partition, offset) per record, in
    order; raises ProduceError when a delivery fails."""
    values = list(records)
    if message_type is None:
        message_type = next((type(v) for v in values if v is not None), None)
        if message_type is None:
            raise ValueError("produce_protobuf needs message_type when no record is a message")
    return _produce_serialized("protobuf", bootstrap, topic, values, message_type, registry_url,
                               keys=keys, partition=partition, registry_conf=registry_conf,
                               serializer_conf=serializer_conf, use_guid_header=use_guid_header,
                               timeout=timeout, producer_conf=producer_conf)
