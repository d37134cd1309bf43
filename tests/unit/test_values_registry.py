"""The Schema Registry client (pyconsumer.values.registry) against an in-process registry.

FakeSchemaRegistry answers the Confluent REST calls and counts the requests, so the cache is
held to "a second lookup asks nothing"; its faults (down, slow, failing statuses, credentials)
drive the retry and error paths. The real registry (Apicurio) is in tests/kafka/test_registry_produce.py.
"""
from __future__ import annotations

import json
import os
import ssl
import sys
import threading
import uuid
from collections.abc import Iterator

import pytest

from pyconsumer.errors import AuthenticationError, ConfigurationError, KafkaClientError
from pyconsumer.testing import FakeSchemaRegistry, MissingExtraError, produce_avro, produce_json
from pyconsumer.values.registry import (
    SchemaNotFoundError,
    SchemaRegistryAuthenticationError,
    SchemaRegistryClient,
    SchemaRegistryError,
    SchemaRegistryUnavailableError,
    SubjectNameStrategy,
    shared_client,
    subject_name,
)

RECORD_V1 = json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                        "fields": [{"name": "id", "type": "long"}]})
RECORD_V2 = json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                        "fields": [{"name": "id", "type": "long"},
                                   {"name": "note", "type": "string", "default": ""}]})


@pytest.fixture
def registry() -> Iterator[FakeSchemaRegistry]:
    with FakeSchemaRegistry() as reg:
        yield reg


def client(url: str, **kw: object) -> tuple[SchemaRegistryClient, list[float]]:
    """A client whose backoff sleeps are recorded instead of slept."""
    slept: list[float] = []
    return SchemaRegistryClient(url, sleep=slept.append, **kw), slept  # type: ignore[arg-type]


# ---------------------------------------------------------------------- lookups


def test_schema_by_id_gives_the_registered_text_type_and_guid(registry: FakeSchemaRegistry) -> None:
    first = registry.register("orders-value", RECORD_V1)
    second = registry.register("events-value", '{"type": "object"}', schema_type="JSON")
    c, _ = client(registry.url)
    got = c.schema_by_id(first)
    assert (got.id, got.schema_type, got.schema_text, got.references) == (1, "AVRO", RECORD_V1, ())
    assert got.guid == registry.guid_of(first)
    as_json = c.schema_by_id(second)
    assert (as_json.id, as_json.schema_type, as_json.schema_text) == (2, "JSON", '{"type": "object"}')
    assert registry.requests == [("GET", "/schemas/ids/1"), ("GET", "/schemas/ids/2")]


def test_the_same_schema_under_the_same_subject_keeps_its_id(registry: FakeSchemaRegistry) -> None:
    c, _ = client(registry.url)
    assert c.register("orders-value", RECORD_V1) == 1
    assert c.register("orders-value", RECORD_V1) == 1
    assert c.register("orders-value", RECORD_V2) == 2
    assert registry.count("POST", "/subjects/orders-value/versions") == 3


def test_schema_by_guid_in_any_spelling(registry: FakeSchemaRegistry) -> None:
    sid = registry.register("orders-value", RECORD_V1)
    guid = registry.guid_of(sid)
    c, _ = client(registry.url)
    got = c.schema_by_guid(guid.upper())
    assert (got.id, got.guid, got.schema_text) == (sid, guid, RECORD_V1)
    # the same schema by UUID object, by GUID again and by its id: all from the cache
    assert c.schema_by_guid(uuid.UUID(guid)) is got
    assert c.schema_by_id(sid) is got
    assert registry.requests == [("GET", f"/schemas/guids/{guid}")]


def test_unknown_guid_and_a_guid_that_is_no_uuid(registry: FakeSchemaRegistry) -> None:
    c, _ = client(registry.url)
    missing = "0f8fad5b-d9cb-469f-a165-70867728950e"
    with pytest.raises(SchemaNotFoundError) as err:
        c.schema_by_guid(missing)
    assert str(err.value) == f"unknown schema guid {missing} at {registry.url}"
    with pytest.raises(ValueError, match="a schema GUID is a UUID, got 'nope'"):
        c.schema_by_guid("nope")


