"""Consumer interceptors (interceptor.classes / interceptors) against Tansu, with data written
by confluent-kafka: on_consume sees exactly what poll() would return and its output is what
poll() returns (a chain, in order); on_consume_arrow for poll_arrow (interceptors without it
are skipped); on_commit gets exactly the committed offsets (sync, async, the final commit of
close); close() runs on consumer close; an interceptor that raises is logged at WARNING by name
and breaks nothing; interceptor.classes loads classes by import path. The settings' errors
need no broker."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pyconsumer import KafkaConsumer, OffsetAndMetadata, TopicPartition
from pyconsumer.errors import ConfigurationError
from pyconsumer.records import ConsumerRecord
from pyconsumer.testing import TansuBroker, TestRecord, produce

Records = dict[TopicPartition, list[ConsumerRecord]]
SETTINGS: dict[str, Any] = dict(auto_offset_reset="earliest", enable_auto_commit=False,
                                fetch_max_wait_ms=100)


class Recorder:
    """Records what it is given; ``drop`` filters out the offsets it matches. Instances are
    listed in ``made`` (so a test finds the ones interceptor.classes built)."""

    made: list[Recorder] = []

    def __init__(self, drop: Callable[[int], bool] = lambda offset: False,
                 events: list[str] | None = None, name: str = "recorder") -> None:
        self.drop = drop
        self.name = name
        self.events = events if events is not None else []
        self.consumed: list[Records] = []
        self.commits: list[dict[TopicPartition, OffsetAndMetadata]] = []
        self.configs: dict[str, Any] | None = None
        self.closed = 0
        Recorder.made.append(self)

    def configure(self, configs: dict[str, Any]) -> None:
        self.configs = configs

    def on_consume(self, records: Records) -> Records:
        self.consumed.append({tp: list(rs) for tp, rs in records.items()})
        self.events.append(f"{self.name}:consume")
        out = {tp: [r for r in rs if not self.drop(r.offset)] for tp, rs in records.items()}
        return {tp: rs for tp, rs in out.items() if rs}

    def on_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        self.commits.append(offsets)
        self.events.append(f"{self.name}:commit")

    def close(self) -> None:
        self.closed += 1
        self.events.append(f"{self.name}:close")


class Raising:
    def on_consume(self, records: Records) -> Records:
        raise RuntimeError("on_consume is broken")

    def on_commit(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        raise RuntimeError("on_commit is broken")

    def close(self) -> None:
        raise RuntimeError("close is broken")


class ArrowOddRows:
    """Keeps the rows with an odd offset of poll_arrow's batch."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def on_consume_arrow(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        self.seen += batch.column("offset").to_pylist()
        return batch.filter(pc.equal(pc.bit_wise_and(batch.column("offset"), 1), 1))


def offsets(records: Records) -> dict[int, list[int]]:
    return {tp.partition: [r.offset for r in rs] for tp, rs in records.items()}


def count(polls: list[Records]) -> int:
    return sum(len(rs) for p in polls for rs in p.values())


def poll_until(consumer: KafkaConsumer, want: Callable[[], bool], *, timeout: float = 20.0
               ) -> list[Records]:
    polls: list[Records] = []
    deadline = time.monotonic() + timeout
    while not want():
        assert time.monotonic() < deadline, "timed out"
        got = consumer.poll(100)
        if got:
            polls.append(got)
    return polls


