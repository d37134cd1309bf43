"""ConsumerConfig: defaults, both spellings, validation and the cross-setting rules.

JAVA_DEFAULTS is written from the Java KafkaConsumer's documented defaults (ConsumerConfig and
CommonClientConfigs of Apache Kafka 4.x), not copied from pyconsumer's table.
"""
from __future__ import annotations

import ssl
from typing import Any

import pytest

from pyconsumer.config import JAVA_ONLY_SETTINGS, ConsumerConfig, OffsetResetStrategy
from pyconsumer.errors import ConfigurationError

BOOT = {"bootstrap.servers": "localhost:9092"}

# Java name -> Java default, as the Java consumer applies it (parsed form).
JAVA_DEFAULTS: dict[str, Any] = {
    "client.dns.lookup": "use_all_dns_ips",
    "bootstrap.resolve.timeout.ms": 0,
    "client.rack": "",
    "metadata.max.age.ms": 300_000,
    "metadata.recovery.strategy": "rebootstrap",
    "metadata.recovery.rebootstrap.trigger.ms": 300_000,
    "metadata.cluster.check.enable": True,
    "request.timeout.ms": 30_000,
    "default.api.timeout.ms": 60_000,
    "connections.max.idle.ms": 540_000,
    "reconnect.backoff.ms": 50,
    "reconnect.backoff.max.ms": 1000,
    "retry.backoff.ms": 100,
    "retry.backoff.max.ms": 1000,
    "socket.connection.setup.timeout.ms": 10_000,
    "socket.connection.setup.timeout.max.ms": 30_000,
    "send.buffer.bytes": 128 * 1024,
    "sasl.kerberos.service.name": None,
    "sasl.oauthbearer.token.endpoint.url": None,
    "sasl.oauthbearer.client.credentials.client.id": None,
    "sasl.oauthbearer.client.credentials.client.secret": None,
    "sasl.oauthbearer.scope": None,
    "sasl.oauthbearer.scope.claim.name": "scope",
    "sasl.oauthbearer.sub.claim.name": "sub",
    "sasl.oauthbearer.header.urlencode": False,
    "sasl.oauthbearer.jwt.retriever.class":
        "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
    "sasl.oauthbearer.assertion.algorithm": "RS256",
    "sasl.oauthbearer.assertion.private.key.file": None,
    "sasl.oauthbearer.assertion.private.key.passphrase": None,
    "sasl.oauthbearer.assertion.template.file": None,
    "sasl.oauthbearer.assertion.file": None,
    "sasl.oauthbearer.assertion.claim.aud": None,
    "sasl.oauthbearer.assertion.claim.iss": None,
    "sasl.oauthbearer.assertion.claim.sub": None,
    "sasl.oauthbearer.assertion.claim.exp.seconds": 300,
    "sasl.oauthbearer.assertion.claim.nbf.seconds": 60,
    "sasl.oauthbearer.assertion.claim.jti.include": False,
    "sasl.oauthbearer.expected.audience": None,
    "sasl.oauthbearer.expected.issuer": None,
    "sasl.login.connect.timeout.ms": None,
    "sasl.login.read.timeout.ms": None,
    "sasl.login.retry.backoff.ms": 100,
    "sasl.login.retry.backoff.max.ms": 10_000,
    "group.id": None,
    "group.instance.id": None,
    "group.protocol": "classic",
    "group.remote.assignor": None,
    "session.timeout.ms": 45_000,
    "heartbeat.interval.ms": 3000,
    "max.poll.interval.ms": 300_000,
    "partition.assignment.strategy": ["range", "cooperative-sticky"],
    "auto.commit.interval.ms": 5000,
    "auto.offset.reset": "latest",
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 50 * 1024 * 1024,
    "fetch.max.wait.ms": 500,
    "max.partition.fetch.bytes": 1024 * 1024,
    "max.poll.records": 500,
    "isolation.level": "read_uncommitted",
    "check.crcs": True,
    "exclude.internal.topics": True,
    "allow.auto.create.topics": True,
    "security.protocol": "PLAINTEXT",
    "ssl.protocol": "TLSv1.3",
    "ssl.enabled.protocols": ["TLSv1.2", "TLSv1.3"],
    "ssl.cipher.suites": [],
    "ssl.endpoint.identification.algorithm": "https",
    "ssl.truststore.type": "JKS",
    "ssl.truststore.location": None,
    "ssl.truststore.certificates": None,
    "ssl.truststore.password": None,
    "ssl.keystore.type": "JKS",
    "ssl.keystore.location": None,
    "ssl.keystore.password": None,
    "ssl.key.password": None,
    "ssl.keystore.key": None,
    "ssl.keystore.certificate.chain": None,
    "sasl.mechanism": "GSSAPI",
    "sasl.jaas.config": None,
    "metrics.sample.window.ms": 30_000,
    "metrics.num.samples": 2,
    "interceptor.classes": [],
}
# Java settings whose default depends on other settings or differs on purpose (tested below)
SPECIAL = {"bootstrap.servers", "client.id", "enable.auto.commit", "key.deserializer",
           "value.deserializer", "receive.buffer.bytes"}
