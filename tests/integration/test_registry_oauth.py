"""The Schema Registry client with bearer tokens from an OAuth token endpoint
(``bearer.auth.credentials.source=OAUTHBEARER``, confluent-kafka's settings): a registry on
127.0.0.1 that accepts one token only, and the test token endpoint that issues it."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from pyconsumer.testing import FakeSchemaRegistry
from pyconsumer.values.registry import SchemaRegistryAuthenticationError, SchemaRegistryClient

from tests.integration.test_sasl_oauth import CLIENT_ID, CLIENT_SECRET, TokenEndpoint, basic, signed_jwt

RECORD = ('{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}')
TOKEN = signed_jwt("registry-reader", scope="registry")


@pytest.fixture
def registry() -> Iterator[FakeSchemaRegistry]:
    with FakeSchemaRegistry() as reg:
        reg.require_bearer(TOKEN)
        yield reg


@pytest.fixture
def endpoint() -> Iterator[TokenEndpoint]:
    made = TokenEndpoint(token=lambda scope: TOKEN if scope == "registry" else signed_jwt("x"))
    yield made
    made.close()


def oauth_conf(registry: FakeSchemaRegistry, endpoint: TokenEndpoint,
               secret: str = CLIENT_SECRET, **more: object) -> dict[str, object]:
    return {"url": registry.url, "bearer.auth.credentials.source": "OAUTHBEARER",
            "bearer.auth.issuer.endpoint.url": endpoint.url, "bearer.auth.client.id": CLIENT_ID,
            "bearer.auth.client.secret": secret, "bearer.auth.scope": "registry", **more}


def test_lookups_carry_the_endpoints_token_and_confluents_headers(
        registry: FakeSchemaRegistry, endpoint: TokenEndpoint) -> None:
    first = registry.register("orders-value", RECORD)
    second = registry.register("events-value", '{"type": "object"}', schema_type="JSON")
    client = SchemaRegistryClient.from_config(oauth_conf(
        registry, endpoint, **{"schema.registry.bearer.auth.logical.cluster": "lsrc-123",
                               "bearer.auth.identity.pool.id": "pool-9"}))
    assert client.schema_by_id(first).schema_text == RECORD
    assert client.schema_by_id(second).schema_type == "JSON"
    # one grant for both lookups: the token is cached
    assert [(r["form"], r["auth"]) for r in endpoint.requests] == [
        ({"grant_type": ["client_credentials"], "scope": ["registry"]},
         basic(CLIENT_ID, CLIENT_SECRET))]
    assert registry.requests == [("GET", f"/schemas/ids/{first}"), ("GET", f"/schemas/ids/{second}")]
    for headers in registry.request_headers:
        assert (headers["authorization"], headers["target-sr-cluster"],
                headers["confluent-identity-pool-id"]) == (f"Bearer {TOKEN}", "lsrc-123", "pool-9")


def test_a_refused_client_secret_names_the_issuer_endpoint_not_the_secret(
        registry: FakeSchemaRegistry, endpoint: TokenEndpoint) -> None:
    registry.register("orders-value", RECORD)
    client = SchemaRegistryClient.from_config(oauth_conf(registry, endpoint, "wrong-Secret-3"))
    with pytest.raises(SchemaRegistryAuthenticationError) as info:
        client.schema_by_id(1)
    assert str(info.value) == (
        f"the OAuth token endpoint {endpoint.url} (client {CLIENT_ID}) refused the client "
        "credentials: HTTP 401 Unauthorized (check bearer.auth.client.id and "
        "bearer.auth.client.secret)")
    assert registry.requests == [] and len(endpoint.requests) == 1


def test_a_token_the_registry_refuses_is_its_401(registry: FakeSchemaRegistry,
                                                 endpoint: TokenEndpoint) -> None:
    registry.register("orders-value", RECORD)
    client = SchemaRegistryClient.from_config(oauth_conf(registry, endpoint,
                                                         **{"bearer.auth.scope": "other"}))
    with pytest.raises(SchemaRegistryAuthenticationError, match=r"refused the credentials \(HTTP 401"):
        client.schema_by_id(1)
    assert registry.requests == [("GET", "/schemas/ids/1")]


def test_an_endpoint_failing_then_answering_is_retried_with_the_registry_waits(
        registry: FakeSchemaRegistry) -> None:
    endpoint = TokenEndpoint(script=[503], token=lambda scope: TOKEN)
    try:
        registry.register("orders-value", RECORD)
        client = SchemaRegistryClient.from_config(oauth_conf(
            registry, endpoint, **{"retries.wait.ms": 50, "retries.max.wait.ms": 2000}))
        assert client.schema_by_id(1).schema_text == RECORD
        assert len(endpoint.requests) == 2
    finally:
        endpoint.close()


def test_claim_names_are_the_registry_settings(registry: FakeSchemaRegistry) -> None:
    endpoint = TokenEndpoint(token=lambda scope: signed_jwt("r", sub_claim="principal"))
    try:
        client = SchemaRegistryClient.from_config(oauth_conf(registry, endpoint))
        with pytest.raises(SchemaRegistryAuthenticationError) as info:
            client.schema_by_id(1)
        assert str(info.value) == (
            f"the access_token from the OAuth token endpoint {endpoint.url} (client {CLIENT_ID}) "
            "has no 'sub' claim with a subject (bearer.auth.sub.claim.name=sub)")
        registry.require_bearer(None)
        registry.register("orders-value", RECORD)
        client = SchemaRegistryClient.from_config(oauth_conf(
            registry, endpoint, **{"bearer.auth.sub.claim.name": "principal"}))
        assert client.schema_by_id(1).schema_text == RECORD
    finally:
        endpoint.close()


def test_the_consumers_schema_registry_settings(registry: FakeSchemaRegistry,
                                                endpoint: TokenEndpoint) -> None:
    from pyconsumer import KafkaConsumer

    registry.register("orders-value", RECORD)
    with KafkaConsumer(bootstrap_servers="127.0.0.1:9", value_format="avro",
                       value_subject="orders-value", schema_registry_url=registry.url, **{
                           "schema.registry.bearer.auth.credentials.source": "OAUTHBEARER",
                           "schema.registry.bearer.auth.issuer.endpoint.url": endpoint.url,
                           "schema.registry.bearer.auth.client.id": CLIENT_ID,
                           "schema.registry.bearer.auth.client.secret": CLIENT_SECRET,
                           "schema.registry.bearer.auth.scope": "registry",
                           "schema.registry.bearer.auth.logical.cluster": "lsrc-7"}) as consumer:
        assert CLIENT_SECRET not in repr(consumer.config)
        # the registry client the consumer built from its settings (the broker is not needed)
        plan = consumer._typed
        assert plan is not None and plan.registry is not None
        assert plan.registry.latest("orders-value").schema_text == RECORD
    assert [r["form"] for r in endpoint.requests] == [
        {"grant_type": ["client_credentials"], "scope": ["registry"]}]
    assert registry.requests == [("GET", "/subjects/orders-value/versions/latest")]
    assert [(h["authorization"], h["target-sr-cluster"]) for h in registry.request_headers] == [
        (f"Bearer {TOKEN}", "lsrc-7")] * len(registry.requests)
