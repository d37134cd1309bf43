"""Version negotiation with one broker: what its ApiVersions answer says (KIP-511's retry
with a lower version included), and which version of each API a request then uses (the
highest both sides support). No I/O: :class:`~pyconsumer.net.connection.BrokerConnection`
sends ApiVersions and hands the answer here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, cast

from pyconsumer import protocol
from pyconsumer.errors import (
    ErrorCode,
    KafkaError,
    KafkaProtocolError,
    UnsupportedVersionError,
    error_for_code,
)
from pyconsumer.protocol import ApiKey

if TYPE_CHECKING:
    from pyconsumer.protocol.bodies import ApiVersionsResponse

#: the ApiVersions version a connection asks with first
FIRST_API_VERSIONS = protocol.SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1]


def _api_versions_body(version: int, frame: bytearray | memoryview) -> ApiVersionsResponse:
    """The ApiVersions answer in ``frame``, typed (raises KafkaProtocolError)."""
    return cast("ApiVersionsResponse",
                protocol.decode_response(ApiKey.API_VERSIONS, version, frame)[1])


def read_api_versions(version: int, frame: bytearray | memoryview, describe: str
                      ) -> ApiVersionsResponse | int:
    """The answer to ApiVersions v``version`` from ``describe``: its body, or the lower
    version to ask with again (KIP-511). Raises the :class:`KafkaError` to close with."""
    try:
        code = protocol.api_versions_error_code(frame)
    except KafkaProtocolError as e:
        raise KafkaProtocolError(f"{describe}: {e}") from None
    if code == ErrorCode.UNSUPPORTED_VERSION:
        # KIP-511: the broker answers with a v0 body listing what it supports; when that
        # body does not parse (some brokers send a malformed one) fall back to v0
        retry = 0
        try:
            for k in _api_versions_body(0, frame)["api_keys"]:
                if k["api_key"] == ApiKey.API_VERSIONS:
                    retry = min(k["max_version"], version - 1)
        except KafkaProtocolError:
            pass
        if version == 0 or retry >= version:
            raise KafkaProtocolError(
                f"{describe} refused ApiVersions v{version} as unsupported "
                f"and there is no lower version to try")
        return max(retry, 0)
    if code:
        err: KafkaError | None = error_for_code(code, f"ApiVersions v{version} from {describe}")
        assert err is not None
        raise err
    try:
        return _api_versions_body(version, frame)
    except KafkaProtocolError as e:
        raise KafkaProtocolError(f"{describe}: {e}") from None


class BrokerVersions:
    """What one broker advertised, and the versions requests to it use. Empty until an
    ApiVersions answer is :meth:`accept`-ed; :meth:`clear` on disconnect."""

    def __init__(self) -> None:
        #: api key -> (min, max) the broker advertises
        self.ranges: dict[int, tuple[int, int]] = {}
        #: the ApiVersions version the broker answered without error
        self.answered: int | None = None
        #: feature name -> finalized max level (ApiVersions v3+; empty from a broker that
        #: versions no cluster features) and the epoch they were finalized at (-1: none)
        self.finalized_features: dict[str, int] = {}
        self.features_epoch = -1

    def accept(self, version: int, body: ApiVersionsResponse) -> None:
        self.ranges = {k["api_key"]: (k["min_version"], k["max_version"])
                       for k in body["api_keys"]}
        self.answered = version
        self.finalized_features = {f["name"]: f["max_version_level"]
                                   for f in body.get("finalized_features") or []}
        self.features_epoch = body.get("finalized_features_epoch", -1)

    def clear(self) -> None:
        self.ranges = {}
        self.answered = None
        self.finalized_features = {}
        self.features_epoch = -1

    def version_for(self, api_key: int, describe: str, min_version: int = 0,
                    max_version: int | None = None) -> int:
        """The highest version of ``api_key`` both sides support (within the given bounds)."""
        api = ApiKey(api_key)
        ours_lo, ours_hi = protocol.SUPPORTED_VERSIONS[api]
        lo = max(ours_lo, min_version)
        hi = ours_hi if max_version is None else min(ours_hi, max_version)
        theirs = self.ranges.get(int(api))
        if theirs is None:
            raise UnsupportedVersionError(
                f"{describe} does not support {api.name} (not in its ApiVersions answer)")
        best = min(hi, theirs[1])
        if best < max(lo, theirs[0]):
            raise UnsupportedVersionError(
                f"{describe} supports {api.name} v{theirs[0]}-{theirs[1]}, pyconsumer needs "
                f"v{lo}-{hi}: no common version")
        return best

    def check(self, api: ApiKey, version: int, describe: str) -> None:
        """A version chosen by the caller must be in the range the broker advertises (an API
        it does not list is left to the broker to refuse)."""
        if int(api) in self.ranges:
            lo, hi = self.ranges[int(api)]
            if not lo <= version <= hi:
                raise UnsupportedVersionError(
                    f"{describe} supports {api.name} v{lo}-{hi}, not v{version}")

    def negotiated(self, describe: str) -> dict[str, int]:
        """API name -> version in use, for every API both sides share."""
        out: dict[str, int] = {}
        for api in protocol.SUPPORTED_VERSIONS:
            try:
                out[api.name] = self.version_for(api, describe)
            except UnsupportedVersionError:
                pass
        if self.answered is not None:  # the version actually answered
            out[ApiKey.API_VERSIONS.name] = self.answered
        return out


__all__ = ["BrokerVersions", "FIRST_API_VERSIONS", "read_api_versions"]