PYCONSUMER_DEFAULTS: dict[str, Any] = {
    "max.in.flight.requests.per.connection": 5,
    "max.response.size": 256 * 1024 * 1024,
    "ssl.context": None,
    "sasl.username": None,
    "sasl.password": None,
    "sasl.oauth.token.provider": None,
    "sasl.kerberos.principal": None,
    "sasl.kerberos.keytab": None,
    "interceptors": [],
    "decode.threads": 0,
    # typed values (issue 25)
    "value.format": "binary", "key.format": "binary", "value.schema": None, "key.schema": None,
    "value.subject": None, "key.subject": None, "value.avro.framing": "confluent",
    "key.avro.framing": "confluent", "value.subject.name.strategy": None,
    "value.protobuf.framing": None, "key.protobuf.framing": None,
    "value.protobuf.message": None, "key.protobuf.message": None,
    "value.protobuf.descriptor.file": None, "key.protobuf.descriptor.file": None,
    "value.protobuf.enums.as.ints": False, "key.protobuf.enums.as.ints": False,
    "value.protobuf.emit.default.values": False, "key.protobuf.emit.default.values": False,
    "key.subject.name.strategy": None, "bad.records.mode": "PERMISSIVE",
    "corrupt.record.column": "_corrupt_record", "schema.registry.url": None,
    "schema.registry.basic.auth.user.info": None,
    "schema.registry.basic.auth.credentials.source": None,
    "schema.registry.bearer.auth.token": None,
    "schema.registry.bearer.auth.credentials.source": None,
    "schema.registry.bearer.auth.issuer.endpoint.url": None,
    "schema.registry.bearer.auth.client.id": None,
    "schema.registry.bearer.auth.client.secret": None,
    "schema.registry.bearer.auth.scope": None,
    "schema.registry.bearer.auth.scope.claim.name": None,
    "schema.registry.bearer.auth.sub.claim.name": None,
    "schema.registry.bearer.auth.logical.cluster": None,
    "schema.registry.bearer.auth.identity.pool.id": None,
    "schema.registry.ssl.ca.location": None, "schema.registry.ssl.certificate.location": None,
    "schema.registry.ssl.key.location": None, "schema.registry.ssl.key.password": None,
    "schema.registry.timeout": None, "schema.registry.max.retries": None,
    "schema.registry.retries.wait.ms": None, "schema.registry.retries.max.wait.ms": None,
}


def make(**settings: Any) -> ConsumerConfig:
    if "bootstrap_servers" in settings or "bootstrap.servers" in settings:
        return ConsumerConfig(**settings)
    return ConsumerConfig(**{**BOOT, **settings})


def raises(match: str, **settings: Any) -> ConfigurationError:
    with pytest.raises(ConfigurationError, match=match) as info:
        make(**settings)
    return info.value


# --------------------------------------------------------------------------- defaults


def test_table_covers_exactly_the_expected_settings() -> None:
    java = {s.name for s in ConsumerConfig.settings() if s.java}
    ours = {s.name for s in ConsumerConfig.settings() if not s.java}
    assert java == set(JAVA_DEFAULTS) | SPECIAL
    assert ours == set(PYCONSUMER_DEFAULTS)


def test_receive_buffer_defaults_to_the_os_not_javas_64_kib() -> None:
    # Java's 65536 pins SO_RCVBUF and so the TCP window at 64 KiB: the broker stalls on a
    # multi-megabyte Fetch response while the consumer decodes the last one (prefetch gains
    # nothing); -1 leaves it to the OS's autotuning, as librdkafka does. Java's value still works.
    assert make()["receive.buffer.bytes"] == -1
    assert make(receive_buffer_bytes=65536).receive_buffer_bytes == 65536


