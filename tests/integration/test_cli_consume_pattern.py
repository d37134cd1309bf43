"""``pyconsumer consume --pattern`` finds the regular expression anywhere in a topic's name, as
``ingest --pattern`` and Spark's subscribePattern do (``^...$`` for the whole name), both when
it reads the partitions directly (assign) and with --group, where the library's
subscribe(pattern=) keeps Java's whole-name rule and the command hands it ``.*(?:REGEX).*``.
In process, against the in-process FakeCluster."""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from pyconsumer import TopicPartition
from pyconsumer.cli import main
from pyconsumer.console import whole_name_pattern
from pyconsumer.testing import FakeCluster

TOPICS = ["shop.orders", "orders", "orders-archive", "payments"]


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    c = FakeCluster(1)
    for topic in TOPICS:
        add(c, topic)
    yield c
    c.close()
    assert c.errors == [], c.errors


def add(cluster: FakeCluster, topic: str) -> None:
    cluster.create_topic(topic, 1)
    cluster.produce(TopicPartition(topic, 0), [(None, topic.encode(), [], 1_700_000_000_000)])


def read(capsys: pytest.CaptureFixture[str], cluster: FakeCluster, *args: str) -> list[str]:
    """The topics of the records consume printed, sorted (each topic holds one record)."""
    code = main(["consume", "-b", cluster.bootstrap, "--from-beginning", "--timeout-ms", "1000",
                 *args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    topics = [json.loads(line)["topic"] for line in captured.out.splitlines()]
    assert captured.err.endswith(f"processed {len(topics)} message"
                                 f"{'s' if len(topics) != 1 else ''}\n")
    return sorted(topics)


@pytest.mark.parametrize("group", [False, True], ids=["assign", "group"])
def test_pattern_matches_anywhere_in_the_name(capsys: pytest.CaptureFixture[str],
                                              cluster: FakeCluster, group: bool) -> None:
    runs = iter(range(3))

    def with_group() -> list[str]:          # a new group each run: none has offsets yet
        return ["--group", f"g-pattern-{next(runs)}"] if group else []

    assert read(capsys, cluster, "--pattern", "orders", *with_group()) == [
        "orders", "orders-archive", "shop.orders"]
    assert read(capsys, cluster, "--pattern", "^orders$", *with_group()) == ["orders"]
    assert read(capsys, cluster, "--pattern", "^(orders|pay)", *with_group()) == [
        "orders", "orders-archive", "payments"]


def test_assign_leaves_internal_topics_out(capsys: pytest.CaptureFixture[str],
                                          cluster: FakeCluster) -> None:
    """As the Spark source (ingest) does, a name starting with __ counts as internal.
    (subscribe(pattern=) leaves out the topics the metadata marks internal, which the fake
    cluster never does.)"""
    add(cluster, "__consumer_offsets")
    assert read(capsys, cluster, "--pattern", "offsets|orders$") == ["orders", "shop.orders"]


def test_whole_name_pattern_is_the_search_as_a_full_match() -> None:
    import re

    names = TOPICS + ["ord", "x-orders-y", ""]
    for pattern in ["orders", "^orders$", "orders$", "^sh", "a|o", "(?:s)h", "[.]"]:
        full = re.compile(whole_name_pattern(pattern))
        assert [n for n in names if full.fullmatch(n)] == \
            [n for n in names if re.search(pattern, n)], pattern
