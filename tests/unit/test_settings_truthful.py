"""Every setting in the table either does something or says it does not.

* A setting marked implemented is read by code outside the config package's table (found by parsing the
  package's source); one marked "accepted, no effect" is not, and setting it to a value other
  than its default logs one WARNING naming it and the reason.
* The connection settings made to work here: socket.connection.setup.timeout.max.ms (the setup
  timeout doubles per failed attempt, Java ClusterConnectionStates), client.dns.lookup=
  resolve_canonical_bootstrap_servers_only (bootstrap hosts become their canonical names, so a
  TLS host name check sees them), ssl.protocol (a ceiling on the TLS version) and
  retry.backoff.max.ms (the metadata refresh backoff; a first value above it gives a constant
  maximum, as in Java >= 3.7).

Loopback sockets and in-memory TLS only; fake clocks where times matter.
"""
from __future__ import annotations

import ast
import logging
import os
import select
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import pyconsumer
import pyconsumer.config.table as config_module
from pyconsumer.config import ConsumerConfig, Setting
from pyconsumer.errors import ConfigurationError, KafkaTimeoutError
from pyconsumer.net import ConnectionState, NetworkClient
from pyconsumer.net.connection import BrokerConnection
from pyconsumer.config.ssl import build_ssl_context
from pyconsumer.protocol import ApiKey

from tests.peers import PeerConnection, ScriptedPeer
from tests.tls_memory import handshake as memory_handshake

PACKAGE = Path(pyconsumer.__file__).parent
#: the config package's table modules (once config.py): the settings table, its parsers and cross-field checks
#: (config/ssl.py and config/jaas.py came from net/ and are scanned like any reader)
CONFIG_TABLE = {PACKAGE / "config" / name for name in (
    "__init__.py", "parsers.py", "values.py", "table.py", "checks.py", "consumer_config.py")}
CERTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "certs")
CA = os.path.join(CERTS, "ca.pem")

#: the settings accepted with no effect, each with a value other than its default (and the
#: other settings that value needs); a new no-effect setting must be added here
NO_EFFECT_SAMPLES: dict[str, dict[str, Any]] = {
    "metadata.cluster.check.enable": {"metadata.cluster.check.enable": False},
    "sasl.oauthbearer.expected.audience": {"sasl.oauthbearer.expected.audience": "kafka-cluster"},
    "sasl.oauthbearer.expected.issuer": {"sasl.oauthbearer.expected.issuer": "http://127.0.0.1:1/idp"},
}
SECRETS = ("secret-trust", "secret-token")


def rows() -> dict[str, Setting[Any]]:
    return {s.name: s for s in ConsumerConfig.settings()}


# --------------------------------------------------------------------------- who reads what