@pytest.mark.parametrize("name", sorted(JAVA_DEFAULTS))
def test_default_equals_java(name: str) -> None:
    cfg = make()
    assert cfg[name] == JAVA_DEFAULTS[name]
    assert getattr(cfg, name.replace(".", "_")) == JAVA_DEFAULTS[name]


@pytest.mark.parametrize("name", sorted(PYCONSUMER_DEFAULTS))
def test_pyconsumer_defaults(name: str) -> None:
    assert make()[name] == PYCONSUMER_DEFAULTS[name]


def test_special_defaults() -> None:
    cfg = make()
    assert cfg.key_deserializer is None and cfg.value_deserializer is None  # raw bytes
    assert cfg.enable_auto_commit is False  # no group.id: Java turns auto commit off
    assert make(group_id="g").enable_auto_commit is True
    assert cfg.client_id.startswith("consumer-null-")


def test_bootstrap_servers_is_required() -> None:
    with pytest.raises(ConfigurationError, match="Missing required setting bootstrap.servers"):
        ConsumerConfig(group_id="g")


def test_settings_table_rows() -> None:
    rows = {s.name: s for s in ConsumerConfig.settings()}
    row = rows["fetch.max.wait.ms"]
    assert (row.attr, row.default, row.type, row.unit) == ("fetch_max_wait_ms", 500, "int", "ms")
    assert row.validator.accepted == "an integer >= 0"
    assert row.doc
    assert "fetch.max.wait.ms" in (row.__doc__ or "") and "default 500" in (row.__doc__ or "")
    assert rows["bootstrap.servers"].required
    for setting in rows.values():
        assert setting.doc and setting.validator.accepted
        assert ConsumerConfig.__dict__[setting.attr] is setting
        if setting.name.endswith(".ms"):
            assert setting.unit == "ms", setting.name


# --------------------------------------------------------------------------- spellings and access


@pytest.mark.parametrize(
    ("name", "raw", "parsed"),
    [
        ("fetch.max.wait.ms", 250, 250),
        ("max.poll.records", "7", 7),
        ("check.crcs", "false", False),
        ("isolation.level", "read_committed", "read_committed"),
        ("partition.assignment.strategy", "roundrobin", ["roundrobin"]),
    ],
)
def test_both_spellings(name: str, raw: Any, parsed: Any) -> None:
    java = make(**{name: raw})
    snake = make(**{name.replace(".", "_"): raw})
    assert java[name] == snake[name] == parsed
    assert getattr(java, name.replace(".", "_")) == parsed
    assert name in java.explicitly_set and name in snake.explicitly_set


def test_both_spellings_of_one_key_is_an_error() -> None:
    with pytest.raises(ConfigurationError, match="given twice.*'fetch_min_bytes'"):
        ConsumerConfig(**{**BOOT, "fetch.min.bytes": 1, "fetch_min_bytes": 1})


def test_getitem_and_as_dict() -> None:
    cfg = make(group_id="g", max_poll_records=10)
    assert cfg["bootstrap.servers"] == [("localhost", 9092)]
    assert cfg["bootstrap_servers"] == [("localhost", 9092)]
    as_dict = cfg.as_dict()
    assert as_dict["max.poll.records"] == 10
    assert set(as_dict) == {s.name for s in ConsumerConfig.settings()}
    with pytest.raises(KeyError, match="max_poll_record"):
        cfg["max_poll_record"]


def test_config_is_immutable_and_with_overrides() -> None:
    cfg = make(group_id="g", max_poll_records=10)
    with pytest.raises(AttributeError, match="immutable"):
        cfg.max_poll_records = 5  # type: ignore[misc]
    other = cfg.with_overrides(max_poll_records=20, **{"fetch.min.bytes": 3})
    assert (other.max_poll_records, other.fetch_min_bytes, other.group_id) == (20, 3, "g")
    assert cfg.max_poll_records == 10


def test_repr_hides_passwords() -> None:
    cfg = make(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
               sasl_username="u", sasl_password="s3cret")
    assert "s3cret" not in repr(cfg)
    assert "'sasl.username': 'u'" in repr(cfg)
    jaas = make(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                sasl_jaas_config='org.apache.kafka.common.security.scram.ScramLoginModule '
                                 'required username="u" password="jaas-s3cret";')
    assert "jaas-s3cret" not in repr(jaas) and "jaas-s3cret" not in str(jaas)


