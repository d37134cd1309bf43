"""The fake cluster's data plane, version negotiation and fault knobs, at the protocol level
(RawClient) and through pyconsumer where negotiation is what is checked."""
from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.errors import ErrorCode
from pyconsumer.protocol import ApiKey
from pyconsumer.records import decode_records
from pyconsumer.structs import TopicPartition
from pyconsumer.testing import FakeCluster, RawClient

T0 = TopicPartition("t", 0)


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(2, topics={"t": 2}) as c:     # t-0 led by broker 0, t-1 by broker 1
        yield c
        assert c.errors == []


def fetch_body(cluster: FakeCluster, parts: list[tuple[int, int, int]], *, max_wait: int = 0,
               max_bytes: int = 1 << 30, epoch: int = -1, topic: str = "t",
               topic_id: uuid.UUID | None = None) -> dict[str, Any]:
    """Fetch ``(partition, offset, partition_max_bytes)`` of ``topic``."""
    return {"max_wait_ms": max_wait, "min_bytes": 1, "max_bytes": max_bytes,
            "topics": [{"topic": topic,
                        "topic_id": topic_id or (cluster.topics[topic].topic_id
                                                 if topic in cluster.topics else uuid.UUID(int=0)),
                        "partitions": [{"partition": p, "fetch_offset": o,
                                        "partition_max_bytes": m, "current_leader_epoch": epoch}
                                       for p, o, m in parts]}]}


def batches(cluster: FakeCluster, partition: int) -> list[bytes]:
    return [b.data for b in cluster.partition(TopicPartition("t", partition)).batches]


def fill(cluster: FakeCluster, partition: int, sizes: list[int]) -> None:
    for i, n in enumerate(sizes):
        cluster.produce(TopicPartition("t", partition), [(b"k", b"v%d" % j * 10) for j in range(n)],
                        timestamp=1000 * (i + 1))


def test_fetch_cuts_at_partition_max_bytes_as_kafka(cluster: FakeCluster) -> None:
    fill(cluster, 0, [3, 2, 4])
    b0, b1, b2 = batches(cluster, 0)
    with RawClient(cluster, 0) as c:
        def records(version: int, parts: list[tuple[int, int, int]], **kw: Any) -> list[bytes]:
            out = c.call(ApiKey.FETCH, version, fetch_body(cluster, parts, **kw))
            return [bytes(p["records"]) for p in out["responses"][0]["partitions"]]

        # whole batches, then a cut piece of the next (a slice of the log)
        assert records(17, [(0, 0, len(b0) + 10)]) == [b0 + b1[:10]]
        # the batch holding the offset comes whole, from its base offset
        assert records(17, [(0, 4, len(b1) + len(b2))]) == [b1 + b2]
        # KIP-74: the first batch of the response goes out even over the limit
        assert records(17, [(0, 0, 5)]) == [b0]
        # max_bytes is shared: it cuts too, and once spent a partition gets nothing
        assert records(17, [(0, 0, 1 << 20), (0, 3, 1 << 20)], max_bytes=len(b0) + 3) \
            == [b0 + b1[:3], b""]
        # past the first non-empty partition an incomplete batch becomes nothing (v3+)...
        assert records(17, [(0, 0, len(b0)), (0, 3, 5)]) == [b0, b""]
        # ...but is cut as it stands for Fetch v2 (hard limits, before KIP-74)
        assert records(2, [(0, 0, len(b0)), (0, 3, 5)]) == [b0, b1[:5]]
        assert records(2, [(0, 0, 5)]) == [b0[:5]]