def test_latest_is_asked_every_time_a_numbered_version_once(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1)
    c, _ = client(registry.url)
    latest = c.latest("orders-value")
    assert (latest.id, latest.subject, latest.version, latest.schema_text) == (1, "orders-value", 1, RECORD_V1)
    registry.register("orders-value", RECORD_V2)
    latest = c.latest("orders-value")
    assert (latest.id, latest.version, latest.schema_text) == (2, 2, RECORD_V2)
    assert registry.count("GET", "/subjects/orders-value/versions/latest") == 2
    # the numbered versions latest gave are cached under their numbers
    assert c.version("orders-value", 1).schema_text == RECORD_V1
    assert c.version("orders-value", 2).schema_text == RECORD_V2
    assert registry.count("GET", "/subjects/orders-value/versions/1") == 0
    fresh, _ = client(registry.url)
    v1 = fresh.version("orders-value", 1)
    assert (v1.id, v1.subject, v1.version, v1.schema_text) == (1, "orders-value", 1, RECORD_V1)
    assert fresh.version("orders-value", 1) is v1
    assert fresh.schema_by_id(1) is v1                 # the id it carried is cached too
    assert registry.count("GET", "/subjects/orders-value/versions/1") == 1
    assert registry.count("GET", "/schemas/ids/1") == 0
    assert c.subjects() == ["orders-value"]


def test_subject_names_are_quoted_in_the_path(registry: FakeSchemaRegistry) -> None:
    registry.register("shop/orders value", RECORD_V1)
    c, _ = client(registry.url)
    assert c.latest("shop/orders value").id == 1
    assert registry.requests == [("GET", "/subjects/shop%2Forders%20value/versions/latest")]


def test_unknown_id_subject_and_version_are_final_at_once(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1)
    c, slept = client(registry.url)
    with pytest.raises(SchemaNotFoundError) as err:
        c.schema_by_id(42)
    assert str(err.value) == f"unknown schema id 42 at {registry.url}"
    assert (err.value.url, err.value.status) == (registry.url, 404)
    with pytest.raises(SchemaNotFoundError) as err:
        c.latest("payments-value")
    assert str(err.value) == f"unknown subject 'payments-value' at {registry.url}"
    with pytest.raises(SchemaNotFoundError) as err:
        c.version("orders-value", 7)
    assert str(err.value) == f"unknown version 7 of subject 'orders-value' at {registry.url}"
    assert len(registry.requests) == 3 and slept == []      # no retry
    # not cached: once registered, the id is found
    assert c.schema_by_id(1).id == 1


def test_arguments_are_checked_before_any_request(registry: FakeSchemaRegistry) -> None:
    c, _ = client(registry.url)
    for bad in (-1, True, "1"):
        with pytest.raises(ValueError, match="a schema id is an int >= 0"):
            c.schema_by_id(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a subject version is an int >= 1"):
        c.version("orders-value", 0)
    assert registry.requests == []


# ---------------------------------------------------------------------- references


def test_references_are_resolved_recursively_each_version_once(registry: FakeSchemaRegistry) -> None:
    money = json.dumps({"type": "record", "name": "Money", "namespace": "shop",
                        "fields": [{"name": "cents", "type": "long"}]})
    line = json.dumps({"type": "record", "name": "Line", "namespace": "shop",
                       "fields": [{"name": "price", "type": "shop.Money"}]})
    order = json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                        "fields": [{"name": "lines", "type": {"type": "array", "items": "shop.Line"}},
                                   {"name": "total", "type": "shop.Money"}]})
    registry.register("money", money)
    registry.register("line", line, references=[{"name": "shop.Money", "subject": "money", "version": 1}])
    order_id = registry.register("orders-value", order, references=[
        {"name": "shop.Line", "subject": "line", "version": 1},
        {"name": "shop.Money", "subject": "money", "version": 1}])
    c, _ = client(registry.url)
    got = c.schema_by_id(order_id)
    assert [(r.name, r.subject, r.version) for r in got.references] == [
        ("shop.Line", "line", 1), ("shop.Money", "money", 1)]
    line_ref = got.references[0].schema
    assert (line_ref.id, line_ref.schema_text) == (2, line)
    assert [(r.name, r.schema.schema_text) for r in line_ref.references] == [("shop.Money", money)]
    # every dependency once, a dependency before its user
    assert [(d.name, d.schema.schema_text) for d in got.dependencies()] == [
        ("shop.Money", money), ("shop.Line", line)]
    assert registry.count("GET", "/subjects/money/versions/1") == 1
    assert registry.count("GET", "/subjects/line/versions/1") == 1
    before = len(registry.requests)
    assert c.schema_by_id(order_id) is got
    assert c.version("money", 1) is got.references[1].schema
    assert len(registry.requests) == before


