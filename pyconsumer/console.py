"""``pyconsumer consume``: records to the terminal as JSON lines, and terminal helpers.

One JSON object per record, one record per line (like kcat -J or kafka-console-consumer)::

    {"topic": "orders", "partition": 0, "offset": 42, "timestamp": 1700000000000,
     "timestamp_type": "CreateTime", "key": "k-1", "value": {"base64": "AP8="},
     "headers": [["trace", "abc"], ["flag", null]]}

How bytes and typed keys and values are written is :mod:`pyconsumer.jsonlines`'s job;
typed ones (``-X value.format=string|json|avro``, ``-X key.format=...``) are read with
:meth:`~pyconsumer.KafkaConsumer.poll_arrow`::

    {"topic": "orders", ..., "key": "k-1", "value": {"id": 7, "amount": 2.5}, "headers": []}
    {"topic": "orders", ..., "key": "k-2", "value": null, "headers": [],
     "_corrupt_record": "{not json"}

``--pattern`` finds its regular expression anywhere in a topic's name, as ``ingest`` and
Spark's ``subscribePattern`` do, with and without ``--group``. ``--timeout-ms`` also bounds
the wait for a broker to answer at the start.

The helpers at the end (:func:`format_table`, :class:`StatusLine`) are shared with
``pyconsumer ingest``.
"""
from __future__ import annotations

import difflib
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

from pyconsumer.jsonlines import TYPED_HELP, batch_json, record_json


__all__ = [
    "ConsumeOptions",
    "run_consume",
    "format_table",
    "StatusLine",
]


@dataclass
class ConsumeOptions:
    """What ``pyconsumer consume`` was asked for (see :func:`add_consume_arguments`)."""

    bootstrap_server: str
    topics: list[str] = field(default_factory=list)
    pattern: str | None = None
    partitions: list[int] = field(default_factory=list)
    from_beginning: bool = False
    offset: str | None = None          # "earliest", "latest" or an offset N >= 0
    max_messages: int | None = None
    group: str | None = None
    timeout_ms: int | None = None      # stop after no record for this long; None: until Ctrl-C
    settings: dict[str, str] = field(default_factory=dict)   # -X key=value


#: session.timeout.ms of ``consume --group`` unless -X sets it (Kafka's minimum is 6000)
CLI_SESSION_TIMEOUT_MS = 10_000
#: an unassigned --group member says what it waits for after this long
JOIN_NOTICE_S = 2.0


class UsageError(ValueError):
    """Options that do not go together (exit 2, message to stderr)."""


def _check(opts: ConsumeOptions) -> None:
    if bool(opts.topics) == (opts.pattern is not None):
        raise UsageError("give --topic (one or more) or --pattern")
    if opts.partitions and not opts.topics:
        raise UsageError("--partition needs --topic")
    if opts.partitions and opts.group:
        raise UsageError("--partition reads the given partitions directly (assign); "
                         "it does not go with --group")
    if opts.offset is not None:
        if opts.group:
            raise UsageError("--offset does not go with --group (a group starts at its "
                             "committed offsets)")
        if opts.from_beginning:
            raise UsageError("give --offset or --from-beginning, not both")
        if opts.offset not in ("earliest", "latest") and not re.fullmatch(r"[0-9]+", opts.offset):
            raise UsageError(f"--offset must be earliest, latest or an offset >= 0, "
                             f"got {opts.offset!r}")
    if opts.max_messages is not None and opts.max_messages < 1:
        raise UsageError("--max-messages must be at least 1")
    if opts.timeout_ms is not None and opts.timeout_ms < 0:
        raise UsageError("--timeout-ms must not be negative")
    if opts.pattern is not None:
        try:
            re.compile(opts.pattern)
        except re.error as exc:
            raise UsageError(f"--pattern is not a regular expression: {exc}") from None


def _consumer_settings(opts: ConsumeOptions) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "bootstrap.servers": opts.bootstrap_server,
        "client.id": "pyconsumer-console",
        "auto.offset.reset": "earliest" if opts.from_beginning else "latest",
        # a misspelt --topic must be an error, not a new empty topic to wait on
        "allow.auto.create.topics": False,
    }
    if opts.group:
        settings["group.id"] = opts.group
        # shorter than the library's 45 s: a broker may hold the first join for part of the
        # session timeout, which a person at a terminal waits through
        settings["session.timeout.ms"] = CLI_SESSION_TIMEOUT_MS
        settings["heartbeat.interval.ms"] = CLI_SESSION_TIMEOUT_MS // 4
    settings.update(opts.settings)          # -X wins
    return settings