# --------------------------------------------------------------------------- unknown names


def test_unknown_snake_name_suggests_close_match() -> None:
    err = raises(r"Unknown setting 'max_poll_record'; did you mean max_poll_records", max_poll_record=5)
    assert "max_poll_records" in str(err)


def test_unknown_java_name_suggests_close_match() -> None:
    with pytest.raises(ConfigurationError, match=r"did you mean fetch\.max\.wait\.ms"):
        ConsumerConfig(**{**BOOT, "fetch.max.wiat.ms": 5})


def test_unknown_name_without_a_close_match() -> None:
    with pytest.raises(ConfigurationError, match=r"^Unknown setting 'zzz'$"):
        make(zzz=1)


# --------------------------------------------------------------------------- types and ranges


@pytest.mark.parametrize(
    ("name", "raw", "match"),
    [
        ("max.poll.records", "abc", "expected a 32-bit integer"),
        ("max.poll.records", 1.5, "expected a 32-bit integer"),
        ("max.poll.records", True, "a boolean is not an integer"),
        ("max.poll.records", 0, r"out of range; accepted: an integer >= 1"),
        ("max.poll.records", 2**31, "does not fit a 32-bit integer"),
        ("metadata.max.age.ms", 2**63, "does not fit a 64-bit integer"),
        ("send.buffer.bytes", -2, r"accepted: an integer >= -1"),
        ("request.timeout.ms", -1, "out of range"),
        ("check.crcs", "yes", r"expected a boolean; accepted: True/False or 'true'/'false'"),
        ("check.crcs", 1, "expected a boolean"),
        ("client.id", 5, "expected a string, got int"),
        ("ssl.enabled.protocols", 5, "comma-separated string or a list"),
        ("ssl.enabled.protocols", "TLSv1.2,SSLv3", "entry 'SSLv3' is not accepted"),
        ("ssl.enabled.protocols", "", "must not be empty"),
        ("ssl.cipher.suites", "A,A", "duplicate"),
        ("max.response.size", 2**31, "does not fit"),
    ],
)
def test_bad_values_name_setting_value_and_accepted(name: str, raw: Any, match: str) -> None:
    err = raises(match, **{name: raw})
    assert f"setting {name} ({name.replace('.', '_')})" in str(err)
    assert repr(raw) in str(err)


def test_numeric_strings_and_boolean_strings() -> None:
    cfg = make(**{"max.poll.records": " 500 ", "metadata.max.age.ms": "1000",
                  "check.crcs": "FALSE", "exclude.internal.topics": "true"})
    assert (cfg.max_poll_records, cfg.metadata_max_age_ms) == (500, 1000)
    assert (cfg.check_crcs, cfg.exclude_internal_topics) == (False, True)
    assert make(allow_auto_create_topics=False).allow_auto_create_topics is False


def test_strings_are_trimmed_like_java() -> None:
    assert make(client_rack=" r1 ").client_rack == "r1"


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("group.protocol", "CONSUMER", "consumer"),
        ("metadata.recovery.strategy", "NONE", "none"),
        ("security.protocol", "ssl", "SSL"),
        ("client.dns.lookup", "resolve_canonical_bootstrap_servers_only",
         "resolve_canonical_bootstrap_servers_only"),
    ],
)
def test_enums(name: str, raw: str, expected: str) -> None:
    assert make(**{name: raw})[name] == expected


