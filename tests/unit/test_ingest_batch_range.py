"""A batch ingest through Spark's writer fixes its end on the driver (pin_range): a latest end
becomes the offsets it was when the run started, as JSON the source reads; an end given as
offsets stays as given; and the lag afterwards is measured from those ends. When the brokers
cannot be asked, the read goes ahead as asked, without a lag."""
from __future__ import annotations

import json
import socket
from collections.abc import Callable

from pyconsumer.ingest.batch_range import pin_range
from pyconsumer.ingest.lag import PartitionLag
from pyconsumer.structs import TopicPartition
from pyconsumer.testing import FakeCluster


def _options(bootstrap: str, ending: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": bootstrap, "subscribe": "t", "startingOffsets": "earliest",
            "endingOffsets": ending}


def test_a_latest_end_is_pinned_and_the_lag_measured_from_it(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 2})
    cluster.produce(TopicPartition("t", 0), [(b"k", b"v" * 10)] * 7)
    cluster.produce(TopicPartition("t", 1), [(b"k", b"v" * 10)] * 3)
    pinned = pin_range(_options(cluster.bootstrap, "latest"))
    assert pinned is not None
    assert json.loads(pinned.options["endingOffsets"]) == {"t": {"0": 7, "1": 3}}
    assert {k: v for k, v in pinned.options.items() if k != "endingOffsets"} == \
        {k: v for k, v in _options(cluster.bootstrap, "latest").items() if k != "endingOffsets"}
    cluster.produce(TopicPartition("t", 1), [(b"k", b"v" * 10)] * 4)    # while the run reads
    assert pinned.lag(11.0) == [PartitionLag("t", 0, 0, 0), PartitionLag("t", 1, 4, 44)]
    assert pinned.lag(None) == [PartitionLag("t", 0, 0, 0), PartitionLag("t", 1, 4, None)]


def test_an_end_given_as_offsets_reads_as_given(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 2})
    cluster.produce(TopicPartition("t", 0), [(b"k", b"v")] * 7)
    given = '{"t": {"0": 5, "1": -1}}'
    pinned = pin_range(_options(cluster.bootstrap, given))
    assert pinned is not None
    assert pinned.options["endingOffsets"] == given
    assert pinned.ends == {TopicPartition("t", 0): 5, TopicPartition("t", 1): 0}
    assert [(lag.partition, lag.records) for lag in pinned.lag(1.0) or []] == [(0, 2), (1, 0)]


def test_no_broker_to_ask_leaves_the_read_as_asked() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]          # closed once the block ends
    options = _options(f"127.0.0.1:{port}", "latest")
    options["kafka.request.timeout.ms"] = "500"
    options["kafka.default.api.timeout.ms"] = "1000"
    assert pin_range(options) is None
