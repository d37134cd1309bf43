"""The settings table's rows: :class:`Setting` (one setting's Java name, default, parser and
doc, and the descriptor reading it from a ConsumerConfig) and the Java-only settings
pyconsumer recognises but does not implement (ignored or refused)."""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Generic, Protocol, TypeVar, overload

from pyconsumer.config.parsers import REQUIRED, Parser

# the package's one logger: every config message is under "pyconsumer.config"
log = logging.getLogger("pyconsumer.config")

T = TypeVar("T")


class SettingsHolder(Protocol):
    """What a :class:`Setting` reads its value from (a ConsumerConfig: named structurally, as
    the config module sits above this one)."""

    @property
    def _values(self) -> Mapping[str, Any]: ...


# --------------------------------------------------------------------------- the table


class Setting(Generic[T]):
    """One row of the settings table, and the descriptor that reads it from a config.

    ``name`` is the Java name (dotted), ``attr`` the snake_case attribute, ``default`` the raw
    Java default (parsed like any value), ``validator`` the parser (``validator.accepted`` in
    words), ``type`` the Java type name, ``unit`` ms/bytes/... and ``java`` False for a
    pyconsumer-only setting. ``no_effect`` is the reason a setting is accepted but changes
    nothing (None: implemented); ``quiet`` are values that say what pyconsumer does anyway
    and so are not warned about (compared case-insensitively for strings).
    """

    def __init__(
        self,
        name: str,
        default: Any,
        validator: Parser[T],
        doc: str,
        *,
        unit: str = "",
        java: bool = True,
        no_effect: str | None = None,
        quiet: tuple[Any, ...] = (),
    ) -> None:
        self.name = name
        self.attr = name.replace(".", "_")
        self.default = default
        self.validator = validator
        self.type = validator.type_name
        self.doc = doc
        self.unit = unit
        self.java = java
        self.no_effect = no_effect
        self.quiet = quiet
        self.required = default is REQUIRED
        default_text = "required, no default" if self.required else f"default {default!r}"
        unit_text = f", unit {unit}" if unit else ""
        origin = "Java setting" if java else "pyconsumer setting"
        effect_text = f"; accepted, no effect: {no_effect}" if no_effect else ""
        self.__doc__ = f"{doc} ({origin} ``{name}``; {default_text}{unit_text}{effect_text})"

    @property
    def implemented(self) -> bool:
        """False for a setting that is accepted but has no effect (see ``no_effect``)."""
        return self.no_effect is None

    def is_quiet(self, value: Any) -> bool:
        """True when ``value`` needs no no-effect warning: the default, or a ``quiet`` one."""
        if value == self.validator(self.default):
            return True
        if isinstance(value, str):
            return value.upper() in {q.upper() for q in self.quiet if isinstance(q, str)}
        return value in self.quiet

    def __set_name__(self, owner: type, attr: str) -> None:
        if attr != self.attr:
            raise TypeError(f"setting {self.name} must be declared as {self.attr}, not {attr}")

    @overload
    def __get__(self, obj: None, owner: type) -> Setting[T]: ...
    @overload
    def __get__(self, obj: SettingsHolder, owner: type) -> T: ...
    def __get__(self, obj: SettingsHolder | None, owner: type) -> Setting[T] | T:
        if obj is None:
            return self
        return obj._values[self.name]  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Setting({self.name!r}, default={self.default!r}, {self.validator!r})"


# Java-only settings pyconsumer recognises but does not implement: name -> (action, reason).
# "ignore": accepted, no effect. "refuse": an error unless the value is empty. A name ending


JAVA_ONLY_SETTINGS: dict[str, tuple[str, str]] = {
    "metric.reporters": ("ignore", "JMX/metrics reporters are JVM classes"),
    "metrics.recording.level": (
        "ignore", "pyconsumer always records its metrics (Java's INFO level); none are DEBUG"),
    "security.providers": ("ignore", "JCA security providers are JVM classes"),
    "ssl.provider": ("ignore", "JSSE provider; Python uses OpenSSL"),
    "ssl.keymanager.algorithm": ("ignore", "JSSE key manager; Python uses OpenSSL"),
    "ssl.trustmanager.algorithm": ("ignore", "JSSE trust manager; Python uses OpenSSL"),
    "ssl.secure.random.implementation": ("ignore", "JCA SecureRandom; Python uses OpenSSL"),
    "sasl.kerberos.kinit.cmd": ("ignore", "GSSAPI takes tickets from a keytab or the ticket "
                                "cache through the gssapi package, never by running kinit"),
    "sasl.kerberos.min.time.before.relogin": ("ignore", "Java Kerberos login refresh tuning"),
    "sasl.kerberos.ticket.renew.": ("ignore", "Java Kerberos login refresh tuning"),
    "sasl.login.refresh.": ("ignore", "Java SASL login refresh tuning"),
    "config.providers": ("refuse", "Java ConfigProvider classes; resolve values in Python"),
    "ssl.engine.factory.class": ("refuse", "a Java SslEngineFactory; pass ssl.context instead"),
    "sasl.login.class": ("refuse", "a Java Login class; not supported"),
    "sasl.client.callback.handler.class": (
        "refuse",
        "a Java callback handler; give sasl.username/sasl.password or sasl.jaas.config",
    ),
    "sasl.oauthbearer.": (
        "refuse",
        "a tuning of Java's OAuth client that pyconsumer does not have; give "
        "sasl.oauthbearer.token.endpoint.url with "
        "sasl.oauthbearer.client.credentials.client.id/secret, or sasl.oauth.token.provider",
    ),
    "share.acknowledgement.mode": ("refuse", "applies to ShareConsumer only (Java refuses it too)"),
    "share.acquire.mode": ("refuse", "applies to ShareConsumer only (Java refuses it too)"),
}


def java_only_action(name: str) -> tuple[str, str] | None:
    """(action, reason) of a Java-only setting (a prefix entry matches too), None otherwise."""
    if name in JAVA_ONLY_SETTINGS:
        return JAVA_ONLY_SETTINGS[name]
    for key, entry in JAVA_ONLY_SETTINGS.items():
        if key.endswith(".") and name.startswith(key):
            return entry
    return None


#: no-effect settings already warned about in this process (warn once, not per consumer)
_NO_EFFECT_WARNED: set[str] = set()


def warn_no_effect(setting: Setting[Any]) -> None:
    if setting.name in _NO_EFFECT_WARNED:
        return
    _NO_EFFECT_WARNED.add(setting.name)
    # no value in the message: it may be a password
    log.warning("setting %s is accepted but has no effect in pyconsumer: %s",
                setting.name, setting.no_effect)
