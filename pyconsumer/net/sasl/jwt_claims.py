"""The client's check of a token from an OAuth token endpoint, as Java's login validator
does it: a JWT (three base64url parts, a JSON payload) with a numeric ``exp``, a non-empty
string subject in the claim ``sasl.oauthbearer.sub.claim.name`` names, and, when present, a
scope (a string or a list of strings) in the claim ``sasl.oauthbearer.scope.claim.name``
names. The signature is the broker's to check, not the client's.
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from typing import Any

from pyconsumer.errors import SaslAuthenticationError


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


def read_claims(token: str, where: str, sub_claim: str, scope_claim: str) -> TokenClaims:
    """The claims of ``token`` from ``where`` (the endpoint, for the errors); never shows the
    token itself, which is a credential."""
    try:
        claims = _payload(token)
    except (ValueError, binascii.Error, UnicodeDecodeError) as e:
        raise SaslAuthenticationError(f"the access_token from {where} is not a usable JWT: "
                                      f"{e.__class__.__name__}") from None
    if not isinstance(claims, dict):
        raise SaslAuthenticationError(f"the access_token from {where} has no JSON claims object")
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, (int, float)):
        raise SaslAuthenticationError(f"the access_token from {where} has no numeric 'exp' claim")
    subject = claims.get(sub_claim)
    if not isinstance(subject, str) or not subject.strip():
        raise SaslAuthenticationError(
            f"the access_token from {where} has no '{sub_claim}' claim with a subject "
            f"(sasl.oauthbearer.sub.claim.name={sub_claim})")
    raw_scope = claims.get(scope_claim)
    scope: tuple[str, ...]
    if raw_scope is None:
        scope = ()
    elif isinstance(raw_scope, str):
        scope = tuple(raw_scope.split())
    elif isinstance(raw_scope, list) and all(isinstance(s, str) for s in raw_scope):
        scope = tuple(raw_scope)
    else:
        raise SaslAuthenticationError(
            f"the access_token from {where} has a '{scope_claim}' claim that is neither a "
            f"string nor a list of strings (sasl.oauthbearer.scope.claim.name={scope_claim})")
    return TokenClaims(subject.strip(), scope, float(exp))


__all__ = ["TokenClaims", "read_claims"]