def test_fetch_partition_errors(cluster: FakeCluster) -> None:
    fill(cluster, 0, [3])
    cluster.delete_records(T0, 1)
    with RawClient(cluster, 0) as c:
        def one(version: int = 17, **kw: Any) -> dict[str, Any]:
            parts = kw.pop("parts", [(0, 1, 1 << 20)])
            out = c.call(ApiKey.FETCH, version, fetch_body(cluster, parts, **kw))
            p: dict[str, Any] = out["responses"][0]["partitions"][0]
            return p

        ok = one()
        assert (ok["error_code"], ok["high_watermark"], ok["last_stable_offset"],
                ok["log_start_offset"]) == (0, 3, 3, 1)
        assert [r.offset for r in decode_records(ok["records"], "t", 0, fetch_offset=1)] == [1, 2]
        assert one(parts=[(0, 3, 100)])["records"] == b""              # at the end: empty
        assert one(parts=[(0, 4, 100)])["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
        assert one(parts=[(0, 0, 100)])["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
        moved = one(parts=[(1, 0, 100)])                  # t-1 is led by broker 1
        assert moved["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert moved["current_leader"] == {"leader_id": 1, "leader_epoch": 0}
        assert one(epoch=1)["error_code"] == ErrorCode.UNKNOWN_LEADER_EPOCH
        cluster.move_leader(T0, 0)                    # same broker, epoch 1
        assert one(epoch=0)["error_code"] == ErrorCode.FENCED_LEADER_EPOCH
        assert one(epoch=1)["error_code"] == 0
        assert one(topic_id=uuid.uuid4())["error_code"] == ErrorCode.UNKNOWN_TOPIC_ID
        assert one(version=12, topic="nope")["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_fetch_waits_for_data_up_to_max_wait(cluster: FakeCluster) -> None:
    with RawClient(cluster, 0) as c:
        t0 = time.monotonic()
        out = c.call(ApiKey.FETCH, 17, fetch_body(cluster, [(0, 0, 1 << 20)], max_wait=300))
        waited = time.monotonic() - t0
        assert out["responses"][0]["partitions"][0]["records"] == b"" and 0.28 <= waited < 1.5
        timer = threading.Timer(0.1, lambda: fill(cluster, 0, [2]))
        timer.start()
        t0 = time.monotonic()
        out = c.call(ApiKey.FETCH, 17, fetch_body(cluster, [(0, 0, 1 << 20)], max_wait=3000))
        waited = time.monotonic() - t0
        timer.join()
        assert out["responses"][0]["partitions"][0]["records"] == batches(cluster, 0)[0]
        assert 0.08 <= waited < 1.0, waited


def test_list_offsets_and_offset_for_leader_epoch(cluster: FakeCluster) -> None:
    fill(cluster, 0, [2, 3])                     # offsets 0-1 at ts 1000.., 2-4 at ts 2000..
    cluster.move_leader(T0, 0)               # epoch 1 starts at 5
    fill(cluster, 0, [1])
    cluster.delete_records(T0, 1)
    with RawClient(cluster, 0) as c:
        def listed(version: int, ts: int) -> dict[str, Any]:
            out = c.call(ApiKey.LIST_OFFSETS, version, {"replica_id": -1, "topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "timestamp": ts,
                                              "current_leader_epoch": -1}]}]})
            p: dict[str, Any] = out["topics"][0]["partitions"][0]
            return p

        assert listed(0, -2)["old_style_offsets"] == [1]
        assert (listed(10, -2)["offset"], listed(10, -1)["offset"]) == (1, 6)
        assert (listed(10, -1)["leader_epoch"], listed(10, -2)["leader_epoch"]) == (1, 0)
        found = listed(10, 2001)
        assert (found["offset"], found["timestamp"]) == (3, 2001)
        assert listed(10, 10**12)["offset"] == -1
        assert (listed(10, -3)["offset"], listed(10, -3)["timestamp"]) == (4, 2002)

        def epoch_end(asked: int) -> tuple[int, int]:
            out = c.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, {"topics": [{
                "topic": "t", "partitions": [
                    {"partition": 0, "current_leader_epoch": 1, "leader_epoch": asked}]}]})
            p = out["topics"][0]["partitions"][0]
            assert p["error_code"] == 0
            return p["leader_epoch"], p["end_offset"]

        assert [epoch_end(e) for e in (0, 1, 2)] == [(0, 5), (1, 6), (-1, -1)]
        cluster.truncate(T0, 2)              # epoch 1 never happened on this log
        cluster.move_leader(T0, 0)
        assert cluster.partition(T0).epochs == [(0, 0), (2, 2)]