def names_read_outside_config() -> set[str]:
    """Attribute names loaded (``cfg.fetch_max_bytes``) and string subscripts loaded
    (``cfg["fetch.max.bytes"]``) anywhere in the package except the config table's modules."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if path in CONFIG_TABLE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                found.add(node.attr)
            elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                  and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
                found.add(node.slice.value)
    return found


def config_properties() -> dict[str, set[str]]:
    """Setting name -> ConsumerConfig properties that read it (``offset_reset_strategy``
    reads auto.offset.reset), so reading the property counts as reading the setting."""
    tree = ast.parse((PACKAGE / "config" / "consumer_config.py").read_text(encoding="utf-8"))
    out: dict[str, set[str]] = {}
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name == "ConsumerConfig"):
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            if not any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    out.setdefault(node.value, set()).add(fn.name)
    return out


def is_read(setting: Setting[Any], found: set[str], aliases: dict[str, set[str]]) -> bool:
    return bool({setting.attr, setting.name} & found or aliases.get(setting.name, set()) & found)


def test_every_implemented_setting_is_read_outside_config() -> None:
    found, aliases = names_read_outside_config(), config_properties()
    unread = [s.name for s in ConsumerConfig.settings() if s.implemented
              and not is_read(s, found, aliases)]
    assert unread == [], f"implemented but read by nothing outside the config table: {unread}"


def test_no_effect_settings_are_exactly_the_sampled_ones_and_read_by_nothing() -> None:
    no_effect = {s.name for s in ConsumerConfig.settings() if not s.implemented}
    assert no_effect == set(NO_EFFECT_SAMPLES)
    found, aliases = names_read_outside_config(), config_properties()
    # a setting someone started to read should lose its mark (and its warning)
    read = sorted(n for n in no_effect if is_read(rows()[n], found, aliases))
    assert read == []
    for name in no_effect:
        row = rows()[name]
        assert row.no_effect and f"accepted, no effect: {row.no_effect}" in (row.__doc__ or "")


# --------------------------------------------------------------------------- warnings


@pytest.fixture()
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(config_module, "_NO_EFFECT_WARNED", set())
    yield


def no_effect_messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "pyconsumer.config" and r.levelno == logging.WARNING
            and "has no effect" in r.getMessage()]


@pytest.mark.parametrize("name", sorted(NO_EFFECT_SAMPLES))
def test_a_no_effect_setting_warns_once_when_set(
        name: str, fresh_warnings: None, caplog: pytest.LogCaptureFixture) -> None:
    settings = {"bootstrap.servers": "127.0.0.1:9092", **NO_EFFECT_SAMPLES[name]}
    with caplog.at_level(logging.WARNING, logger="pyconsumer.config"):
        ConsumerConfig(**settings)
        # snake_case spelling, a second consumer, with_overrides: no second warning
        again = ConsumerConfig(**{k.replace(".", "_"): v for k, v in settings.items()})
        again.with_overrides(client_id="x")
    reason = rows()[name].no_effect
    assert no_effect_messages(caplog) == [
        f"setting {name} is accepted but has no effect in pyconsumer: {reason}"]
    assert not any(secret in caplog.text for secret in SECRETS)


@pytest.mark.parametrize("name", sorted(NO_EFFECT_SAMPLES))
def test_a_no_effect_setting_left_at_its_default_does_not_warn(
        name: str, fresh_warnings: None, caplog: pytest.LogCaptureFixture) -> None:
    row = rows()[name]
    with caplog.at_level(logging.WARNING, logger="pyconsumer.config"):
        ConsumerConfig(bootstrap_servers="127.0.0.1:9092", **{name: row.default})
    assert no_effect_messages(caplog) == []


def test_a_refused_config_does_not_warn(fresh_warnings: None,
                                        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pyconsumer.config"):
        with pytest.raises(ConfigurationError, match="needs sasl.username and sasl.password"):
            ConsumerConfig(bootstrap_servers="127.0.0.1:9092", security_protocol="SASL_SSL",
                           sasl_mechanism="PLAIN")
        assert no_effect_messages(caplog) == []
        ConsumerConfig(bootstrap_servers="127.0.0.1:9092", metadata_cluster_check_enable=False)
    assert [m.split(":")[0] for m in no_effect_messages(caplog)] == [
        "setting metadata.cluster.check.enable is accepted but has no effect in pyconsumer"]


def test_implemented_settings_do_not_warn(
        fresh_warnings: None, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pyconsumer.config"):
        ConsumerConfig(bootstrap_servers="127.0.0.1:9092",
                       client_dns_lookup="resolve_canonical_bootstrap_servers_only",
                       socket_connection_setup_timeout_max_ms=60000, ssl_protocol="TLSv1.2",
                       retry_backoff_max_ms=5000, ssl_keystore_password="pw",
                       bootstrap_resolve_timeout_ms=5000)
        # the Java store settings are read (tests/unit/test_keystores.py)
        ConsumerConfig(bootstrap_servers="127.0.0.1:9092", ssl_truststore_type="PKCS12",
                       ssl_truststore_location="ts.p12", ssl_truststore_password="secret-trust",
                       ssl_keystore_type="pem")
        # SASL is implemented: its settings warn of nothing (and never print the password)
        ConsumerConfig(bootstrap_servers="127.0.0.1:9092", security_protocol="SASL_SSL",
                       sasl_mechanism="SCRAM-SHA-512", sasl_username="u",
                       sasl_password="secret-sasl")
        ConsumerConfig(bootstrap_servers="127.0.0.1:9092", security_protocol="SASL_PLAINTEXT",
                       sasl_mechanism="PLAIN",
                       sasl_jaas_config="org.apache.kafka.common.security.plain."
                       'PlainLoginModule required username="u" password="secret-jaas";')
    assert no_effect_messages(caplog) == []
    assert not any(s in caplog.text for s in ("secret-sasl", "secret-jaas", "secret-trust"))


# --------------------------------------------------------------------------- setup timeout


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pump(conn: BrokerConnection, done: Callable[[], bool], limit_s: float = 5.0) -> None:
    """Run the connection's socket events (real I/O, fake clock) until ``done()``."""
    end = time.monotonic() + limit_s
    while not done():
        assert time.monotonic() < end, f"stuck in {conn.state}"
        assert conn.sock is not None, conn.last_error
        r, w, _ = select.select([conn.sock], [conn.sock] if conn.wants_write() else [], [], 0.1)
        if w:
            conn.on_writable()
        if r and conn.sock is not None:
            conn.on_readable()


