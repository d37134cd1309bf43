"""At-least-once delivery in a consumer group whose members are killed.

Four member processes (tests/integration/group_member.py: poll, write every record to their own
file, fsync, then commit()) consume 300,000 records that confluent-kafka produces over six
partitions while they run. The test SIGKILLs a member five times at seeded random moments and
starts a new process in its place, then waits until every record has been processed by some
member, stops them (SIGTERM: close() and LeaveGroup) and checks:

* nothing is lost: every produced (partition, offset) is in some member's file, with the value
  produced there, and nothing else is;
* each member's stretch of one assignment is exact: per partition, consecutive offsets from
  where it started, no record twice and none skipped;
* the duplicates are only the uncommitted windows: at most one poll's records per kill (the
  batch on disk whose commit had not happened) plus the records of each batch whose commit()
  failed because the group had moved on;
* (a second test on the same run) after such a failed commit the member returns no records
  until it has rejoined, as Java's consumer does.

The scenario runs once per group protocol (a module fixture: classic, then KIP-848's
consumer protocol); both tests read each outcome. With the consumer protocol a member's
partitions move only once it acknowledged their release, so no commit is refused and the
duplicates are only the killed members' last batches (measured: 166 duplicates of 300,000
against 6,730 with the classic protocol, 0 failed commits against 13).

Broker: librdkafka's mock cluster. Its classic group coordinator fences stale generations
(OffsetCommit, Heartbeat and SyncGroup check the generation, and OffsetCommit is refused with
REBALANCE_IN_PROGRESS while the group rebalances), expires dead members after
session.timeout.ms and handles LeaveGroup (v0-v2), so a zombie member's late commit is refused
as on a real broker. The same scenario on Tansu (0.6) passed too, but exercised less: no
commit was refused over 4 generations and 5 kills, so no uncommitted window was ever redone,
and its ListOffsets "latest" is wrong (the committed offsets came out past the "end").
The mock's price: every rebalance waits session.timeout.ms - 1 s (5 s here) before it elects
the leader, a member killed and restarted at once is first given partitions while still in
the group, until it expires, and a follower's SyncGroup that arrives after the leader's gets
INVALID_REQUEST (poll() raises it, as Java's would; the member polls on and rejoins).
About 45-60 s of wall time, so it is marked slow.
"""
from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import pyconsumer
from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.testing import MockCluster, TestRecord, produce

pytestmark = [pytest.mark.slow, pytest.mark.mock]

TOPIC = "kill-test"
GROUP = "kill-group"
PARTITIONS = 6
RECORDS = 300_000
CHUNK = 10_000                 # records per produce() call, one call a second
MEMBERS = 4
KILLS = 5
SEED = 20240611
MAX_POLL_RECORDS = 500
WORK_MS = 20                   # a member's work per batch between its fsync and its commit()
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 1000
FIRST_KILL_S, LAST_KILL_S, KILL_GAP_S = 4.0, 40.0, 3.0   # after the members start
TIME_LIMIT_S = 90.0            # from the members' start until every record is processed
MEMBER_PROGRAM = Path(__file__).with_name("group_member.py")