@pytest.mark.parametrize(
    ("name", "raw", "accepted"),
    [
        ("isolation.level", "READ_COMMITTED", "one of read_committed, read_uncommitted"),
        ("group.protocol", "modern", "one of classic, consumer"),
        ("security.protocol", "TLS", "one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
        ("client.dns.lookup", "default", "use_all_dns_ips"),
        ("metadata.recovery.strategy", "retry", "none, rebootstrap"),
    ],
)
def test_bad_enums(name: str, raw: str, accepted: str) -> None:
    err = raises("not one of the accepted values", **{name: raw})
    assert accepted in str(err)


# --------------------------------------------------------------------------- auto.offset.reset


@pytest.mark.parametrize(
    ("raw", "strategy"),
    [
        ("earliest", OffsetResetStrategy("earliest")),
        ("latest", OffsetResetStrategy("latest")),
        ("none", OffsetResetStrategy("none")),
        ("by_duration:PT1H", OffsetResetStrategy("by_duration", 3_600_000)),
        ("by_duration:P1DT2H3M4.5S", OffsetResetStrategy("by_duration", 93_784_500)),
        ("by_duration:PT0.001S", OffsetResetStrategy("by_duration", 1)),
        ("by_duration:pt5m", OffsetResetStrategy("by_duration", 300_000)),
        ("by_duration:P0D", OffsetResetStrategy("by_duration", 0)),
    ],
)
def test_auto_offset_reset(raw: str, strategy: OffsetResetStrategy) -> None:
    cfg = make(auto_offset_reset=raw)
    assert cfg.auto_offset_reset == raw
    assert cfg.offset_reset_strategy == strategy


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ("earlist", "unknown strategy"),
        ("EARLIEST", "unknown strategy"),  # Java compares lower-case names exactly
        ("by_duration", "duration> part of by_duration:<duration> is missing"),
        ("by_duration:-PT1H", "negative duration"),
        ("by_duration:PT-5S", "negative duration"),
        ("by_duration:1h", "not an ISO-8601 duration"),
        ("by_duration:P1Y", "not an ISO-8601 duration"),
        ("by_duration:PT", "not an ISO-8601 duration"),
        ("by_duration:P", "not an ISO-8601 duration"),
    ],
)
def test_bad_auto_offset_reset(raw: str, match: str) -> None:
    err = raises(match, auto_offset_reset=raw)
    assert "earliest, latest, none, by_duration:<ISO-8601 duration" in str(err)


# --------------------------------------------------------------------------- bootstrap.servers


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ("h1:9092", [("h1", 9092)]),
        ("h1:9092, h2:9093", [("h1", 9092), ("h2", 9093)]),
        (["h1:9092", "10.0.0.1:19092"], [("h1", 9092), ("10.0.0.1", 19092)]),
        ("[::1]:9092", [("::1", 9092)]),
        ("[fe80::1%eth0]:9092", [("fe80::1%eth0", 9092)]),
        ("PLAINTEXT://broker:9092", [("broker", 9092)]),
        ("h1:9092,,h2:1", [("h1", 9092), ("h2", 1)]),
        ("::1:9092", [("::1", 9092)]),  # bare IPv6: the last colon separates the port, as Java
    ],
)
def test_bootstrap_parsing(raw: Any, parsed: list[tuple[str, int]]) -> None:
    assert make(bootstrap_servers=raw).bootstrap_servers == parsed


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ("broker", "entry 'broker' has no port"),
        ("h1:9092,broker2", "entry 'broker2' has no port"),
        ("[::1]", r"entry '\[::1\]' has no port"),
        ("h:70000", "port 70000 outside 1..65535"),
        ("h:0", "port 0 outside"),
        (":9092", "has no host"),
        ("h:port", "entry 'h:port' is not host:port"),
        ("h:1,h:1", "given twice"),
        ("", "no host:port given"),
        ([], "no host:port given"),
        (9092, "comma-separated string or a list"),
    ],
)
def test_bad_bootstrap(raw: Any, match: str) -> None:
    err = raises(match, bootstrap_servers=raw)
    assert "bootstrap.servers" in str(err)


# --------------------------------------------------------------------------- cross-setting rules


def test_heartbeat_must_be_below_session_timeout() -> None:
    raises(r"heartbeat.interval.ms \(10000\) must be lower than session.timeout.ms \(10000\)",
           group_id="g", heartbeat_interval_ms=10000, session_timeout_ms=10000)
    cfg = make(group_id="g", heartbeat_interval_ms=9999, session_timeout_ms=10000)
    assert cfg.heartbeat_interval_ms == 9999
    # like Java, only checked when there is a (classic) group to heartbeat to
    make(heartbeat_interval_ms=10000, session_timeout_ms=10000)


def test_enable_auto_commit_without_group() -> None:
    raises("enable.auto.commit cannot be set to true when group.id is None",
           enable_auto_commit=True)
    raises("enable.auto.commit cannot be set", enable_auto_commit="true")
    assert make(enable_auto_commit=False).enable_auto_commit is False
    assert make(group_id="g", enable_auto_commit=False).enable_auto_commit is False


def test_group_id_must_not_be_empty() -> None:
    raises("group.id should not be an empty string", group_id="")
    raises("group.id should not be an empty string", group_id="   ")


