"""Typed views of response bodies: :func:`body_of` gives a :class:`~pyconsumer.net.connection.
Response`'s body as the generated TypedDict of its API (:mod:`pyconsumer.protocol.bodies`), so
mypy checks the field names and types a caller reads::

    body = body_of(future.value, ApiKey.LIST_OFFSETS)      # a ListOffsetsResponse
    for topic in body["topics"]: ...

One overload per :class:`~pyconsumer.protocol.ApiKey` (a unit test holds them to the keys and
to the generated names). At run time it is the body itself: no copy, no check (the connection
decoded the body of the API the request named, so the caller names the same one).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, overload

from pyconsumer.net.connection import Response
from pyconsumer.protocol import ApiKey

if TYPE_CHECKING:  # types only: the bodies module is never needed at run time
    from pyconsumer.protocol import bodies


@overload
def body_of(response: Response,
            api: Literal[ApiKey.FETCH]) -> bodies.FetchResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.LIST_OFFSETS]) -> bodies.ListOffsetsResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.METADATA]) -> bodies.MetadataResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.OFFSET_COMMIT]) -> bodies.OffsetCommitResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.OFFSET_FETCH]) -> bodies.OffsetFetchResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.FIND_COORDINATOR]) -> bodies.FindCoordinatorResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.JOIN_GROUP]) -> bodies.JoinGroupResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.HEARTBEAT]) -> bodies.HeartbeatResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.LEAVE_GROUP]) -> bodies.LeaveGroupResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.SYNC_GROUP]) -> bodies.SyncGroupResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.DESCRIBE_GROUPS]) -> bodies.DescribeGroupsResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.SASL_HANDSHAKE]) -> bodies.SaslHandshakeResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.API_VERSIONS]) -> bodies.ApiVersionsResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.CREATE_TOPICS]) -> bodies.CreateTopicsResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.OFFSET_FOR_LEADER_EPOCH]) -> bodies.OffsetForLeaderEpochResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.SASL_AUTHENTICATE]) -> bodies.SaslAuthenticateResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.CONSUMER_GROUP_HEARTBEAT]) -> bodies.ConsumerGroupHeartbeatResponse: ...


@overload
def body_of(response: Response, api: Literal[ApiKey.GET_TELEMETRY_SUBSCRIPTIONS]
            ) -> bodies.GetTelemetrySubscriptionsResponse: ...


@overload
def body_of(response: Response,
            api: Literal[ApiKey.PUSH_TELEMETRY]) -> bodies.PushTelemetryResponse: ...


def body_of(response: Response, api: ApiKey) -> Any:
    """``response.body`` typed as the response body of ``api`` (the API it answers)."""
    return response.body


__all__ = ["body_of"]