@dataclass
class RecordsFile:
    """One member incarnation's records file, read incrementally as it grows."""

    path: Path
    pos: int = 0
    lines: int = 0             # records read so far
    # records out of order, repeated or skipped within one assignment, or with another value
    problems: list[str] = field(default_factory=list)
    # records poll() returned after a commit() failed because the group had rebalanced, before
    # the member rejoined (Java returns none: the failure makes it rejoin in the next poll)
    late: list[tuple[int, int]] = field(default_factory=list)
    _last: dict[int, int] = field(default_factory=dict)   # partition -> offset, this stretch
    _failed: bool = False

    def read_new(self, seen: Counter[tuple[int, int]], values: dict[tuple[int, int], str]) -> None:
        """Count the complete lines added since the last call (a killed member may leave half a
        line: it was never fsynced, so never committed, and is ignored)."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self.pos)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.pos += end
        for raw in data[:end].decode("ascii").splitlines():
            if raw.startswith("# assigned"):     # a new stretch begins
                self._last.clear()
                self._failed = False
                continue
            if raw.startswith("#"):              # "# commit_failed 500", "# commit_error 500"
                # a CommitFailedError: the group rebalanced; a timeout is no reason to stop
                self._failed = self._failed or raw.startswith("# commit_failed")
                continue
            p_s, o_s, value = raw.split(" ")
            p, o = int(p_s), int(o_s)
            last = self._last.get(p)
            if last is not None and o != last + 1:
                self.problems.append(f"{self.path.name}: partition {p} offset {o} after {last} "
                                     "within one assignment")
            self._last[p] = o
            if self._failed:
                self.late.append((p, o))
            seen[(p, o)] += 1
            values.setdefault((p, o), value)
            if values[(p, o)] != value:
                self.problems.append(f"{self.path.name}: partition {p} offset {o} has value "
                                     f"{value!r}, earlier {values[(p, o)]!r}")
            self.lines += 1


class Member:
    """A member process; restarting it starts a new incarnation with its own files."""

    def __init__(self, name: str, workdir: Path, bootstrap: str,
                 protocol: str = "classic") -> None:
        self.name = name
        self.protocol = protocol
        self.workdir = workdir
        self.bootstrap = bootstrap
        self.incarnation = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.files: list[RecordsFile] = []
        self.prefixes: list[Path] = []

    def start(self) -> None:
        self.incarnation += 1
        prefix = self.workdir / f"{self.name}.{self.incarnation}"
        self.prefixes.append(prefix)
        self.files.append(RecordsFile(prefix.with_suffix(prefix.suffix + ".records")))
        env = dict(os.environ)
        # the member imports the same pyconsumer as this test (a worktree or an install)
        root = str(Path(pyconsumer.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        with open(prefix.with_suffix(prefix.suffix + ".log"), "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(MEMBER_PROGRAM), self.bootstrap, TOPIC, GROUP, str(prefix),
                 "--max-poll-records", str(MAX_POLL_RECORDS),
                 "--session-timeout-ms", str(SESSION_TIMEOUT_MS),
                 "--heartbeat-interval-ms", str(HEARTBEAT_INTERVAL_MS), "--work-ms", str(WORK_MS),
                 "--group-protocol", self.protocol],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def events(self) -> list[dict[str, object]]:
        out = []
        for prefix in self.prefixes:
            path = prefix.with_suffix(prefix.suffix + ".events")
            if path.exists():
                out += [json.loads(line) for line in path.read_text().splitlines()
                        if line.endswith("}")]
        return out

    def started(self) -> bool:
        """The current incarnation handles SIGTERM (it notes "started" after installing it)."""
        path = self.prefixes[-1].with_suffix(self.prefixes[-1].suffix + ".events")
        return path.exists() and '"started"' in path.read_text()

    def log_tail(self, lines: int = 30) -> str:
        path = self.prefixes[-1].with_suffix(self.prefixes[-1].suffix + ".log")
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


class Producer(threading.Thread):
    """Produces RECORDS records (value = their sequence number, partition = seq % PARTITIONS)
    in chunks of CHUNK, one chunk a second, while the members consume."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(name="kill-test-producer", daemon=True)
        self.bootstrap = bootstrap
        self.expected: dict[tuple[int, int], str] = {}
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            for start in range(0, RECORDS, CHUNK):
                began = time.monotonic()
                seqs = range(start, min(start + CHUNK, RECORDS))
                delivered = produce(self.bootstrap, TOPIC,
                                    [TestRecord(value=b"%d" % s, partition=s % PARTITIONS) for s in seqs],
                                    linger_ms=20)
                for s, (p, o) in zip(seqs, delivered):
                    self.expected[(p, o)] = str(s)
                time.sleep(max(0.0, 1.0 - (time.monotonic() - began)))
        except BaseException as e:  # noqa: BLE001  (the test raises it)
            self.error = e
        finally:
            self.done.set()


def kill_schedule(rng: random.Random) -> list[float]:
    """KILLS moments in [FIRST_KILL_S, LAST_KILL_S], at least KILL_GAP_S apart."""
    while True:
        times = sorted(rng.uniform(FIRST_KILL_S, LAST_KILL_S) for _ in range(KILLS))
        if all(b - a >= KILL_GAP_S for a, b in itertools.pairwise(times)):
            return times