def test_metadata_lists_brokers_topics_ids_and_unknowns(cluster: FakeCluster) -> None:
    tid = cluster.topics["t"].topic_id
    with RawClient(cluster, 1) as c:
        every = c.call(ApiKey.METADATA, 12, {"topics": None})
        assert [(b["node_id"], b["port"]) for b in every["brokers"]] == [
            (0, cluster.brokers[0].port), (1, cluster.brokers[1].port)]
        (t,) = every["topics"]
        assert (t["name"], t["topic_id"]) == ("t", tid)
        assert [(p["partition_index"], p["leader_id"], p["leader_epoch"])
                for p in t["partitions"]] == [(0, 0, 0), (1, 1, 0)]
        by_id = c.call(ApiKey.METADATA, 12, {"topics": [{"topic_id": tid, "name": None}]})
        assert by_id["topics"][0]["name"] == "t"
        missing = c.call(ApiKey.METADATA, 1, {"topics": [{"name": "nope"}]})["topics"][0]
        assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_api_versions_caps_and_kip511(cluster: FakeCluster) -> None:
    with FakeCluster(1, topics={"t": 1}, max_versions={
            ApiKey.API_VERSIONS: 2, ApiKey.FETCH: 11, ApiKey.METADATA: 8}) as capped:
        with RawClient(capped) as c:
            refused = c.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "x",
                                                      "client_software_version": "1"})
            assert refused["error_code"] == ErrorCode.UNSUPPORTED_VERSION
            keys = {k["api_key"]: (k["min_version"], k["max_version"])
                    for k in c.call(ApiKey.API_VERSIONS, 2, {})["api_keys"]}
            assert keys[ApiKey.API_VERSIONS] == (0, 2) and keys[ApiKey.FETCH] == (0, 11)
            assert ApiKey.SASL_HANDSHAKE not in keys          # no handler, not advertised
        with RawClient(capped) as c:                              # over the cap: hang up
            with pytest.raises(EOFError):
                c.call(ApiKey.FETCH, 12, fetch_body(capped, [(0, 0, 100)]))
        assert capped.rejected == [(0, ApiKey.FETCH, 12)]
        with KafkaConsumer(bootstrap_servers=capped.bootstrap) as k:  # falls back to v2
            assert k.partitions_for_topic("t") == {0}
            versions = k.negotiated_versions()[-1]
            assert (versions["API_VERSIONS"], versions["FETCH"], versions["METADATA"]) \
                == (2, 11, 8)


def test_fault_knobs(cluster: FakeCluster) -> None:
    hb = {"group_id": "g", "generation_id": 1, "member_id": "m"}
    cluster.move_coordinator("g", 0)
    with RawClient(cluster, 0) as c, RawClient(cluster, 1) as other:
        cluster.inject(ApiKey.HEARTBEAT, ErrorCode.NOT_COORDINATOR, count=2, broker=0)
        assert other.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == ErrorCode.NOT_COORDINATOR
        assert [c.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] for _ in range(3)] == [
            ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_COORDINATOR, ErrorCode.UNKNOWN_MEMBER_ID]
        cluster.delay(ApiKey.HEARTBEAT, 0.3, count=1)
        t0 = time.monotonic()
        c.call(ApiKey.HEARTBEAT, 4, hb)
        assert 0.28 <= time.monotonic() - t0 < 1.5
        remove = cluster.control(ApiKey.HEARTBEAT, lambda r: {"error_code": 27}
                                 if r.body["member_id"] == "m" else None)
        assert c.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
        assert c.call(ApiKey.HEARTBEAT, 4, {**hb, "member_id": "x"})["error_code"] \
            == ErrorCode.UNKNOWN_MEMBER_ID
        remove()
        assert c.call(ApiKey.HEARTBEAT, 4, hb)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
        cluster.drop_next(ApiKey.HEARTBEAT)
        with pytest.raises(EOFError):
            c.call(ApiKey.HEARTBEAT, 4, hb)
    mark = cluster.mark()
    with RawClient(cluster, 1) as c:
        c.call(ApiKey.METADATA, 12, {"topics": None})
        r = cluster.wait_for_request(lambda r: r.api == ApiKey.METADATA, after=mark)
        assert (r.broker, r.version, r.client_id) == (1, 12, "raw")
        with pytest.raises(AssertionError, match="no matching request within 0.1 s"):
            cluster.wait_for_request(ApiKey.JOIN_GROUP, timeout=0.1, after=mark)