def test_group_instance_id() -> None:
    raises("group.instance.id is set but group.id is not", group_instance_id="i1")
    raises("may only contain", group_id="g", group_instance_id="bad id")
    raises("must not be empty", group_id="g", group_instance_id="")
    raises("'.' and '..'", group_id="g", group_instance_id="..")
    cfg = make(group_id="g", group_instance_id="host-1")
    assert cfg.client_id == "consumer-g-host-1"


def test_consumer_protocol_refuses_classic_settings() -> None:
    raises(r"^session.timeout.ms cannot be set when group.protocol=CONSUMER$",
           group_id="g", group_protocol="consumer", session_timeout_ms=10000)
    raises(r"partition.assignment.strategy, heartbeat.interval.ms cannot be set",
           group_id="g", group_protocol="consumer", heartbeat_interval_ms=1000,
           partition_assignment_strategy="range")
    cfg = make(group_id="g", group_protocol="consumer", group_remote_assignor="uniform")
    assert cfg.group_remote_assignor == "uniform"
    raises("^group.remote.assignor cannot be set when group.protocol=CLASSIC$",
           group_id="g", group_remote_assignor="uniform")
    # Java checks these only for a consumer with a group.id
    assert make(group_protocol="consumer", session_timeout_ms=10000).group_id is None


def test_classic_group_needs_an_assignor() -> None:
    raises("partition.assignment.strategy is empty", group_id="g", partition_assignment_strategy="")
    assert make(partition_assignment_strategy="").partition_assignment_strategy == []


def test_fetch_sizes() -> None:
    raises(r"fetch.min.bytes \(2000\) must not exceed fetch.max.bytes \(1000\)",
           fetch_min_bytes=2000, fetch_max_bytes=1000, max_partition_fetch_bytes=1000)
    raises(r"max.response.size \(1000\) must be at least fetch.max.bytes",
           max_response_size=1000)
    raises(r"must be at least max.partition.fetch.bytes",
           max_response_size=100_000, fetch_max_bytes=100_000,
           max_partition_fetch_bytes=200_000)


def test_reconnect_backoff_max_follows_backoff_when_only_backoff_is_set() -> None:
    cfg = make(reconnect_backoff_ms=200)
    assert (cfg.reconnect_backoff_ms, cfg.reconnect_backoff_max_ms) == (200, 200)
    cfg = make(reconnect_backoff_ms=200, reconnect_backoff_max_ms=5000)
    assert cfg.reconnect_backoff_max_ms == 5000


def test_generated_client_ids_follow_java() -> None:
    first = make(group_id="g").client_id
    second = make(group_id="g").client_id
    assert first.startswith("consumer-g-") and second.startswith("consumer-g-")
    assert int(second.rsplit("-", 1)[1]) > int(first.rsplit("-", 1)[1])
    assert make(client_id="app").client_id == "app"


# --------------------------------------------------------------------------- Java-only settings


def test_java_only_settings_ignored_or_refused() -> None:
    cfg = make(**{"metric.reporters": "org.apache.kafka.common.metrics.JmxReporter",
                  "metrics.recording.level": "DEBUG", "sasl_kerberos_kinit_cmd": "/usr/bin/kinit"})
    assert cfg.ignored_settings == {
        "metric.reporters": "org.apache.kafka.common.metrics.JmxReporter",
        "metrics.recording.level": "DEBUG",
        "sasl.kerberos.kinit.cmd": "/usr/bin/kinit",
    }
    assert not hasattr(cfg, "metric_reporters")
    raises("sasl.oauthbearer.jwks.endpoint.url is not supported.*sasl.oauth.token.provider",
           **{"sasl.oauthbearer.jwks.endpoint.url": "https://idp/jwks"})
    raises("share.acquire.mode is not supported", share_acquire_mode="record_limit")
    for action, reason in JAVA_ONLY_SETTINGS.values():
        assert action in ("ignore", "refuse") and reason


# --------------------------------------------------------------------------- deserializers, assignors