def test_a_reference_cycle_is_an_error_not_a_hang(registry: FakeSchemaRegistry) -> None:
    registry.register("a", '{"type": "record", "name": "A", "fields": []}',
                      references=[{"name": "B", "subject": "b", "version": 1}])
    registry.register("b", '{"type": "record", "name": "B", "fields": []}',
                      references=[{"name": "A", "subject": "a", "version": 1}])
    c, _ = client(registry.url)
    with pytest.raises(SchemaRegistryError, match="nest deeper than 32 .*a reference cycle"):
        c.schema_by_id(1)


def test_a_missing_referenced_version_names_it(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1, references=[{"name": "X", "subject": "x", "version": 3}])
    c, _ = client(registry.url)
    with pytest.raises(SchemaNotFoundError) as err:
        c.schema_by_id(1)
    assert str(err.value) == f"unknown subject 'x' at {registry.url}"


# ---------------------------------------------------------------------- cache and threads


def test_a_second_lookup_makes_no_request(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1)
    c, _ = client(registry.url)
    first = c.schema_by_id(1)
    assert c.schema_by_id(1) is first
    assert registry.count("GET", "/schemas/ids/1") == 1
    assert c.requests_sent == 1
    c.clear_cache()
    assert c.schema_by_id(1) == first
    assert registry.count("GET", "/schemas/ids/1") == 2