def test_stop_and_start_broker_on_the_same_port(cluster: FakeCluster) -> None:
    port = cluster.brokers[1].port
    c = RawClient(cluster, 1)
    cluster.stop_broker(1)
    with pytest.raises((EOFError, ConnectionError)):
        c.call(ApiKey.METADATA, 12, {"topics": None})
    c.close()
    with pytest.raises(ConnectionRefusedError):
        RawClient(cluster, 1)
    cluster.start_broker(1)
    assert cluster.brokers[1].port == port
    with RawClient(cluster, 1) as c:
        assert c.call(ApiKey.METADATA, 12, {"topics": None})["topics"][0]["name"] == "t"


def test_an_independent_client_joins_splits_consumes_and_commits() -> None:
    """librdkafka (confluent-kafka) against the fake: two members split 4 partitions with its
    range assignor, read exactly what was appended, commit and leave."""
    ck = pytest.importorskip("confluent_kafka")
    with FakeCluster(3, topics={"t": 4}) as cluster:
        conf = {"bootstrap.servers": cluster.bootstrap, "group.id": "rdk",
                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "heartbeat.interval.ms": 100, "session.timeout.ms": 6000, "log_level": 3}
        members = [ck.Consumer({**conf, "client.id": name}) for name in ("a", "b")]
        try:
            for m in members:
                m.subscribe(["t"])
            deadline = time.monotonic() + 10
            while not all(len(m.assignment()) == 2 for m in members):
                assert time.monotonic() < deadline
                for m in members:
                    assert m.poll(0.02) is None
            assert [sorted(tp.partition for tp in m.assignment()) for m in members] \
                == [[0, 1], [2, 3]]
            expected = {}
            for p in range(4):
                offsets = cluster.produce(TopicPartition("t", p), [
                    (b"k%d" % i, b"v%d-%d" % (p, i)) for i in range(3 + p)])
                expected[p] = [(o, b"k%d" % o, b"v%d-%d" % (p, o)) for o in offsets]
            got: dict[int, list[tuple[int, bytes, bytes]]] = {}
            while sum(map(len, got.values())) < sum(map(len, expected.values())):
                assert time.monotonic() < deadline, got
                for i, m in enumerate(members):
                    msg = m.poll(0.02)
                    if msg is not None:
                        assert msg.error() is None and msg.partition() in (2 * i, 2 * i + 1)
                        got.setdefault(msg.partition(), []).append(
                            (msg.offset(), msg.key(), msg.value()))
            assert got == expected
            for m in members:
                m.commit(asynchronous=False)
            assert cluster.committed("rdk") == {TopicPartition("t", p): 3 + p for p in range(4)}
        finally:
            for m in members:
                m.close()
        g = cluster.group("rdk")
        assert g is not None and g.state == "Empty"
        assert (cluster.errors, cluster.rejected) == ([], [])


def _tid(c: FakeCluster) -> uuid.UUID:
    return c.topics["t"].topic_id


