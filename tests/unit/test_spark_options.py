"""The Spark data source's options: Spark's Kafka source names, defaults, precedence and checks.

Plain pytest: no Spark, no broker.
"""
from __future__ import annotations

import json
import logging
import pickle
import subprocess
import sys
from typing import Any

import pytest

from pyconsumer.errors import ConfigurationError
from pyconsumer.spark.options import (
    EARLIEST,
    LATEST,
    Assign,
    EarliestSpec,
    GlobalTimestamp,
    LatestSpec,
    OffsetSpec,
    SourceOptions,
    SpecificOffsets,
    SpecificTimestamps,
    Subscribe,
    SubscribePattern,
    offsets_from_json,
    offsets_to_json,
    parse_duration_ms,
    parse_offsets_json,
    parse_options,
    parse_size_bytes,
)
from pyconsumer.structs import TopicPartition

TP = TopicPartition
BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders"}


def parse(streaming: bool = True, **extra: str) -> SourceOptions:
    """Options ``BASE`` plus ``extra``; a ``__`` in a keyword stands for a dot."""
    return with_base({k.replace("__", "."): v for k, v in extra.items()}, streaming)


def with_base(extra: dict[str, str], streaming: bool = True) -> SourceOptions:
    """Options ``BASE`` plus ``extra``."""
    return parse_options({**BASE, **extra}, streaming=streaming)


def rejects(options: dict[str, str], *names: str, streaming: bool = True,
            match: str | None = None) -> ConfigurationError:
    """Asserts ``options`` are rejected with a ConfigurationError naming each of ``names``."""
    with pytest.raises(ConfigurationError) as info:
        parse_options({**BASE, **options}, streaming=streaming)
    message = str(info.value)
    for name in names:
        assert name in message, f"{name!r} not named in {message!r}"
    if match is not None:
        assert match in message, f"{match!r} not in {message!r}"
    assert isinstance(info.value, ValueError)
    return info.value


# ------------------------------------------------------------------------------- defaults


def test_streaming_defaults() -> None:
    o = parse(streaming=True)
    assert o == SourceOptions(
        strategy=Subscribe(("orders",)),
        kafka_params={"bootstrap.servers": "127.0.0.1:9092"},
        starting=LatestSpec(),
        ending=LatestSpec(),
        starting_by_timestamp_strategy="error",
        fail_on_data_loss=True,
        max_offsets_per_trigger=None,
        min_offsets_per_trigger=None,
        max_trigger_delay_ms=15 * 60 * 1000,
        max_bytes_per_trigger=None,
        min_partitions=None,
        max_records_per_partition=None,
        include_headers=False,
        group_id_prefix="spark-kafka-source",
        group_id=None,
        fetch_offset_num_retries=3,
        fetch_offset_retry_interval_ms=1000,
        poll_timeout_ms=120_000,
        commit_offsets_to_kafka=False,
        streaming=True,
    )


def test_batch_defaults() -> None:
    o = parse(streaming=False)
    assert o.starting == EarliestSpec()
    assert o.ending == LatestSpec()
    assert o.group_id_prefix == "spark-kafka-relation"
    assert o.streaming is False
    assert o.fail_on_data_loss is True and o.include_headers is False
    assert o.max_trigger_delay_ms == 900_000
    assert (o.fetch_offset_num_retries, o.fetch_offset_retry_interval_ms,
            o.poll_timeout_ms) == (3, 1000, 120_000)


def test_offset_specs_are_values() -> None:
    assert EarliestSpec() == EarliestSpec() and LatestSpec() == LatestSpec()
    assert LatestSpec() != EarliestSpec()  # type: ignore[comparison-overlap]
    for spec in (EarliestSpec(), LatestSpec(), SpecificOffsets({TP("t", 0): 1}),
                 SpecificTimestamps({TP("t", 0): 1}), GlobalTimestamp(5)):
        assert isinstance(spec, OffsetSpec)
    assert (EARLIEST, LATEST) == (-2, -1)


def test_options_pickle() -> None:
    """The options travel to Spark's Python workers."""
    o = parse_options({"kafka.bootstrap.servers": "h:1", "assign": '{"a":[0,1]}',
                       "startingOffsets": '{"a":{"0":5,"1":-2}}'}, streaming=False)
    assert pickle.loads(pickle.dumps(o)) == o


# ------------------------------------------------------------------------- key case