@dataclass
class KillRun:
    """What one run of the scenario left behind, for the tests below."""

    members: list[Member]
    expected: dict[tuple[int, int], str]     # (partition, offset) -> value, as produced
    seen: Counter[tuple[int, int]]           # how often each was processed
    values: dict[tuple[int, int], str]
    kills: list[str]
    consumed_s: float
    total_s: float
    committed_lag: dict[int, int]
    stop_errors: list[str]

    @property
    def files(self) -> list[RecordsFile]:
        return [f for m in self.members for f in m.files]

    @property
    def events(self) -> list[dict[str, object]]:
        return [e for m in self.members for e in m.events()]

    @property
    def processed(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def duplicated(self) -> int:
        return self.processed - len(self.seen)

    @property
    def failed_commits(self) -> list[dict[str, object]]:
        return [e for e in self.events if e["event"] in ("commit_failed", "commit_error")]

    @property
    def uncommitted(self) -> int:
        """Records processed in batches whose commit() failed."""
        return sum(int(str(e["records"])) for e in self.failed_commits)


@pytest.fixture(scope="module", params=["classic", "consumer"])
def kill_run(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[KillRun]:
    """The scenario with each group protocol (consumer = KIP-848: the mock expires a killed
    member after its consumer session timeout, set to the classic one here)."""
    pytest.importorskip("confluent_kafka", reason="librdkafka's mock cluster and the producer")
    protocol = request.param
    workdir = tmp_path_factory.mktemp(f"kill-{protocol}")
    with MockCluster(3, initial_rebalance_delay_ms=0) as cluster:
        cluster.set_group_consumer_session_timeout_ms(SESSION_TIMEOUT_MS)
        cluster.set_group_consumer_heartbeat_interval_ms(HEARTBEAT_INTERVAL_MS)
        yield _run_scenario(cluster, workdir, protocol)


def _run_scenario(cluster: MockCluster, workdir: Path, protocol: str) -> KillRun:
    cluster.create_topic(TOPIC, PARTITIONS)
    return run_scenario(cluster.bootstrap, workdir, f"librdkafka mock cluster, {protocol}",
                        protocol)


def run_scenario(bootstrap: str, workdir: Path, broker: str,
                 protocol: str = "classic") -> KillRun:
    """Run the scenario against ``bootstrap`` (TOPIC must exist with PARTITIONS partitions)."""
    rng = random.Random(SEED)
    kills_at = kill_schedule(rng)
    members = [Member(f"m{i}", workdir, bootstrap, protocol) for i in range(1, MEMBERS + 1)]
    seen: Counter[tuple[int, int]] = Counter()
    values: dict[tuple[int, int], str] = {}
    kills: list[str] = []
    killed: set[int] = set()         # pids
    restarts: list[tuple[float, Member]] = []
    producer = Producer(bootstrap)

    def read_all() -> None:
        for m in members:
            for f in m.files:
                f.read_new(seen, values)

    start = time.monotonic()
    try:
        for m in members:
            m.start()
        producer.start()
        while True:
            now = time.monotonic() - start
            for m in members:
                assert m.proc is not None
                rc = m.proc.poll()
                if rc is not None and m.proc.pid not in killed:
                    pytest.fail(f"member {m.name} exited with {rc}:\n{m.log_tail()}")
            if kills_at and now >= kills_at[0]:
                kills_at.pop(0)
                victim = rng.choice([m for m in members if m.proc is not None
                                     and m.proc.poll() is None])
                assert victim.proc is not None
                killed.add(victim.proc.pid)
                victim.kill()
                kills.append(f"{victim.name}.{victim.incarnation}@{now:.1f}s")
                restarts.append((now + rng.uniform(0.2, 2.0), victim))
            for due, m in list(restarts):
                if now >= due:
                    restarts.remove((due, m))
                    m.start()
            read_all()
            if producer.error is not None:
                raise producer.error
            if producer.done.is_set() and not kills_at and not restarts \
                    and len(producer.expected.keys() - seen.keys()) == 0:
                break
            if now > TIME_LIMIT_S:
                missing = set(producer.expected) - seen.keys()   # a copy: it may still grow
                per_partition = Counter(p for p, _ in missing)
                pytest.fail(f"after {now:.0f} s, {len(missing)} of {len(producer.expected)} "
                            f"records were processed by no member (per partition "
                            f"{dict(sorted(per_partition.items()))}; all produced: "
                            f"{producer.done.is_set()}; kills {kills})\n"
                            + "\n".join(f"--- {m.name}\n{m.log_tail(15)}" for m in members))
            time.sleep(0.3)
        consumed_s = time.monotonic() - start
    finally:
        # close(): LeaveGroup; a member that hangs is killed. A member restarted a moment ago
        # may not handle SIGTERM yet: wait until it says it does.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not all(
                m.started() for m in members if m.proc is not None and m.proc.poll() is None):
            time.sleep(0.1)
        for m in members:
            if m.proc is not None and m.proc.poll() is None:
                m.proc.send_signal(signal.SIGTERM)
        stop_errors = []
        for m in members:
            if m.proc is None:
                continue
            try:
                rc = m.proc.wait(20)
                if rc != 0:
                    stop_errors.append(f"member {m.name} stopped with {rc}:\n{m.log_tail()}")
            except subprocess.TimeoutExpired:
                stop_errors.append(f"member {m.name} did not stop within 20 s of SIGTERM:\n"
                                   f"{m.log_tail()}")
                m.kill()
    read_all()
    with KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP,
                       enable_auto_commit=False) as check:
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        committed = check.committed(tps)
        ends = check.end_offsets(tps)
    run = KillRun(members, producer.expected, seen, values, kills, consumed_s,
                  time.monotonic() - start,
                  {tp.partition: ends[tp] - (om.offset if om else 0) for tp, om in committed.items()},
                  stop_errors)
    generations = [int(str(e["generation"])) for e in run.events if e["event"] == "assigned"]
    late = [(f.path.name, p, o) for f in run.files for p, o in f.late]
    print(f"\nkill test ({broker}, {MEMBERS} members, {PARTITIONS} partitions, "
          f"seed {SEED}): produced {len(run.expected)}, processed {run.processed}, distinct "
          f"{len(seen)}, lost {len(run.expected.keys() - seen.keys())}, duplicated "
          f"{run.duplicated}, kills {len(kills)} {kills}, processes "
          f"{sum(m.incarnation for m in members)}, rebalances: generation {max(generations, default=-1)}, "
          f"failed commits {len(run.failed_commits)} ({run.uncommitted} records), poll() errors "
          f"{sum(e['event'] == 'poll_error' for e in run.events)}, records "
          f"delivered after a failed commit {len(late)}, all processed after {consumed_s:.1f} s, "
          f"total {run.total_s:.1f} s, committed lag at the end {run.committed_lag}")
    return run