# (api, version, request body, where the error lands in the answer)
INJECTABLE: list[tuple[ApiKey, int, Any, Any]] = [
    (ApiKey.FETCH, 4, lambda c: fetch_body(c, [(0, 0, 100)]),
     lambda a: a["responses"][0]["partitions"][0]["error_code"]),
    (ApiKey.FETCH, 17, lambda c: fetch_body(c, [(0, 0, 100)]),
     lambda a: a["responses"][0]["partitions"][0]["error_code"]),
    (ApiKey.LIST_OFFSETS, 0, lambda c: {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "timestamp": -1}]}]},
     lambda a: a["topics"][0]["partitions"][0]["error_code"]),
    (ApiKey.LIST_OFFSETS, 10, lambda c: {"topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "timestamp": -1}]}]},
     lambda a: a["topics"][0]["partitions"][0]["error_code"]),
    (ApiKey.METADATA, 12, lambda c: {"topics": [{"name": "t", "topic_id": _tid(c)}]},
     lambda a: a["topics"][0]["error_code"]),
    (ApiKey.FIND_COORDINATOR, 3, lambda c: {"key": "g"}, lambda a: a["error_code"]),
    (ApiKey.FIND_COORDINATOR, 6, lambda c: {"coordinator_keys": ["g"]},
     lambda a: a["coordinators"][0]["error_code"]),
    (ApiKey.JOIN_GROUP, 1, lambda c: {"group_id": "g", "protocol_type": "consumer"},
     lambda a: a["error_code"]),
    (ApiKey.JOIN_GROUP, 9, lambda c: {"group_id": "g", "protocol_type": "consumer"},
     lambda a: a["error_code"]),
    (ApiKey.SYNC_GROUP, 5, lambda c: {"group_id": "g"}, lambda a: a["error_code"]),
    (ApiKey.HEARTBEAT, 0, lambda c: {"group_id": "g"}, lambda a: a["error_code"]),
    (ApiKey.LEAVE_GROUP, 5, lambda c: {"group_id": "g", "members": []},
     lambda a: a["error_code"]),
    (ApiKey.OFFSET_COMMIT, 9, lambda c: {"group_id": "g", "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 1}]}]},
     lambda a: a["topics"][0]["partitions"][0]["error_code"]),
    (ApiKey.OFFSET_FETCH, 1, lambda c: {"group_id": "g", "topics": [
        {"name": "t", "partition_indexes": [0]}]},
     lambda a: a["topics"][0]["partitions"][0]["error_code"]),
    (ApiKey.OFFSET_FETCH, 7, lambda c: {"group_id": "g", "topics": None},
     lambda a: a["error_code"]),
    (ApiKey.OFFSET_FETCH, 9, lambda c: {"groups": [{"group_id": "g", "topics": None}]},
     lambda a: a["groups"][0]["error_code"]),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, lambda c: {"topics": [{"topic": "t", "partitions": [
        {"partition": 0, "leader_epoch": 0}]}]},
     lambda a: a["topics"][0]["partitions"][0]["error_code"]),
    (ApiKey.DESCRIBE_GROUPS, 5, lambda c: {"groups": ["g"]},
     lambda a: a["groups"][0]["error_code"]),
    (ApiKey.API_VERSIONS, 3, lambda c: {}, lambda a: a["error_code"]),
]


@pytest.mark.parametrize(("api", "version", "body", "where"), INJECTABLE,
                         ids=[f"{a.name}-v{v}" for a, v, _, _ in INJECTABLE])
def test_inject_puts_the_error_where_the_api_carries_it(cluster: FakeCluster, api: ApiKey,
                                                        version: int, body: Any, where: Any
                                                        ) -> None:
    cluster.inject(api, ErrorCode.KAFKA_STORAGE_ERROR)
    with RawClient(cluster, 0) as c:
        assert where(c.call(api, version, body(cluster))) == ErrorCode.KAFKA_STORAGE_ERROR
        assert where(c.call(api, version, body(cluster))) != ErrorCode.KAFKA_STORAGE_ERROR
