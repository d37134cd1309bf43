"""``pyconsumer ingest``'s typed-value flags without Spark: the source options they become, the
errors naming the flag (before any JVM starts), secrets kept out of messages, the split of a
read into good and rejected rows (which columns), the summary with rejected records, and the
TypedValues behaviour --bad-records relies on (a rejected record kept whole).

The runs on Apache Kafka with a real registry are in tests/kafka/test_ingest_typed_on_kafka.py."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pyconsumer.cli import main
from pyconsumer.errors import ConfigurationError
from pyconsumer.ingest import (
    IngestError,
    IngestSummary,
    PartitionSummary,
    format_summary,
    summary_problems,
)
from pyconsumer.ingest.values import (
    REASON_COLUMN,
    REASON_OPTION,
    SIZE_COLUMN,
    SIZE_OPTION,
    ReadPlan,
    Rejects,
    plan_read,
    ValueFlags,
    read_flag_text,
    redact,
    rejects,
    value_options,
    with_rejects,
)
from pyconsumer.values.typed import ColumnFormat, Format, TypedValues

BASE = ["ingest", "-b", "127.0.0.1:1", "-t", "orders", "--output", "out"]


def test_flags_become_the_source_options() -> None:
    assert value_options(ValueFlags()) == {}
    assert value_options(ValueFlags(
        value_format="AVRO", key_format="string", value_subject="orders-v2",
        schema_registry="http://r:8081", registry_auth="u:p", mode="dropmalformed")) == {
        "valueFormat": "avro", "keyFormat": "string", "valueSubject": "orders-v2",
        "schema.registry.url": "http://r:8081", "schema.registry.basic.auth.user.info": "u:p",
        "mode": "DROPMALFORMED"}
    assert value_options(ValueFlags(value_format="json", value_schema="id long",
                                    schema_registry="http://r", registry_token="t0k")) == {
        "valueFormat": "json", "valueSchema": "id long", "schema.registry.url": "http://r",
        "schema.registry.bearer.auth.token": "t0k"}


def test_protobuf_flags_become_the_source_options() -> None:
    assert value_options(ValueFlags(
        value_format="PROTOBUF", protobuf_message="shop.Order",
        protobuf_descriptor_file="/data/shop.desc")) == {
        "valueFormat": "protobuf", "valueProtobufMessage": "shop.Order",
        "valueProtobufDescriptorFile": "/data/shop.desc"}
    assert value_options(ValueFlags(value_format="protobuf", schema_registry="http://r")) == {
        "valueFormat": "protobuf", "schema.registry.url": "http://r"}
    for flags, flag in ((ValueFlags(value_format="avro", protobuf_message="shop.Order"),
                         "--value-protobuf-message"),
                        (ValueFlags(protobuf_descriptor_file="shop.desc"),
                         "--value-protobuf-descriptor-file")):
        with pytest.raises(IngestError) as err:
            value_options(flags)
        assert str(err.value) == f"{flag} applies to --value-format protobuf"


def test_bad_records_reads_permissive_with_the_reason_column() -> None:
    opts = {"subscribe": "t", "valueFormat": "json", "valueSchema": "a int"}
    assert with_rejects(opts) == {**opts, "mode": "PERMISSIVE", REASON_OPTION: REASON_COLUMN}
    assert with_rejects({**opts, "MODE": "permissive"}) == {
        **opts, "mode": "PERMISSIVE", REASON_OPTION: REASON_COLUMN}
    with pytest.raises(IngestError, match=r"^--bad-records does not go with --mode FAILFAST: "):
        with_rejects({**opts, "mode": "failfast"})
    with pytest.raises(IngestError, match=r"^--bad-records needs --value-format or --key-format"):
        with_rejects({"subscribe": "t", "valueFormat": "binary"})
    with pytest.raises(IngestError, match=r"-o columnNameOfCorruptRecord cannot be empty$"):
        with_rejects({**opts, "columnNameOfCorruptRecord": ""})


def test_the_split_takes_raw_bytes_from_the_corrupt_columns() -> None:
    assert rejects({"valueFormat": "json"}) is None
    value = with_rejects({"valueFormat": "json", "valueSchema": "a int"})
    assert rejects(value) == Rejects(REASON_COLUMN, "_corrupt_record", "key",
                                     ("_corrupt_record", REASON_COLUMN))
    key = with_rejects({"keyformat": "string"})
    assert rejects(key) == Rejects(REASON_COLUMN, "value", "_corrupt_record_key",
                                   ("_corrupt_record_key", REASON_COLUMN))
    both = with_rejects({"valueFormat": "avro", "keyFormat": "string",
                         "columnNameOfCorruptRecord": "raw"})
    assert rejects(both) == Rejects(REASON_COLUMN, "raw", "raw_key",
                                    ("raw", "raw_key", REASON_COLUMN))


@pytest.mark.parametrize("args, message", [
    (["--value-format", "json"],
     "--value-format=json needs --value-schema (a Spark DDL string, or a StructType's JSON)"),
    (["--value-format", "json", "--value-schema", "id lng"],
     "--value-schema is not a Spark DDL schema: unknown type 'lng' at position 3 (near 'lng')"),
    (["--key-format", "json", "--key-schema", "id long,"],
     "--key-schema is not a Spark DDL schema: "),
    (["--value-format", "avro"],
     "--value-format=avro with Confluent framing reads writer schemas by id from a Schema "
     "Registry: set --schema-registry (or -o valueAvroFraming=none with --value-schema)"),
    (["--value-format", "avro", "--schema-registry", "http://r", "--value-schema", "{\"type\":"],
     "--value-schema is not a usable Avro schema: "),
    (["--value-format", "string", "--value-schema", "a int"],
     "--value-schema applies to --value-format json, avro or protobuf, not string"),
    (["--value-format", "string", "--value-subject", "s"],
     "--value-subject applies to --value-format json, avro or protobuf"),
    (["--value-format", "avro", "--schema-registry", "http://r", "-o", "keySubject=k"],
     "-o keySubject applies to --key-format=json, avro or protobuf only, not binary"),
    (["--mode", "failfast"],
     "--mode needs --value-format or --key-format (string, json, avro or protobuf): binary records are "
     "never malformed"),
    (["--bad-records", "bad"],
     "--bad-records needs --value-format or --key-format (string, json, avro or protobuf): binary "
     "records are never rejected"),
    (["--value-format", "string", "--bad-records", "bad", "--mode", "dropmalformed"],
     "--bad-records does not go with --mode DROPMALFORMED: rejected records are written apart, "
     "so the read keeps every record (PERMISSIVE)"),
    (["--value-format", "string", "--schema-registry-auth", "u:p"],
     "--schema-registry-auth and --schema-registry-token need --schema-registry URL"),
    (["--value-format", "avro", "--schema-registry", "http://r", "--schema-registry-auth", "u"],
     "--schema-registry-auth is USER:PASSWORD (or @FILE holding it)"),
    (["--value-format", "avro", "--schema-registry", "http://r", "--schema-registry-auth", "u:p",
      "--schema-registry-token", "t"],
     "give --schema-registry-auth or --schema-registry-token, not both"),
    (["--value-format", "avro", "--schema-registry", "ftp://alice:s3cret@r"],
     "--schema-registry: a schema registry URL is http(s)://host[:port][/path], got "
     "'ftp://***@r'"),
    (["--value-format", "avro", "--schema-registry", "http://r", "-o",
      "schema.registry.timeout=soon"],
     "-o schema.registry.timeout: schema registry setting 'timeout' is a number, got 'soon'"),
    (["--value-format", "json", "--value-schema", "@/nonexistent/schema.ddl"],
     "--value-schema @/nonexistent/schema.ddl: cannot read the file: No such file or directory"),
])
def test_bad_flags_fail_before_spark_naming_the_flag(capsys: pytest.CaptureFixture[str],
                                                     args: list[str], message: str) -> None:
    assert main([*BASE, *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"pyconsumer ingest: {message}"), captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert "s3cret" not in captured.err


@pytest.mark.parametrize("flag, value, shown, choices", [
    ("--value-format", "XML", "xml", "'binary', 'string', 'json', 'avro', 'protobuf'"),
    ("--key-format", "thrift", "thrift", "'binary', 'string', 'json', 'avro', 'protobuf'"),
    ("--mode", "lenient", "LENIENT", "'PERMISSIVE', 'DROPMALFORMED', 'FAILFAST'"),
])
def test_a_value_out_of_the_choices_is_a_usage_error(capsys: pytest.CaptureFixture[str],
                                                     flag: str, value: str, shown: str,
                                                     choices: str) -> None:
    """(formats are taken in any case, as lower case; modes as upper case, as Spark does)"""
    with pytest.raises(SystemExit) as info:
        main([*BASE, flag, value])
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"pyconsumer ingest: error: argument {flag}: invalid choice: {shown!r} (choose from "
        f"{choices})")


def test_schemas_and_secrets_from_files(tmp_path: Path) -> None:
    ddl = tmp_path / "orders.ddl"
    ddl.write_text("id long,\nitem string\n")
    assert read_flag_text(f"@{ddl}", "--value-schema") == "id long,\nitem string"
    assert read_flag_text("id long", "--value-schema") == "id long"
    assert read_flag_text(None, "--value-schema") is None
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(IngestError, match=rf"^--schema-registry-token @{empty}: the file is empty$"):
        read_flag_text(f"@{empty}", "--schema-registry-token")
    latin = tmp_path / "latin"
    latin.write_bytes(b"caf\xe9 long")
    with pytest.raises(IngestError, match=rf"^--key-schema @{latin}: the file is not UTF-8 text "
                                          r"\(invalid continuation byte at byte 3\)$"):
        read_flag_text(f"@{latin}", "--key-schema")


def test_credentials_in_urls_are_redacted() -> None:
    assert redact("got 'https://alice:pw@r:8081/x' and http://r2") == \
        "got 'https://***@r:8081/x' and http://r2"


def test_the_summary_counts_good_and_rejected_records() -> None:
    """Typed values: the bytes are the raw key + value bytes the read counted (in total: a
    decoded column has no length in the files)."""
    summary = IngestSummary(
        mode="batch", output="out", seconds=2.0, files=1,
        partitions=[PartitionSummary("orders", 0, 0, 9, 8, 0)],
        bad_records="bad", rejected_files=1,
        rejected=[PartitionSummary("orders", 0, 3, 7, 2, 20)], read_bytes=80)
    assert summary.rejected_records == 2 and summary.bytes == 80
    assert format_summary(summary).splitlines() == [
        "ingest summary (batch; 1 Parquet file added to out):",
        "  topic   partition  offsets  records",
        "  ------  ---------  -------  -------",
        "  orders          0  0-9            8",
        "  total                             8",
        "  8 records, 80 B (key + value) in 2.00 s: 4 records/s, 40 B/s",
        "  8 good and 2 rejected records (1 Parquet file added to bad)",
        "rejected records:",
        "  topic   partition  offsets  rejected",
        "  ------  ---------  -------  --------",
        "  orders          0  3-7             2",
    ]
    assert summary_problems(summary) == ([], False)
    clean = IngestSummary(mode="batch", output="out", seconds=1.0, bad_records="bad",
                          read_bytes=0)
    assert format_summary(clean).splitlines()[-2:] == [
        "  0 records, 0 B (key + value) in 1.00 s: 0 records/s, 0 B/s",
        "  0 good and 0 rejected records (0 Parquet files added to bad)"]
    assert summary_problems(clean) == ([], False)


def test_every_record_rejected_fails_unless_allowed() -> None:
    rejected = IngestSummary(mode="batch", output="out", seconds=1.0, bad_records="bad",
                             rejected_files=1, read_bytes=0, topics=("orders",),
                             rejected=[PartitionSummary("orders", 0, 0, 99, 100, 2000)])
    assert rejected.all_rejected
    text = ("every record read was rejected (100 records of orders; none written to out): the "
            "reason of each is in bad")
    assert summary_problems(rejected) == ([f"{text} (--allow-all-rejected to exit 0)"], True)
    assert summary_problems(rejected, allow_all_rejected=True) == ([f"warning: {text}"], False)
    dropped = IngestSummary(mode="availableNow", output="out", seconds=1.0, read_bytes=0,
                            topics=("a", "b"), dropped=1)
    assert format_summary(dropped).splitlines()[-1] == (
        "  0 good and 1 rejected record (left out: --mode DROPMALFORMED)")
    assert summary_problems(dropped) == ([
        "every record read was rejected (1 record of a, b; none written to out): --mode "
        "DROPMALFORMED left them out; --bad-records DIR keeps them with the reason of each "
        "(--allow-all-rejected to exit 0)"], True)
    # nothing read: nothing rejected
    assert not IngestSummary(mode="batch", output="out", dropped=0).all_rejected


def test_fields_null_in_every_record_are_named() -> None:
    summary = IngestSummary(mode="batch", output="out", seconds=1.0, read_bytes=10,
                            topics=("a",), null_fields=("value.id", "value.item"),
                            partitions=[PartitionSummary("a", 0, 0, 2, 3, 0)])
    assert summary_problems(summary) == ([
        "warning: value.id and value.item were null in all 3 records written from a: does the "
        "schema name fields the records have?"], False)
    one = IngestSummary(mode="batch", output="out", seconds=1.0, read_bytes=10, topics=("a",),
                        null_fields=("key.k",), partitions=[PartitionSummary("a", 0, 4, 4, 1, 0)])
    assert summary_problems(one) == ([
        "warning: key.k was null in the 1 record written from a: does the schema name fields "
        "the records have?"], False)


def test_the_read_plan_of_typed_values() -> None:
    """Typed values read the raw size column; DROPMALFORMED is applied by the ingest (a
    PERMISSIVE read with the reason column) so that it counts what it leaves out."""
    base = {"subscribe": "t", "valueFormat": "json", "valueSchema": "a int"}
    assert plan_read({"subscribe": "t"}, False) == ({"subscribe": "t"}, ReadPlan())
    assert plan_read(base, False) == ({**base, SIZE_OPTION: SIZE_COLUMN}, ReadPlan(sized=True))
    opts, plan = plan_read({**base, "Mode": "dropMalformed"}, False)
    assert opts == {**base, SIZE_OPTION: SIZE_COLUMN, "mode": "PERMISSIVE",
                    REASON_OPTION: REASON_COLUMN}
    assert plan == ReadPlan(sized=True, drops=True, split=Rejects(
        REASON_COLUMN, "_corrupt_record", "key", ("_corrupt_record", REASON_COLUMN, SIZE_COLUMN)))
    opts, plan = plan_read(base, True)
    assert opts == {**base, SIZE_OPTION: SIZE_COLUMN, "mode": "PERMISSIVE",
                    REASON_OPTION: REASON_COLUMN}
    assert plan == ReadPlan(sized=True, split=Rejects(
        REASON_COLUMN, "_corrupt_record", "key", ("_corrupt_record", REASON_COLUMN, SIZE_COLUMN)))


def test_the_raw_size_column_counts_key_and_value_bytes_as_read() -> None:
    """Each row's raw key + value length (null counts 0), for the rows kept: a decoded value
    has no length of its own."""
    plan = TypedValues(ColumnFormat(Format.JSON, "a int"), mode="DROPMALFORMED",
                       size_column="size")
    out = plan.apply(_batch([b"k0", None, "ключ".encode()], [b'{"a":1}', b"x", None]))
    assert out.schema.field("size").type == pa.int64()
    assert out.to_pydict()["size"] == [2 + 7, 8]
    assert out.to_pydict()["offset"] == [0, 2]
    with pytest.raises(ConfigurationError, match="size column 'offset' is already a column"):
        TypedValues(ColumnFormat(Format.STRING), size_column="offset")


def _batch(keys: list[bytes | None], values: list[bytes | None]) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
        "topic": ["t"] * n, "partition": pa.array([0] * n, pa.int32()),
        "offset": pa.array(range(n), pa.int64()),
        "timestamp": pa.array([0] * n, pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array([0] * n, pa.int32())})


def test_a_rejected_record_keeps_both_raw_columns_when_key_and_value_are_typed() -> None:
    """With the reason column (ingest's read), a row bad in one column carries the other's raw
    bytes too: the rejected-records dataset holds the whole record."""
    plan = TypedValues(ColumnFormat(Format.JSON, "a int"), ColumnFormat(Format.STRING),
                       reason_column="why")
    out = plan.apply(_batch([b"k0", b"\xff", b"k2", None],
                            [b'{"a":1}', b'{"a":2}', b'{"a":"x"}', None])).to_pydict()
    assert out["key"] == ["k0", None, "k2", None]
    assert out["value"] == [{"a": 1}, {"a": 2}, None, None]
    assert out["_corrupt_record_key"] == [None, b"\xff", b"k2", None]
    assert out["_corrupt_record"] == [None, b'{"a":2}', b'{"a":"x"}', None]
    assert out["why"] == [None, "key: invalid UTF-8 at byte 0: invalid start byte",
                          "value: field a: expected an integer for INT, got 'x'", None]
    # without the reason column, Spark's PERMISSIVE: raw bytes only in the bad column
    plain = TypedValues(ColumnFormat(Format.JSON, "a int"), ColumnFormat(Format.STRING))
    out = plain.apply(_batch([b"\xff"], [b'{"a":2}'])).to_pydict()
    assert (out["_corrupt_record_key"], out["_corrupt_record"]) == ([b"\xff"], [None])


def test_failfast_names_the_first_bad_record_whichever_column() -> None:
    """The key is decoded first; its bad row at offset 2 comes after the value's at offset 1."""
    from pyconsumer.values.modes import MalformedValueError

    plan = TypedValues(ColumnFormat(Format.JSON, "a int"), ColumnFormat(Format.STRING),
                       mode="FAILFAST")
    with pytest.raises(MalformedValueError) as info:
        plan.apply(_batch([b"k0", b"k1", b"\xff"], [b'{"a":1}', b"x", b'{"a":1}']))
    assert str(info.value) == "topic t partition 0 offset 1: not valid JSON: Expecting value " \
                              "(character 0)"
