"""A token from a file (``sasl.oauthbearer.token.endpoint.url=file:///...``, as Java's file
retriever): whatever keeps the file current (a sidecar, a CSI driver) owns the grant; the
file is read again for each authentication, so a rotated token is picked up."""
from __future__ import annotations

import urllib.parse

from pyconsumer.errors import AuthenticationError, ConfigurationError
from pyconsumer.oauth.jwt_claims import ClaimNames, read_claims


KAFKA_CLAIM_NAMES = ClaimNames()


def token_file_path(url: str, setting: str) -> str:
    """The file a ``file:`` URL names (ConfigurationError naming ``setting`` otherwise)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost") or not parts.path:
        raise ConfigurationError(f"{setting} {url!r}: a token file is given as "
                                 "file:///absolute/path")
    return urllib.parse.unquote(parts.path)


def read_token_file(url: str, sub_claim: str, scope_claim: str,
                    setting: str = "sasl.oauthbearer.token.endpoint.url",
                    names: ClaimNames = KAFKA_CLAIM_NAMES,
                    error: type[AuthenticationError] = AuthenticationError) -> str:
    path = token_file_path(url, setting)
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise error(f"{setting} {url}: cannot read the token file ({reason})") from None
    read_claims(token, f"the token file {path} ({setting})", sub_claim, scope_claim, names, error)
    return token


__all__ = ["read_token_file", "token_file_path"]
