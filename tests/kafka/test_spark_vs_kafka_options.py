"""Option errors, format("kafka") (Spark's own Kafka source 4.2, the reference) vs
format("pyconsumer"): one table of settings and combinations, each with what Spark does and
what ours does, side by side.

Spark's side runs through the session: most checks fire when the DataFrame is made
(``load()``, Spark's KafkaSourceProvider validates there), a few only when the query runs.
Ours is asked the way PySpark's Python worker asks it: ``KafkaDataSource(options).reader()``
then ``partitions()`` (batch) or ``streamReader()`` then ``initialOffset()`` (streaming), in
this process (tests/spark/test_source_options.py shows the same errors come out of Spark).
A setting both accept is run through both formats and must give the same rows, the ones the
table names. Where the two disagree the row says why (``why``): ours is stricter only where
Spark silently does something else than asked, or for options only ours has.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from pyconsumer.errors import ConfigurationError
from pyconsumer.testing import KafkaCluster, TestRecord, produce

from tests.spark.sparkdata import Row, expected_rows, table_rows

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

T = "TOPIC"          # in the table, the module's topic; replaced by its real name
TS = 1_700_000_000_000


@dataclass(frozen=True)
class Refused:
    """An error; ``text`` must be in ``"<exception class>: <message>"``. ``at``: where it
    fires; Spark: "load" (making the DataFrame) or "query" (running it); ours: "options" (parsing
    the options) or "plan" (resolving offsets at the broker)."""

    at: str
    text: str


@dataclass(frozen=True)
class Rows:
    """Accepted: the rows from ``start`` (offset per partition) to the end."""

    start: dict[int, int] = field(default_factory=lambda: {0: 0, 1: 0})


ALL = Rows()
NONE = Rows({0: 3, 1: 3})
Outcome = Refused | Rows


@dataclass(frozen=True)
class Case:
    name: str
    #: options replacing/adding to the base (kafka.bootstrap.servers, subscribe to the topic,
    #: startingOffsets=earliest in streaming); None removes one
    change: dict[str, str | None]
    spark: Outcome
    ours: Outcome
    streaming: bool = False
    #: why ours differs from Spark (required where they differ)
    why: str = ""


_OFFSETS_EG = 'Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_ASSIGN_EG = 'Expected e.g. {"topicA":[0,1],"topicB":[0,1]}'
_SILENT = "Spark silently "

CASES: list[Case] = [
    # ---- what to read
    Case("no strategy", {"subscribe": None},
         Refused("load", "IllegalArgumentException: One of the following options must be "
                         "specified for Kafka source: subscribe, subscribepattern, assign."),
         Refused("options", "ConfigurationError: One of the options subscribe, "
                            "subscribePattern, assign must be specified for the Kafka source")),
    Case("subscribe and assign", {"assign": json.dumps({T: [0]})},
         Refused("load", "IllegalArgumentException: Only one of the following options can be "
                         "specified for Kafka source: subscribe, subscribepattern, assign."),
         Refused("options", "ConfigurationError: Only one of the options subscribe, "
                            "subscribePattern, assign can be specified for the Kafka source, "
                            "got subscribe, assign")),
    Case("empty subscribe", {"subscribe": " , "},
         Refused("load", "IllegalArgumentException: No topics to subscribe to as specified "
                         "value for option 'subscribe' is ' , '"),
         Refused("options", "ConfigurationError: Option 'subscribe': no topics to subscribe to "
                            "in ' , '")),
    Case("empty subscribePattern", {"subscribe": None, "subscribePattern": "  "},
         Refused("load", "IllegalArgumentException: Pattern to subscribe is empty as specified "
                         "value for option 'subscribePattern' is '  '"),
         Refused("options", "ConfigurationError: Option 'subscribePattern': the pattern to "
                            "subscribe to is empty ('  ')")),
    Case("bad subscribePattern", {"subscribe": None, "subscribePattern": "["},
         Refused("load", "IllegalArgumentException: Unclosed character class near index 0"),
         Refused("options", "ConfigurationError: Option 'subscribePattern': '[' is not a "
                            "regular expression")),
    Case("assign not JSON", {"subscribe": None, "assign": T},
         Refused("load", "IllegalArgumentException: No topicpartitions to assign as specified "
                         f"value for option 'assign' is '{T}'"),
         Refused("options", "ConfigurationError: Option 'assign': no topic partitions to "
                            f"assign: expected JSON like {{\"topicA\":[0,1],\"topicB\":[2,4]}}, "
                            f"got '{T}'")),
    Case("assign bad partition", {"subscribe": None, "assign": json.dumps({T: ["x"]})},
         Refused("load", f"IllegalArgumentException: {_ASSIGN_EG}, got {{\"{T}\": [\"x\"]}}"),
         Refused("options", "ConfigurationError: Option 'assign': expected JSON like "
                            f"{{\"topicA\":[0,1],\"topicB\":[2,4]}}, got '{{\"{T}\": [\"x\"]}}' "
                            f"(partition 'x' of topic '{T}')")),
    Case("assign nothing", {"subscribe": None, "assign": "{}"},
         NONE,
         Refused("options", "ConfigurationError: Option 'assign': no topic partitions to "
                            "assign in '{}'"),
         why=_SILENT + "reads nothing: an empty assignment is surely a mistake"),
    # ---- where to start and end (batch)
    Case("latest as a batch start", {"startingOffsets": "latest"},
         Refused("load", "IllegalArgumentException: starting offset can't be latest for batch "
                         "queries on Kafka"),
         Refused("options", "ConfigurationError: Option 'startingOffsets': starting offset "
                            "can't be 'latest' for batch queries on Kafka")),
    Case("option keys in any case", {"STARTINGoffsets": "Latest"},
         Refused("load", "IllegalArgumentException: starting offset can't be latest for batch "
                         "queries on Kafka"),
         Refused("options", "ConfigurationError: Option 'startingOffsets': starting offset "
                            "can't be 'latest' for batch queries on Kafka")),
    Case("-1 in a batch start", {"startingOffsets": json.dumps({T: {"0": -1, "1": 0}})},
         Refused("load", f"IllegalArgumentException: startingOffsets for {T}-0 can't be latest "
                         "for batch queries on Kafka"),
         Refused("options", "ConfigurationError: Option 'startingOffsets': the starting offset "
                            f"for {T}-0 can't be latest (-1) for batch queries on Kafka")),
    Case("earliest as a batch end", {"endingOffsets": "earliest"},
         Refused("load", "IllegalArgumentException: ending offset can't be earliest for batch "
                         "queries on Kafka"),
         Refused("options", "ConfigurationError: Option 'endingOffsets': ending offset can't "
                            "be 'earliest' for batch queries on Kafka")),
    Case("-2 in a batch end", {"endingOffsets": json.dumps({T: {"0": 3, "1": -2}})},
         Refused("load", f"IllegalArgumentException: ending offset for {T}-1 can't be earliest "
                         "for batch queries on Kafka"),
         Refused("options", "ConfigurationError: Option 'endingOffsets': the ending offset for "
                            f"{T}-1 can't be earliest (-2) for batch queries on Kafka")),
    Case("bad JSON startingOffsets", {"startingOffsets": '{"%s": {"0": 5' % T},
         Refused("load", f"IllegalArgumentException: {_OFFSETS_EG}, got {{\"{T}\": {{\"0\": 5"),
         Refused("options", "ConfigurationError: Option 'startingOffsets': expected JSON like "
                            f"{{\"topicA\":{{\"0\":23,\"1\":-1}},\"topicB\":{{\"0\":-2}}}}, "
                            f"got '{{\"{T}\": {{\"0\": 5'")),
    Case("-3 in startingOffsets", {"startingOffsets": json.dumps({T: {"0": -3, "1": 0}})},
         Refused("query", "assertion failed: earliest offset -3 does not equal -2"),
         Refused("options", "ConfigurationError: Option 'startingOffsets': expected JSON like "
                            f"{{\"topicA\":{{\"0\":23,\"1\":-1}},\"topicB\":{{\"0\":-2}}}}, "
                            f"got '{{\"{T}\": {{\"0\": -3, \"1\": 0}}}}' (the offset of {T}-0 "
                            "is out of range: -3)")),
    Case("startingOffsets missing a partition", {"startingOffsets": json.dumps({T: {"0": 1}})},
         Refused("query", "KafkaIllegalStateException: Partitions specified for Kafka start "
                          "offsets don't match what are assigned."),
         Refused("plan", "ConfigurationError: startingOffsets must name exactly the "
                         f"topic-partitions the query reads (missing {T}-1)")),
    Case("start after end", {"startingOffsets": json.dumps({T: {"0": 2, "1": 0}}),
                             "endingOffsets": json.dumps({T: {"0": 1, "1": 3}})},
         Refused("load", "IllegalArgumentException: The specified start offset 2 is greater "
                         f"than the end offset 1 for topic {T} partition 0."),
         Refused("options", "ConfigurationError: Options 'startingOffsets' and "
                            f"'endingOffsets': the starting offset 2 of {T}-0 is greater than "
                            "its ending offset 1")),
    Case("startingTimestamp not a number", {"startingTimestamp": "abc"},
         Refused("load", "IllegalArgumentException: Expected a single long value, got abc"),
         Refused("options", "ConfigurationError: Option 'startingTimestamp': expected a single "
                            "long value (ms since the epoch), got 'abc'")),
    Case("negative startingTimestamp", {"startingTimestamp": "-5"},
         Refused("query", "and timestamp -5."),
         Refused("options", "ConfigurationError: Option 'startingTimestamp': a timestamp can't "
                            "be negative or beyond a long, got '-5'")),
    Case("startingOffsetsByTimestampStrategy bogus",
         {"startingOffsetsByTimestampStrategy": "bogus"},
         Refused("load", "java.util.NoSuchElementException: No value found for 'BOGUS'"),
         Refused("options", "ConfigurationError: Option 'startingOffsetsByTimestampStrategy': "
                            "must be 'error' or 'latest', got 'bogus'")),
    Case("startingTimestamp over startingOffsets",
         {"startingTimestamp": str(TS + 2), "startingOffsets": json.dumps({T: {"0": 2, "1": 0}})},
         Rows({0: 1, 1: 1}), Rows({0: 1, 1: 1})),
    # ---- booleans and counts
    Case("failOnDataLoss maybe", {"failOnDataLoss": "maybe"},
         Refused("load", 'IllegalArgumentException: For input string: "maybe"'),
         Refused("options", "ConfigurationError: Option 'failOnDataLoss': must be 'true' or "
                            "'false', got 'maybe'")),
    Case("includeHeaders maybe", {"includeHeaders": "maybe"},
         Refused("load", 'IllegalArgumentException: For input string: "maybe"'),
         Refused("options", "ConfigurationError: Option 'includeHeaders': must be 'true' or "
                            "'false', got 'maybe'")),
    Case("minPartitions 0", {"minPartitions": "0"},
         Refused("load", "IllegalArgumentException: minPartitions must be positive"),
         Refused("options", "ConfigurationError: Option 'minPartitions': must be a positive "
                            "integer, got '0'")),
    Case("minPartitions negative", {"minPartitions": "-2"},
         Refused("load", "IllegalArgumentException: minPartitions must be positive"),
         Refused("options", "ConfigurationError: Option 'minPartitions': must be a positive "
                            "integer, got '-2'")),
    Case("minPartitions not a number", {"minPartitions": "abc"},
         Refused("load", 'NumberFormatException: For input string: "abc"'),
         Refused("options", "ConfigurationError: Option 'minPartitions': must be a positive "
                            "integer, got 'abc'")),
    Case("maxRecordsPerPartition 0", {"maxRecordsPerPartition": "0"},
         Refused("load", "IllegalArgumentException: maxrecordsperpartition must be positive"),
         Refused("options", "ConfigurationError: Option 'maxRecordsPerPartition': must be a "
                            "positive integer, got '0'")),
    Case("trigger options ignored in batch", {"maxOffsetsPerTrigger": "0",
                                              "maxTriggerDelay": "bogus"},
         ALL, ALL),
    Case("min above max per trigger, batch", {"minOffsetsPerTrigger": "10",
                                              "maxOffsetsPerTrigger": "5"},
         Refused("load", "IllegalArgumentException: The value of minOffsetPerTrigger(10) is "
                         "higher than the maxOffsetsPerTrigger(5)."),
         Refused("options", "ConfigurationError: Options 'minOffsetsPerTrigger' and "
                            "'maxOffsetsPerTrigger': the value of minOffsetsPerTrigger (10) is "
                            "higher than maxOffsetsPerTrigger (5)")),
    Case("fetchOffset.numRetries not a number", {"fetchOffset.numRetries": "abc"},
         Refused("query", 'NumberFormatException: For input string: "abc"'),
         Refused("options", "ConfigurationError: Option 'fetchOffset.numRetries': must be a "
                            "non-negative integer, got 'abc'")),
    # ---- Kafka consumer settings
    Case("kafka.auto.offset.reset", {"kafka.auto.offset.reset": "earliest"},
         Refused("load", "IllegalArgumentException: \nKafka option 'auto.offset.reset' is not "
                         "supported."),
         Refused("options", "ConfigurationError: Option 'kafka.auto.offset.reset': Kafka "
                            "option 'auto.offset.reset' is not supported.")),
    Case("kafka.enable.auto.commit", {"kafka.enable.auto.commit": "false"},
         Refused("load", "IllegalArgumentException: Kafka option 'enable.auto.commit' is not "
                         "supported"),
         Refused("options", "ConfigurationError: Option 'kafka.enable.auto.commit': Kafka "
                            "option 'enable.auto.commit' is not supported")),
    Case("kafka.interceptor.classes", {"kafka.interceptor.classes": "x.Interceptor"},
         Refused("load", "IllegalArgumentException: Kafka option 'interceptor.classes' is not "
                         "supported"),
         Refused("options", "ConfigurationError: Option 'kafka.interceptor.classes': Kafka "
                            "option 'interceptor.classes' is not supported")),
    Case("kafka.key.deserializer", {"kafka.key.deserializer": "x.StringDeserializer"},
         Refused("load", "IllegalArgumentException: Kafka option 'key.deserializer' is not "
                         "supported as keys are deserialized as byte arrays"),
         Refused("options", "ConfigurationError: Option 'kafka.key.deserializer': Kafka option "
                            "'key.deserializer' is not supported: keys are read as bytes "
                            "(binary column) unless the source option 'keyFormat' says "
                            "otherwise")),
    Case("kafka.value.deserializer", {"kafka.value.deserializer": "x.StringDeserializer"},
         Refused("load", "IllegalArgumentException: Kafka option 'value.deserializer' is not "
                         "supported as values are deserialized as byte arrays"),
         Refused("options", "ConfigurationError: Option 'kafka.value.deserializer': Kafka "
                            "option 'value.deserializer' is not supported: values are read "
                            "as bytes (binary column) unless the source option 'valueFormat' "
                            "says otherwise")),
    Case("no kafka.bootstrap.servers", {"kafka.bootstrap.servers": None},
         Refused("load", "IllegalArgumentException: Option 'kafka.bootstrap.servers' must be "
                         "specified for configuring Kafka consumer"),
         Refused("options", "ConfigurationError: Option 'kafka.bootstrap.servers' must be "
                            "specified for configuring the Kafka consumer")),
    Case("empty kafka.bootstrap.servers", {"kafka.bootstrap.servers": ""},
         Refused("query", "ConfigException: You must set either bootstrap.servers or "
                          "bootstrap.controllers"),
         Refused("options", "ConfigurationError: Option 'kafka.bootstrap.servers' is empty")),
    Case("kafka.group.id with groupIdPrefix", {"kafka.group.id": "g-options",
                                               "groupIdPrefix": "ignored"},
         ALL, ALL),
    Case("blank kafka.group.id", {"kafka.group.id": " "}, ALL, ALL),
    Case("unknown option", {"someUnknownOption": "x"}, ALL, ALL),
    Case("unknown kafka.* setting", {"kafka.some.unknown": "1"},
         ALL,
         Refused("options", "ConfigurationError: Option 'kafka.some.unknown': Unknown setting "
                            "'some.unknown'"),
         why="Spark's Java consumer only logs a warning, so a misspelled setting silently does "
             "nothing"),
    Case("commitOffsetsToKafka without a group", {"commitOffsetsToKafka": "true"},
         ALL,
         Refused("options", "ConfigurationError: Option 'commitOffsetsToKafka': committing "
                            "offsets to Kafka needs a consumer group: set option "
                            "'kafka.group.id'"),
         why="our option (Spark ignores it as unknown)"),
    # ---- streaming
    Case("endingOffsets in streaming", {"endingOffsets": "latest"},
         Refused("load", "IllegalArgumentException: ending offset not valid in streaming "
                         "queries"),
         Refused("options", "ConfigurationError: Option 'endingOffsets': ending offset not "
                            "valid in streaming queries"), streaming=True),
    Case("endingOffsetsByTimestamp in streaming",
         {"endingOffsetsByTimestamp": json.dumps({T: {"0": TS, "1": TS}})},
         Refused("load", "IllegalArgumentException: ending timestamp not valid in streaming "
                         "queries"),
         Refused("options", "ConfigurationError: Option 'endingOffsetsByTimestamp': ending "
                            "timestamp not valid in streaming queries"), streaming=True),
    Case("endingTimestamp in streaming", {"endingTimestamp": str(TS + 2)},
         ALL,
         Refused("options", "ConfigurationError: Option 'endingTimestamp': ending timestamp "
                            "not valid in streaming queries"), streaming=True,
         why=_SILENT + "ignores it (it refuses the other two ending options) and reads on "
                       "past the end asked for"),
    Case("maxOffsetsPerTrigger 0", {"maxOffsetsPerTrigger": "0"},
         NONE,
         Refused("options", "ConfigurationError: Option 'maxOffsetsPerTrigger': must be a "
                            "positive integer, got '0'"), streaming=True,
         why=_SILENT + "admits no offsets: AvailableNow ends having read nothing, other "
                       "triggers never move"),
    Case("maxOffsetsPerTrigger not a number", {"maxOffsetsPerTrigger": "abc"},
         Refused("query", 'For input string: "abc"'),
         Refused("options", "ConfigurationError: Option 'maxOffsetsPerTrigger': must be a "
                            "positive integer, got 'abc'"), streaming=True),
    Case("maxTriggerDelay bogus", {"maxTriggerDelay": "bogus"},
         Refused("query", "Failed to parse time string: bogus"),
         Refused("options", "ConfigurationError: Option 'maxTriggerDelay': 'bogus' is not a "
                            "duration"), streaming=True),
    Case("minOffsetsPerTrigger 0", {"minOffsetsPerTrigger": "0"}, ALL, ALL, streaming=True),
    Case("minOffsetsPerTrigger negative", {"minOffsetsPerTrigger": "-1"},
         ALL,
         Refused("options", "ConfigurationError: Option 'minOffsetsPerTrigger': must be a "
                            "non-negative integer, got '-1'"), streaming=True,
         why="a negative count is a mistake (Spark takes it as no minimum)"),
    Case("min above max per trigger", {"minOffsetsPerTrigger": "10",
                                       "maxOffsetsPerTrigger": "5"},
         Refused("load", "IllegalArgumentException: The value of minOffsetPerTrigger(10) is "
                         "higher than the maxOffsetsPerTrigger(5)."),
         Refused("options", "ConfigurationError: Options 'minOffsetsPerTrigger' and "
                            "'maxOffsetsPerTrigger': the value of minOffsetsPerTrigger (10) is "
                            "higher than maxOffsetsPerTrigger (5)"), streaming=True),
    Case("maxBytesPerTrigger bogus", {"maxBytesPerTrigger": "bogus"},
         ALL,
         Refused("options", "ConfigurationError: Option 'maxBytesPerTrigger': 'bogus' is not "
                            "a size"), streaming=True,
         why="our option (Spark ignores it as unknown)"),
    Case("-1 and -2 in a streaming start", {"startingOffsets": json.dumps({T: {"0": -1,
                                                                             "1": -2}})},
         Rows({0: 3, 1: 0}), Rows({0: 3, 1: 0}), streaming=True),
    Case("-3 in a streaming start", {"startingOffsets": json.dumps({T: {"0": -3, "1": 1}})},
         Refused("query", "assertion failed: earliest offset -3 does not equal -2"),
         Refused("options", f"ConfigurationError: Option 'startingOffsets': expected JSON like "
                            f"{{\"topicA\":{{\"0\":23,\"1\":-1}},\"topicB\":{{\"0\":-2}}}}, "
                            f"got '{{\"{T}\": {{\"0\": -3, \"1\": 1}}}}' (the offset of {T}-0 "
                            "is out of range: -3)"), streaming=True),
]


# ------------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def data(kafka: KafkaCluster) -> Iterator[tuple[str, list[Row]]]:
    """A 2-partition topic, 3 records each (record i in partition i % 2 at TS + i)."""
    topic = kafka.create_topic(f"options-{uuid.uuid4().hex[:8]}", 2,
                               config={"retention.ms": "-1"})
    records = [TestRecord(f"k{i}".encode(), f"v{i}".encode(), [("i", b"%d" % i)], i % 2, TS + i)
               for i in range(6)]
    yield topic, expected_rows(topic, records, produce(kafka.bootstrap_servers, topic, records))


def _options(case: Case, topic: str, bootstrap: str) -> dict[str, str]:
    base: dict[str, str | None] = {"kafka.bootstrap.servers": bootstrap, "subscribe": T}
    if case.streaming:       # a stream starts at the latest offsets by default
        base["startingOffsets"] = "earliest"
    opts = {k: v for k, v in {**base, **case.change}.items() if v is not None}
    return {k: v.replace(T, topic) for k, v in opts.items()}


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _summary(outcome: object) -> str:
    """An outcome for a failure message: an error's first line and its Java causes."""
    if not isinstance(outcome, tuple):
        return repr(outcome)
    lines = str(outcome[1]).splitlines()
    causes = [line.strip() for line in lines if line.startswith("Caused by:")]
    return repr((outcome[0], "\n".join(lines[:1] + causes)[:1500]))