def test_deserializers() -> None:
    def upper(data: bytes | None) -> Any:
        return None if data is None else data.upper()

    cfg = make(key_deserializer=upper,
               value_deserializer="org.apache.kafka.common.serialization.StringDeserializer")
    assert cfg.key_deserializer is upper
    assert cfg.value_deserializer is not None
    assert cfg.value_deserializer("héllo".encode()) == "héllo"
    assert cfg.value_deserializer(None) is None
    ints = make(value_deserializer="IntegerDeserializer").value_deserializer
    assert ints is not None and ints(b"\x00\x00\x01\x00") == 256
    with pytest.raises(ValueError, match="expected 4 bytes, got 2"):
        ints(b"\x00\x01")
    longs = make(key_deserializer="LongDeserializer").key_deserializer
    assert longs is not None and longs(b"\xff" * 8) == -1
    raises("not a Java built-in deserializer", key_deserializer="com.example.AvroDeserializer")
    raises(r"expected a callable \(bytes \| None\) -> Any", value_deserializer=5)


def test_assignors() -> None:
    cfg = make(partition_assignment_strategy=[
        "org.apache.kafka.clients.consumer.CooperativeStickyAssignor", "RangeAssignor"])
    assert cfg.partition_assignment_strategy == ["cooperative-sticky", "range"]

    class Custom:
        name = "custom"

    custom = Custom()
    assert make(partition_assignment_strategy=[custom, "sticky"]).partition_assignment_strategy \
        == [custom, "sticky"]
    raises("unknown assignor 'fair'", partition_assignment_strategy="fair")
    raises("duplicate assignors", partition_assignment_strategy="range,RangeAssignor")
    raises("neither an assignor name nor an assignor object", partition_assignment_strategy=[5])


# --------------------------------------------------------------------------- security


def test_sasl_plain_with_username_password() -> None:
    cfg = make(security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
               sasl_username="alice", sasl_password="pw")
    assert (cfg.security_protocol, cfg.sasl_username, cfg.sasl_password) == ("SASL_SSL", "alice", "pw")


def test_sasl_jaas_config() -> None:
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="bob" password="p\\"w;d";')
    cfg = make(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
               sasl_jaas_config=jaas)
    assert (cfg.sasl_username, cfg.sasl_password) == ("bob", 'p"w;d')
    raises("does not match sasl.mechanism=PLAIN", security_protocol="SASL_PLAINTEXT",
           sasl_mechanism="PLAIN", sasl_jaas_config=jaas)
    raises("either sasl.jaas.config or sasl.username", security_protocol="SASL_PLAINTEXT",
           sasl_mechanism="SCRAM-SHA-512", sasl_jaas_config=jaas, sasl_username="x")
    raises("uses Krb5LoginModule, which does not match sasl.mechanism=PLAIN",
           security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
           sasl_jaas_config="com.sun.security.auth.module.Krb5LoginModule required;")
    raises("login module com.example.MyModule is not supported", security_protocol="SASL_PLAINTEXT",
           sasl_mechanism="PLAIN", sasl_jaas_config="com.example.MyModule required;")
    # a Krb5LoginModule line with GSSAPI: no password to take from it
    cfg = make(security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI",
               sasl_jaas_config='com.sun.security.auth.module.Krb5LoginModule required '
                                'useKeyTab=true keyTab="/k.keytab" principal="c@R" '
                                'serviceName="kafka";')
    assert (cfg.sasl_username, cfg.sasl_password) == (None, None)


