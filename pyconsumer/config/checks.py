"""The cross-field checks: rules between settings that no single parser can see (Java's
postProcessParsedConfig and the consumer constructor), run on the parsed values, which they
may complete (client.id, enable.auto.commit, reconnect.backoff.max.ms, SASL credentials
from sasl.jaas.config)."""
from __future__ import annotations

import itertools
import urllib.parse
from typing import Any

from pyconsumer.config.jaas import PLAIN_MODULE, SCRAM_MODULE, check_module, parse_jaas
from pyconsumer.config.parsers import fail
from pyconsumer.config.table import log
from pyconsumer.config.values import SASL_MECHANISMS

CLIENT_ID_SEQUENCE = itertools.count(1)  # Java: CONSUMER_CLIENT_ID_SEQUENCE, per process


def check_together(v: dict[str, Any], explicit: frozenset[str]) -> None:
    """Cross-setting rules (Java's postProcessParsedConfig and consumer constructor)."""
    group_id = v["group.id"]
    if group_id is not None and group_id == "":
        # Java: InvalidGroupIdException (values are trimmed, so whitespace is empty too)
        fail("group.id should not be an empty string or whitespace; use None for no group")
    if v["group.instance.id"] is not None and group_id is None:
        fail("group.instance.id is set but group.id is not: static membership needs a group")

    # Java maybeOverrideEnableAutoCommit: no group -> no auto commit
    if group_id is None:
        if "enable.auto.commit" not in explicit:
            v["enable.auto.commit"] = False
        elif v["enable.auto.commit"]:
            fail("enable.auto.commit cannot be set to true when group.id is None")

    # Java checkUnsupportedConfigsPostProcess (with a group.id; Java's message names the
    # protocol by its enum name): with the consumer protocol the broker assigns and sets the
    # session and heartbeat timing
    if group_id is not None:
        if v["group.protocol"] == "consumer":
            bad = [
                n
                for n in ("partition.assignment.strategy", "heartbeat.interval.ms",
                          "session.timeout.ms")
                if n in explicit
            ]
            if bad:
                fail(f"{', '.join(bad)} cannot be set when group.protocol=CONSUMER")
        elif v["group.remote.assignor"] is not None:
            fail("group.remote.assignor cannot be set when group.protocol=CLASSIC")

    if group_id is not None and v["group.protocol"] == "classic":
        if v["heartbeat.interval.ms"] >= v["session.timeout.ms"]:
            fail(
                f"heartbeat.interval.ms ({v['heartbeat.interval.ms']}) must be lower than "
                f"session.timeout.ms ({v['session.timeout.ms']})"
            )
        if not v["partition.assignment.strategy"]:
            fail(
                "partition.assignment.strategy is empty: a classic group needs at least "
                "one assignor"
            )

    # a typed key/value is decoded by the format: a deserializer would be a second decoder
    for column in ("key", "value"):
        if v[f"{column}.format"] != "binary" and v[f"{column}.deserializer"] is not None:
            fail(f"{column}.format={v[f'{column}.format']} and {column}.deserializer are both set: "
                 f"the format decodes the {column}s; drop one of them")

    # Java postProcessReconnectBackoffConfigs
    if "reconnect.backoff.ms" in explicit and "reconnect.backoff.max.ms" not in explicit:
        v["reconnect.backoff.max.ms"] = v["reconnect.backoff.ms"]
    # Java only warns about these: the maximum becomes a static backoff/timeout
    for first, most in (
        ("retry.backoff.ms", "retry.backoff.max.ms"),
        ("socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms"),
    ):
        if v[first] > v[most]:
            log.warning("%s (%d) is greater than %s (%d): a static %d ms is used",
                        first, v[first], most, v[most], v[most])
    if (
        v["group.protocol"] == "classic"
        and 0 <= v["connections.max.idle.ms"] < v["max.poll.interval.ms"]
    ):
        log.warning(
            "connections.max.idle.ms (%d) is lower than max.poll.interval.ms (%d): the "
            "coordinator connection may close during a rebalance",
            v["connections.max.idle.ms"], v["max.poll.interval.ms"],
        )

    if v["fetch.min.bytes"] > v["fetch.max.bytes"]:
        fail(
            f"fetch.min.bytes ({v['fetch.min.bytes']}) must not exceed fetch.max.bytes "
            f"({v['fetch.max.bytes']})"
        )
    for limit in ("fetch.max.bytes", "max.partition.fetch.bytes"):
        if v["max.response.size"] < v[limit]:
            fail(
                f"max.response.size ({v['max.response.size']}) must be at least {limit} "
                f"({v[limit]}), or legitimate fetch responses would be refused"
            )

    check_security_settings(v, explicit)

    # Java maybeOverrideClientId
    if not v["client.id"]:
        part = v["group.instance.id"] or str(next(CLIENT_ID_SEQUENCE))
        v["client.id"] = f"consumer-{'null' if group_id is None else group_id}-{part}"