def _spark_outcome(spark: Any, fmt: str, case: Case, opts: Mapping[str, str]
                   ) -> tuple[str, str] | list[Row]:
    """("load" | "query", error text) or the rows, through the session."""
    reader = spark.readStream if case.streaming else spark.read
    try:
        df = reader.format(fmt).options(**opts).load()
    except Exception as e:
        return "load", _error(e)
    if not case.streaming:
        try:
            return sorted(table_rows(df.toArrow()), key=lambda r: (r[1], r[2]))
        except Exception as e:
            return "query", _error(e)
    name = f"options_{fmt}_{uuid.uuid4().hex[:8]}"
    q = df.writeStream.format("memory").queryName(name).trigger(availableNow=True).start()
    try:
        try:
            q.awaitTermination(120)
        except Exception as e:
            return "query", _error(e)
        assert not q.isActive, f"{case.name}: the AvailableNow query did not finish"
        return sorted(table_rows(spark.table(name).toArrow()), key=lambda r: (r[1], r[2]))
    finally:
        q.stop()
        spark.catalog.dropTempView(name)


def _ours_outcome(case: Case, opts: Mapping[str, str]) -> tuple[str, str] | None:
    """Our data source asked as PySpark's worker asks it: ("options" | "plan", error) or None."""
    from pyspark.sql.datasource import CaseInsensitiveDict

    from pyconsumer.spark.source import KafkaDataSource

    source = KafkaDataSource(CaseInsensitiveDict(opts))
    stage = "options"
    try:
        schema = source.schema()
        if case.streaming:
            stream = source.streamReader(schema)
            stage = "plan"
            try:
                stream.initialOffset()
            finally:
                stream.stop()
        else:
            batch = source.reader(schema)
            stage = "plan"
            batch.partitions()
    except ConfigurationError as e:
        return stage, _error(e)
    return None


