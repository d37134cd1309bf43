"""The ingest's inputs, checked before Spark starts: the source options of a run, the trigger
interval, the output and checkpoint folders, the brokers and topics, unknown ``-o`` options;
and :class:`IngestError`, the one-line failure every part of the ingest raises."""
from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from typing import Any


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
    for :func:`release_folders` after a failed run."""
    created: list[str] = []
    for flag, path in folders.items():
        local = None if path is None else local_path(path)
        if local is None:
            continue
        if "\x00" in local:
            raise IngestError(f"{flag} {path!r}: a path cannot hold a NUL character")
        target = os.path.abspath(local)
        if os.path.isdir(target):
            if not os.access(target, os.W_OK | os.X_OK):
                raise IngestError(f"{flag} {path}: the folder is not writable")
            continue
        if os.path.exists(target):
            raise IngestError(f"{flag} {path} is a file; give a folder (it will hold "
                              f"{'the Parquet files' if flag == '--output' else 'offsets'})")
        top = target
        while not os.path.exists(os.path.dirname(top)):
            top = os.path.dirname(top)
        try:
            os.makedirs(target)
        except OSError as exc:
            raise IngestError(f"{flag} {path}: cannot create the folder: "
                              f"{exc.strerror or exc}") from None
        created.append(top)
    return created


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
