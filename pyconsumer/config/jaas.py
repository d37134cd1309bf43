"""``sasl.jaas.config``: one JAAS login module line, as Java's ``JaasConfig`` reads it.

Grammar (Java ``org.apache.kafka.common.security.JaasConfig``)::

    <LoginModule class> <flag> [<key>=<value> ...] ;

with flag one of ``required``, ``requisite``, ``sufficient``, ``optional``; a value is a
quoted string (``"..."``, backslash escapes the next character) or a bare word; the final
``;`` is required, as in Java, and one module only (Kafka clients refuse several). A text that
does not parse is a :class:`~pyconsumer.errors.ConfigurationError` naming the setting and the
character position; no excerpt of the text is shown since it usually holds a password.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from pyconsumer.errors import ConfigurationError

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
KRB5_MODULE = "com.sun.security.auth.module.Krb5LoginModule"

#: login module class -> the sasl.mechanism values it serves: the one list of the SASL
#: mechanism names (the settings check, the consumer's help and the client's mechanism
#: modules all derive theirs from it)
MODULE_MECHANISMS: dict[str, tuple[str, ...]] = {
    PLAIN_MODULE: ("PLAIN",),
    SCRAM_MODULE: ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    OAUTHBEARER_MODULE: ("OAUTHBEARER",),
    KRB5_MODULE: ("GSSAPI",),
}

#: every sasl.mechanism this client speaks, in the order messages list them
SASL_MECHANISMS: tuple[str, ...] = tuple(
    mechanism for mechanisms in MODULE_MECHANISMS.values() for mechanism in mechanisms)

FLAGS = ("required", "requisite", "sufficient", "optional")

_SPACE = re.compile(r"\s*")
_NAME = re.compile(r"[A-Za-z_$][\w.$-]*")
_BARE = re.compile(r"[^\s\";=]+")


class JaasEntry(NamedTuple):
    """A parsed login module line. ``options`` may hold secrets: never print it."""

    module: str
    flag: str
    options: dict[str, str]

    def __repr__(self) -> str:
        # option names only: values are passwords, keytabs, tokens
        return f"JaasEntry(module={self.module!r}, flag={self.flag!r}, options=<{len(self.options)} hidden>)"


def _bad(setting: str, pos: int, what: str) -> ConfigurationError:
    return ConfigurationError(f"{setting}: {what} at character {pos}")


def parse_jaas(text: str, setting: str = "sasl.jaas.config") -> JaasEntry:
    """Parse one JAAS login module line (see the module docstring)."""
    if not isinstance(text, str):
        raise ConfigurationError(f"{setting} must be a string, not {type(text).__name__}")
    pos = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    m = _NAME.match(text, pos)
    if m is None:
        raise _bad(setting, pos, "expected a login module class name")
    module = m.group()
    pos = _SPACE.match(text, m.end()).end()  # type: ignore[union-attr]
    m = _NAME.match(text, pos)
    if m is None or m.group() not in FLAGS:
        raise _bad(setting, pos, f"expected a control flag ({', '.join(FLAGS)})")
    flag = m.group()
    pos = m.end()
    options: dict[str, str] = {}
    while True:
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= len(text):
            raise _bad(setting, pos, "missing ';' at the end of the login module")
        if text[pos] == ";":
            pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
            if pos != len(text):
                raise _bad(setting, pos,
                           "text after ';' (only one login module is allowed)")
            return JaasEntry(module, flag, options)
        m = _NAME.match(text, pos)
        if m is None:
            raise _bad(setting, pos, "expected an option name")
        key, key_pos = m.group(), pos
        pos = _SPACE.match(text, m.end()).end()  # type: ignore[union-attr]
        if pos >= len(text) or text[pos] != "=":
            raise _bad(setting, pos, f"expected '=' after option {key}")
        pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
        if pos < len(text) and text[pos] == '"':
            value, pos = _quoted(text, pos, setting, key)
        else:
            m = _BARE.match(text, pos)
            if m is None:
                raise _bad(setting, pos, f"expected a value for option {key}")
            value, pos = m.group(), m.end()
        if key in options:
            raise _bad(setting, key_pos, f"option {key} given twice")
        options[key] = value


def _quoted(text: str, pos: int, setting: str, key: str) -> tuple[str, int]:
    out: list[str] = []
    i = pos + 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        elif c == '"':
            return "".join(out), i + 1
        else:
            out.append(c)
            i += 1
    raise _bad(setting, pos, f"unterminated quoted value of option {key}")


def check_module(entry: JaasEntry, mechanism: str, setting: str = "sasl.jaas.config") -> None:
    """The login module must be known and serve ``mechanism``."""
    mechanisms = MODULE_MECHANISMS.get(entry.module)
    if mechanisms is None:
        raise ConfigurationError(
            f"{setting}: login module {entry.module} is not supported; known: "
            + ", ".join(MODULE_MECHANISMS))
    if mechanism not in mechanisms:
        raise ConfigurationError(
            f"{setting} uses {entry.module.rsplit('.', 1)[-1]}, which does not match "
            f"sasl.mechanism={mechanism}")


__all__ = ["FLAGS", "KRB5_MODULE", "MODULE_MECHANISMS", "OAUTHBEARER_MODULE", "PLAIN_MODULE",
           "SASL_MECHANISMS", "SCRAM_MODULE", "JaasEntry", "check_module", "parse_jaas"]
