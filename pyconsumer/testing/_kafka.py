"""Real Apache Kafka (KRaft) from Maven Central jars: :class:`KafkaCluster`.

Node 1 is broker and controller (formatted ``--standalone``, the only voter); nodes 2.. are
brokers only, so any of them can be killed and restarted freely. Every node listens on free
loopback ports for PLAINTEXT, SASL_PLAINTEXT (PLAIN and SCRAM-SHA-256/512), SSL (a
throw-away CA made with openssl per cluster) and SASL_SSL (the same SASL over that TLS: the
form hosted Kafka services take); inter-broker traffic is PLAINTEXT. Data, logs and
TLS material live in one temporary folder removed by :meth:`KafkaCluster.close`.

The jars (``org.apache.kafka:kafka_2.13`` with its runtime dependencies, plus log4j's SLF4J 1.x
binding, which no Kafka POM brings: without it the broker logs nothing, fatal errors included)
are fetched with Maven once into the per-user cache (see :mod:`._maven`).
"""
from __future__ import annotations

import base64
import os
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import BrokerStartError, require_module
from ._maven import fetch_jars, require_tool
from ._process import BrokerProcess, ProcessCluster, free_port, wait_for_topic
from ._process import remove_stale_folders as _remove_stale_folders

__all__ = ["KAFKA_VERSION", "KafkaCluster", "KafkaNode", "Kerberos", "OAuthValidation", "kafka_jars"]

#: the Apache Kafka release the tests and benchmarks run
KAFKA_VERSION = "4.2.2"
#: log4j2 version of Kafka 4.2's own build; its 1.x SLF4J binding matches Kafka's slf4j-api 1.7
_LOG4J_VERSION = "2.25.3"

LISTENERS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
#: the extra SASL_PLAINTEXT listener of a cluster made with ``kerberos=``: GSSAPI only
GSSAPI_LISTENER = "GSSAPI"
#: the extra SASL_PLAINTEXT listener of a cluster made with ``oauth=``: OAUTHBEARER only
OAUTH_LISTENER = "OAUTH"

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p [%c] %m%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = INFO
"""

# settings every node gets; see ../shared/reference/apache-kafka.md for why each is there
_BASE_CONFIG: dict[str, str] = {
    "listener.security.protocol.map":
        "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,"
        "CONTROLLER:PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
    "controller.listener.names": "CONTROLLER",
    "group.initial.rebalance.delay.ms": "0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "group.coordinator.threads": "1",
    "num.recovery.threads.per.data.dir": "1",
    "log.cleaner.dedupe.buffer.size": "16777216",
    "log.cleaner.backoff.ms": "1000",
    "auto.create.topics.enable": "false",
    # test data carries fixed old timestamps (2023): the default 7-day retention would delete
    # it at the first retention check, 30 s after start
    "log.retention.ms": "-1",
    "auto.leader.rebalance.enable": "false",
    # KIP-848 timings a test can wait for (broker defaults: heartbeat 5 s, session 45 s)
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.session.timeout.ms": "3000",
    "group.consumer.session.timeout.ms": "6000",
    "group.share.enable": "false",
    # a broker starved of CPU by Spark and producers on 2 cores must not be fenced
    "broker.session.timeout.ms": "30000",
    "broker.heartbeat.interval.ms": "1000",
    "ssl.keystore.type": "PEM",
    "ssl.truststore.type": "PEM",
    "ssl.client.auth": "requested",
    "ssl.endpoint.identification.algorithm": "",
}


@dataclass(frozen=True)
class Kerberos:
    """What a cluster's GSSAPI listener needs: the KDC's krb5.conf (given to the JVMs as
    ``java.security.krb5.conf``), a keytab with the brokers' service principal and that
    principal (``kafka/127.0.0.1@REALM``: its host part is the host clients dial)."""

    krb5_conf: Path
    keytab: Path
    principal: str
    service_name: str = "kafka"

    def jaas(self) -> str:
        return ("com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                f'storeKey=true keyTab="{self.keytab}" principal="{self.principal}";')


@dataclass(frozen=True)
class OAuthValidation:
    """What a cluster's OAUTHBEARER listener checks tokens with: Kafka's own
    ``OAuthBearerValidatorCallbackHandler``, the signing keys fetched from ``jwks_url`` (the
    URL is also the only one the JVMs' ``org.apache.kafka.sasl.oauthbearer.allowed.urls``
    lets them reach, since Kafka 4 allows none by default); ``expected_audience`` and
    ``expected_issuer`` (None: not checked) are the broker's ``sasl.oauthbearer.expected.*``."""

    jwks_url: str
    expected_audience: str | None = None
    expected_issuer: str | None = None

    def settings(self) -> dict[str, str]:
        prefix = f"listener.name.{OAUTH_LISTENER.lower()}."
        out = {
            prefix + "sasl.enabled.mechanisms": "OAUTHBEARER",
            prefix + "oauthbearer.sasl.jaas.config":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
            prefix + "oauthbearer.sasl.server.callback.handler.class":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
            "sasl.oauthbearer.jwks.endpoint.url": self.jwks_url,
        }
        if self.expected_audience is not None:
            out["sasl.oauthbearer.expected.audience"] = self.expected_audience
        if self.expected_issuer is not None:
            out["sasl.oauthbearer.expected.issuer"] = self.expected_issuer
        return out


