"""SASL GSSAPI (Kerberos) against a real MIT KDC started here (tests/kdc.py) and Tansu behind
:class:`~pyconsumer.testing.SaslProxy`, whose GSSAPI side accepts with the service keytab.

The KDC and the gssapi package are installed on demand on a root Debian machine (CI); where
that is impossible the tests are skipped with the reason.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.errors import ConfigurationError, SaslAuthenticationError
from pyconsumer.testing import SaslProxy, TansuBroker, sample_records

from tests.integration.test_sasl import consume, expected_rows, produce_via
from tests.kdc import GssapiServer, Kdc, ensure_kerberos

pytestmark = pytest.mark.tansu


@pytest.fixture(scope="module")
def kdc() -> Iterator[Kdc]:
    started = time.monotonic()
    why = ensure_kerberos()
    if why is not None:
        pytest.skip(why)
    logging.getLogger(__name__).info("Kerberos ready in %.1f s", time.monotonic() - started)
    k = Kdc()
    try:
        yield k
    finally:
        k.close()


@pytest.fixture
def gss_proxy(kdc: Kdc, tansu: TansuBroker) -> Iterator[tuple[SaslProxy, str, str]]:
    """(the proxy, the client's principal, the client's keytab)."""
    service = kdc.add_principal("kafka/127.0.0.1")
    client = kdc.add_principal(f"consumer{time.monotonic_ns()}")
    service_keytab = kdc.keytab(service.split("@")[0])
    client_keytab = kdc.keytab(client.split("@")[0])
    proxy = SaslProxy(tansu.bootstrap, users={"bob": "bob-Secret-2"}, lifetime=120.0,
                      mechanisms={"GSSAPI": lambda: GssapiServer(service_keytab, {client})}).start()
    try:
        yield proxy, client, client_keytab
    finally:
        proxy.close()


def gss_settings(principal: str, keytab: str, **extra: object) -> dict[str, object]:
    settings: dict[str, object] = {
        "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI",
        "sasl_kerberos_service_name": "kafka", "sasl_kerberos_principal": principal,
        "sasl_kerberos_keytab": keytab, "auto_offset_reset": "earliest",
        "request_timeout_ms": 5000, "default_api_timeout_ms": 5000, "fetch_max_wait_ms": 100}
    settings.update(extra)
    return settings


@pytest.mark.parametrize("how", ["settings", "jaas"])
def test_consume_exact_records_over_gssapi(gss_proxy: tuple[SaslProxy, str, str],
                                           make_tansu_topic, how: str) -> None:  # type: ignore[no-untyped-def]
    proxy, principal, keytab = gss_proxy
    topic = make_tansu_topic(2)
    records = sample_records(80, partitions=2, seed=7)
    expected = expected_rows(topic, records, produce_via(proxy, topic, records, "PLAIN"))
    if how == "settings":
        settings = gss_settings(principal, keytab)
    else:
        settings = gss_settings(principal, keytab, sasl_kerberos_principal=None,
                                sasl_kerberos_keytab=None, sasl_kerberos_service_name=None,
                                sasl_jaas_config=(
                                    "com.sun.security.auth.module.Krb5LoginModule required "
                                    f'useKeyTab=true storeKey=true keyTab="{keytab}" '
                                    f'principal="{principal}" serviceName="kafka";'))
    with KafkaConsumer(bootstrap_servers=proxy.bootstrap, **settings) as c:
        c.assign(sorted(expected))
        assert consume(c, 80) == expected
    gss_users = [u for m, u in proxy.sasl_stats.users if m == "GSSAPI"]
    assert gss_users and set(gss_users) == {principal}
    assert proxy.sasl_stats.unauthenticated_requests == 0


def test_a_principal_the_broker_does_not_allow_is_refused(kdc: Kdc,
                                                          gss_proxy: tuple[SaslProxy, str, str]) -> None:
    proxy, _, _ = gss_proxy
    other = kdc.add_principal(f"intruder{time.monotonic_ns()}")
    keytab = kdc.keytab(other.split("@")[0])
    started = time.monotonic()
    with KafkaConsumer(bootstrap_servers=proxy.bootstrap, **gss_settings(other, keytab)) as c:
        with pytest.raises(SaslAuthenticationError, match=f"principal {other} is not allowed"):
            c.topics()
    assert time.monotonic() - started < 5


def test_a_stale_keytab_fails_before_reaching_the_broker(kdc: Kdc,
                                                         gss_proxy: tuple[SaslProxy, str, str]) -> None:
    proxy, principal, old_keytab = gss_proxy
    kdc.keytab(principal.split("@")[0])          # new keys: the old keytab no longer works
    with KafkaConsumer(bootstrap_servers=proxy.bootstrap,
                       **gss_settings(principal, old_keytab)) as c:
        with pytest.raises(SaslAuthenticationError,
                           match="GSSAPI authentication to kafka/127.0.0.1 failed getting the "
                                 "client's credentials or a service ticket"):
            c.topics()
    assert not [u for m, u in proxy.sasl_stats.users if m == "GSSAPI"]


def test_gssapi_needs_a_service_name(gss_proxy: tuple[SaslProxy, str, str]) -> None:
    proxy, principal, keytab = gss_proxy
    with pytest.raises(ConfigurationError, match="sasl.mechanism=GSSAPI needs "
                                                 "sasl.kerberos.service.name"):
        KafkaConsumer(bootstrap_servers=proxy.bootstrap,
                      **gss_settings(principal, keytab, sasl_kerberos_service_name=None))