def silent(conn: PeerConnection) -> None:
    conn.hold()                           # takes the ClientHello, never answers


def tls_then_silent(conn: PeerConnection) -> None:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(CERTS, "broker.pem"), os.path.join(CERTS, "broker.key"))
    conn.sock = ctx.wrap_socket(conn.sock, server_side=True)
    conn.hold()                           # TLS up, ApiVersions never answered


def deadline_of(conn: BrokerConnection) -> float:
    deadline = conn.next_deadline()
    assert deadline is not None
    return deadline


def setup_timeout_ms(conn: BrokerConnection, clock: Clock) -> float:
    return (deadline_of(conn) - clock.now) * 1000.0


def test_the_setup_timeout_doubles_per_failed_attempt_up_to_the_maximum() -> None:
    clock = Clock()
    with ScriptedPeer([silent] * 5 + [tls_then_silent]) as peer:
        client = NetworkClient(ConsumerConfig(
            bootstrap_servers=peer.bootstrap, security_protocol="SSL",
            ssl_truststore_location=CA, socket_connection_setup_timeout_ms=1000,
            socket_connection_setup_timeout_max_ms=5000), clock=clock)
        try:
            conn = client._connection(-1)
            # Java: 1000 * 2^attempt with +-20 % jitter, never above the maximum
            for attempt, (lo, hi) in enumerate([(800, 1200), (1600, 2400), (3200, 4800),
                                                (4000, 5000), (4000, 5000)]):
                conn.connect()
                pump(conn, lambda: conn.state is ConnectionState.AUTHENTICATING)
                timeout = conn.setup_timeout_ms
                assert lo <= timeout <= hi, (attempt, timeout)
                assert setup_timeout_ms(conn, clock) == pytest.approx(timeout)
                clock.now = deadline_of(conn)
                conn.check_timeouts()
                assert conn.state is ConnectionState.DISCONNECTED
                assert isinstance(conn.last_error, KafkaTimeoutError)
                assert str(conn.last_error) == (
                    "connection setup to node -1 (" + peer.bootstrap + ") did not finish "
                    "within socket.connection.setup.timeout.ms=1000 (authenticating); this "
                    f"attempt had {timeout:.0f} ms (the timeout doubles per failed attempt up "
                    "to socket.connection.setup.timeout.max.ms=5000); the TLS handshake got no "
                    "answer: is security.protocol=SSL right for this listener? (a plaintext "
                    "Kafka listener takes the handshake for the start of a huge request and "
                    "waits for the rest)")
                assert conn.setup_failures == attempt + 1
            # the sixth connection gets through TLS: the next attempt starts from 1000 again
            conn.connect()
            assert 4000 <= setup_timeout_ms(conn, clock) <= 5000
            pump(conn, lambda: conn.state is ConnectionState.NEGOTIATING)
            assert conn.setup_failures == 0
            clock.now = deadline_of(conn)
            conn.check_timeouts()                       # ApiVersions never came
            assert "(negotiating)" in str(conn.last_error) and conn.setup_failures == 0
            conn.connect()
            assert 800 <= setup_timeout_ms(conn, clock) <= 1200
        finally:
            client.close()