def test_members_killed_at_random_lose_nothing(kill_run: KillRun) -> None:
    """At-least-once: every record processed, exactly as produced; each assignment's stretch
    exact; every duplicate from an uncommitted window (a killed member's last batch, or a batch
    whose commit failed); the members stop cleanly and commit no offset past the end."""
    run = kill_run
    assert not run.stop_errors, "\n".join(run.stop_errors)
    # poll() may raise only the mock's INVALID_REQUEST for a SyncGroup that came after the
    # leader's (librdkafka's rdkafka_mock_cgrp.c completes the sync on the leader's request)
    poll_errors = [str(e["error"]) for e in run.events if e["event"] == "poll_error"]
    unexpected = [e for e in poll_errors if not ("INVALID_REQUEST" in e and "SyncGroup" in e)]
    assert not unexpected, f"poll() raised: {unexpected}"
    lost = run.expected.keys() - run.seen.keys()
    assert not lost, f"{len(lost)} records lost, e.g. {sorted(lost)[:10]}"
    strange = run.seen.keys() - run.expected.keys()
    assert not strange, f"{len(strange)} records that were never produced: {sorted(strange)[:10]}"
    wrong = [(k, run.values[k], run.expected[k]) for k in run.seen
             if run.values[k] != run.expected[k]]
    assert not wrong, f"{len(wrong)} records with another value than produced: {wrong[:10]}"
    problems = [p for f in run.files for p in f.problems]
    assert not problems, f"{len(problems)} repeated or skipped records within an assignment: {problems[:10]}"
    bound = len(run.kills) * MAX_POLL_RECORDS + run.uncommitted
    assert run.duplicated <= bound, (
        f"{run.duplicated} duplicates, more than the uncommitted windows explain ({bound})")
    assert all(lag >= 0 for lag in run.committed_lag.values()), (
        f"committed past the end: {run.committed_lag}")


def test_no_records_after_a_commit_failed_for_a_rebalance(kill_run: KillRun) -> None:
    """Java semantics: once commit() fails because the group rebalanced, the next poll()
    rejoins (eager: revokes everything) before it returns records, so a member processes at
    most one batch per rebalance that it cannot commit, and the duplicates stay within
    (kills + failed commits) x max.poll.records with each failed commit its own rebalance."""
    late = [(f.path.name, p, o) for f in kill_run.files for p, o in f.late]
    by_file = Counter(name for name, _, _ in late)
    assert not late, (
        f"{len(late)} records delivered after a commit failed for a rebalance and before the "
        f"member rejoined ({dict(by_file)}), e.g. {late[:5]}")
