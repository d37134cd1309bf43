"""ApiVersions (API key 18): the APIs the cluster serves, capped by ``max_versions``. A request
of a newer version than it speaks is refused with a v0 body (KIP-511, in cluster.py)."""
from __future__ import annotations

from .common import Body, Request
from .listener import Broker
from .state import ClusterState


def api_keys(state: ClusterState) -> list[Body]:
    """The ``api_keys`` list of an ApiVersions answer."""
    # Produce is listed though not spoken: librdkafka takes a broker without it for a
    # pre-0.10 one (old message formats, Fetch v0); a Produce request gets a hang-up
    keys = [{"api_key": 0, "min_version": 0, "max_version": 11}]
    return keys + [{"api_key": int(k), "min_version": lo, "max_version": hi}
                   for k, (lo, hi) in sorted(state.advertised().items())]


def handle(state: ClusterState, b: Broker, req: Request) -> Body:
    return {"error_code": 0, "api_keys": api_keys(state)}


def error(state: ClusterState, b: Broker, req: Request, code: int) -> Body:
    return {"error_code": code}