def test_threads_asking_at_once_make_one_request(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1)
    registry.delay_s = 0.3           # every thread arrives while the first request is answered
    c, _ = client(registry.url)
    results: list[object] = []
    barrier = threading.Barrier(8)

    def lookup() -> None:
        barrier.wait()
        results.append(c.schema_by_id(1))

    threads = [threading.Thread(target=lookup) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(r is results[0] for r in results)
    assert registry.count("GET", "/schemas/ids/1") == 1


# ---------------------------------------------------------------------- faults


def test_down_is_an_error_after_retries_naming_the_url(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1)
    registry.down()
    c, slept = client(registry.url, retries=3, backoff_s=0.1)
    with pytest.raises(SchemaRegistryUnavailableError) as err:
        c.schema_by_id(1)
    message = str(err.value)
    assert message.startswith(f"schema registry at {registry.url} did not answer GET /schemas/ids/1 "
                              f"after 4 attempts (last at {registry.url}: ")
    assert "Connection refused" in message
    assert (err.value.attempts, err.value.url, err.value.retriable) == (4, registry.url, True)
    assert slept == [0.1, 0.2, 0.4]                   # doubling backoff between rounds
    assert isinstance(err.value, KafkaClientError)
    registry.up()                                     # back on the same port: found
    assert c.schema_by_id(1).schema_text == RECORD_V1


def test_backoff_is_capped(registry: FakeSchemaRegistry) -> None:
    registry.down()
    c, slept = client(registry.url, retries=5, backoff_s=1.0, max_backoff_s=3.0)
    with pytest.raises(SchemaRegistryUnavailableError):
        c.schema_by_id(1)
    assert slept == [1.0, 2.0, 3.0, 3.0, 3.0]


def test_server_errors_are_retried_then_answered(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1)
    registry.fail_next(503, 500)
    c, slept = client(registry.url, retries=3, backoff_s=0.05)
    assert c.schema_by_id(1).schema_text == RECORD_V1
    assert registry.count("GET", "/schemas/ids/1") == 3
    assert slept == [0.05, 0.1]


def test_server_errors_that_persist_name_the_last_cause(registry: FakeSchemaRegistry) -> None:
    registry.fail_next(503, 503, 502)
    c, _ = client(registry.url, retries=2, backoff_s=0.0)
    with pytest.raises(SchemaRegistryUnavailableError) as err:
        c.schema_by_id(1)
    assert str(err.value) == (f"schema registry at {registry.url} did not answer GET /schemas/ids/1 after "
                              f"3 attempts (last at {registry.url}: HTTP 502 injected HTTP 502 (error 50200))")


def test_slow_beyond_the_timeout_is_retried_then_an_error(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1)
    registry.delay_s = 2.0
    c, _ = client(registry.url, timeout_s=0.2, retries=1, backoff_s=0.0)
    with pytest.raises(SchemaRegistryUnavailableError) as err:
        c.schema_by_id(1)
    assert str(err.value) == (f"schema registry at {registry.url} did not answer GET /schemas/ids/1 after "
                              f"2 attempts (last at {registry.url}: no answer within 0.2 s)")
    assert registry.count("GET", "/schemas/ids/1") == 2


def test_other_client_errors_are_final_with_the_registry_message(registry: FakeSchemaRegistry) -> None:
    registry.fail_next(422)
    c, slept = client(registry.url)
    with pytest.raises(SchemaRegistryError) as err:
        c.schema_by_id(1)
    assert type(err.value) is SchemaRegistryError
    assert str(err.value) == (f"schema registry at {registry.url} answered GET /schemas/ids/1 with "
                              "HTTP 422: injected HTTP 422 (error 42200)")
    assert slept == [] and len(registry.requests) == 1


# ---------------------------------------------------------------------- authentication


def test_basic_auth_401_without_and_with_wrong_credentials(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1)
    registry.require_basic_auth("alice:s3cret")
    for kw in ({}, {"basic_auth_user_info": "alice:wrong"}, {"bearer_auth_token": "alice:s3cret"}):
        c, slept = client(registry.url, **kw)
        with pytest.raises(SchemaRegistryAuthenticationError) as err:
            c.schema_by_id(1)
        assert str(err.value).startswith(f"schema registry at {registry.url} refused the credentials (HTTP 401")
        assert err.value.status == 401 and slept == []
        assert isinstance(err.value, AuthenticationError)
    assert len(registry.requests) == 3                  # one each: never retried
    c, _ = client(registry.url, basic_auth_user_info="alice:s3cret")
    assert c.schema_by_id(1).schema_text == RECORD_V1
    # credentials in the URL count as basic auth, and stay out of messages
    in_url = f"http://alice:s3cret@127.0.0.1:{registry.port}"
    c, _ = client(in_url)
    assert c.urls == [registry.url]
    assert c.schema_by_id(1).schema_text == RECORD_V1


def test_bearer_token(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1)
    registry.require_bearer("tok-123")
    c, _ = client(registry.url, bearer_auth_token="tok-999")
    with pytest.raises(SchemaRegistryAuthenticationError, match="refused the credentials"):
        c.schema_by_id(1)
    c, _ = client(registry.url, bearer_auth_token="tok-123")
    assert c.schema_by_id(1).schema_text == RECORD_V1


def test_403_is_an_authentication_error_too(registry: FakeSchemaRegistry) -> None:
    registry.fail_next(403)
    c, _ = client(registry.url)
    with pytest.raises(SchemaRegistryAuthenticationError) as err:
        c.schema_by_id(1)
    assert err.value.status == 403


# ---------------------------------------------------------------------- several URLs


def test_first_url_down_second_up() -> None:
    with FakeSchemaRegistry() as first, FakeSchemaRegistry() as second:
        second.register("orders-value", RECORD_V1)
        first.down()
        c, slept = client(f"{first.url}, {second.url}")
        assert c.urls == [first.url, second.url]
        assert c.schema_by_id(1).schema_text == RECORD_V1
        assert second.requests == [("GET", "/schemas/ids/1")] and slept == []


def test_first_url_failing_then_second() -> None:
    with FakeSchemaRegistry() as first, FakeSchemaRegistry() as second:
        second.register("orders-value", RECORD_V1)
        first.fail_next(503)
        c, _ = client(f"{first.url},{second.url}")
        assert c.schema_by_id(1).schema_text == RECORD_V1
        assert (len(first.requests), len(second.requests)) == (1, 1)


def test_a_404_from_the_first_url_is_final() -> None:
    with FakeSchemaRegistry() as first, FakeSchemaRegistry() as second:
        second.register("orders-value", RECORD_V1)
        c, _ = client(f"{first.url},{second.url}")
        with pytest.raises(SchemaNotFoundError, match=f"unknown schema id 1 at {first.url}$"):
            c.schema_by_id(1)
        assert second.requests == []


def test_all_urls_down_names_each() -> None:
    with FakeSchemaRegistry() as first, FakeSchemaRegistry() as second:
        first.down()
        second.down()
        c, _ = client(f"{first.url},{second.url}", retries=1, backoff_s=0.0)
        with pytest.raises(SchemaRegistryUnavailableError) as err:
            c.schema_by_id(1)
        assert str(err.value).startswith(f"schema registry at {first.url}, {second.url} did not answer "
                                         f"GET /schemas/ids/1 after 4 attempts (last at {second.url}: ")


# ---------------------------------------------------------------------- settings


@pytest.mark.parametrize("url", ["", " , ", "localhost:8081", "ftp://host", "http://"])
def test_bad_urls(url: str) -> None:
    with pytest.raises(ConfigurationError, match="schema registry URL"):
        SchemaRegistryClient(url)


def test_bad_settings() -> None:
    with pytest.raises(ConfigurationError, match="basic auth and a bearer token are exclusive"):
        SchemaRegistryClient("http://h:1", basic_auth_user_info="a:b", bearer_auth_token="t")
    with pytest.raises(ConfigurationError, match="'user:password'"):
        SchemaRegistryClient("http://h:1", basic_auth_user_info="alice")
    with pytest.raises(ConfigurationError, match="timeout must be > 0 s"):
        SchemaRegistryClient("http://h:1", timeout_s=0)
    with pytest.raises(ConfigurationError, match="retries and backoff must be >= 0"):
        SchemaRegistryClient("http://h:1", retries=-1)


# ---------------------------------------------------------------------- subject names


@pytest.mark.parametrize(("strategy", "is_key", "expected"), [
    (None, False, "orders-value"),
    (None, True, "orders-key"),
    ("TopicNameStrategy", False, "orders-value"),
    ("io.confluent.kafka.serializers.subject.TopicNameStrategy", True, "orders-key"),
    ("topic_subject_name_strategy", False, "orders-value"),
    ("RecordNameStrategy", False, "shop.Order"),
    ("io.confluent.kafka.serializers.subject.RecordNameStrategy", True, "shop.Order"),
    ("record_subject_name_strategy", False, "shop.Order"),
    ("TopicRecordNameStrategy", False, "orders-shop.Order"),
    ("io.confluent.kafka.serializers.subject.TopicRecordNameStrategy", True, "orders-shop.Order"),
    ("topic_record_subject_name_strategy", False, "orders-shop.Order"),
    (SubjectNameStrategy.TOPIC_RECORD, False, "orders-shop.Order"),
])
def test_subject_name(strategy: str | SubjectNameStrategy | None, is_key: bool, expected: str) -> None:
    assert subject_name(strategy, "orders", is_key, "shop.Order") == expected


def test_subject_name_errors() -> None:
    with pytest.raises(ConfigurationError, match="unknown subject name strategy 'topicnamestrategy'"):
        subject_name("topicnamestrategy", "orders", False)
    with pytest.raises(ConfigurationError, match="RecordNameStrategy needs the record's full name"):
        subject_name("RecordNameStrategy", "orders", False)
    with pytest.raises(ConfigurationError, match="TopicRecordNameStrategy needs the record's full name"):
        subject_name(SubjectNameStrategy.TOPIC_RECORD, "orders", False, "")


# ---------------------------------------------------------------------- TLS

CERTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "certs")