def check_security_settings(v: dict[str, Any], explicit: frozenset[str]) -> None:
    """SASL and SSL settings that go together (a mechanism and its credentials, one source of
    each SSL item)."""
    protocol = v["security.protocol"]
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        mechanism = v["sasl.mechanism"]
        if not mechanism:
            fail("sasl.mechanism must be set when security.protocol enables SASL")
        if mechanism not in SASL_MECHANISMS:
            fail(
                f"sasl.mechanism {mechanism!r} is not supported; accepted: "
                f"{', '.join(SASL_MECHANISMS)}"
            )
        jaas = v["sasl.jaas.config"]
        if jaas is not None:
            credentials = jaas_credentials(jaas, mechanism)
            if credentials is not None:
                if v["sasl.username"] is not None or v["sasl.password"] is not None:
                    fail("give either sasl.jaas.config or sasl.username/sasl.password, "
                          "not both")
                v["sasl.username"], v["sasl.password"] = credentials
        if mechanism == "GSSAPI":
            # Kerberos credentials: a keytab or the ticket cache, not a password; the
            # brokers' service name must be known (Java fails the login without it)
            service = v["sasl.kerberos.service.name"]
            if service is None and jaas is not None:
                service = parse_jaas(jaas).options.get("serviceName")
            if not service:
                fail("sasl.mechanism=GSSAPI needs sasl.kerberos.service.name (the brokers' "
                      "Kerberos service name, usually 'kafka') or serviceName in "
                      "sasl.jaas.config")
        elif mechanism == "OAUTHBEARER":
            options = {}
            if jaas is not None:
                options = parse_jaas(jaas).options
            client_id = (v["sasl.oauthbearer.client.credentials.client.id"]
                         or options.get("clientId"))
            secret = (v["sasl.oauthbearer.client.credentials.client.secret"]
                      or options.get("clientSecret"))
            url = v["sasl.oauthbearer.token.endpoint.url"]
            scheme = urllib.parse.urlsplit(url).scheme.lower() if url else ""
            if url and scheme not in ("http", "https", "file"):
                fail(f"sasl.oauthbearer.token.endpoint.url {url!r}: an http(s) token endpoint "
                     "or a file:/// token file is expected")
            token_file = scheme == "file"
            jwt_bearer = v["sasl.oauthbearer.jwt.retriever.class"].endswith("JwtBearerJwtRetriever")
            if token_file or v["sasl.oauth.token.provider"] is not None:
                pass    # the token is the file's or the callable's: nothing more is needed
            elif jwt_bearer:
                if not v["sasl.oauthbearer.token.endpoint.url"]:
                    fail("sasl.oauthbearer.jwt.retriever.class=JwtBearerJwtRetriever needs "
                         "sasl.oauthbearer.token.endpoint.url")
                if not (v["sasl.oauthbearer.assertion.private.key.file"]
                        or v["sasl.oauthbearer.assertion.file"]):
                    fail("sasl.oauthbearer.jwt.retriever.class=JwtBearerJwtRetriever needs "
                         "sasl.oauthbearer.assertion.private.key.file (or a ready assertion in "
                         "sasl.oauthbearer.assertion.file)")
            elif not (url and client_id and secret) and not any(
                    k.startswith("unsecuredLogin") for k in options):
                fail("sasl.mechanism=OAUTHBEARER needs a token: sasl.oauth.token.provider, "
                      "sasl.oauthbearer.token.endpoint.url with "
                      "sasl.oauthbearer.client.credentials.client.id and .client.secret (or "
                      "clientId and clientSecret in sasl.jaas.config), or an unsecured token "
                      "(unsecuredLoginStringClaim_sub in sasl.jaas.config)")
        elif v["sasl.username"] is None or v["sasl.password"] is None:
            fail(
                f"sasl.mechanism={mechanism} needs sasl.username and sasl.password "
                "(or sasl.jaas.config)"
            )

    if v["ssl.context"] is not None:
        others = sorted(
            n for n in explicit if n.startswith("ssl.") and n != "ssl.context"
        )
        if others:
            fail(f"ssl.context is given, so {', '.join(others)} must not be")
    # PEM text settings are PEM whatever the store type says; Java refuses an explicit other
    for text, store in (("ssl.truststore.certificates", "truststore"),
                        ("ssl.keystore.key", "keystore")):
        kind = v[f"ssl.{store}.type"]
        if v[text] is not None and f"ssl.{store}.type" in explicit and kind != "PEM":
            fail(f"{text} is PEM text, but ssl.{store}.type={kind}: set ssl.{store}.type=PEM "
                 f"or leave it unset")
    if v["ssl.truststore.location"] and v["ssl.truststore.certificates"]:
        fail("give either ssl.truststore.location or ssl.truststore.certificates, not both")
    key, chain = v["ssl.keystore.key"], v["ssl.keystore.certificate.chain"]
    if (key is None) != (chain is None):
        fail("ssl.keystore.key and ssl.keystore.certificate.chain must be given together")
    if key is not None and v["ssl.keystore.location"]:
        fail("give either ssl.keystore.location or ssl.keystore.key/certificate.chain")
    if v["ssl.endpoint.identification.algorithm"] not in (None, "", "https"):
        fail(
            f"ssl.endpoint.identification.algorithm "
            f"{v['ssl.endpoint.identification.algorithm']!r} is not supported; "
            "accepted: https, or empty to disable host name checks"
        )


def jaas_credentials(text: str, mechanism: str) -> tuple[str, str] | None:
    """Check a sasl.jaas.config line against sasl.mechanism: (username, password) of a
    PlainLoginModule/ScramLoginModule, None for the others (OAUTHBEARER, Kerberos)."""
    entry = parse_jaas(text)
    check_module(entry, mechanism)
    if entry.module not in (PLAIN_MODULE, SCRAM_MODULE):
        return None
    if "username" not in entry.options or "password" not in entry.options:
        fail("sasl.jaas.config must give username=\"...\" and password=\"...\"")
    return entry.options["username"], entry.options["password"]