_FOLDER_PREFIX = "pyconsumer-kafka-"


def remove_stale_folders(parent: Path | None = None) -> list[Path]:
    """The folders of Kafka clusters whose process died without closing them, removed."""
    return _remove_stale_folders(_FOLDER_PREFIX, parent)


def kafka_jars(version: str = KAFKA_VERSION) -> Path:
    """The folder of Apache Kafka ``version``'s broker jars (fetched with Maven the first time)."""
    return fetch_jars(f"kafka-{version}", [f"org.apache.kafka:kafka_2.13:{version}",
                                           f"org.apache.logging.log4j:log4j-slf4j-impl:{_LOG4J_VERSION}"],
                      user="KafkaCluster")


def _cluster_id() -> str:
    # what StorageTool random-uuid gives: URL-safe base64 of a v4 UUID, unpadded, not "-..."
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _properties(settings: Mapping[str, str]) -> str:
    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace("\n", "\\n")
    return "".join(f"{k}={escape(v)}\n" for k, v in settings.items())


@dataclass(frozen=True)
class TlsFiles:
    """The cluster's throw-away PKI: a CA, the brokers' certificate, and a client certificate
    (for mutual TLS) signed by that CA; all PEM."""

    ca: Path
    broker_keystore: Path       # broker key (PKCS#8) and certificate in one file, as Kafka's PEM store wants
    client_cert: Path
    client_key: Path


def _make_tls(folder: Path) -> TlsFiles:
    openssl = require_tool("KafkaCluster's SSL listener", "openssl")
    folder.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        done = subprocess.run([openssl, *args], cwd=folder, capture_output=True, text=True)
        if done.returncode != 0:
            raise BrokerStartError(f"openssl {args[0]} failed making the test CA in {folder}: {done.stderr.strip()}")

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=pyconsumer-test-ca")
    ext = folder / "san.ext"
    ext.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for who in ("broker", "client"):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{who}.key", "-out", f"{who}.csr",
            "-subj", f"/CN={who}")
        run("x509", "-req", "-in", f"{who}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{who}.pem", "-days", "2", "-extfile", str(ext))
        run("pkcs8", "-topk8", "-nocrypt", "-in", f"{who}.key", "-out", f"{who}.p8")
    store = folder / "broker-store.pem"
    store.write_text((folder / "broker.p8").read_text() + (folder / "broker.pem").read_text())
    return TlsFiles(ca=folder / "ca.pem", broker_keystore=store, client_cert=folder / "client.pem",
                    client_key=folder / "client.p8")