FULL_CAMEL = {
    "kafka.bootstrap.servers": "h:9092",
    "kafka.group.id": "g",
    "kafka.Session.Timeout.Ms": "6000",
    "subscribePattern": "orders-.*",
    "startingOffsets": '{"orders-1":{"0":5}}',
    "startingOffsetsByTimestampStrategy": "latest",
    "failOnDataLoss": "false",
    "maxOffsetsPerTrigger": "1000",
    "minOffsetsPerTrigger": "10",
    "maxTriggerDelay": "30s",
    "maxBytesPerTrigger": "64m",
    "minPartitions": "8",
    "maxRecordsPerPartition": "5000",
    "includeHeaders": "true",
    "groupIdPrefix": "mine",
    "fetchOffset.numRetries": "5",
    "fetchOffset.retryIntervalMs": "20",
    "kafkaConsumer.pollTimeoutMs": "3000",
    "commitOffsetsToKafka": "true",
}


def test_every_option_parsed() -> None:
    o = parse_options(FULL_CAMEL, streaming=True)
    assert o.strategy == SubscribePattern("orders-.*")
    assert o.kafka_params == {"bootstrap.servers": "h:9092", "group.id": "g",
                              "session.timeout.ms": "6000"}
    assert o.starting == SpecificOffsets({TP("orders-1", 0): 5})
    assert o.ending == LatestSpec()
    assert o.starting_by_timestamp_strategy == "latest"
    assert o.fail_on_data_loss is False
    assert o.max_offsets_per_trigger == 1000
    assert o.min_offsets_per_trigger == 10
    assert o.max_trigger_delay_ms == 30_000
    assert o.max_bytes_per_trigger == 64 << 20
    assert o.min_partitions == 8
    assert o.max_records_per_partition == 5000
    assert o.include_headers is True
    assert o.group_id_prefix == "mine"
    assert o.group_id == "g"
    assert o.fetch_offset_num_retries == 5
    assert o.fetch_offset_retry_interval_ms == 20
    assert o.poll_timeout_ms == 3000
    assert o.commit_offsets_to_kafka is True


@pytest.mark.parametrize("transform", [str.lower, str.upper, lambda k: k])
def test_keys_are_case_insensitive(transform: Any) -> None:
    """PySpark lower-cases the keys; users write them camelCase; both mean the same."""
    given = {transform(k): v for k, v in FULL_CAMEL.items()}
    assert parse_options(given, streaming=True) == parse_options(FULL_CAMEL, streaming=True)


def test_max_offsets_per_trigger_either_spelling() -> None:
    assert parse(maxOffsetsPerTrigger="7").max_offsets_per_trigger == 7
    assert parse(maxoffsetspertrigger="7").max_offsets_per_trigger == 7
    rejects({"maxoffsetspertrigger": "0"}, "maxOffsetsPerTrigger")


def test_last_spelling_of_a_key_wins() -> None:
    o = parse_options({**BASE, "maxOffsetsPerTrigger": "5", "maxoffsetspertrigger": "6"},
                      streaming=True)
    assert o.max_offsets_per_trigger == 6


def test_unknown_options_are_ignored() -> None:
    o = parse(path="/somewhere", someFutureOption="x", _mockSystemTime="1")
    assert o == parse()


def test_non_string_value_rejected() -> None:
    with pytest.raises(ConfigurationError, match="maxOffsetsPerTrigger"):
        bad: dict[str, Any] = {**BASE, "maxOffsetsPerTrigger": 5}
        parse_options(bad, streaming=True)


