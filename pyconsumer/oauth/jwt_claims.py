"""The client's check of a token from an OAuth token endpoint, as Java's Kafka login
validator does it: a JWT (three base64url parts, a JSON payload) with a numeric ``exp``, a
non-empty string subject in the subject claim (``sub`` unless renamed), and, when present, a
scope (a string or a list of strings) in the scope claim. The signature is the server's to
check, not the client's.
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from typing import Any

from pyconsumer.errors import AuthenticationError


@dataclasses.dataclass(frozen=True)
class ClaimNames:
    """The settings naming the claims, as the caller's users spell them (for the errors)."""

    sub: str = "sasl.oauthbearer.sub.claim.name"
    scope: str = "sasl.oauthbearer.scope.claim.name"


@dataclasses.dataclass(frozen=True)
class TokenClaims:
    subject: str
    scope: tuple[str, ...]
    expires_at: float  # seconds since the epoch


def _payload(token: str) -> Any:
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError(f"not a JWT: {len(parts)} dot-separated parts, not 3")
    text = parts[1]
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def read_claims(token: str, where: str, sub_claim: str, scope_claim: str,
                names: ClaimNames = ClaimNames(),
                error: type[AuthenticationError] = AuthenticationError) -> TokenClaims:
    """The claims of ``token`` from ``where`` (the endpoint, for the errors); never shows the
    token itself, which is a credential."""
    try:
        claims = _payload(token)
    except (ValueError, binascii.Error, UnicodeDecodeError) as e:
        raise error(f"the access_token from {where} is not a usable JWT: "
                                      f"{e.__class__.__name__}") from None
    if not isinstance(claims, dict):
        raise error(f"the access_token from {where} has no JSON claims object")
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, (int, float)):
        raise error(f"the access_token from {where} has no numeric 'exp' claim")
    subject = claims.get(sub_claim)
    if not isinstance(subject, str) or not subject.strip():
        raise error(
            f"the access_token from {where} has no '{sub_claim}' claim with a subject "
            f"({names.sub}={sub_claim})")
    raw_scope = claims.get(scope_claim)
    scope: tuple[str, ...]
    if raw_scope is None:
        scope = ()
    elif isinstance(raw_scope, str):
        scope = tuple(raw_scope.split())
    elif isinstance(raw_scope, list) and all(isinstance(s, str) for s in raw_scope):
        scope = tuple(raw_scope)
    else:
        raise error(
            f"the access_token from {where} has a '{scope_claim}' claim that is neither a "
            f"string nor a list of strings ({names.scope}={scope_claim})")
    return TokenClaims(subject.strip(), scope, float(exp))


__all__ = ["ClaimNames", "TokenClaims", "read_claims"]
