"""The Spark source's options declared once (pyconsumer/spark/option_table.py): the table is
whole, each row is read alike, and the modules split from spark/options.py import on their own.

Plain pytest: no Spark, no broker. What each option means is in test_spark_options.py.
"""
from __future__ import annotations

import dataclasses
import logging
import subprocess
import sys

import pytest

from pyconsumer.spark.option_table import EXCLUSIVE_FIELDS, OPTIONS, Applies, ByMode
from pyconsumer.spark.options import SourceOptions, known_option_names, parse_options

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders"}

#: the fields parse_options fills itself, from several options or from outside the table
NOT_FROM_THE_TABLE = {"kafka_params", "group_id", "streaming", "values"}


def _groups() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for row in OPTIONS:
        groups.setdefault(row.field, []).append(row.name)
    return groups


def test_every_field_is_filled_once_by_the_table_or_by_parse_options() -> None:
    fields = {f.name for f in dataclasses.fields(SourceOptions)}
    from_table = {row.field for row in OPTIONS}
    assert from_table <= fields, from_table - fields
    assert from_table | NOT_FROM_THE_TABLE == fields
    assert not from_table & NOT_FROM_THE_TABLE


def test_names_are_unique_in_any_case() -> None:
    keys = [row.key for row in OPTIONS]
    assert len(set(keys)) == len(keys)
    assert all(row.key == row.name.lower() for row in OPTIONS)
    assert {row.name for row in OPTIONS} <= set(known_option_names())


def test_alternatives_are_together_and_only_the_last_has_a_default() -> None:
    fields = [row.field for row in OPTIONS]
    for field, names in _groups().items():
        first = fields.index(field)
        assert fields[first:first + len(names)] == [field] * len(names), field
        rows = [row for row in OPTIONS if row.field == field]
        assert all(row.default is None for row in rows[:-1]), field
        if field in EXCLUSIVE_FIELDS:
            assert rows[-1].default is None, field
    assert _groups()["strategy"] == ["subscribe", "subscribePattern", "assign"]
    assert _groups()["starting"] == ["startingTimestamp", "startingOffsetsByTimestamp",
                                     "startingOffsets"]
    assert _groups()["ending"] == ["endingTimestamp", "endingOffsetsByTimestamp",
                                   "endingOffsets"]


@pytest.mark.parametrize("streaming", [True, False])
def test_each_default_is_the_parsed_value(streaming: bool) -> None:
    parsed = parse_options(BASE, streaming=streaming)
    for row in OPTIONS:
        text = row.default_text(streaming)
        if text is not None:
            assert getattr(parsed, row.field) == row.parser(text, row.name), row.name


def test_defaults_by_mode() -> None:
    prefix = next(row for row in OPTIONS if row.name == "groupIdPrefix")
    assert prefix.default == ByMode(streaming="spark-kafka-source", batch="spark-kafka-relation")
    assert prefix.default_text(True) == "spark-kafka-source"
    assert prefix.default_text(False) == "spark-kafka-relation"


def test_applies() -> None:
    assert Applies.BOTH.to(True) and Applies.BOTH.to(False)
    assert Applies.STREAMING.to(True) and not Applies.STREAMING.to(False)
    assert Applies.BATCH.to(False) and not Applies.BATCH.to(True)
    batch_only = {row.name for row in OPTIONS if row.applies is Applies.BATCH}
    assert batch_only == {"endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets"}
    streaming_only = {row.name for row in OPTIONS if row.applies is Applies.STREAMING}
    assert streaming_only == {"maxOffsetsPerTrigger", "minOffsetsPerTrigger",
                              "maxTriggerDelay", "maxBytesPerTrigger"}


def test_every_row_says_its_type_and_what_it_does() -> None:
    for row in OPTIONS:
        assert row.type and row.doc, row.name


def test_an_option_for_the_other_kind_of_query(caplog: pytest.LogCaptureFixture) -> None:
    """Refused when the row says why, else ignored with a warning (Spark's way)."""
    with caplog.at_level(logging.WARNING, logger="pyconsumer.spark.options"):
        parse_options({**BASE, "maxtriggerdelay": "1s"}, streaming=False)
    assert "Option maxTriggerDelay is ignored in batch queries" in caplog.text
    with pytest.raises(ValueError, match="Option 'endingOffsetsByTimestamp': ending timestamp "
                                         "not valid in streaming queries"):
        parse_options({**BASE, "endingoffsetsbytimestamp": "{}"}, streaming=True)


@pytest.mark.parametrize("module", ["specs", "offsets_json", "option_parsers", "option_table",
                                    "kafka_params", "options"])
def test_each_module_imports_first_without_pyspark(module: str) -> None:
    code = (f"import sys, pyconsumer.spark.{module}; "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
