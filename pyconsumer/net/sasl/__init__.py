"""SASL client mechanisms: the seam between the connection's AUTHENTICATING state and each
mechanism.

One :class:`SaslMechanism` object runs one authentication of one connection (a fresh one
for each re-authentication, KIP-368)::

    token = mech.start(host)            # first client token, sent in SaslAuthenticate
    while token is not None:
        challenge = <the broker's auth_bytes>
        token = mech.step(challenge)    # None: the client has nothing more to send
    assert mech.complete()              # the exchange succeeded on the client side

A mechanism raises :class:`~pyconsumer.errors.SaslAuthenticationError` with a clear message
(never a secret) when the server's answer is wrong (a bad SCRAM server signature...).

:func:`build_mechanism` picks the module by ``sasl.mechanism`` and imports it only then, so an
optional dependency (``gssapi``) is needed only by who uses it. Each mechanism module defines
``create(settings: SaslSettings) -> SaslMechanism``:

* ``PLAIN`` -> :mod:`.plain`; ``SCRAM-SHA-256``/``SCRAM-SHA-512`` -> :mod:`.scram`
* ``OAUTHBEARER`` -> :mod:`.oauthbearer`; ``GSSAPI`` -> :mod:`.gssapi_mech`
"""
from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from pyconsumer.errors import ConfigurationError
from pyconsumer.config.jaas import (
    KRB5_MODULE,
    MODULE_MECHANISMS,
    OAUTHBEARER_MODULE,
    PLAIN_MODULE,
    SASL_MECHANISMS,
    SCRAM_MODULE,
    JaasEntry,
    check_module,
    parse_jaas,
)

if TYPE_CHECKING:
    from pyconsumer.config import ConsumerConfig

# the names come from the settings' one list, so the two never disagree
MECHANISMS = SASL_MECHANISMS

#: sasl.mechanism -> the module (in this package) holding its ``create``: one module serves
#: the mechanisms of one JAAS login module
_MODULES = {
    mechanism: module
    for login_module, module in ((PLAIN_MODULE, "plain"), (SCRAM_MODULE, "scram"),
                                 (OAUTHBEARER_MODULE, "oauthbearer"), (KRB5_MODULE, "gssapi_mech"))
    for mechanism in MODULE_MECHANISMS[login_module]
}


class SaslMechanism(Protocol):
    """The client side of one SASL exchange (one object per authentication)."""

    name: str

    def start(self, host: str) -> bytes:
        """The first client token; ``host`` is the broker's host name (GSSAPI's service
        principal is ``<service>/<host>``)."""
        ...

    def step(self, challenge: bytes) -> bytes | None:
        """The server's bytes in, the next client token out; None when finished."""
        ...

    def complete(self) -> bool:
        """True once the exchange succeeded on the client side."""
        ...


@dataclasses.dataclass(frozen=True)
class SaslSettings:
    """What every mechanism may read, taken from the consumer settings once.

    Secrets (``password``, JAAS option values, OAuth client secrets) are kept out of the repr.
    """

    mechanism: str
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    #: the parsed sasl.jaas.config, None when unset
    jaas: JaasEntry | None = dataclasses.field(default=None, repr=False)
    #: OAUTHBEARER: a callable giving a token (``sasl.oauth.token.provider``)
    token_provider: Callable[..., Any] | None = dataclasses.field(default=None, repr=False)
    #: every ``sasl.oauthbearer.*`` and ``sasl.login.*`` setting (the token endpoint's) by its
    #: Java name (``sasl.oauthbearer.token.endpoint.url``...)
    oauthbearer: Mapping[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    #: every ``sasl.kerberos.*`` setting by its Java name (``sasl.kerberos.service.name``...)
    kerberos: Mapping[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def jaas_options(self) -> Mapping[str, str]:
        return {} if self.jaas is None else self.jaas.options

    @classmethod
    def from_config(cls, config: ConsumerConfig) -> SaslSettings:
        """The SASL settings of a consumer whose security.protocol is SASL_*."""
        values = config.as_dict()
        mechanism = values["sasl.mechanism"]
        raw_jaas = values["sasl.jaas.config"]
        jaas = None
        if raw_jaas is not None:
            jaas = parse_jaas(raw_jaas)
            check_module(jaas, mechanism)
        # the config already took a Plain/Scram JAAS line's username and password
        username = values["sasl.username"]
        password = values["sasl.password"]
        return cls(
            mechanism=mechanism,
            username=username,
            password=password,
            jaas=jaas,
            token_provider=values["sasl.oauth.token.provider"],
            oauthbearer={k: v for k, v in values.items()
                         if k.startswith(("sasl.oauthbearer.", "sasl.login."))},
            kerberos={k: v for k, v in values.items() if k.startswith("sasl.kerberos.")},
        )


def build_mechanism(settings: SaslSettings) -> SaslMechanism:
    """A fresh client mechanism for one authentication, by ``settings.mechanism``."""
    module_name = _MODULES.get(settings.mechanism)
    if module_name is None:
        raise ConfigurationError(
            f"sasl.mechanism {settings.mechanism!r} is not supported; accepted: "
            + ", ".join(MECHANISMS))
    module: Any = importlib.import_module(f"{__name__}.{module_name}")
    mechanism: SaslMechanism = module.create(settings)
    return mechanism


__all__ = ["MECHANISMS", "SaslMechanism", "SaslSettings", "build_mechanism"]