def test_https_with_the_registry_ca_and_without() -> None:
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(os.path.join(CERTS, "broker.pem"), os.path.join(CERTS, "broker.key"))
    with FakeSchemaRegistry(ssl_context=server) as registry:
        registry.register("orders-value", RECORD_V1)
        assert registry.url.startswith("https://127.0.0.1:")
        trusting = ssl.create_default_context(cafile=os.path.join(CERTS, "ca.pem"))
        c, _ = client(registry.url, ssl_context=trusting)
        assert c.schema_by_id(1).schema_text == RECORD_V1
        other = ssl.create_default_context(cafile=os.path.join(CERTS, "other-ca.pem"))
        c, slept = client(registry.url, ssl_context=other)
        with pytest.raises(SchemaRegistryError) as err:
            c.schema_by_id(1)
        assert str(err.value).startswith(f"schema registry at {registry.url}: TLS certificate not trusted (")
        assert "unable to get local issuer certificate" in str(err.value)
        assert slept == []                                # not retried


# ---------------------------------------------------------------------- the producers' extra


@pytest.mark.parametrize(("kind", "module"), [("avro", "confluent_kafka.schema_registry.avro"),
                                              ("json", "confluent_kafka.schema_registry.json_schema")])
def test_producers_without_the_serializers_say_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                               kind: str, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    produce = produce_avro if kind == "avro" else produce_json
    with pytest.raises(MissingExtraError) as err:
        produce("127.0.0.1:9", "t", [], "{}", "http://127.0.0.1:9")
    assert str(err.value) == (f"produce_{kind}() needs confluent-kafka's schema-registry serializers "
                              f"({module} is missing): pip install -e '.[test]' (in pyconsumer's clone)")


# ---------------------------------------------------------------------- confluent-kafka's settings