def _want(rows: list[Row], outcome: Rows) -> list[Row]:
    """The rows an accepted case gives (no includeHeaders in the table: no headers)."""
    return [r[:7] + (None,) for r in rows if r[2] >= outcome.start[r[1]]]


# ------------------------------------------------------------------------------- the table


def test_every_case_has_a_reason_where_the_formats_differ() -> None:
    for case in CASES:
        differ = isinstance(case.spark, Rows) != isinstance(case.ours, Rows)
        assert bool(case.why) == differ, case.name


@pytest.mark.parametrize("streaming", [False, True], ids=["batch", "streaming"])
def test_both_formats_refuse_and_accept_the_same_options(
        spark_kafka: Any, kafka: KafkaCluster, data: tuple[str, list[Row]],
        streaming: bool) -> None:
    """Every case of the table for one kind of query: Spark's outcome and ours as the table
    says; accepted cases give the table's rows through both formats."""
    topic, rows = data
    problems = []
    for case in (c for c in CASES if c.streaming == streaming):
        opts = _options(case, topic, kafka.bootstrap_servers)
        spark = _spark_outcome(spark_kafka, "kafka", case, opts)
        want_spark = case.spark
        if isinstance(want_spark, Refused):
            text = want_spark.text.replace(T, topic)
            if not (isinstance(spark, tuple) and spark[0] == want_spark.at and text in spark[1]):
                problems.append(f"{case.name}: Spark gave {_summary(spark)}, "
                                f"the table says {want_spark}")
        else:
            if spark != _want(rows, want_spark):
                problems.append(f"{case.name}: Spark's rows {spark!r}")

        ours = _ours_outcome(case, opts)
        want_ours = case.ours
        if isinstance(want_ours, Refused):
            text = want_ours.text.replace(T, topic)
            if not (ours is not None and ours[0] == want_ours.at and text in ours[1]):
                problems.append(f"{case.name}: ours gave {_summary(ours)}, "
                                f"the table says {want_ours}")
        elif ours is not None:
            problems.append(f"{case.name}: ours refused it: {ours!r}")
        else:
            got = _spark_outcome(spark_kafka, "pyconsumer", case, opts)
            if got != _want(rows, want_ours):
                problems.append(f"{case.name}: our rows through Spark {got!r}")
    assert not problems, "\n".join(problems)