class KafkaNode(BrokerProcess):
    """One Apache Kafka JVM of a :class:`KafkaCluster` (its ``port`` is the PLAINTEXT one)."""

    _name = "Apache Kafka"
    _log_prefix = "kafka"
    _port_in_use_marker = "Address already in use"

    def __init__(self, cluster: KafkaCluster, node_id: int, ports: dict[str, int], folder: Path) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.ports = ports
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        super().__init__(ports["PLAINTEXT"], binary=Path(require_tool("KafkaCluster", "java")),
                         start_timeout=cluster.start_timeout, stop_timeout=cluster.stop_timeout,
                         log_path=folder / "server.log")
        self._may_repick_port = False            # the ports are written into every node's config
        self._name = f"Apache Kafka node {node_id}"
        self.config_path = folder / "server.properties"

    @property
    def controller(self) -> bool:
        return self.node_id == 1

    def listener(self, name: str) -> str:
        return f"{self.host}:{self.ports[name]}"

    def settings(self) -> dict[str, str]:
        c = self.cluster
        listeners = [f"{name}://{self.host}:{self.ports[name]}" for name in c.listeners]
        if self.controller:
            listeners.append(f"CONTROLLER://{self.host}:{self.ports['CONTROLLER']}")
        tls = c.tls
        plain = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
                 + " ".join(f'user_{u}="{p}"' for u, p in c.users.items()) + ";")
        settings = dict(_BASE_CONFIG)
        settings.update({
            "process.roles": "broker,controller" if self.controller else "broker",
            "node.id": str(self.node_id),
            "controller.quorum.bootstrap.servers": f"{self.host}:{c.controller_port}",
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(listeners),
            "log.dirs": str(self.folder / "data"),
            "broker.rack": f"r{self.node_id}",
            "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
            "offsets.topic.replication.factor": str(min(3, c.nodes)),
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": str(min(3, c.nodes)),
            "transaction.state.log.min.isr": str(min(2, c.nodes)),
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": plain,
            "ssl.keystore.location": str(tls.broker_keystore),
            "ssl.truststore.location": str(tls.ca),
        })
        if c.kerberos is not None:
            settings.update({
                "listener.security.protocol.map":
                    settings["listener.security.protocol.map"] + f",{GSSAPI_LISTENER}:SASL_PLAINTEXT",
                "listener.name.gssapi.sasl.enabled.mechanisms": "GSSAPI",
                "listener.name.gssapi.gssapi.sasl.jaas.config": c.kerberos.jaas(),
                "sasl.kerberos.service.name": c.kerberos.service_name,
            })
        if c.oauth is not None:
            settings["listener.security.protocol.map"] += f",{OAUTH_LISTENER}:SASL_PLAINTEXT"
            settings.update(c.oauth.settings())
        settings.update(c.broker_config)
        settings.update(c.node_config.get(self.node_id, {}))
        return settings

    def format(self, cluster_id: str) -> None:
        self.config_path.write_text(_properties(self.settings()))
        cmd = [str(self.binary), "-cp", f"{self.cluster.libs}/*", "kafka.tools.StorageTool", "format",
               "-t", cluster_id, "-c", str(self.config_path)]
        if self.controller:
            cmd.append("--standalone")
            for user, password in self.cluster.users.items():
                for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                    cmd += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
        else:
            cmd.append("--no-initial-controllers")
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "KAFKA_LOG4J_OPTS": ""})
        if done.returncode != 0:
            raise BrokerStartError(f"formatting Apache Kafka node {self.node_id}'s storage failed "
                                   f"(exit {done.returncode}): {(done.stdout + done.stderr).strip()[-2000:]}")

    def _command(self) -> list[str]:
        c = self.cluster
        krb5 = [] if c.kerberos is None else [f"-Djava.security.krb5.conf={c.kerberos.krb5_conf}"]
        oauth = [] if c.oauth is None else [
            f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={c.oauth.jwks_url}"]
        return [str(self.binary), f"-Xms{c.heap_min}", f"-Xmx{c.heap}", "-XX:+UseG1GC",
                "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true", *krb5, *oauth,
                f"-Dlog4j2.configurationFile={c.log4j_config}", "-cp", c.classpath(), "kafka.Kafka",
                str(self.config_path)]

    def _ready_in_log(self, text: bytes) -> bool:
        return f"[BrokerServer id={self.node_id}] Transition from STARTING to STARTED".encode() in text

    def rss_bytes(self) -> int | None:
        """Resident memory of the JVM now (Linux), None when it is not running."""
        pid = self.pid
        if pid is None:
            return None
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None


class KafkaCluster(ProcessCluster):
    """Real Apache Kafka on loopback: ``nodes`` JVMs, node 1 broker+controller.

    >>> with KafkaCluster(nodes=3, users={"alice": "alice-secret"}) as kafka:
    ...     kafka.create_topic("t", partitions=6, replication_factor=3)
    ...     kafka.bootstrap_servers          # the PLAINTEXT listeners
    ...     kafka.listener("SASL_PLAINTEXT") # or "SSL"
    ...     kafka.kill(2); kafka.restart(2)

    ``broker_config`` overrides settings of every node, ``node_config`` of one node
    ({node_id: {...}}). ``kerberos`` (a :class:`Kerberos`) adds a SASL_PLAINTEXT listener
    ``GSSAPI`` that takes only GSSAPI, authenticating with that keytab; ``oauth`` (an
    :class:`OAuthValidation`) a SASL_PLAINTEXT listener ``OAUTH`` that takes only OAUTHBEARER,
    Kafka's own validator checking JWTs with the keys of a JWKS endpoint. Each node has
    ``broker.rack`` ``r<node id>`` and the rack-aware replica selector (follower fetching).
    ``extra_classpath``: folders or jars put after Kafka's own on every broker's class path
    (plugins a test compiled, such as a ``metric.reporters`` class named in ``broker_config``).
    Raises MissingToolError (with what to install) without java, mvn or openssl;
    BrokerStartError naming the node, the cause and the log's tail otherwise.
    """

    folder_prefix = _FOLDER_PREFIX

    def __init__(
        self,
        nodes: int = 1,
        *,
        users: Mapping[str, str] | None = None,
        broker_config: Mapping[str, str] | None = None,
        node_config: Mapping[int, Mapping[str, str]] | None = None,
        version: str = KAFKA_VERSION,
        heap: str = "512m",
        heap_min: str = "256m",
        start_timeout: float = 120.0,
        stop_timeout: float = 30.0,
        kerberos: Kerberos | None = None,
        oauth: OAuthValidation | None = None,
        port: int | None = None,
        extra_classpath: Sequence[Path | str] = (),
    ) -> None:
        if nodes < 1:
            raise ValueError(f"a cluster has at least one node, got nodes={nodes}")
        for user in (users or {}):
            if not user or any(ch in user for ch in ' ="\\,[]'):
                raise ValueError(f"user name {user!r} cannot be written into the broker's JAAS and SCRAM settings")
        self.nodes = nodes
        self.users: dict[str, str] = dict(users or {})
        self.broker_config: dict[str, str] = {k: str(v) for k, v in (broker_config or {}).items()}
        self.node_config: dict[int, dict[str, str]] = {
            n: {k: str(v) for k, v in cfg.items()} for n, cfg in (node_config or {}).items()}
        self.version = version
        self.extra_classpath: tuple[Path, ...] = tuple(Path(p) for p in extra_classpath)
        self.kerberos = kerberos
        self.oauth = oauth
        #: node 1's PLAINTEXT port (None: a free one), e.g. 9092 for examples that expect it
        self.port = port
        self.listeners: tuple[str, ...] = (LISTENERS + ((GSSAPI_LISTENER,) if kerberos else ())
                                           + ((OAUTH_LISTENER,) if oauth else ()))
        self.heap = heap
        self.heap_min = heap_min
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.cluster_id = _cluster_id()
        self.folder: Path | None = None
        self.node: dict[int, KafkaNode] = {}
        self.controller_port = 0
        self.startup_seconds: float | None = None
        self._tls: TlsFiles | None = None
        self.libs = Path()
        self.log4j_config = Path()

    def classpath(self) -> str:
        """The brokers' Java class path: Kafka's jars, then ``extra_classpath``."""
        return os.pathsep.join([f"{self.libs}/*", *(str(p) for p in self.extra_classpath)])

    # ------------------------------------------------------------------ addresses

    @property
    def bootstrap_servers(self) -> str:
        """The PLAINTEXT listeners of every node, comma-separated."""
        return self.listener("PLAINTEXT")

    @property
    def bootstrap(self) -> str:
        """Same as :attr:`bootstrap_servers` (the name the other test brokers use)."""
        return self.bootstrap_servers

    def listener(self, name: str) -> str:
        """``host:port,...`` of listener ``name`` (PLAINTEXT, SASL_PLAINTEXT, SSL, SASL_SSL; GSSAPI with
        ``kerberos``, OAUTH with ``oauth``) on every node."""
        if name not in self.listeners:
            raise ValueError(f"no listener {name!r}; the cluster has {', '.join(self.listeners)}")
        return ",".join(n.listener(name) for n in self.node.values())

    @property
    def tls(self) -> TlsFiles:
        if self._tls is None:
            raise BrokerStartError("the cluster has not been started: no TLS material yet")
        return self._tls

    def __getitem__(self, node_id: int) -> KafkaNode:
        try:
            return self.node[node_id]
        except KeyError:
            raise KeyError(f"no node {node_id}; the cluster has nodes {sorted(self.node)}") from None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> KafkaCluster:
        """Fetch the jars if needed, format every node's storage, start them all and wait until
        each broker is STARTED and the cluster's metadata lists every node."""
        if self.node:
            return self
        t0 = time.monotonic()
        self.libs = kafka_jars(self.version)
        folder = self._make_folder()
        try:
            self.log4j_config = folder / "log4j2.properties"
            self.log4j_config.write_text(_LOG4J2)
            self._tls = _make_tls(folder / "tls")
            self.controller_port = free_port()
            while self.controller_port == self.port:
                self.controller_port = free_port()
            taken = {self.controller_port}
            for node_id in range(1, self.nodes + 1):
                ports: dict[str, int] = {}
                for name in self.listeners:
                    fixed = self.port if node_id == 1 and name == "PLAINTEXT" else None
                    port = fixed if fixed is not None else free_port()
                    while port in taken and fixed is None:
                        port = free_port()
                    taken.add(port)
                    ports[name] = port
                if node_id == 1:
                    ports["CONTROLLER"] = self.controller_port
                self.node[node_id] = KafkaNode(self, node_id, ports, folder / f"node{node_id}")
            for node in self.node.values():
                node.format(self.cluster_id)
            for node in self.node.values():
                node._spawn()
            for node in self.node.values():
                node._wait_ready()
            self._wait_for_brokers(set(self.node), self.start_timeout)
        except BaseException:
            self.close()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _wait_for_brokers(self, expected: set[int], timeout: float) -> None:
        require_module("KafkaCluster", "confluent_kafka")
        from confluent_kafka.admin import AdminClient  # test dependency only

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        deadline = time.monotonic() + timeout
        seen: set[int] = set()
        while time.monotonic() < deadline:
            try:
                seen = set(admin.list_topics(timeout=5).brokers)
            except Exception:  # noqa: BLE001 - not answering yet
                seen = set()
            if expected <= seen:
                return
            time.sleep(0.2)
        raise BrokerStartError(f"the cluster's metadata lists brokers {sorted(seen)}, not {sorted(expected)}, "
                               f"after {timeout:.0f} s; node 1's log:\n{self.node[1].log_tail()}")

    def kill(self, node_id: int) -> None:
        """SIGKILL node ``node_id`` (a crash)."""
        self[node_id].kill()

    def stop(self, node_id: int) -> None:
        """Stop node ``node_id`` cleanly (SIGTERM: a controlled shutdown that moves its leaders)."""
        self[node_id]._terminate()

    def restart(self, node_id: int, *, wait: bool = True) -> None:
        """Start node ``node_id`` again (stopping it first if it runs) on the same ports and data;
        with ``wait``, until the cluster's metadata lists it again."""
        node = self[node_id]
        node._terminate()
        node.start()
        if wait:
            self._wait_for_brokers({node_id}, self.start_timeout)

    def restart_on_new_ports(self) -> dict[int, dict[str, str]]:
        """Stop every node cleanly (brokers-only nodes first, the controller node last), then
        start them all again on new client ports (PLAINTEXT, SASL_PLAINTEXT, SSL...: the
        listeners and advertised listeners move), keeping their data, the cluster id and the
        controller port (clients never see it; the controller's voter record names it). A
        rolled cluster whose every broker now answers elsewhere. Returns {node id: {listener:
        old "host:port"}}."""
        old = {i: {name: n.listener(name) for name in self.listeners} for i, n in self.node.items()}
        for node_id in sorted(self.node, reverse=True):
            self.node[node_id]._terminate()
        taken = {self.controller_port} | {p for n in self.node.values() for p in n.ports.values()}
        for node in self.node.values():
            for name in self.listeners:
                port = free_port()
                while port in taken:
                    port = free_port()
                taken.add(port)
                node.ports[name] = port
            node.port = node.ports["PLAINTEXT"]
            node.config_path.write_text(_properties(node.settings()))
        for node in self.node.values():
            node._spawn()
        for node in self.node.values():
            node._wait_ready()
        self._wait_for_brokers(set(self.node), self.start_timeout)
        return old

    def is_running(self, node_id: int = 1) -> bool:
        return node_id in self.node and self.node[node_id].is_running()

    def node_ids(self) -> list[int]:
        """The ids of the cluster's nodes, ascending."""
        return sorted(self.node)

    def address_of(self, node_id: int) -> str:
        """``host:port`` of node ``node_id``'s PLAINTEXT listener."""
        return self[node_id].listener("PLAINTEXT")

    def api_versions(self, node_id: int) -> dict[int, tuple[int, int]]:
        """{api key: (min, max)} as node ``node_id`` answered ApiVersions when it started."""
        return self[node_id].api_versions

    def _kill_processes(self) -> None:
        """Kill every node (the data is thrown away, so no clean shutdown is owed); close()
        then removes the folder: data, logs and TLS material."""
        for node in list(self.node.values())[::-1]:
            try:
                node.kill()
            except Exception:  # noqa: BLE001 - best effort: the others still go
                pass
        self.node = {}

    def __repr__(self) -> str:
        state = ", ".join(f"{i}:{'up' if n.is_running() else 'down'}" for i, n in self.node.items())
        return f"KafkaCluster({self.version}, nodes={self.nodes}, [{state}], {self.bootstrap_servers or '-'})"

    # ------------------------------------------------------------------ client settings

    def client_settings(self, listener: str = "PLAINTEXT", **extra: Any) -> dict[str, Any]:
        """pyconsumer settings for ``listener`` (bootstrap servers, security protocol, the
        cluster CA for SSL); ``extra`` added as given."""
        settings: dict[str, Any] = {"bootstrap_servers": self.listener(listener)}
        if listener == GSSAPI_LISTENER:
            assert self.kerberos is not None
            settings.update(security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI",
                            sasl_kerberos_service_name=self.kerberos.service_name)
        elif listener == OAUTH_LISTENER:
            settings.update(security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER")
        elif listener != "PLAINTEXT":
            settings["security_protocol"] = listener
        if listener in ("SSL", "SASL_SSL"):
            settings["ssl_truststore_location"] = str(self.tls.ca)
        settings.update(extra)
        return settings

    # ------------------------------------------------------------------ admin

    def admin(self) -> Any:
        require_module("KafkaCluster.admin", "confluent_kafka")
        from confluent_kafka.admin import AdminClient  # test dependency only

        return AdminClient({"bootstrap.servers": self.bootstrap_servers})

    def create_topic(self, name: str, partitions: int = 1, *, replication_factor: int = 1,
                     config: Mapping[str, str] | None = None, timeout: float = 30.0,
                     replica_assignment: Sequence[Sequence[int]] | None = None) -> str:
        """Create a topic with confluent-kafka's AdminClient; wait until every partition has a
        leader (and, with replicas, a full ISR). ``replica_assignment``: each partition's
        replica node ids, the first its preferred leader (then ``replication_factor`` is
        the length of each)."""
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]  # test dependency only

        if replica_assignment is not None:
            replicas = [list(r) for r in replica_assignment]
            if len(replicas) != partitions or len({len(r) for r in replicas}) != 1:
                raise ValueError(f"replica_assignment needs {partitions} lists of one length, got {replicas}")
            replication_factor = len(replicas[0])
            new = NewTopic(name, num_partitions=partitions, replica_assignment=replicas,
                           config=dict(config or {}))
        else:
            new = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                           config=dict(config or {}))
        admin = self.admin()
        futures = admin.create_topics([new], operation_timeout=timeout, request_timeout=timeout)
        futures[name].result(timeout=timeout)
        wait_for_topic(admin, name, partitions, timeout)
        if replication_factor > 1:
            self.wait_for_isr(name, replication_factor, timeout=timeout)
        return name

    def wait_for_isr(self, topic: str, size: int, *, timeout: float = 30.0) -> None:
        admin = self.admin()
        deadline = time.monotonic() + timeout
        while True:
            md = admin.list_topics(topic=topic, timeout=5).topics[topic]
            if md.error is None and md.partitions and all(len(p.isrs) >= size for p in md.partitions.values()):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {topic!r}: ISRs {[p.isrs for p in md.partitions.values()]} "
                                   f"not all of size {size} after {timeout} s")
            time.sleep(0.1)

    def delete_topic(self, name: str, *, timeout: float = 30.0) -> None:
        admin = self.admin()
        admin.delete_topics([name], operation_timeout=timeout, request_timeout=timeout)[name].result(timeout=timeout)

    def broker_settings(self, node_id: int, *, timeout: float = 30.0) -> dict[str, str]:
        """Every setting broker ``node_id`` reports (DescribeConfigs), its defaults included."""
        from confluent_kafka.admin import ConfigResource, ResourceType  # type: ignore[attr-defined]  # test dependency only

        resource = ConfigResource(ResourceType.BROKER, str(node_id))
        admin = self.admin()          # held: a collected client cancels its pending answers
        entries = admin.describe_configs([resource], request_timeout=timeout)[resource].result(timeout=timeout)
        return {name: entry.value for name, entry in entries.items() if entry.value is not None}

    def alter_client_metrics(self, name: str, settings: Mapping[str, str | Sequence[str]],
                             *, timeout: float = 60.0) -> None:
        """Set the client-metrics resource ``name`` (KIP-714 subscriptions: ``metrics``,
        ``interval.ms``, ``match``; a list value is written as Kafka's ``[a,b]``) with Kafka's
        own kafka-configs tool (ConfigCommand: IncrementalAlterConfigs on CLIENT_METRICS)."""
        pairs = [f"{k}=[{','.join(v)}]" if not isinstance(v, str) else f"{k}={v}"
                 for k, v in settings.items()]
        self.kafka_configs("--alter", "--entity-type", "client-metrics", "--entity-name", name,
                           "--add-config", ",".join(pairs), timeout=timeout)

    def kafka_configs(self, *args: str, timeout: float = 60.0) -> str:
        """Run Kafka's kafka-configs tool (``kafka.admin.ConfigCommand``) against the cluster
        with ``args``; its output, or BrokerStartError with it when it fails."""
        java = require_tool("KafkaCluster.kafka_configs", "java")
        done = subprocess.run([java, "-Xmx256m", "-cp", f"{self.libs}/*", "kafka.admin.ConfigCommand",
                               "--bootstrap-server", self.bootstrap_servers, *args],
                              capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "KAFKA_LOG4J_OPTS": ""})
        if done.returncode != 0:
            raise BrokerStartError(f"kafka-configs {' '.join(args)} failed (exit "
                                   f"{done.returncode}): {(done.stdout + done.stderr).strip()[-2000:]}")
        return done.stdout

    def leaders(self, topic: str) -> dict[int, int]:
        """partition -> leader node id, from the cluster's metadata now."""
        md = self.admin().list_topics(topic=topic, timeout=10).topics[topic]
        return {p.id: p.leader for p in md.partitions.values()}

    def delete_records(self, offsets: Iterable[tuple[str, int, int]], *, timeout: float = 30.0) -> None:
        """Move each (topic, partition)'s log start offset to the given offset (DeleteRecords)."""
        from confluent_kafka import TopicPartition as CkTopicPartition  # test dependency only

        admin = self.admin()
        futures = admin.delete_records([CkTopicPartition(t, p, o) for t, p, o in offsets],
                                       request_timeout=timeout, operation_timeout=timeout)
        for f in futures.values():
            f.result(timeout=timeout)