@pytest.fixture
def topic(tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> str:
    name = make_tansu_topic(2)
    produce(tansu.bootstrap, name, [TestRecord(key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
                                    for i in range(20)])
    return name


def test_on_consume_sees_what_poll_returns_and_filters_it(tansu: TansuBroker, topic: str
                                                          ) -> None:
    """First drops offsets divisible by 3, second sees exactly that and drops odd ones: poll()
    returns the second's output; together they saw every record once, in order."""
    events: list[str] = []
    first = Recorder(drop=lambda o: o % 3 == 0, events=events, name="first")
    second = Recorder(drop=lambda o: o % 2 == 1, events=events, name="second")
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, interceptors=[first, second],
                       **SETTINGS) as c:
        c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        polls = poll_until(c, lambda: count(first.consumed) >= 20)
    assert len(first.consumed) == len(second.consumed) >= 1
    assert events == ["first:consume", "second:consume"] * len(first.consumed) + [
        "first:close", "second:close"]
    for before, after, returned in zip(first.consumed, second.consumed, polls):
        assert offsets(after) == {p: [o for o in os if o % 3] for p, os in offsets(before).items()
                                  if [o for o in os if o % 3]}
        assert offsets(returned) == {p: [o for o in os if o % 2 == 0]
                                     for p, os in offsets(after).items()
                                     if [o for o in os if o % 2 == 0]}
        for rs in returned.values():
            assert [(r.key, r.value) for r in rs] == [
                (b"k%d" % (2 * r.offset + r.partition), b"v%d" % (2 * r.offset + r.partition))
                for r in rs]
    every: dict[int, list[int]] = {}
    for p in first.consumed:
        for part, os in offsets(p).items():
            every.setdefault(part, []).extend(os)
    assert every == {0: list(range(10)), 1: list(range(10))}
    # an empty poll does not call on_consume
    assert all(p for p in first.consumed)


def test_a_raising_interceptor_is_logged_and_skipped(tansu: TansuBroker, topic: str,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    after = Recorder(name="after")
    caplog.set_level(logging.WARNING, logger="pyconsumer.consumer.interceptors")
    c = KafkaConsumer(bootstrap_servers=tansu.bootstrap, group_id=f"g-raise-{topic}",
                      interceptors=[Raising(), after], **SETTINGS)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    polls = poll_until(c, lambda: count(after.consumed) >= 10)
    # the next interceptor got the records as they were, and poll() returned them
    assert [offsets(p) for p in polls] == [offsets(p) for p in after.consumed]
    assert sum((offsets(p)[0] for p in polls), []) == list(range(10))
    c.commit()
    assert after.commits == [{tp: OffsetAndMetadata(10, "", after.commits[0][tp].leader_epoch)}]
    c.close()
    assert after.closed == 1
    name = f"{__name__}.Raising"
    warned = [r for r in caplog.records if r.levelno == logging.WARNING and name in r.getMessage()]
    assert [r.getMessage().split(": ", 1)[1] for r in warned][:1] == ["on_consume raised; its "
                                                                      "records are ignored"]
    assert {r.getMessage() for r in warned} >= {f"interceptor {name}: on_commit raised",
                                                f"interceptor {name}: close() raised"}
    assert all(r.exc_info is not None and "is broken" in str(r.exc_info[1]) for r in warned)


def test_on_commit_gets_the_committed_offsets(tansu: TansuBroker, topic: str) -> None:
    events: list[str] = []
    rec = Recorder(events=events)
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, group_id=f"g-commit-{topic}",
                       interceptors=[rec], **SETTINGS) as c:
        c.assign([p0, p1])
        poll_until(c, lambda: count(rec.consumed) >= 20)
        c.commit()
        assert [{tp: om.offset for tp, om in o.items()} for o in rec.commits] == [{p0: 10, p1: 10}]
        c.commit({p0: OffsetAndMetadata(4, "four")})
        assert rec.commits[1] == {p0: OffsetAndMetadata(4, "four")}
        done: list[str] = []
        def callback(offsets: dict[TopicPartition, OffsetAndMetadata], err: Any) -> None:
            done.append(f"callback:{err}")
            events.append("callback")

        c.commit_async({p1: 7}, callback)
        poll_until(c, lambda: bool(done))
        assert done == ["callback:None"]
        assert rec.commits[2] == {p1: OffsetAndMetadata(7)}
        assert events[-2:] == ["recorder:commit", "callback"]    # before the callback
        c.commit({})                         # nothing committed: no on_commit
        assert len(rec.commits) == 3
    # Tansu drops commit metadata: the offsets are what the broker kept
    assert rec.closed == 1 and events[-1] == "recorder:close"


def test_close_commits_then_closes_interceptors(tansu: TansuBroker, topic: str) -> None:
    events: list[str] = []
    rec = Recorder(events=events)
    tp = TopicPartition(topic, 1)
    c = KafkaConsumer(bootstrap_servers=tansu.bootstrap, group_id=f"g-close-{topic}",
                      interceptors=[rec], **{**SETTINGS, "enable_auto_commit": True,
                                             "auto_commit_interval_ms": 600_000})
    c.assign([tp])
    poll_until(c, lambda: count(rec.consumed) >= 10)
    c.close()
    assert [{t: om.offset for t, om in o.items()} for o in rec.commits] == [{tp: 10}]
    assert events[-2:] == ["recorder:commit", "recorder:close"]
    c.close()
    assert rec.closed == 1


def test_poll_arrow_calls_on_consume_arrow_only(tansu: TansuBroker, topic: str) -> None:
    arrow = ArrowOddRows()
    rec = Recorder()
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, interceptors=[rec, arrow],
                       **SETTINGS) as c:
        c.assign([TopicPartition(topic, 0)])
        rows: list[int] = []
        deadline = time.monotonic() + 20
        while len(arrow.seen) < 10:
            assert time.monotonic() < deadline
            batch = c.poll_arrow(100)
            rows += batch.column("offset").to_pylist()
    assert arrow.seen == list(range(10))
    assert rows == [1, 3, 5, 7, 9]
    assert rec.consumed == []            # no on_consume_arrow: skipped by poll_arrow