def missing_topic_message(topic: str, known: Sequence[str]) -> str:
    """``topic 'x' does not exist`` with the cluster's topics closest to it, if any."""
    close = difflib.get_close_matches(topic, [t for t in known if not t.startswith("__")],
                                      n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(repr(t) for t in close)}?)" if close else ""
    return f"topic {topic!r} does not exist{hint}"


def _check_topics(known: Sequence[str], topics: Sequence[str]) -> None:
    """LookupError naming the first of ``topics`` the cluster does not have."""
    for topic in topics:
        if topic not in known:
            raise LookupError(missing_topic_message(topic, sorted(known)))


def whole_name_pattern(pattern: str) -> str:
    """``--pattern``, which matches anywhere in a name (Spark's subscribePattern, ingest's
    --pattern), as the whole-name expression subscribe(pattern=) takes (Java's
    Pattern.matches): ``.*(?:REGEX).*``. Topic names hold no newline, so ``.`` spans them."""
    return f".*(?:{pattern}).*"


class _Deadline:
    """--timeout-ms as the bound of the calls that wait for a broker at the start (None:
    each call's own default.api.timeout.ms)."""

    def __init__(self, timeout_ms: int | None) -> None:
        self.timeout_ms = timeout_ms
        self.at = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000.0

    def left_ms(self) -> float | None:
        return None if self.at is None else max(0.0, (self.at - time.monotonic()) * 1000.0)

    def passed(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at


class _NoAnswer(Exception):
    """No broker answered within --timeout-ms (the message names them and what was seen)."""


def _known_topics(consumer: Any, opts: ConsumeOptions, deadline: _Deadline) -> list[str]:
    """The cluster's topics: the first answer a broker gives, waited for up to
    --timeout-ms when it is given."""
    from pyconsumer.errors import KafkaTimeoutError, NoBrokersAvailable

    try:
        return list(consumer.topics(timeout_ms=deadline.left_ms()))
    except (KafkaTimeoutError, NoBrokersAvailable) as exc:
        if not deadline.passed():       # refused at once, or the library's own timeout
            raise
        servers = ", ".join(split_list([opts.bootstrap_server]))
        raise _NoAnswer(f"no broker of {servers} answered within {deadline.timeout_ms} ms "
                        f"(--timeout-ms): {exc.detail or exc}") from None


def _assign(consumer: Any, opts: ConsumeOptions, known: Sequence[str], deadline: _Deadline
            ) -> list[Any]:
    """The partitions to read without a group: the given ones, or all of the topics'."""
    from pyconsumer.structs import TopicPartition

    if opts.pattern is not None:
        regex = re.compile(opts.pattern)
        # anywhere in the name; internal topics (__consumer_offsets...) left out, as
        # subscribe(pattern=) and the Spark source leave them
        topics = sorted(t for t in known if regex.search(t) and not t.startswith("__"))
        if not topics:
            raise LookupError(f"no topic matches --pattern {opts.pattern!r}")
    else:
        topics = opts.topics
        _check_topics(known, topics)
    tps: list[TopicPartition] = []
    for topic in topics:
        parts = consumer.partitions_for_topic(topic, timeout_ms=deadline.left_ms())
        if parts is None:
            raise LookupError(f"topic {topic!r} not found")
        if opts.partitions:
            missing = sorted(set(opts.partitions) - parts)
            if missing:
                raise LookupError(f"topic {topic!r} has no partition {missing[0]} "
                                  f"(it has {len(parts)})")
            parts = set(opts.partitions)
        tps.extend(TopicPartition(topic, p) for p in sorted(parts))
    consumer.assign(tps)
    if opts.offset == "latest" or (opts.offset is None and not opts.from_beginning):
        # "from the end" exact on every broker (a broker whose ListOffsets(latest) falls short
        # of the log end would print old records as new)
        from pyconsumer.consumer.log_end import end_offsets_exact

        ends = end_offsets_exact(consumer, tps, _consumer_settings(opts), timeout_ms=deadline.left_ms())
        for tp in tps:
            consumer.seek(tp, ends[tp])
    elif opts.offset == "earliest":
        consumer.seek_to_beginning()
    elif opts.offset is not None:
        for tp in tps:
            consumer.seek(tp, int(opts.offset))
    return tps


def run_consume(opts: ConsumeOptions, out: IO[str] | None = None, err: IO[str] | None = None
                ) -> int:
    """Print records as JSON lines until --max-messages, --timeout-ms or Ctrl-C.

    Returns the exit status: 0 done, 1 a Kafka error, 2 bad options, 130 Ctrl-C. A closed
    stdout (``| head``) ends it quietly with 0."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    try:
        _check(opts)
    except UsageError as exc:
        print(f"pyconsumer consume: {exc}", file=err)
        return 2
    with library_warnings(err, "consume"):
        return _consume(opts, out, err)


def _consume(opts: ConsumeOptions, out: IO[str], err: IO[str]) -> int:
    from pyconsumer import KafkaConsumer
    from pyconsumer.errors import KafkaError
    from pyconsumer.values.formats import decodes

    encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "")
    ascii_only = encoding not in ("utf8", "utf16", "utf32")
    dumps = json.JSONEncoder(ensure_ascii=ascii_only, separators=(", ", ": ")).encode
    count = 0
    consumer = None
    status = 0
    broken_pipe = False
    deadline = _Deadline(opts.timeout_ms)
    try:
        consumer = KafkaConsumer(**_consumer_settings(opts))
        # typed keys or values come with poll_arrow(), whose batch keeps a bad one's bytes
        typed = decodes(consumer.config.value_format) or decodes(consumer.config.key_format)
        known = _known_topics(consumer, opts, deadline)
        if opts.group:
            if opts.pattern is not None:
                consumer.subscribe(pattern=whole_name_pattern(opts.pattern))
            else:
                _check_topics(known, opts.topics)
                consumer.subscribe(opts.topics)
        else:
            _assign(consumer, opts, known, deadline)
        last_record = time.monotonic()
        join = _JoinReport(opts.group, last_record) if opts.group else None
        while opts.max_messages is None or count < opts.max_messages:
            wait = 1000.0
            if opts.timeout_ms is not None:
                left = opts.timeout_ms - (time.monotonic() - last_record) * 1000.0
                if left <= 0:
                    break
                wait = min(wait, left)
            limit = None if opts.max_messages is None else opts.max_messages - count
            if typed:
                rows = batch_json(consumer.poll_arrow(timeout_ms=int(wait), max_records=limit,
                                                      include_headers=True))
            else:
                polled = consumer.poll(timeout_ms=int(wait), max_records=limit)
                rows = [record_json(record) for records in polled.values()
                        for record in records]
            if join is not None and not join.joined:
                join.update(consumer, err)
            if not rows:
                if _reader_gone(out):      # `| head` exited while no record came
                    raise BrokenPipeError
                continue
            lines = [dumps(row) for row in rows]
            count += len(lines)
            out.write("\n".join(lines) + "\n")
            out.flush()
            last_record = time.monotonic()
    except KeyboardInterrupt:
        status = 130
    except BrokenPipeError:
        _quiet_stdout(out)
        broken_pipe = True
    except (KafkaError, LookupError, _NoAnswer) as exc:
        print(f"pyconsumer consume: {exc}", file=err)
        status = 1
    finally:
        if consumer is not None:
            try:
                consumer.close()
            except KeyboardInterrupt:     # a second Ctrl-C while leaving the group
                status = 130
            except Exception as exc:  # closing must not hide what happened before
                print(f"pyconsumer consume: closing the consumer failed: {exc}", file=err)
    if status != 1 and not broken_pipe:
        try:
            print(f"processed {count} message{'s' if count != 1 else ''}", file=err)
        except (BrokenPipeError, ValueError):
            pass
    return status


@dataclass
class _JoinReport:
    """What an unassigned ``--group`` member has told the user so far."""

    group: str
    started: float
    noticed: bool = False
    joined: bool = False

    def update(self, consumer: Any, err: IO[str]) -> None:
        """Say once what the member waits for, and once that it joined."""
        assignment = consumer.assignment()
        if assignment:
            self.joined = True
            topics = sorted({tp.topic for tp in assignment})
            print(f"pyconsumer consume: joined group {self.group!r}: {len(assignment)} "
                  f"partition{'s' if len(assignment) != 1 else ''} of {', '.join(topics)}",
                  file=err)
        elif not self.noticed and time.monotonic() - self.started >= JOIN_NOTICE_S:
            self.noticed = True
            print(f"pyconsumer consume: waiting to join group {self.group!r} (the group "
                  f"coordinator forms the group first; Ctrl-C or --timeout-ms stop)", file=err)


def _reader_gone(out: IO[str]) -> bool:
    """True when ``out`` is a pipe whose reading end is closed (poll reports POLLERR), so
    an idle consumer notices ``| head`` has exited without waiting for the next record."""
    import select
    import stat

    try:
        fd = out.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode) or not hasattr(select, "poll"):
            return False
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _quiet_stdout(out: IO[str]) -> None:
    """After EPIPE: point fd 1 at /dev/null so Python's exit flush does not complain."""
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def add_consume_arguments(parser: Any) -> None:
    """The ``consume`` options on an argparse parser."""
    parser.add_argument("-b", "--bootstrap-server", required=True, metavar="HOST:PORT",
                        help="broker(s) to start from, comma-separated")
    parser.add_argument("-t", "--topic", action="append", default=[], metavar="TOPIC",
                        help="topic to read (repeat it, or a comma-separated list)")
    parser.add_argument("--pattern", metavar="REGEX",
                        help="read every topic whose name REGEX matches, anywhere in the "
                             "name as Spark does (subscribePattern; ^...$ for the whole "
                             "name), with or without --group")
    parser.add_argument("-p", "--partition", action="append", default=[], type=int,
                        metavar="N", help="with --topic: read only this partition (repeatable)")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest offset (with --group: where the group has "
                             "no committed offset); default: only new records")
    parser.add_argument("--offset", metavar="OFFSET",
                        help="start every assigned partition at OFFSET: earliest, latest or "
                             "an offset N")
    parser.add_argument("-n", "--max-messages", type=int, metavar="N",
                        help="exit after N records")
    parser.add_argument("-g", "--group", metavar="GROUP",
                        help="join consumer group GROUP (subscribe; offsets are committed); "
                             "without it every partition of the topics is read directly")
    parser.add_argument("--timeout-ms", type=int, metavar="MS",
                        help="exit after no record arrived for MS ms, and with exit 1 when no "
                             "broker answered within MS ms at the start (default: run until "
                             "Ctrl-C; a broker is waited for default.api.timeout.ms)")
    parser.add_argument("-X", dest="settings", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="consumer setting, Java name (e.g. -X fetch.max.bytes=1048576); "
                             "-X value.format=json -X 'value.schema=id long, amount double' "
                             "prints typed values (see below)")
    parser.epilog = f"Typed values: {TYPED_HELP}."


def consume_options(args: Any) -> ConsumeOptions:
    """ConsumeOptions from parsed ``consume`` arguments (raises UsageError)."""
    return ConsumeOptions(
        bootstrap_server=args.bootstrap_server,
        topics=split_list(args.topic),
        pattern=args.pattern,
        partitions=list(args.partition),
        from_beginning=args.from_beginning,
        offset=args.offset,
        max_messages=args.max_messages,
        group=args.group,
        timeout_ms=args.timeout_ms,
        settings=key_values(args.settings, "-X"),
    )


def split_list(values: Sequence[str]) -> list[str]:
    """Repeated and comma-separated values, in order, without duplicates or empties."""
    out: list[str] = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if item and item not in out:
                out.append(item)
    return out


def key_values(items: Sequence[str], flag: str) -> dict[str, str]:
    """``["a=1", "b=x=y"]`` -> ``{"a": "1", "b": "x=y"}`` (raises UsageError)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} takes KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


# --------------------------------------------------------------------------- terminal helpers


class _HeldWarnings(logging.Handler):
    """Writes each record ``delay`` seconds after it came, unless closed first: a warning
    that the command's own error line follows at once (a refused broker) is not said twice,
    one about a wait that goes on is."""

    def __init__(self, err: IO[str], prefix: str, delay: float) -> None:
        super().__init__(logging.WARNING)
        self.err, self.prefix, self.delay = err, prefix, delay
        self.timers: list[threading.Timer] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = f"{self.prefix}{record.getMessage()}"
        timer = threading.Timer(self.delay, self._write, (text,))
        timer.daemon = True
        self.timers = [t for t in self.timers if t.is_alive()] + [timer]
        timer.start()

    def _write(self, text: str) -> None:
        try:
            print(text, file=self.err, flush=True)
        except (OSError, ValueError):       # the stream went away meanwhile
            pass

    def close(self) -> None:
        for timer in self.timers:
            timer.cancel()
        super().close()


@contextmanager
def library_warnings(err: IO[str], command: str, delay: float = 1.0) -> Iterator[None]:
    """The library's warnings (a broker that does not answer...) as ``pyconsumer <command>:
    warning: ...`` lines on ``err``, each held ``delay`` seconds and dropped if the block
    ends first; nothing when the application set up logging itself."""
    log = logging.getLogger("pyconsumer")
    if log.handlers or logging.getLogger().handlers:
        yield
        return
    handler = _HeldWarnings(err, f"pyconsumer {command}: warning: ", delay)
    log.addHandler(handler)
    try:
        yield
    finally:
        log.removeHandler(handler)
        handler.close()


def format_table(rows: Sequence[Sequence[Any]], header: Sequence[str], *,
                 right: Sequence[bool] | None = None, indent: str = "  ") -> str:
    """A plain text table: a header, a rule, the rows; ``right`` aligns columns right."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    align = list(right) if right is not None else [False] * len(header)
    lines = []
    for n, row in enumerate(cells):
        parts = [c.rjust(w) if a else c.ljust(w) for c, w, a in zip(row, widths, align)]
        lines.append((indent + "  ".join(parts)).rstrip())
        if n == 0:
            lines.append(indent + "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def human_bytes(n: float) -> str:
    """1234567 -> '1.2 MB' (decimal units, as rates are usually quoted)."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} TB"   # pragma: no cover


def bar(fraction: float, width: int = 24) -> str:
    """``[#########...............]`` for a fraction in 0..1."""
    fraction = min(1.0, max(0.0, fraction))
    full = int(round(fraction * width))
    return "[" + "#" * full + "." * (width - full) + "]"


class StatusLine:
    """A live status line on a stream: redrawn in place on a terminal; elsewhere only the
    lines given to :meth:`log` are printed (one per event, no carriage returns). Threads may
    share one: each write is whole."""

    def __init__(self, stream: IO[str] | None = None, *, live: bool | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        if live is None:
            isatty = getattr(self.stream, "isatty", None)
            live = bool(isatty and isatty())
        self.live = live
        self._shown = False
        self._lock = threading.RLock()

    def update(self, text: str) -> None:
        """Redraw the live line (only on a terminal)."""
        if not self.live:
            return
        width = 100
        try:
            width = os.get_terminal_size(self.stream.fileno()).columns or width
        except (AttributeError, OSError, ValueError):
            pass
        line = text if len(text) < width else text[: max(0, width - 2)] + "…"
        with self._lock:
            self.stream.write("\r\x1b[2K" + line)
            self.stream.flush()
            self._shown = True

    def log(self, text: str) -> None:
        """A line that stays: above the live line on a terminal, plain elsewhere."""
        with self._lock:
            self.clear()
            self.stream.write(text + "\n")
            self.stream.flush()

    def clear(self) -> None:
        with self._lock:
            if self.live and self._shown:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()
                self._shown = False

    @contextmanager
    def ticking(self, text: str, interval: float = 1.0) -> Iterator[None]:
        """While the block runs, on a terminal: ``text`` and the seconds it has taken so far,
        redrawn every ``interval`` (a long wait shows it is alive); elsewhere nothing."""
        if not self.live:
            yield
            return
        stop = threading.Event()
        started = time.monotonic()

        def tick() -> None:
            while True:
                self.update(f"{text} {time.monotonic() - started:.0f} s")
                if stop.wait(interval):
                    return

        ticker = threading.Thread(target=tick, name="pyconsumer-status", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()
            self.clear()
