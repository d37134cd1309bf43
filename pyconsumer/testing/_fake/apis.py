"""The one dispatch table: each API the fake serves, its handler and the shape of an error
answer (where that API puts an injected error code). One module per API (or per small family)
holds both, as franz-go's kfake keeps one file per request key. Adding an API is a module with
``handle`` and ``error`` and one line here."""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from pyconsumer.protocol import ApiKey

from . import (
    api_versions,
    consumer_group_heartbeat,
    describe_groups,
    fetch,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_offsets,
    metadata,
    offset_commit,
    offset_fetch,
    offset_for_leader_epoch,
    sync_group,
    telemetry,
)
from .common import Body, Request
from .listener import Broker
from .state import ClusterState


class Api(NamedTuple):
    #: (cluster state, the broker asked, the request) -> the answer, under the cluster lock
    handle: Callable[[ClusterState, Broker, Request], Body]
    #: (cluster state, broker, request, error code) -> an answer carrying that code
    error: Callable[[ClusterState, Broker, Request, int], Body]


APIS: dict[ApiKey, Api] = {
    ApiKey.API_VERSIONS: Api(api_versions.handle, api_versions.error),
    ApiKey.METADATA: Api(metadata.handle, metadata.error),
    ApiKey.FIND_COORDINATOR: Api(find_coordinator.handle, find_coordinator.error),
    ApiKey.JOIN_GROUP: Api(join_group.handle, join_group.error),
    ApiKey.SYNC_GROUP: Api(sync_group.handle, sync_group.error),
    ApiKey.HEARTBEAT: Api(heartbeat.handle, heartbeat.error),
    ApiKey.LEAVE_GROUP: Api(leave_group.handle, leave_group.error),
    ApiKey.OFFSET_COMMIT: Api(offset_commit.handle, offset_commit.error),
    ApiKey.OFFSET_FETCH: Api(offset_fetch.handle, offset_fetch.error),
    ApiKey.FETCH: Api(fetch.handle, fetch.error),
    ApiKey.LIST_OFFSETS: Api(list_offsets.handle, list_offsets.error),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: Api(offset_for_leader_epoch.handle,
                                        offset_for_leader_epoch.error),
    ApiKey.DESCRIBE_GROUPS: Api(describe_groups.handle, describe_groups.error),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: Api(consumer_group_heartbeat.handle,
                                         consumer_group_heartbeat.error),
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: Api(telemetry.handle_get, telemetry.error),
    ApiKey.PUSH_TELEMETRY: Api(telemetry.handle_push, telemetry.error),
}
#: served only by a cluster made with client_telemetry (Kafka: with a telemetry receiver)
TELEMETRY_APIS = frozenset({ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY})

__all__ = ["APIS", "Api", "TELEMETRY_APIS"]
