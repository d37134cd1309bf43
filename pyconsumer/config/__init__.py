"""Every consumer setting: one table of Java names, defaults, parsers and docs.

Settings are the class attributes of :class:`ConsumerConfig`, each a :class:`Setting`
descriptor declared once (Java name, Java default, parser/validator, doc). The defaults
are those of the Java KafkaConsumer (ConsumerConfig + CommonClientConfigs of Apache Kafka trunk,
4.x). A key may be given in its Java spelling (``"fetch.max.bytes"``) or in snake_case
(``fetch_max_bytes``); giving both spellings of one key is an error.

What pyconsumer does with the Java settings it cannot honour (see ``JAVA_ONLY_SETTINGS``):

* JVM plumbing that changes no consumer behaviour (metrics reporters, the metrics recording
  level, JCA providers, key/trust manager algorithms, Kerberos and SASL login refresh tuning)
  is *accepted and ignored*, so a Java properties file can be used as is. The ignored keys and
  values are kept in :attr:`ConsumerConfig.ignored_settings` and logged at INFO.
* Settings that name Java classes whose absence would change behaviour (``config.providers``,
  ``ssl.engine.factory.class``, ``sasl.login.class``, SASL callback handlers other than
  Kafka's own ``OAuthBearerLoginCallbackHandler``, which is what pyconsumer does with a token
  endpoint and so is accepted, as OAuth configs paste it), the
  ``sasl.oauthbearer.*`` settings of Java's OAuth code that pyconsumer does not have
  (the broker's JWKS validation, the validator class, the clock skew), and
  the ShareConsumer-only ``share.*`` settings are *refused* with a ConfigurationError
  saying what to use instead — unless their value is empty (None, "", []), which is accepted as "not set".

Where pyconsumer differs from Java on purpose (each also said in the setting's doc):

* ``key.deserializer``/``value.deserializer`` have no default in Java (required); here the
  default None returns the raw bytes. Values are Python callables ``(bytes | None) -> Any``
  or the name of a Java built-in deserializer (``StringDeserializer`` ...).
* ``interceptor.classes`` takes Python import paths (``module:Class`` or ``module.Class``) or
  classes; ``interceptors`` (pyconsumer only) takes interceptor objects.
* ``partition.assignment.strategy`` takes assignor protocol names (``range``, ``roundrobin``,
  ``sticky``, ``cooperative-sticky``), Java class names of the built-in assignors (mapped to
  those names), or assignor objects with a ``name`` attribute.
* SSL stores: ``ssl.truststore.location``/``ssl.keystore.location`` are JKS or PKCS12 stores
  (read by :mod:`pyconsumer.config.keystores`, the ``keystores`` extra) or PEM files. As in
  Java, type JKS and type PKCS12 each read both formats; unlike Java, a type left at its
  default (JKS) also reads a PEM file, so settings written for PEM keep working.
* SASL (``security.protocol=SASL_PLAINTEXT``/``SASL_SSL``): ``sasl.mechanism`` PLAIN,
  SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI; the PLAIN/SCRAM credentials come from
  ``sasl.username``/``sasl.password`` (pyconsumer names, as librdkafka's) or from a
  PlainLoginModule/ScramLoginModule ``sasl.jaas.config`` (parsed by
  :mod:`pyconsumer.config.jaas`; a text that does not parse names the character position,
  never an excerpt). OAUTHBEARER tokens come from ``sasl.oauth.token.provider`` (a Python
  callable, pyconsumer only), from the client-credentials grant of
  ``sasl.oauthbearer.token.endpoint.url`` with ``sasl.oauthbearer.client.credentials.client.id``
  /``.client.secret`` and ``sasl.oauthbearer.scope`` (or clientId/clientSecret/scope in an
  OAuthBearerLoginModule ``sasl.jaas.config``), with Java's ``sasl.login.*`` timeouts and
  retry backoffs, or from the JWT-bearer grant (KIP-1139,
  ``sasl.oauthbearer.jwt.retriever.class=JwtBearerJwtRetriever`` with the
  ``sasl.oauthbearer.assertion.*`` settings), or from Java's unsecured JWT options there.
  Unlike Java, the token endpoint timeouts are 10 s when unset (Java: no limit).
  Passwords are never shown in reprs, errors or logs.
* Stricter than Java: ``group.instance.id`` without ``group.id``, ``fetch.min.bytes`` above
  ``fetch.max.bytes``, and non-positive ``session.timeout.ms``/``heartbeat.interval.ms`` or
  ``metrics.sample.window.ms`` are errors; an empty ``partition.assignment.strategy`` with a classic group fails at
  construction instead of at subscribe().

Settings in the table that pyconsumer accepts but that change nothing (each row's
``no_effect`` gives the reason; ``Setting.implemented`` is False):
``metadata.cluster.check.enable``, and ``sasl.oauthbearer.expected.audience``/``.issuer``
(checks of a broker; Java's clients do not apply them either). Setting one to a value other than its default logs a
WARNING naming it and the reason, once per process.
Every other setting is read by the consumer (``tests/unit/test_settings_truthful.py`` checks
both).

The package owns its parsers, one job a module: ``parsers`` (the parser kit: Java types),
``values`` (the domain parsers: servers, offset reset, deserializers, assignors,
interceptors), ``ssl`` (the ``ssl.SSLContext`` built from the settings), ``keystores`` (JKS
and PKCS12 stores read for it), ``jaas``
(``sasl.jaas.config``), ``table`` (the ``Setting`` row and the Java-only settings),
``checks`` (the cross-field checks) and ``consumer_config`` (the table itself:
:class:`ConsumerConfig`). Every config message is logged as ``pyconsumer.config``.
"""
from __future__ import annotations

from pyconsumer.config.consumer_config import ConsumerConfig
from pyconsumer.config.table import JAVA_ONLY_SETTINGS, Setting
from pyconsumer.config.values import (
    Deserializer,
    OffsetResetStrategy,
    parse_auto_offset_reset,
    parse_bootstrap_servers,
)

__all__ = [
    "ConsumerConfig",
    "Setting",
    "JAVA_ONLY_SETTINGS",
    "OffsetResetStrategy",
    "parse_bootstrap_servers",
    "parse_auto_offset_reset",
    "Deserializer",
]
