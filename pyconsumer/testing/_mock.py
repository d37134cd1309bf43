"""librdkafka's mock cluster, driven through ctypes on the librdkafka inside confluent-kafka.

The mock brokers run on a librdkafka thread inside this process, listen on 127.0.0.1 and
speak the real Kafka protocol, so any client (ours included) can connect to them. Broker
ids are 1..N. Signatures follow librdkafka's ``src/rdkafka_mock.h``.
"""
from __future__ import annotations

import ctypes
import glob
import threading
import weakref
import atexit
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

from pyconsumer.protocol import ApiKey

from ._errors import MockClusterError, require_module, require_spec

__all__ = ["MockCluster", "MockClusterError", "MockRequest", "find_librdkafka"]

_RD_KAFKA_PRODUCER = 0
_lib: ctypes.CDLL | None = None
_lib_lock = threading.Lock()
_live: weakref.WeakSet[MockCluster] = weakref.WeakSet()
#: the highest versions the mock's group handlers really parse (librdkafka's
#: src/rdkafka_mock_handlers.c); it advertises higher ones (6, 4, 4)
_GROUP_VERSION_CAPS: tuple[tuple[ApiKey, int], ...] = (
    (ApiKey.JOIN_GROUP, 5), (ApiKey.SYNC_GROUP, 3), (ApiKey.LEAVE_GROUP, 2))



class MockRequest(NamedTuple):
    """One request a mock broker received (request tracking on)."""

    broker_id: int
    api_key: int
    timestamp_us: int  # librdkafka's monotonic clock, microseconds


def find_librdkafka() -> Path:
    """The librdkafka shared library bundled in the confluent-kafka wheel."""
    spec = require_spec("MockCluster", "confluent_kafka")
    if not spec.submodule_search_locations:
        raise MockClusterError(f"confluent_kafka is not a package: {spec.origin}")
    patterns: list[str] = []
    for location in spec.submodule_search_locations:
        pkg = Path(location)
        # auditwheel puts the bundled library next to the package (confluent_kafka.libs/),
        # delocate (macOS) inside it (.dylibs/).
        patterns += [
            str(pkg.parent / "confluent_kafka.libs" / "librdkafka*.so*"),
            str(pkg / ".dylibs" / "librdkafka*.dylib"),
            str(pkg.parent / "confluent_kafka.libs" / "librdkafka*.dll"),
        ]
    for pattern in patterns:
        found = sorted(glob.glob(pattern))
        if found:
            return Path(found[0])
    raise MockClusterError(f"no bundled librdkafka found next to confluent_kafka (looked for {patterns})")


def _declare(lib: ctypes.CDLL) -> None:
    vp, cp, i16, i32, i64, ci = (
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int16, ctypes.c_int32, ctypes.c_int64, ctypes.c_int,
    )
    sz = ctypes.c_size_t
    sigs: dict[str, tuple[list[object], object]] = {
        "rd_kafka_conf_new": ([], vp),
        "rd_kafka_conf_set": ([vp, cp, cp, cp, sz], ci),
        "rd_kafka_conf_destroy": ([vp], None),
        "rd_kafka_new": ([ci, vp, cp, sz], vp),
        "rd_kafka_destroy": ([vp], None),
        "rd_kafka_err2str": ([ci], cp),
        "rd_kafka_err2name": ([ci], cp),
        "rd_kafka_mock_cluster_new": ([vp, ci], vp),
        "rd_kafka_mock_cluster_destroy": ([vp], None),
        "rd_kafka_mock_cluster_bootstraps": ([vp], cp),
        "rd_kafka_mock_topic_create": ([vp, cp, ci, ci], ci),
        "rd_kafka_mock_topic_delete": ([vp, cp], ci),
        "rd_kafka_mock_topic_set_error": ([vp, cp, ci], None),
        "rd_kafka_mock_broker_set_down": ([vp, i32], ci),
        "rd_kafka_mock_broker_set_up": ([vp, i32], ci),
        "rd_kafka_mock_broker_set_rtt": ([vp, i32, ci], ci),
        "rd_kafka_mock_broker_set_rack": ([vp, i32, cp], ci),
        "rd_kafka_mock_partition_set_leader": ([vp, cp, i32, i32], ci),
        "rd_kafka_mock_partition_set_follower": ([vp, cp, i32, i32], ci),
        "rd_kafka_mock_partition_set_follower_wmarks": ([vp, cp, i32, i64, i64], ci),
        "rd_kafka_mock_partition_delete_records": ([vp, cp, i32, i64], ci),
        "rd_kafka_mock_push_request_errors_array": ([vp, i16, sz, ctypes.POINTER(ci)], None),
        "rd_kafka_mock_clear_request_errors": ([vp, i16], None),
        "rd_kafka_mock_group_initial_rebalance_delay_ms": ([vp, i32], None),
        "rd_kafka_mock_coordinator_set": ([vp, cp, cp, i32], ci),
        "rd_kafka_mock_set_apiversion": ([vp, i16, i16, i16], ci),
        "rd_kafka_mock_set_group_consumer_session_timeout_ms": ([vp, ci], None),
        "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms": ([vp, ci], None),
        "rd_kafka_mock_start_request_tracking": ([vp], None),
        "rd_kafka_mock_stop_request_tracking": ([vp], None),
        "rd_kafka_mock_clear_requests": ([vp], None),
        "rd_kafka_mock_get_requests": ([vp, ctypes.POINTER(sz)], ctypes.POINTER(vp)),
        "rd_kafka_mock_request_destroy_array": ([ctypes.POINTER(vp), sz], None),
        "rd_kafka_mock_request_id": ([vp], i32),
        "rd_kafka_mock_request_api_key": ([vp], i16),
        "rd_kafka_mock_request_timestamp": ([vp], i64),
        "rd_kafka_mock_telemetry_set_requested_metrics": ([vp, ctypes.POINTER(cp), sz], ci),
        "rd_kafka_mock_telemetry_set_push_interval": ([vp, i64], ci),
    }
    for name, (argtypes, restype) in sigs.items():
        fn = getattr(lib, name, None)
        if fn is None:
            continue  # older librdkafka: the wrapper method raises when used
        fn.argtypes = argtypes
        fn.restype = restype


