"""pyconsumer.testing.FakeCluster as users get it: the README's example runs as written,
importing pyconsumer.testing needs no test extra, produce() without aiokafka says what to
install, and a stopped broker refuses connections at once."""
from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pyconsumer.testing
from pyconsumer import TopicPartition
from pyconsumer.testing import FakeCluster, MissingExtraError

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    """The one python block of the README's "Testing your own code" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Testing your own code\n", 1)[1].split("\n## ", 1)[0]
    blocks: list[str] = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, blocks
    return blocks[0]


def test_the_readme_example_runs_as_written() -> None:
    """The README's example, executed verbatim: it reads exactly the three records produced
    (offsets, keys, values, headers, timestamps) and commits the positions after them."""
    ns: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(readme_example(), "README.md#testing-your-own-code", "exec"), ns)
    cluster: FakeCluster = ns["cluster"]
    assert cluster.errors == []
    assert sorted((r.topic, r.partition, r.offset, r.key, r.value, r.headers, r.timestamp,
                   r.timestamp_type) for r in ns["records"]) == [
        ("orders", 0, 0, b"k1", b"v1", [], 1_700_000_000_000, 0),
        ("orders", 0, 1, b"k2", b"v2", [("h", b"x")], 1_700_000_000_001, 0),
        ("orders", 1, 0, None, b"v3", [], 1_700_000_000_500, 0)]
    assert cluster.committed("app") == {TopicPartition("orders", 0): 2,
                                        TopicPartition("orders", 1): 1}


def test_importing_pyconsumer_testing_imports_no_test_extra() -> None:
    """A fresh interpreter imports pyconsumer.testing (FakeCluster included) without loading
    aiokafka, confluent-kafka, kafka-python or the repository's tests package."""
    code = ("import sys, pyconsumer.testing as t; t.FakeCluster; print(sorted(m for m in "
            "sys.modules if m.split('.')[0] in ('aiokafka', 'confluent_kafka', 'kafka', 'tests')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert (out.returncode, out.stdout, out.stderr) == (0, "[]\n", "")


def test_produce_without_aiokafka_is_one_clear_sentence(
        monkeypatch: pytest.MonkeyPatch, make_cluster: Callable[..., FakeCluster]) -> None:
    """Without aiokafka, produce() raises MissingExtraError naming the package and the extra,
    and appends nothing; the rest of the fake keeps working."""
    cluster = make_cluster(topics={"t": 1})
    monkeypatch.setitem(sys.modules, "aiokafka", None)
    with pytest.raises(MissingExtraError) as info:
        cluster.produce(TopicPartition("t", 0), [(b"k", b"v")])
    assert str(info.value) == ("FakeCluster.produce needs the aiokafka package: "
                               "pip install -e '.[test]' (in pyconsumer's clone)")
    assert isinstance(info.value, ImportError)
    assert cluster.partition(TopicPartition("t", 0)).end == 0


def test_produce_with_an_unknown_codec_names_the_codecs(
        make_cluster: Callable[..., FakeCluster]) -> None:
    """An unknown codec is a ValueError listing the ones there are, and appends nothing."""
    cluster = make_cluster(topics={"t": 1})
    with pytest.raises(ValueError) as info:
        cluster.produce(TopicPartition("t", 0), [(b"k", b"v")], codec="brotli")
    assert str(info.value) == "unknown codec 'brotli': one of none, gzip, snappy, lz4, zstd"
    assert cluster.partition(TopicPartition("t", 0)).end == 0


def test_pyconsumer_testing_exports_the_fake() -> None:
    """pyconsumer.testing exports the fake's public names, the package's own objects (the tests
    import them from there)."""
    import pyconsumer.testing._fake as fake

    assert set(fake.__all__) == {"FakeCluster", "RawClient", "Request", "ConsumerGroup",
                                 "FetchSession", "FAST_CONSUMER", "Push",
                                 "TelemetrySubscriptionConfig"}
    assert set(fake.__all__) <= set(pyconsumer.testing.__all__)
    for name in fake.__all__:
        assert getattr(pyconsumer.testing, name) is getattr(fake, name), name


def test_a_stopped_broker_refuses_connections_at_once(
        make_cluster: Callable[..., FakeCluster]) -> None:
    """stop_broker() stops listening before it returns: a connection made right after it is
    refused (it used to be accepted into the backlog until the accept thread's 50 ms wait
    ended), and start_broker() listens on the same port again."""
    cluster = make_cluster(2)
    for _ in range(3):
        port = cluster.brokers[1].port
        cluster.stop_broker(1)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        cluster.start_broker(1)
        assert cluster.brokers[1].port == port
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