def test_from_config_takes_confluent_names_bare_or_prefixed(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1)
    registry.require_basic_auth("alice:s3cret")
    c = SchemaRegistryClient.from_config({"schema.registry.url": registry.url,
                                          "schema.registry.basic.auth.user.info": "alice:s3cret",
                                          "max.retries": "0", "timeout": 5})
    assert c.schema_by_id(1).schema_text == RECORD_V1
    registry.require_basic_auth(None)
    registry.require_bearer("tok")
    assert SchemaRegistryClient.from_config({"url": registry.url, "bearer.auth.token": "tok",
                                             "bearer.auth.credentials.source": "STATIC_TOKEN"}
                                            ).schema_by_id(1).id == 1


def test_from_config_retries_and_backoff(registry: FakeSchemaRegistry) -> None:
    registry.down()
    c = SchemaRegistryClient.from_config({"url": registry.url, "max.retries": 2, "retries.wait.ms": 1,
                                          "retries.max.wait.ms": 1})
    with pytest.raises(SchemaRegistryUnavailableError) as err:
        c.schema_by_id(1)
    assert err.value.attempts == 3


def test_from_config_tls_settings() -> None:
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(os.path.join(CERTS, "broker.pem"), os.path.join(CERTS, "broker.key"))
    with FakeSchemaRegistry(ssl_context=server) as registry:
        registry.register("orders-value", RECORD_V1)
        c = SchemaRegistryClient.from_config({"url": registry.url,
                                              "ssl.ca.location": os.path.join(CERTS, "ca.pem")})
        assert c.schema_by_id(1).schema_text == RECORD_V1


@pytest.mark.parametrize(("conf", "message"), [
    ({}, "schema registry setting 'url' is required"),
    ({"url": "http://h:1", "schema.registry.cache.capacity": 10},
     "unknown schema registry setting 'schema.registry.cache.capacity'"),
    ({"url": "http://h:1", "max.retries": "many"}, "setting 'max.retries' is a number, got 'many'"),
    ({"url": "http://h:1", "timeout": -1}, "setting 'timeout' must be >= 0"),
    ({"url": "http://h:1", "basic.auth.credentials.source": "SASL_INHERIT"},
     "basic.auth.credentials.source 'SASL_INHERIT' is not supported"),
    ({"url": "http://h:1", "bearer.auth.credentials.source": "CUSTOM"},
     "bearer.auth.credentials.source 'CUSTOM' is not supported (STATIC_TOKEN or OAUTHBEARER)"),
    ({"url": "http://h:1", "bearer.auth.credentials.source": "OAUTHBEARER",
      "bearer.auth.client.id": "app"},
     "bearer.auth.credentials.source OAUTHBEARER needs bearer.auth.issuer.endpoint.url, "
     "bearer.auth.client.secret"),
    ({"url": "http://h:1", "bearer.auth.credentials.source": "OAUTHBEARER",
      "bearer.auth.token": "t"},
     "bearer.auth.token is for bearer.auth.credentials.source STATIC_TOKEN, not OAUTHBEARER"),
    ({"url": "http://h:1", "bearer.auth.logical.cluster": "lsrc-1"},
     "bearer.auth.logical.cluster go with a bearer token (bearer.auth.credentials.source)"),
    ({"url": "http://h:1", "bearer.auth.credentials.source": "OAUTHBEARER",
      "bearer.auth.client.id": "app", "bearer.auth.client.secret": "s",
      "bearer.auth.issuer.endpoint.url": "ftp://127.0.0.1:1/token"},
     "bearer.auth.issuer.endpoint.url 'ftp://127.0.0.1:1/token' is not an http(s) URL"),
    ({"url": "http://h:1", "ssl.key.location": "k.pem"}, "ssl.certificate.location is required"),
    ({"url": "http://h:1", "ssl.ca.location": "/nonexistent/ca.pem"}, "schema registry TLS settings: "),
])
def test_from_config_errors(conf: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        SchemaRegistryClient.from_config(conf)
    assert message in str(err.value)


def test_shared_client_is_one_per_process_and_settings(registry: FakeSchemaRegistry) -> None:
    registry.register("orders-value", RECORD_V1)
    first = shared_client({"schema.registry.url": registry.url})
    assert shared_client({"url": registry.url}) is first
    assert shared_client({"url": registry.url, "timeout": 3}) is not first
    first.schema_by_id(1)
    shared_client({"url": registry.url}).schema_by_id(1)
    assert registry.count("GET", "/schemas/ids/1") == 1
