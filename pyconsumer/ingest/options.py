"""The ingest's inputs, checked before Spark starts: the source options of a run, the trigger
interval, the output and checkpoint folders, the brokers and topics, unknown ``-o`` options;
and :class:`IngestError`, the one-line failure every part of the ingest raises."""
from __future__ import annotations

import errno
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyconsumer.spark.options import SourceOptions


class IngestError(RuntimeError):
    """The ingest could not run or failed: the message is meant for a terminal."""


# --------------------------------------------------------------------------- options


_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(ms|milliseconds?|s|sec|seconds?|m|min|"
                       r"minutes?|h|hours?)?\s*", re.IGNORECASE)
_UNIT_MS = {"ms": 1, "millisecond": 1, "milliseconds": 1, "s": 1000, "sec": 1000,
            "second": 1000, "seconds": 1000, "m": 60_000, "min": 60_000, "minute": 60_000,
            "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000}


def parse_trigger_ms(text: str) -> int:
    """``"10s"``, ``"500ms"``, ``"1.5 minutes"``, ``"2m"`` -> milliseconds (a bare number is
    seconds). Raises ValueError."""
    m = _DURATION.fullmatch(text or "")
    if not m:
        raise ValueError(f"not a duration: {text!r} (e.g. 10s, 500ms, 1m)")
    unit = (m.group(2) or "s").lower()
    ms = int(round(float(m.group(1)) * _UNIT_MS[unit]))
    if ms <= 0:
        raise ValueError(f"the trigger interval must be positive, got {text!r}")
    return ms


def source_options(*, bootstrap: str | None, topics: Sequence[str] = (),
                   pattern: str | None = None, starting_offsets: str | None = None,
                   ending_offsets: str | None = None, options: Mapping[str, str] | None = None,
                   kafka: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``format("pyconsumer")`` options: explicit arguments, then ``options``
    (Spark Kafka source options, e.g. maxOffsetsPerTrigger), then ``kafka`` (consumer
    settings, given the ``kafka.`` prefix)."""
    opts: dict[str, str] = {}
    if bootstrap:
        opts["kafka.bootstrap.servers"] = bootstrap
    if topics:
        opts["subscribe"] = ",".join(topics)
    if pattern is not None:
        opts["subscribePattern"] = pattern
    if starting_offsets is not None:
        opts["startingOffsets"] = starting_offsets
    if ending_offsets is not None:
        opts["endingOffsets"] = ending_offsets
    for key, value in (options or {}).items():
        opts[key] = str(value)
    for key, value in (kafka or {}).items():
        opts[key if key.lower().startswith("kafka.") else f"kafka.{key}"] = str(value)
    lowered = {k.lower() for k in opts}
    strategies = lowered & {"subscribe", "subscribepattern", "assign"}
    if not strategies:
        raise IngestError("give the topics to read: --topic, --pattern or -o assign=JSON")
    if len(strategies) > 1:
        raise IngestError("give only one of --topic (subscribe), --pattern (subscribePattern) "
                          "and -o assign")
    if "kafka.bootstrap.servers" not in lowered:
        raise IngestError("give the broker: --bootstrap-server HOST:PORT")
    return opts


# --------------------------------------------------------------------------- before Spark
# (checks that take milliseconds here and 10+ s of Spark start-up to fail inside a query)


def local_path(path: str) -> str | None:
    """The file-system path of ``path``, or None for a URI Spark resolves (hdfs://, s3a://)."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", path):
        return None
    return path


def claim_folders(folders: Mapping[str, str | None]) -> list[str]:
    """Create the local ``{flag: path}`` folders that do not exist yet, so a path Spark could
    not write fails now, naming its flag; returns the folders created (the top-most of each),
    for :func:`release_folders` after a failed run. Every path is checked before any folder is
    made, and a refusal removes what was made: a refused run leaves the file system as it was."""
    todo: list[tuple[str, str, str]] = []
    for flag, path in folders.items():
        local = None if path is None else local_path(path)
        if path is None or local is None:
            continue
        target = _check_folder(flag, path, local)
        if target is not None:
            todo.append((flag, path, target))
    output, bad_records = folders.get("--output"), folders.get("--bad-records")
    if output is not None and bad_records is not None:
        check_apart(output, bad_records)
    created: list[str] = []
    for flag, path, target in todo:
        if os.path.isdir(target):       # made above as a parent of another flag's folder
            continue
        top = target
        while not os.path.exists(os.path.dirname(top)):
            top = os.path.dirname(top)
        try:
            os.makedirs(target)
        except OSError as exc:
            release_folders(created)
            raise IngestError(f"{flag} {path}: cannot create the folder: "
                              f"{exc.strerror or exc}") from None
        created.append(top)
    return created


def check_apart(output: str, bad_records: str) -> None:
    """The two datasets in folders of their own: one inside the other would be read as part
    of it (or refused by Spark's partition discovery)."""
    a, b = output.rstrip("/") + "/", bad_records.rstrip("/") + "/"
    if a == b:
        raise IngestError("--bad-records must be another folder than --output")
    if b.startswith(a) or a.startswith(b):
        raise IngestError(f"--bad-records {bad_records} and --output {output}: neither folder "
                          "may hold the other (its files would be read as part of it)")


def _check_folder(flag: str, path: str, local: str) -> str | None:
    """The absolute folder ``local`` to create, None when it exists (writable); IngestError
    when it cannot be a folder this run writes (what makedirs would say, said before any
    folder of the run is made)."""
    if "\x00" in local:
        raise IngestError(f"{flag} {path!r}: a path cannot hold a NUL character")
    target = os.path.abspath(local)
    if os.path.isdir(target):
        if not os.access(target, os.W_OK | os.X_OK):
            raise IngestError(f"{flag} {path}: the folder is not writable")
        return None
    if os.path.lexists(target):
        holds = {"--output": "the Parquet files", "--bad-records": "the rejected records"}
        raise IngestError(f"{flag} {path} is a file; give a folder (it will hold "
                          f"{holds.get(flag, 'offsets')})")
    parent = os.path.dirname(target)
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        why = os.strerror(errno.ENOTDIR)
    elif not os.access(parent, os.W_OK | os.X_OK):
        why = os.strerror(errno.EACCES)
    else:
        return target
    raise IngestError(f"{flag} {path}: cannot create the folder: {why}")


def release_folders(created: Sequence[str]) -> list[str]:
    """After a failed or interrupted run: remove the folders :func:`claim_folders` created
    when they hold no data files (only Spark's hidden ``_x``/``.x`` entries, or nothing);
    returns those removed. A folder with data stays: that data was committed."""
    removed = []
    for top in created:
        data = False
        for _, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
            if any(not f.startswith(("_", ".")) for f in files):
                data = True
                break
        if not data:
            shutil.rmtree(top, ignore_errors=True)
            removed.append(top)
    return removed


def check_source(opts: Mapping[str, str], timeout_ms: int = 10_000) -> list[str]:
    """Ask the cluster, before Spark starts, what the query would: that the brokers answer
    and the topics exist (not created: the check never auto-creates). Returns the topics
    read; IngestError naming the broker or the missing topic (with close matches)."""
    from pyconsumer import KafkaConsumer
    from pyconsumer.console import missing_topic_message
    from pyconsumer.errors import ConfigurationError, KafkaError

    settings: dict[str, Any] = {k[len("kafka."):]: v for k, v in opts.items()
                                if k.lower().startswith("kafka.")}
    settings.update({"allow.auto.create.topics": False, "default.api.timeout.ms": timeout_ms,
                     "client.id": "pyconsumer-ingest-check"})
    settings.pop("group.id", None)
    lowered = {k.lower(): v for k, v in opts.items()}
    try:
        with KafkaConsumer(**settings) as consumer:
            known = consumer.topics()
    except ConfigurationError as exc:
        raise IngestError(str(exc)) from None
    except KafkaError as exc:
        raise IngestError(f"the brokers {opts.get('kafka.bootstrap.servers')} did not answer: "
                          f"{exc}") from None
    if "subscribe" in lowered:
        topics = [t.strip() for t in lowered["subscribe"].split(",") if t.strip()]
        for topic in topics:
            if topic not in known:
                raise IngestError(missing_topic_message(topic, sorted(known)))
        return topics
    if "subscribepattern" in lowered:
        regex = re.compile(lowered["subscribepattern"])
        # as the source reads it: the pattern found anywhere in the name (Spark 4's findFirstIn)
        topics = sorted(t for t in known if regex.search(t))
        if not topics:
            raise IngestError(f"no topic matches --pattern {lowered['subscribepattern']!r}")
        return topics
    return []


def check_offsets(source: SourceOptions, checkpoint: str | None = None) -> None:
    """What the source's planning refuses once Spark runs, asked of the brokers now: offsets or
    timestamps given per partition (--starting-offsets / --ending-offsets JSON) name exactly
    the partitions the read has, and assigned partitions exist (batch). A streaming run
    resuming a checkpoint starts from it, not from --starting-offsets: that is not checked
    then. IngestError naming the flag, with what to give instead."""
    from pyconsumer.errors import ConfigurationError, KafkaError, UnknownTopicOrPartitionError
    from pyconsumer.spark.offsets import OffsetReader, check_named_partitions
    from pyconsumer.spark.options import Assign, SpecificOffsets, SpecificTimestamps

    specs = [(source.starting, True)]
    if not source.streaming:
        specs.append((source.ending, False))
    elif _resumes(checkpoint):
        specs = []
    specs = [(spec, start) for spec, start in specs
             if isinstance(spec, (SpecificOffsets, SpecificTimestamps))]
    if not specs and (source.streaming or not isinstance(source.strategy, Assign)):
        return
    reader = OffsetReader(source, role="ingest-check")
    try:
        partitions = reader.partitions()
        for spec, start in specs:
            flag = _offsets_flag(spec, start)
            try:
                check_named_partitions(spec, partitions, flag)
            except ConfigurationError as exc:
                if isinstance(spec, SpecificTimestamps):
                    hint = "give a timestamp for each partition of the topics read"
                elif start:
                    hint = ("give each partition of the topics read an offset, -2 for earliest"
                            + (" or -1 for latest" if source.streaming else ""))
                else:
                    hint = "give each partition of the topics read an offset, -1 for latest"
                raise IngestError(f"{exc}: {hint}") from None
    except UnknownTopicOrPartitionError as exc:
        # an assigned partition that does not exist ("Option 'assign': t-7 does not exist")
        text = str(exc.args[0]) if exc.args else str(exc)
        raise IngestError(text.replace("Option 'assign':", "-o assign:")) from None
    except KafkaError as exc:
        raise IngestError(f"the brokers {source.kafka_params.get('bootstrap.servers')} did not "
                          f"answer: {exc}") from None
    finally:
        reader.close()


def _offsets_flag(spec: object, start: bool) -> str:
    from pyconsumer.spark.options import SpecificTimestamps

    if isinstance(spec, SpecificTimestamps):
        return "-o startingOffsetsByTimestamp" if start else "-o endingOffsetsByTimestamp"
    return "--starting-offsets" if start else "--ending-offsets"


def _resumes(checkpoint: str | None) -> bool:
    """A checkpoint with committed offsets (the query goes on from them). A remote one (hdfs://,
    s3a://) is taken as resumed: only Spark can look into it."""
    if checkpoint is None:
        return False
    local = local_path(checkpoint)
    if local is None:
        return True
    offsets = os.path.join(local, "offsets")
    return os.path.isdir(offsets) and any(not n.startswith(("_", ".")) for n in os.listdir(offsets))


def unknown_source_options(options: Mapping[str, str]) -> list[str]:
    """A warning for each ``-o`` option the Kafka source does not know (Spark ignores those
    silently), with the closest known name."""
    import difflib

    from pyconsumer.spark.options import known_option_names

    known = known_option_names()
    lowered = {name.lower(): name for name in known}
    warnings = []
    for key in options:
        # kafka.* go to the consumer, schema.registry.* to the registry client: checked there
        if key.lower().startswith(("kafka.", "schema.registry.")) or key.lower() in lowered:
            continue
        close = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.6)
        hint = f" (did you mean {lowered[close[0]]}?)" if close else ""
        warnings.append(f"-o {key}: not an option of the Kafka source, ignored{hint}")
    return warnings