def test_interceptor_classes_load_by_import_path(tansu: TansuBroker, topic: str) -> None:
    Recorder.made.clear()
    for path in (f"{__name__}:Recorder", f"{__name__}.Recorder"):
        with KafkaConsumer(bootstrap_servers=tansu.bootstrap, client_id="by-path",
                           **{"interceptor.classes": f"{path}, {__name__}:ArrowOddRows"},
                           **SETTINGS) as c:
            built = Recorder.made[-1]
            assert built.configs is not None and built.configs["client.id"] == "by-path"
            assert built.configs["interceptor.classes"] == [Recorder, ArrowOddRows]
            c.assign([TopicPartition(topic, 1)])
            poll_until(c, lambda built=built: bool(built.consumed))
            assert offsets(built.consumed[0])[1][0] == 0
        assert built.closed == 1
    assert len(Recorder.made) == 2


# ---------------------------------------------------------------------------- settings


class NeedsArgs:
    def __init__(self, threshold: int) -> None:
        self.threshold = threshold

    def on_consume(self, records: Records) -> Records:
        return records


class BadConfigure:
    def configure(self, configs: dict[str, Any]) -> None:
        raise ValueError("missing my.threshold")

    def close(self) -> None:
        pass


class NoMethods:
    pass


@pytest.mark.parametrize("settings, match", [
    ({"interceptor.classes": "no_such_module_xyz:Thing"},
     r"interceptor.classes.*cannot import module 'no_such_module_xyz'"),
    ({"interceptor.classes": f"{__name__}:Missing"},
     rf"interceptor.classes.*module '{__name__}' has no 'Missing'"),
    ({"interceptor.classes": "Recorder"}, r"interceptor.classes.*'Recorder' is not an import path"),
    ({"interceptor.classes": f"{__name__}:NoMethods"},
     r"interceptor.classes.*NoMethods' defines none of on_consume, on_consume_arrow, "
     r"on_commit, close"),
    ({"interceptor.classes": f"{__name__}:SETTINGS"}, r"interceptor.classes.*is a dict, not a class"),
    ({"interceptor.classes": [42]}, r"interceptor.classes.*entry 42 is neither an import path"),
    ({"interceptors": Recorder}, r"interceptors.*expected a list of interceptor objects"),
    ({"interceptors": [Recorder]}, r"interceptors.*entry Recorder is a class: give an instance"),
    ({"interceptors": [NoMethods()]}, r"interceptors.*defines none of"),
    ({"interceptor.classes": f"{__name__}:NeedsArgs"},
     r"cannot create .*NeedsArgs\(\) \(an interceptor is built with no arguments\): TypeError"),
    ({"interceptors": [BadConfigure()]},
     r"interceptor .*BadConfigure: configure\(\) raised ValueError: missing my.threshold"),
])
def test_bad_interceptor_settings(settings: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        KafkaConsumer(bootstrap_servers="localhost:9092", **settings)


def test_interceptors_built_before_a_failing_one_are_closed() -> None:
    Recorder.made.clear()
    with pytest.raises(ConfigurationError, match="NeedsArgs"):
        KafkaConsumer(bootstrap_servers="localhost:9092",
                      interceptor_classes=[Recorder, NeedsArgs])
    assert [r.closed for r in Recorder.made] == [1]