def test_a_maximum_below_the_first_timeout_is_a_constant_timeout(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pyconsumer.config"):
        config = ConsumerConfig(bootstrap_servers=f"127.0.0.1:{free_port()}",
                                socket_connection_setup_timeout_ms=500,
                                socket_connection_setup_timeout_max_ms=300)
    assert ("socket.connection.setup.timeout.ms (500) is greater than "
            "socket.connection.setup.timeout.max.ms (300): a static 300 ms is used") in caplog.text
    clock = Clock()
    client = NetworkClient(config, clock=clock)
    try:
        conn = client._connection(-1)
        for attempt in range(3):
            conn.connect()            # nothing listens, but the refusal is never read
            assert conn.setup_timeout_ms == 300                # no jitter, no growth
            assert setup_timeout_ms(conn, clock) == pytest.approx(300)
            clock.now = deadline_of(conn)
            conn.check_timeouts()
            assert str(conn.last_error) == (
                f"connection setup to {conn.describe} did not finish within "
                "socket.connection.setup.timeout.ms=500 (connecting); capped at "
                "socket.connection.setup.timeout.max.ms=300")
            assert conn.setup_failures == attempt + 1
    finally:
        client.close()


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


# --------------------------------------------------------------------------- retry backoff


def test_retry_backoff_max_ms_bounds_the_metadata_refresh_backoff() -> None:
    clock = Clock()
    client = NetworkClient(ConsumerConfig(bootstrap_servers="127.0.0.1:1", retry_backoff_ms=100,
                                          retry_backoff_max_ms=400), clock=clock)
    try:
        waits = []
        for _ in range(5):
            client.metadata.failed_update()
            waits.append(client.metadata.time_to_next_update_ms())
            clock.now += waits[-1] / 1000.0
        for wait, base in zip(waits, (100, 200, 400, 400, 400)):
            assert base * 0.8 - 1e-6 <= wait <= min(base * 1.2, 400) + 1e-6, waits
    finally:
        client.close()


def test_retry_backoff_above_its_maximum_is_a_constant_maximum() -> None:
    clock = Clock()
    client = NetworkClient(ConsumerConfig(bootstrap_servers="127.0.0.1:1", retry_backoff_ms=500,
                                          retry_backoff_max_ms=200), clock=clock)
    try:
        for _ in range(3):
            client.metadata.failed_update()
            # Java >= 3.7: constant retry.backoff.max.ms, no jitter (it was 500 before)
            assert client.metadata.time_to_next_update_ms() == pytest.approx(200, abs=1e-6)
            clock.now += 0.2
    finally:
        client.close()


# --------------------------------------------------------------------------- client.dns.lookup


@pytest.fixture()
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """kafka.example -> 10.0.0.1, 10.0.0.2 (reverse: b1.kafka.internal, none);
    b1.kafka.internal -> 10.0.0.1; alias.example -> 127.0.0.1 (reverse: localhost)."""
    forward = {"kafka.example": ["10.0.0.1", "10.0.0.2"], "b1.kafka.internal": ["10.0.0.1"],
               "10.0.0.2": ["10.0.0.2"], "alias.example": ["127.0.0.1"],
               "localhost": ["127.0.0.1"], "lost.example": ["10.0.0.9"]}
    reverse = {"10.0.0.1": "b1.kafka.internal", "127.0.0.1": "localhost",
               "10.0.0.9": "gone.kafka.internal"}
    calls: list[str] = []

    def getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        calls.append(host)
        if host not in forward:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in forward[host]]

    def gethostbyaddr(ip: str) -> tuple[str, list[str], list[str]]:
        if ip not in reverse:
            raise socket.herror(1, "Unknown host")
        return reverse[ip], [], [ip]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "gethostbyaddr", gethostbyaddr)
    return {"calls": calls}


def bootstrap_of(servers: str, lookup: str) -> list[tuple[int, str, int]]:
    client = NetworkClient(ConsumerConfig(bootstrap_servers=servers, client_dns_lookup=lookup))
    try:
        return [(n.node_id, n.host, n.port) for n in client.metadata.bootstrap_nodes]
    finally:
        client.close()