def test_sasl_mechanism_rules() -> None:
    raises(r"'KERBEROS' is not supported; accepted: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
           r"OAUTHBEARER, GSSAPI", security_protocol="SASL_PLAINTEXT", sasl_mechanism="KERBEROS")
    # Java's default mechanism, GSSAPI, is accepted (Kerberos needs no password)
    assert make(security_protocol="SASL_PLAINTEXT",
                sasl_kerberos_service_name="kafka").sasl_mechanism == "GSSAPI"
    # ... and needs the brokers' service name, as Java's login does
    raises("sasl.mechanism=GSSAPI needs sasl.kerberos.service.name", security_protocol="SASL_PLAINTEXT")
    raises("sasl.mechanism must be set", security_protocol="SASL_PLAINTEXT", sasl_mechanism="")
    raises("needs sasl.username and sasl.password", security_protocol="SASL_SSL",
           sasl_mechanism="SCRAM-SHA-256", sasl_username="u")
    raises("sasl.mechanism=OAUTHBEARER needs a token: sasl.oauth.token.provider, "
           "sasl.oauthbearer.token.endpoint.url with "
           "sasl.oauthbearer.client.credentials.client.id and .client.secret",
           security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER")
    # the client credentials as settings (Kafka 4.x) instead of JAAS options
    cfg = make(security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
               sasl_oauthbearer_token_endpoint_url="http://127.0.0.1:9/token",
               sasl_oauthbearer_client_credentials_client_id="app",
               sasl_oauthbearer_client_credentials_client_secret="s3cret-Value")
    assert "s3cret-Value" not in repr(cfg)
    raises("sasl.oauthbearer.jwt.retriever.class=JwtBearerJwtRetriever needs "
           r"sasl.oauthbearer.assertion.private.key.file \(or a ready assertion in "
           r"sasl.oauthbearer.assertion.file\)", security_protocol="SASL_SSL",
           sasl_mechanism="OAUTHBEARER",
           sasl_oauthbearer_token_endpoint_url="http://127.0.0.1:9/token",
           sasl_oauthbearer_jwt_retriever_class="JwtBearerJwtRetriever")
    raises("sasl.oauthbearer.jwt.retriever.class", security_protocol="SASL_SSL",
           sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=lambda: "tok",
           sasl_oauthbearer_jwt_retriever_class="FileJwtRetriever")
    raises("sasl.login.retry.backoff.ms", security_protocol="SASL_SSL",
           sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=lambda: "tok",
           sasl_login_retry_backoff_ms=-1)
    cfg = make(security_protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
               sasl_oauth_token_provider=lambda: "tok")
    assert cfg.sasl_oauth_token_provider is not None and cfg.sasl_oauth_token_provider() == "tok"
    # SASL settings are not checked without a SASL protocol, as in Java
    assert make(sasl_mechanism="GSSAPI").security_protocol == "PLAINTEXT"


def test_ssl_rules() -> None:
    ctx = ssl.create_default_context()
    assert make(security_protocol="SSL", ssl_context=ctx).ssl_context is ctx
    raises("ssl.context is given, so ssl.truststore.location must not be",
           ssl_context=ctx, ssl_truststore_location="/ca.pem")
    raises("expected an ssl.SSLContext", ssl_context="ctx")
    # default type (JKS) with a location: read as PEM; an explicit JKS is refused
    assert make(ssl_truststore_location="ca.pem").ssl_truststore_location == "ca.pem"
    # stores are read when the TLS context is built (tests/unit/test_keystores.py)
    assert make(ssl_truststore_location="ts.jks", ssl_truststore_type="jks"
                ).ssl_truststore_type == "JKS"
    assert make(ssl_keystore_location="ks.p12", ssl_keystore_type="PKCS12"
                ).ssl_keystore_type == "PKCS12"
    raises("not one of the accepted values; accepted: one of JKS, PKCS12, PEM",
           ssl_keystore_type="JCEKS")
    assert make(ssl_keystore_location="c.pem", ssl_keystore_type="PEM").ssl_keystore_type == "PEM"
    raises("must be given together", ssl_keystore_key="-----BEGIN PRIVATE KEY-----")
    raises("either ssl.truststore.location or ssl.truststore.certificates",
           ssl_truststore_location="a.pem", ssl_truststore_certificates="-----BEGIN")
    assert make(ssl_endpoint_identification_algorithm="").ssl_endpoint_identification_algorithm == ""
    raises("'ldaps' is not supported", ssl_endpoint_identification_algorithm="ldaps")


def test_password_values_never_appear_in_errors() -> None:
    err = raises("sasl.password", sasl_password=12345)
    assert "12345" not in str(err) and "<hidden>" in str(err)
    err = raises("expected a value for option password at character 87",
                 security_protocol="SASL_PLAINTEXT",
                 sasl_mechanism="PLAIN",
                 sasl_jaas_config='org.apache.kafka.common.security.plain.PlainLoginModule '
                                  'required username="u" password=="hunter2";')
    assert "hunter2" not in str(err)


def test_java_warnings_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="pyconsumer.config"):
        make(retry_backoff_ms=5000)
        make(group_id="g", connections_max_idle_ms=1000)
    messages = [r.getMessage() for r in caplog.records]
    assert "retry.backoff.ms (5000) is greater than retry.backoff.max.ms (1000): " \
           "a static 1000 ms is used" in messages
    assert any(m.startswith("connections.max.idle.ms (1000) is lower than max.poll.interval.ms")
               for m in messages)


def test_integer_like_objects_are_accepted() -> None:
    class Index:
        def __index__(self) -> int:
            return 42

    assert make(max_poll_records=Index()).max_poll_records == 42