def _load() -> ctypes.CDLL:
    global _lib
    # checked every time (cheap once imported), so the error does not depend on whether an
    # earlier MockCluster loaded the library; and the library is the Python client's copy
    require_module("MockCluster", "confluent_kafka")
    with _lib_lock:
        if _lib is None:
            lib = ctypes.CDLL(str(find_librdkafka()))
            _declare(lib)
            _lib = lib
        return _lib


class MockCluster:
    """A librdkafka mock cluster with ``num_brokers`` brokers (ids 1..N) on 127.0.0.1.

    >>> with MockCluster(3) as mc:
    ...     mc.create_topic("t", 6)
    ...     mc.bootstrap   # "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"

    ``initial_rebalance_delay_ms`` defaults to 0 (librdkafka's default is 3000).
    Quirks: one batch per partition per Fetch, 5 MB / 100k batches retention per partition,
    no CreateTopics (topics auto-create with 4 partitions unless created here), ListOffsets
    by timestamp unimplemented.

    The mock advertises JoinGroup v6, SyncGroup v4 and LeaveGroup v4 (their flexible versions)
    but cannot parse them (it closes the connection on a read underflow, or answers LeaveGroup
    v4 with a null array): librdkafka itself never sends them. LeaveGroup v3 is broken too: its
    handler reads a single MemberId string where v3 has the Members array (so the member is not
    found and stays in the group until its session expires) and answers without the Members
    array. ``cap_group_versions`` (default True) makes it advertise what it can handle:
    JoinGroup 0-5, SyncGroup 0-3, LeaveGroup 0-2.

    Every rebalance of a group that is not empty (a join, a leave, an expiry) waits
    session.timeout.ms - 1 s for members to join before the leader is elected; an explicit
    LeaveGroup starts that rebalance at once, an expiry only after session.timeout.ms. The sync
    completes when the leader's SyncGroup arrives: followers whose SyncGroup came earlier get
    their assignment, a follower whose SyncGroup comes later gets INVALID_REQUEST (a real broker
    answers it with the assignment).
    """

    def __init__(self, num_brokers: int = 3, *, initial_rebalance_delay_ms: int = 0,
                 cap_group_versions: bool = True) -> None:
        if num_brokers < 1:
            raise ValueError(f"num_brokers must be >= 1, got {num_brokers}")
        self._lib = _load()
        self.num_brokers = num_brokers
        self._rk: int | None = None
        self._mc: int | None = None
        conf = self._lib.rd_kafka_conf_new()
        errstr = ctypes.create_string_buffer(512)
        # Only errors: the mock logs every broker down/up and connection close otherwise.
        for key, value in (("log_level", "3"), ("client.id", "pyconsumer-mock-cluster")):
            if self._lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), errstr, len(errstr)) != 0:
                self._lib.rd_kafka_conf_destroy(conf)
                raise MockClusterError(f"rd_kafka_conf_set({key}): {errstr.value.decode()}")
        rk = self._lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
        if not rk:
            self._lib.rd_kafka_conf_destroy(conf)  # not consumed on failure
            raise MockClusterError(f"rd_kafka_new failed: {errstr.value.decode()}")
        self._rk = rk
        mc = self._lib.rd_kafka_mock_cluster_new(rk, num_brokers)
        if not mc:
            self._lib.rd_kafka_destroy(rk)
            self._rk = None
            raise MockClusterError(f"rd_kafka_mock_cluster_new({num_brokers}) failed")
        self._mc = mc
        _live.add(self)
        self.bootstrap: str = self._lib.rd_kafka_mock_cluster_bootstraps(mc).decode()
        self.set_group_initial_rebalance_delay_ms(initial_rebalance_delay_ms)
        if cap_group_versions:
            for api_key, highest in _GROUP_VERSION_CAPS:
                self.set_apiversion(api_key, 0, highest)

    # ------------------------------------------------------------------ helpers

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.num_brokers + 1))

    def _handle(self) -> int:
        if self._mc is None:
            raise MockClusterError("mock cluster is closed")
        return self._mc

    def _fn(self, name: str) -> ctypes._NamedFuncPointer:
        fn = getattr(self._lib, name, None)
        if fn is None:
            raise MockClusterError(f"this librdkafka does not export {name}")
        return fn  # type: ignore[no-any-return]

    def _check(self, err: int, what: str) -> None:
        if err != 0:
            name = self._lib.rd_kafka_err2name(err).decode()
            text = self._lib.rd_kafka_err2str(err).decode()
            raise MockClusterError(f"{what}: {name} ({err}): {text}")

    # ------------------------------------------------------------------ topics

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> str:
        err = self._fn("rd_kafka_mock_topic_create")(self._handle(), name.encode(), partitions, replication_factor)
        self._check(err, f"create_topic({name!r}, {partitions}, {replication_factor})")
        return name

    def delete_topic(self, name: str) -> None:
        self._check(self._fn("rd_kafka_mock_topic_delete")(self._handle(), name.encode()), f"delete_topic({name!r})")

    def set_topic_error(self, name: str, error_code: int) -> None:
        """Metadata reports ``error_code`` for this topic (0 clears it)."""
        self._fn("rd_kafka_mock_topic_set_error")(self._handle(), name.encode(), error_code)

    def set_partition_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Move the leader; -1 makes the partition leaderless."""
        err = self._fn("rd_kafka_mock_partition_set_leader")(self._handle(), topic.encode(), partition, broker_id)
        self._check(err, f"set_partition_leader({topic!r}, {partition}, {broker_id})")

    def set_partition_follower(self, topic: str, partition: int, broker_id: int) -> None:
        """The broker a consumer with client.rack is told to fetch from (KIP-392)."""
        err = self._fn("rd_kafka_mock_partition_set_follower")(self._handle(), topic.encode(), partition, broker_id)
        self._check(err, f"set_partition_follower({topic!r}, {partition}, {broker_id})")

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        err = self._fn("rd_kafka_mock_partition_delete_records")(
            self._handle(), topic.encode(), partition, before_offset)
        self._check(err, f"delete_records({topic!r}, {partition}, {before_offset})")

    # ------------------------------------------------------------------ brokers

    def broker_down(self, broker_id: int) -> None:
        """Close the broker's listener and connections; metadata still lists it."""
        self._check(self._fn("rd_kafka_mock_broker_set_down")(self._handle(), broker_id), f"broker_down({broker_id})")

    def broker_up(self, broker_id: int) -> None:
        self._check(self._fn("rd_kafka_mock_broker_set_up")(self._handle(), broker_id), f"broker_up({broker_id})")

    def set_rtt(self, broker_id: int, ms: int) -> None:
        """Delay every response of this broker by ``ms``."""
        self._check(self._fn("rd_kafka_mock_broker_set_rtt")(self._handle(), broker_id, ms), f"set_rtt({broker_id})")

    def set_rack(self, broker_id: int, rack: str) -> None:
        self._check(self._fn("rd_kafka_mock_broker_set_rack")(self._handle(), broker_id, rack.encode()),
                    f"set_rack({broker_id})")

    def set_coordinator(self, key_type: str, key: str, broker_id: int) -> None:
        """Pin the coordinator: key_type "group" or "transaction"."""
        err = self._fn("rd_kafka_mock_coordinator_set")(self._handle(), key_type.encode(), key.encode(), broker_id)
        self._check(err, f"set_coordinator({key_type!r}, {key!r}, {broker_id})")

    def set_apiversion(self, api_key: int, min_version: int, max_version: int) -> None:
        """Change what ApiVersions advertises for ``api_key`` (-1, -1 disables it)."""
        err = self._fn("rd_kafka_mock_set_apiversion")(self._handle(), api_key, min_version, max_version)
        self._check(err, f"set_apiversion({api_key}, {min_version}, {max_version})")

    def set_telemetry(self, metrics: list[str], push_interval_ms: int) -> None:
        """The KIP-714 subscription the mock hands every client: the metric name prefixes it
        requests (none: no metrics) and the push interval."""
        arr = (ctypes.c_char_p * len(metrics))(*(m.encode() for m in metrics))
        err = self._fn("rd_kafka_mock_telemetry_set_requested_metrics")(
            self._handle(), arr, len(metrics))
        self._check(err, f"set_telemetry({metrics!r})")
        err = self._fn("rd_kafka_mock_telemetry_set_push_interval")(self._handle(), push_interval_ms)
        self._check(err, f"set_telemetry(push_interval_ms={push_interval_ms})")

    # ------------------------------------------------------------------ errors and groups

    def push_request_errors(self, api_key: int, *error_codes: int) -> None:
        """The next len(error_codes) requests of ``api_key`` (to any broker) fail with these codes, in order."""
        arr = (ctypes.c_int * len(error_codes))(*error_codes)
        self._fn("rd_kafka_mock_push_request_errors_array")(self._handle(), api_key, len(error_codes), arr)

    def clear_request_errors(self, api_key: int) -> None:
        self._fn("rd_kafka_mock_clear_request_errors")(self._handle(), api_key)

    def set_group_initial_rebalance_delay_ms(self, delay_ms: int) -> None:
        self._fn("rd_kafka_mock_group_initial_rebalance_delay_ms")(self._handle(), delay_ms)

    def set_group_consumer_session_timeout_ms(self, ms: int) -> None:
        """KIP-848 (group.protocol=consumer) session timeout."""
        self._fn("rd_kafka_mock_set_group_consumer_session_timeout_ms")(self._handle(), ms)

    def set_group_consumer_heartbeat_interval_ms(self, ms: int) -> None:
        """KIP-848 (group.protocol=consumer) heartbeat interval."""
        self._fn("rd_kafka_mock_set_group_consumer_heartbeat_interval_ms")(self._handle(), ms)

    # ------------------------------------------------------------------ request tracking

    def start_request_tracking(self) -> None:
        """Record every request from now on (clears earlier ones)."""
        self._fn("rd_kafka_mock_start_request_tracking")(self._handle())

    def stop_request_tracking(self) -> None:
        self._fn("rd_kafka_mock_stop_request_tracking")(self._handle())

    def clear_requests(self) -> None:
        self._fn("rd_kafka_mock_clear_requests")(self._handle())

    def get_requests(self) -> list[MockRequest]:
        """Requests received since tracking started, oldest first."""
        count = ctypes.c_size_t(0)
        arr = self._fn("rd_kafka_mock_get_requests")(self._handle(), ctypes.byref(count))
        if not arr or count.value == 0:
            return []
        try:
            return [
                MockRequest(
                    int(self._lib.rd_kafka_mock_request_id(arr[i])),
                    int(self._lib.rd_kafka_mock_request_api_key(arr[i])),
                    int(self._lib.rd_kafka_mock_request_timestamp(arr[i])),
                )
                for i in range(count.value)
            ]
        finally:
            self._lib.rd_kafka_mock_request_destroy_array(arr, count.value)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        mc, self._mc = self._mc, None
        rk, self._rk = self._rk, None
        if mc is not None:
            self._lib.rd_kafka_mock_cluster_destroy(mc)
        if rk is not None:
            self._lib.rd_kafka_destroy(rk)
        _live.discard(self)

    def __del__(self) -> None:
        # a forgotten cluster would keep its broker threads and ports until exit
        try:
            self.close()
        except Exception:
            pass

    @property
    def closed(self) -> bool:
        return self._mc is None

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MockCluster({self.num_brokers} brokers, {self.bootstrap}, {'closed' if self.closed else 'open'})"


@atexit.register
def _close_all_clusters() -> None:
    for cluster in list(_live):
        try:
            cluster.close()
        except Exception:
            pass