def test_canonical_bootstrap_servers(fake_dns: dict[str, Any],
                                     caplog: pytest.LogCaptureFixture) -> None:
    canonical = "resolve_canonical_bootstrap_servers_only"
    # each address becomes its canonical name; one without a reverse name stays an address
    assert bootstrap_of("kafka.example:9092", canonical) == [
        (-1, "b1.kafka.internal", 9092), (-2, "10.0.0.2", 9092)]
    # use_all_dns_ips keeps the name and resolves nothing until a connection is made
    fake_dns["calls"].clear()
    assert bootstrap_of("kafka.example:9092", "use_all_dns_ips") == [(-1, "kafka.example", 9092)]
    assert fake_dns["calls"] == []
    # a canonical name that does not resolve is skipped with a warning
    with caplog.at_level(logging.WARNING, logger="pyconsumer.net.transport"):
        assert bootstrap_of("lost.example:9092,kafka.example:9093", canonical) == [
            (-1, "b1.kafka.internal", 9093), (-2, "10.0.0.2", 9093)]
    assert ("bootstrap.servers entry lost.example:9092: canonical name gone.kafka.internal of "
            "10.0.0.9 does not resolve") in caplog.text
    with pytest.raises(ConfigurationError, match=r"^no bootstrap.servers entry resolved to a "
                       r"usable canonical name \(client.dns.lookup="):
        bootstrap_of("lost.example:9092", canonical)
    with pytest.raises(ConfigurationError, match=r"^bootstrap.servers entry nowhere.example:9092 "
                       r"does not resolve \(client.dns.lookup=resolve_canonical_bootstrap_"
                       r"servers_only\): Name or service not known"):
        bootstrap_of("nowhere.example:9092", canonical)


def test_a_canonical_bootstrap_name_passes_the_tls_host_name_check(fake_dns: dict[str, Any]) -> None:
    """The broker's certificate names localhost, not the alias given as bootstrap server:
    resolved to its canonical name (Java's reason for this mode) the check passes."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(os.path.join(CERTS, "broker.pem"), os.path.join(CERTS, "broker.key"))

    def answers(conn: PeerConnection) -> None:
        conn.answer_api_versions()
        conn.serve({ApiKey.METADATA: lambda version, body: conn.one_partition_metadata("secure")})

    with ScriptedPeer([answers], tls=server) as peer:
        client = NetworkClient(ConsumerConfig(
            bootstrap_servers=f"alias.example:{peer.port}", security_protocol="SSL",
            ssl_truststore_location=CA, request_timeout_ms=3000, default_api_timeout_ms=3000,
            client_dns_lookup="resolve_canonical_bootstrap_servers_only"))
        try:
            assert [n.host for n in client.metadata.bootstrap_nodes] == ["localhost"]
            md = client.update_metadata(["secure"], timeout_ms=3000)
            assert [p.partition for p in md.partitions_for("secure") or []] == [0]
            assert peer.handshake_errors == []
        finally:
            client.close()


# --------------------------------------------------------------------------- ssl.protocol


def client_context(**settings: Any) -> ssl.SSLContext:
    ctx = build_ssl_context(ConsumerConfig(bootstrap_servers="localhost:9093",
                                           security_protocol="SSL", ssl_truststore_location=CA,
                                           **settings))
    assert ctx is not None
    return ctx


def handshake(client: ssl.SSLContext, min_version: ssl.TLSVersion) -> str:
    """A TLS handshake in memory against the test broker certificate; the version agreed."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(os.path.join(CERTS, "broker.pem"), os.path.join(CERTS, "broker.key"))
    server.minimum_version = min_version
    c, _ = memory_handshake(client, server, rounds=10)
    return str(c.version())


def test_ssl_protocol_caps_the_tls_version() -> None:
    assert handshake(client_context(), ssl.TLSVersion.TLSv1_2) == "TLSv1.3"
    capped = client_context(ssl_protocol="TLSv1.2")
    assert capped.maximum_version is ssl.TLSVersion.TLSv1_2
    assert handshake(capped, ssl.TLSVersion.TLSv1_2) == "TLSv1.2"
    with pytest.raises(ssl.SSLError):        # a TLSv1.3-only broker: Java refuses it too
        handshake(capped, ssl.TLSVersion.TLSv1_3)
    assert client_context(ssl_protocol="TLS").maximum_version is ssl.TLSVersion.TLSv1_3
    with pytest.raises(ConfigurationError,
                       match="^ssl.protocol=TLSv1.2 allows none of ssl.enabled.protocols=TLSv1.3$"):
        client_context(ssl_protocol="TLSv1.2", ssl_enabled_protocols="TLSv1.3")