def test_no_pyspark_import() -> None:
    code = ("import sys, pyconsumer.spark.options as o; "
            "o.parse_options({'kafka.bootstrap.servers': 'h:1', 'subscribe': 't'}, "
            "streaming=True); assert 'pyspark' not in sys.modules, 'pyspark imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------------------ strategy


def test_subscribe_topics_trimmed_and_empty_entries_dropped() -> None:
    o = parse(subscribe=" a, b ,,c , a,")
    assert o.strategy == Subscribe(("a", "b", "c"))


@pytest.mark.parametrize("value", ["", " ", ",", " , ,"])
def test_subscribe_empty_rejected(value: str) -> None:
    rejects({"subscribe": value}, "subscribe", match="no topics")


def test_subscribe_pattern() -> None:
    o = parse_options({"kafka.bootstrap.servers": "h:1", "SUBSCRIBEPATTERN": "  orders-.* "},
                      streaming=True)
    assert o.strategy == SubscribePattern("orders-.*")


@pytest.mark.parametrize("value", ["", "   "])
def test_subscribe_pattern_empty_rejected(value: str) -> None:
    with pytest.raises(ConfigurationError, match="subscribePattern.*empty"):
        parse_options({"kafka.bootstrap.servers": "h:1", "subscribePattern": value}, streaming=True)


def test_subscribe_pattern_python_cannot_compile_rejected() -> None:
    with pytest.raises(ConfigurationError, match="subscribePattern") as info:
        parse_options({"kafka.bootstrap.servers": "h:1", "subscribePattern": "orders-(.*"},
                      streaming=True)
    assert "orders-(.*" in str(info.value)


def test_assign() -> None:
    o = parse_options({"kafka.bootstrap.servers": "h:1",
                       "assign": ' {"topicA":[0,1],"topicB":[2,4], "topicA ":[]} '}, streaming=True)
    assert o.strategy == Assign((TP("topicA", 0), TP("topicA", 1), TP("topicB", 2),
                                 TP("topicB", 4)))


def test_assign_duplicates_dropped() -> None:
    o = parse_options({"kafka.bootstrap.servers": "h:1", "assign": '{"a":[1,0,1]}'}, streaming=True)
    assert o.strategy == Assign((TP("a", 1), TP("a", 0)))


@pytest.mark.parametrize("value", [
    "topicA", "[0,1]", "", "   ",                  # not an object: Spark's first check
    "{", '{"a":[0,"x"]}', '{"a":0}', '{"a":[0.5]}', '{"a":[true]}', '{"a":[-1]}',
    '{"":[0]}', '{"a":{"0":1}}', "{}", '{"a":[]}',
])
def test_assign_rejected(value: str) -> None:
    with pytest.raises(ConfigurationError, match="'assign'"):
        parse_options({"kafka.bootstrap.servers": "h:1", "assign": value}, streaming=True)


def test_no_strategy_rejected() -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_options({"kafka.bootstrap.servers": "h:1"}, streaming=True)
    message = str(info.value)
    assert "One of" in message
    for name in ("subscribe", "subscribePattern", "assign"):
        assert name in message


@pytest.mark.parametrize("extra", [
    {"assign": '{"a":[0]}'},
    {"subscribePattern": "a.*"},
    {"SubscribePattern": "a.*", "assign": '{"a":[0]}'},
])
def test_several_strategies_rejected(extra: dict[str, str]) -> None:
    e = rejects(extra, "subscribe", "Only one of")
    for key in extra:
        assert key.lower() in str(e).lower()


# ------------------------------------------------------------------------------ kafka.*


def test_kafka_params_prefix_stripped_and_lowercased() -> None:
    o = with_base({"KAFKA.Security.Protocol": "SSL", "kafka.max.poll.records": "10",
                 "notkafka.x": "1", "kafkax": "2"})
    assert o.kafka_params == {"bootstrap.servers": "127.0.0.1:9092",
                              "security.protocol": "SSL", "max.poll.records": "10"}


def test_bootstrap_servers_required() -> None:
    with pytest.raises(ConfigurationError, match="'kafka.bootstrap.servers' must be specified"):
        parse_options({"subscribe": "t"}, streaming=True)
    with pytest.raises(ConfigurationError, match="kafka.bootstrap.servers"):
        parse_options({"subscribe": "t", "kafka.bootstrap.servers": " "}, streaming=False)


@pytest.mark.parametrize("param, reason", [
    ("auto.offset.reset", "startingOffsets"),
    ("key.deserializer", "DataFrame operations"),
    ("value.deserializer", "DataFrame operations"),
    ("enable.auto.commit", "checkpoint"),
    ("interceptor.classes", "not supported"),
])
@pytest.mark.parametrize("streaming", [True, False])
def test_rejected_kafka_params(param: str, reason: str, streaming: bool) -> None:
    e = rejects({f"kafka.{param}": "x"}, f"kafka.{param}", streaming=streaming, match=reason)
    assert "not supported" in str(e)
    # any spelling of the key
    with pytest.raises(ConfigurationError, match=param):
        parse_options({**BASE, f"KAFKA.{param.upper()}": "x"}, streaming=streaming)


def test_group_id_allowed_with_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pyconsumer.spark.options"):
        o = parse(kafka__group__id="ingest", groupIdPrefix="ignored")
    assert o.group_id == "ingest"
    assert o.kafka_params["group.id"] == "ingest"
    assert o.group_id_prefix == "ignored"          # kept, but the group id takes precedence
    text = caplog.text
    assert "kafka.group.id" in text and "groupIdPrefix" in text


def test_group_id_prefix() -> None:
    assert parse(groupIdPrefix="p").group_id_prefix == "p"
    assert parse(streaming=False, groupidprefix="p").group_id_prefix == "p"


def test_consumer_settings() -> None:
    o = with_base({"kafka.client.id": "c", "kafka.fetch.max.bytes": "1000"})
    s = o.consumer_settings()
    assert s == {"bootstrap.servers": "127.0.0.1:9092", "client.id": "c",
                 "fetch.max.bytes": "1000", "enable.auto.commit": "false"}
    assert "group.id" not in s and "auto.offset.reset" not in s
    s["x"] = "y"                                     # a copy
    assert "x" not in o.kafka_params and "enable.auto.commit" not in o.kafka_params
    with_group = parse(kafka__group__id="g").consumer_settings()
    assert with_group["group.id"] == "g" and with_group["enable.auto.commit"] == "false"


# ---------------------------------------------------------------------------- starting


@pytest.mark.parametrize("value, spec", [
    ("earliest", EarliestSpec()), ("EARLIEST", EarliestSpec()), (" Earliest ", EarliestSpec()),
    ("latest", LatestSpec()), ("Latest", LatestSpec()),
    ('{"t":{"0":23,"1":-1,"2":-2}}',
     SpecificOffsets({TP("t", 0): 23, TP("t", 1): LATEST, TP("t", 2): EARLIEST})),
    (' {"a":{"0":1},"b":{"3":4}} ', SpecificOffsets({TP("a", 0): 1, TP("b", 3): 4})),
])
def test_starting_offsets_streaming(value: str, spec: OffsetSpec) -> None:
    assert parse(startingOffsets=value).starting == spec


def test_starting_offsets_batch() -> None:
    assert parse(streaming=False, startingOffsets="earliest").starting == EarliestSpec()
    assert parse(streaming=False, startingoffsets='{"t":{"0":5,"1":-2}}').starting == \
        SpecificOffsets({TP("t", 0): 5, TP("t", 1): -2})


def test_starting_latest_rejected_in_batch() -> None:
    rejects({"startingOffsets": "LATEST"}, "startingOffsets", streaming=False,
            match="can't be 'latest' for batch")


def test_starting_json_latest_rejected_in_batch() -> None:
    rejects({"startingOffsets": '{"t":{"0":3,"7":-1}}'}, "startingOffsets", "t-7",
            streaming=False, match="latest")


def test_starting_timestamp() -> None:
    assert parse(startingTimestamp=" 1700000000000 ").starting == GlobalTimestamp(1700000000000)
    assert parse(streaming=False, startingtimestamp="0").starting == GlobalTimestamp(0)


@pytest.mark.parametrize("value", ["", "abc", "1.5", "1e3", "-1", "12 34",
                                   str(1 << 63)])
@pytest.mark.parametrize("key", ["startingTimestamp", "endingTimestamp"])
def test_bad_global_timestamp_rejected(key: str, value: str) -> None:
    rejects({key: value}, key, streaming=False)


def test_starting_offsets_by_timestamp() -> None:
    o = parse(startingOffsetsByTimestamp='{"a":{"0":1000,"1":2000},"b":{"0":3}}')
    assert o.starting == SpecificTimestamps({TP("a", 0): 1000, TP("a", 1): 2000,
                                             TP("b", 0): 3})


@pytest.mark.parametrize("value", ["latest", "{", '{"a":{"0":-1}}', '{"a":{"x":1}}',
                                   '{"a":[1]}', '{"a":{"0":"1"}}'])
@pytest.mark.parametrize("key", ["startingOffsetsByTimestamp", "endingOffsetsByTimestamp"])
def test_bad_timestamps_json_rejected(key: str, value: str) -> None:
    rejects({key: value}, key, streaming=False)


def test_starting_precedence(caplog: pytest.LogCaptureFixture) -> None:
    by_ts = '{"t":{"0":1000}}'
    offsets = '{"t":{"0":5}}'
    assert parse(startingTimestamp="7", startingOffsetsByTimestamp=by_ts,
                 startingOffsets=offsets).starting == GlobalTimestamp(7)
    assert parse(startingOffsetsByTimestamp=by_ts,
                 startingOffsets=offsets).starting == SpecificTimestamps({TP("t", 0): 1000})
    assert parse(startingTimestamp="7", startingOffsets="earliest").starting == \
        GlobalTimestamp(7)
    # like Spark, an option of lower precedence is not even parsed (only logged)
    with caplog.at_level(logging.WARNING, logger="pyconsumer.spark.options"):
        o = parse(streaming=False, startingTimestamp="7", startingOffsets="latest",
                  startingOffsetsByTimestamp="not json")
    assert o.starting == GlobalTimestamp(7)
    assert "startingOffsets " in caplog.text and "startingOffsetsByTimestamp" in caplog.text


@pytest.mark.parametrize("value", ["{", "[]", '{"t":[0]}', '{"t":{"0":"x"}}',
                                   '{"t":{"0":1.5}}', '{"t":{"zero":1}}', '{"t":{"0":-3}}',
                                   "begin", ""])
def test_bad_starting_offsets_rejected(value: str) -> None:
    rejects({"startingOffsets": value}, "startingOffsets")


@pytest.mark.parametrize("value, expected", [("error", "error"), ("ERROR", "error"),
                                             ("latest", "latest"), ("Latest", "latest")])
def test_starting_by_timestamp_strategy(value: str, expected: str) -> None:
    assert parse(startingOffsetsByTimestampStrategy=value).starting_by_timestamp_strategy == \
        expected


@pytest.mark.parametrize("value", ["earliest", "", "none", "fail"])
def test_bad_starting_by_timestamp_strategy_rejected(value: str) -> None:
    rejects({"startingOffsetsByTimestampStrategy": value}, "startingOffsetsByTimestampStrategy",
            match="'error' or 'latest'")


# ------------------------------------------------------------------------------ ending


@pytest.mark.parametrize("key, value", [
    ("endingOffsets", "latest"), ("endingOffsets", '{"t":{"0":5}}'),
    ("endingOffsetsByTimestamp", '{"t":{"0":5}}'), ("endingTimestamp", "5"),
    ("ENDINGOFFSETS", "latest"),
])
def test_ending_rejected_in_streaming(key: str, value: str) -> None:
    e = rejects({key: value}, match="not valid in streaming queries")
    assert key.lower() in str(e).lower()


@pytest.mark.parametrize("value, spec", [
    ("latest", LatestSpec()), (" LATEST", LatestSpec()),
    ('{"t":{"0":23,"1":-1}}', SpecificOffsets({TP("t", 0): 23, TP("t", 1): LATEST})),
])
def test_ending_offsets_batch(value: str, spec: OffsetSpec) -> None:
    assert parse(streaming=False, endingOffsets=value).ending == spec


def test_ending_earliest_rejected_in_batch() -> None:
    rejects({"endingOffsets": "Earliest"}, "endingOffsets", streaming=False,
            match="can't be 'earliest' for batch")


def test_ending_json_earliest_rejected_in_batch() -> None:
    rejects({"endingOffsets": '{"t":{"0":30,"4":-2}}'}, "endingOffsets", "t-4",
            streaming=False, match="earliest")


def test_ending_precedence() -> None:
    by_ts = '{"t":{"0":1000}}'
    assert parse(streaming=False, endingTimestamp="9", endingOffsetsByTimestamp=by_ts,
                 endingOffsets="latest").ending == GlobalTimestamp(9)
    assert parse(streaming=False, endingOffsetsByTimestamp=by_ts,
                 endingOffsets='{"t":{"0":5}}').ending == SpecificTimestamps({TP("t", 0): 1000})
    # endingOffsets=earliest is not looked at when endingTimestamp decides
    assert parse(streaming=False, endingTimestamp="9",
                 endingOffsets="earliest").ending == GlobalTimestamp(9)


def test_batch_start_after_end_rejected() -> None:
    rejects({"startingOffsets": '{"t":{"0":10,"1":0}}', "endingOffsets": '{"t":{"0":9,"1":-1}}'},
            "startingOffsets", "endingOffsets", "t-0", streaming=False)
    # -2 / -1 are not compared; equal is fine
    o = parse(streaming=False, startingOffsets='{"t":{"0":-2,"1":4}}',
              endingOffsets='{"t":{"0":3,"1":4}}')
    assert o.ending == SpecificOffsets({TP("t", 0): 3, TP("t", 1): 4})


def test_batch_start_and_end_partitions_must_match() -> None:
    rejects({"startingOffsets": '{"t":{"0":1}}', "endingOffsets": '{"t":{"0":9,"1":9}}'},
            "startingOffsets", "endingOffsets", "t-1", streaming=False)


def test_batch_start_after_end_timestamps_rejected() -> None:
    rejects({"startingOffsetsByTimestamp": '{"t":{"0":2000}}',
             "endingOffsetsByTimestamp": '{"t":{"0":1000}}'},
            "startingOffsetsByTimestamp", "endingOffsetsByTimestamp", streaming=False)
    rejects({"startingOffsetsByTimestamp": '{"t":{"0":2000}}',
             "endingOffsetsByTimestamp": '{"u":{"0":3000}}'},
            "startingOffsetsByTimestamp", "endingOffsetsByTimestamp", streaming=False)


def test_batch_mixed_kinds_not_compared() -> None:
    o = parse(streaming=False, startingOffsets='{"t":{"0":10}}', endingTimestamp="5")
    assert o.starting == SpecificOffsets({TP("t", 0): 10}) and o.ending == GlobalTimestamp(5)


# ----------------------------------------------------------------------------- booleans


@pytest.mark.parametrize("key, field, default", [
    ("failOnDataLoss", "fail_on_data_loss", True),
    ("includeHeaders", "include_headers", False),
    ("commitOffsetsToKafka", "commit_offsets_to_kafka", False),
])
@pytest.mark.parametrize("streaming", [True, False])
def test_booleans(key: str, field: str, default: bool, streaming: bool) -> None:
    group = {"kafka.group.id": "g"}
    assert getattr(with_base(group, streaming), field) is default
    for text, value in (("true", True), ("TRUE", True), ("True", True),
                        ("false", False), ("FALSE", False), ("fAlSe", False)):
        assert getattr(with_base({**group, key: text}, streaming), field) is value
        assert getattr(with_base({**group, key.lower(): text}, streaming), field) is value
    for bad in ("yes", "1", "0", "", " true", "t"):
        rejects({**group, key: bad}, key, streaming=streaming, match="'true' or 'false'")


@pytest.mark.parametrize("group", [None, "", "  "])
def test_commit_offsets_needs_group_id(group: str | None) -> None:
    extra = {"commitOffsetsToKafka": "true"}
    if group is not None:
        extra["kafka.group.id"] = group
    rejects(extra, "commitOffsetsToKafka", "kafka.group.id")
    rejects(extra, "commitOffsetsToKafka", "kafka.group.id", streaming=False)


def test_commit_offsets_false_needs_nothing() -> None:
    assert parse(commitOffsetsToKafka="false").commit_offsets_to_kafka is False


# ------------------------------------------------------------------------------ numbers


@pytest.mark.parametrize("key, field", [
    ("maxOffsetsPerTrigger", "max_offsets_per_trigger"),
    ("maxRecordsPerPartition", "max_records_per_partition"),
    ("minPartitions", "min_partitions"),
])
def test_positive_counts(key: str, field: str) -> None:
    assert getattr(parse(), field) is None
    assert getattr(with_base({key: "1"}), field) == 1
    assert getattr(with_base({key: "+12345"}), field) == 12345
    for bad in ("0", "-1", "abc", "1.5", "", " 5", "1e3", "1_000", "١٢"):
        rejects({key: bad}, key, match="positive")


def test_min_offsets_per_trigger_may_be_zero() -> None:
    """0 is no minimum, as in Spark; a negative count is refused."""
    assert parse().min_offsets_per_trigger is None
    assert with_base({"minOffsetsPerTrigger": "0"}).min_offsets_per_trigger == 0
    assert with_base({"minOffsetsPerTrigger": "7"}).min_offsets_per_trigger == 7
    for bad in ("-1", "abc", "1.5", ""):
        rejects({"minOffsetsPerTrigger": bad}, "minOffsetsPerTrigger", match="non-negative")


def test_count_ranges() -> None:
    assert parse(maxRecordsPerPartition=str((1 << 63) - 1)).max_records_per_partition == \
        (1 << 63) - 1
    rejects({"maxRecordsPerPartition": str(1 << 63)}, "maxRecordsPerPartition")
    assert parse(minPartitions=str((1 << 31) - 1)).min_partitions == (1 << 31) - 1
    rejects({"minPartitions": str(1 << 31)}, "minPartitions")     # an int in Spark


def test_partition_options_in_batch() -> None:
    o = parse(streaming=False, minPartitions="4", maxRecordsPerPartition="100")
    assert (o.min_partitions, o.max_records_per_partition) == (4, 100)
    rejects({"minPartitions": "0"}, "minPartitions", streaming=False)


def test_min_offsets_above_max_rejected() -> None:
    rejects({"minOffsetsPerTrigger": "11", "maxOffsetsPerTrigger": "10"},
            "minOffsetsPerTrigger", "maxOffsetsPerTrigger", match="higher")
    o = parse(minOffsetsPerTrigger="10", maxOffsetsPerTrigger="10")
    assert (o.min_offsets_per_trigger, o.max_offsets_per_trigger) == (10, 10)


def test_trigger_options_ignored_in_batch(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pyconsumer.spark.options"):
        o = parse(streaming=False, maxOffsetsPerTrigger="5", maxTriggerDelay="not a duration",
                  maxBytesPerTrigger="junk")
    assert o.max_offsets_per_trigger is None and o.min_offsets_per_trigger is None
    assert o.max_bytes_per_trigger is None and o.max_trigger_delay_ms == 900_000
    for name in ("maxOffsetsPerTrigger", "maxTriggerDelay", "maxBytesPerTrigger"):
        assert name in caplog.text
    # Spark still compares min and max in batch queries
    rejects({"minOffsetsPerTrigger": "11", "maxOffsetsPerTrigger": "10"},
            "minOffsetsPerTrigger", "maxOffsetsPerTrigger", streaming=False)
    rejects({"minOffsetsPerTrigger": "x", "maxOffsetsPerTrigger": "10"},
            "minOffsetsPerTrigger", streaming=False)


@pytest.mark.parametrize("value, ms", [("30s", 30_000), ("100ms", 100), ("15m", 900_000),
                                       ("2min", 120_000), ("1h", 3_600_000), ("5000", 5000),
                                       (" 1D ", 86_400_000), ("0", 0)])
def test_max_trigger_delay(value: str, ms: int) -> None:
    assert parse(maxTriggerDelay=value).max_trigger_delay_ms == ms
    assert parse(maxtriggerdelay=value).max_trigger_delay_ms == ms


@pytest.mark.parametrize("value", ["2 minutes", "15 m", "fast", "", "1.5s", "10sec", "m"])
def test_bad_max_trigger_delay_rejected(value: str) -> None:
    rejects({"maxTriggerDelay": value}, "maxTriggerDelay")


@pytest.mark.parametrize("value, size", [("1", 1), ("1048576", 1 << 20), ("512k", 512 << 10),
                                         ("64m", 64 << 20), ("64MB", 64 << 20),
                                         ("1g", 1 << 30), (" 2G ", 2 << 30), ("100b", 100)])
def test_max_bytes_per_trigger(value: str, size: int) -> None:
    assert parse(maxBytesPerTrigger=value).max_bytes_per_trigger == size


@pytest.mark.parametrize("value", ["0", "0m", "-1", "1x", "1.5g", "", "lots", "1 g"])
def test_bad_max_bytes_per_trigger_rejected(value: str) -> None:
    rejects({"maxBytesPerTrigger": value}, "maxBytesPerTrigger")


@pytest.mark.parametrize("key, field, value", [
    ("fetchOffset.numRetries", "fetch_offset_num_retries", 0),
    ("fetchOffset.numRetries", "fetch_offset_num_retries", 7),
    ("fetchOffset.retryIntervalMs", "fetch_offset_retry_interval_ms", 10),
    ("fetchOffset.retryIntervalMs", "fetch_offset_retry_interval_ms", 0),
    ("kafkaConsumer.pollTimeoutMs", "poll_timeout_ms", 512),
])
@pytest.mark.parametrize("streaming", [True, False])
def test_retry_and_timeout_options(key: str, field: str, value: int, streaming: bool) -> None:
    assert getattr(with_base({key: str(value)}, streaming), field) == value
    assert getattr(with_base({key.lower(): str(value)}, streaming), field) == value


@pytest.mark.parametrize("key", ["fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
                                 "kafkaConsumer.pollTimeoutMs"])
@pytest.mark.parametrize("value", ["-1", "x", "1.0", ""])
def test_bad_retry_and_timeout_options_rejected(key: str, value: str) -> None:
    rejects({key: value}, key)


# ------------------------------------------------------------------------- offsets JSON


def test_parse_offsets_json() -> None:
    assert parse_offsets_json('{"t":{"0":23,"1":-1},"u":{"10":-2}}', "startingOffsets") == {
        TP("t", 0): 23, TP("t", 1): -1, TP("u", 10): -2}
    assert parse_offsets_json("{}", "x") == {}


@pytest.mark.parametrize("text, detail", [
    ("not json", None), ('{"t":{"0":23}', None), ("[1]", "object"), ('{"t":5}', "t"),
    ('{"t":{"0":"23"}}', "t-0"), ('{"t":{"0":2.5}}', "t-0"), ('{"t":{"0":true}}', "t-0"),
    ('{"t":{"0":null}}', "t-0"), ('{"t":{"a":1}}', "'a'"), ('{"t":{"-1":1}}', "'-1'"),
    ('{"t":{"0":-3}}', "t-0"), ('{"t":{"0":9223372036854775808}}', "t-0"), ('{"":{"0":1}}', None),
])
def test_parse_offsets_json_rejects(text: str, detail: str | None) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_offsets_json(text, "myOption")
    message = str(info.value)
    assert "myOption" in message and "expected JSON like" in message
    if detail is not None:
        assert detail in message


def test_offsets_to_json_sorted_with_string_keys() -> None:
    offsets = {TP("b", 10): 5, TP("a", 2): -2, TP("b", 2): 7, TP("a", 0): 1}
    obj = offsets_to_json(offsets)
    assert obj == {"a": {"0": 1, "2": -2}, "b": {"2": 7, "10": 5}}
    assert list(obj) == ["a", "b"] and list(obj["b"]) == ["2", "10"]   # numeric order
    assert json.dumps(obj) == '{"a": {"0": 1, "2": -2}, "b": {"2": 7, "10": 5}}'


def test_offsets_json_round_trip() -> None:
    offsets = {TP("orders", p): p * 1000 for p in range(12)}
    offsets[TP("other.topic_x-1", 3)] = LATEST
    assert offsets_from_json(json.loads(json.dumps(offsets_to_json(offsets)))) == offsets
    text = json.dumps(offsets_to_json(offsets))
    assert parse_offsets_json(text, "o") == offsets
    assert offsets_to_json({}) == {} and offsets_from_json({}) == {}


def test_offsets_from_json_accepts_int_keys() -> None:
    assert offsets_from_json({"t": {0: 5}}) == {TP("t", 0): 5}  # type: ignore[dict-item]


@pytest.mark.parametrize("obj", [[], {"t": [1]}, {"t": {"x": 1}}, {"t": {"0": "1"}},
                                 {"t": {"0": -5}}, {"t": {"0": None}}])
def test_offsets_from_json_rejects(obj: Any) -> None:
    with pytest.raises(ValueError, match="invalid Kafka source offsets"):
        offsets_from_json(obj)


# ---------------------------------------------------------------------------- durations


@pytest.mark.parametrize("text, ms", [
    ("0", 0), ("100", 100), ("100ms", 100), ("100MS", 100), ("30s", 30_000), ("15m", 900_000),
    ("15min", 900_000), ("2h", 7_200_000), ("1d", 86_400_000), (" 7s ", 7000),
    ("1500us", 1), ("999us", 0), ("-5s", -5000), ("-1500us", -1),
])
def test_parse_duration_ms(text: str, ms: int) -> None:
    assert parse_duration_ms(text, "maxTriggerDelay") == ms


@pytest.mark.parametrize("text", ["", "s", "2 minutes", "2minutes", "1.5s", "5 s", "5w",
                                  "+5s", "five", "100000000000000000000d"])
def test_parse_duration_ms_rejects(text: str) -> None:
    with pytest.raises(ConfigurationError, match="someDelay"):
        parse_duration_ms(text, "someDelay")


@pytest.mark.parametrize("text, size", [("1", 1), ("2k", 2048), ("3KB", 3072), ("1t", 1 << 40),
                                        ("1p", 1 << 50)])
def test_parse_size_bytes(text: str, size: int) -> None:
    assert parse_size_bytes(text, "x") == size


@pytest.mark.parametrize("text", ["0", "-1", "k", "1e6", "10000000000p"])
def test_parse_size_bytes_rejects(text: str) -> None:
    with pytest.raises(ConfigurationError, match="maxBytesPerTrigger"):
        parse_size_bytes(text, "maxBytesPerTrigger")
