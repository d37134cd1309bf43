"""One member of a consumer group, as a separate process, for tests/integration/test_group_kill.py.

    python group_member.py BOOTSTRAP TOPIC GROUP OUT_PREFIX [--max-poll-records N] ...

It subscribes to TOPIC in GROUP and loops: poll(), append one line per record to
OUT_PREFIX.records ("partition offset value"), flush and fsync the file, then commit()
synchronously (after --work-ms more of simulated work: the window a kill can hit). A record
is "processed" once its line is on disk; the commit comes only after
that, so a SIGKILL at any moment loses nothing: what was committed is on disk, and what was
processed but not committed is delivered again (a duplicate, never a loss). Auto-commit would
also be at-least-once here (it commits in the next poll what the previous one returned), but
its window is auto.commit.interval.ms of records instead of one poll's, so the duplicate
bound would depend on timing; commit() after each poll keeps the window one batch.

Each on_partitions_assigned also writes "# assigned P,P" into the records file (the records
after it start a new stretch per partition), and each failed commit "# commit_failed N".
OUT_PREFIX.events gets one JSON line per listener call and per failed commit (with the
member's generation, read from the consumer's internals where they exist: a diagnostic only).
An error from poll() is noted there too ("poll_error") and the loop goes on.
SIGTERM makes it finish the batch in hand, close() (LeaveGroup) and exit 0.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from typing import IO, Any

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import CommitFailedError, KafkaError, RebalanceInProgressError


class Events:
    """Listener calls and commit failures, one JSON line each, flushed at once."""

    def __init__(self, out: IO[str], records: IO[str], consumer: KafkaConsumer) -> None:
        self.out = out
        self.records = records
        self.consumer = consumer

    def _generation(self) -> int:
        membership = getattr(self.consumer, "_membership", None)
        return int(getattr(membership, "generation", -1))

    def note(self, kind: str, **fields: Any) -> None:
        self.out.write(json.dumps({"t": time.time(), "event": kind,
                                   "generation": self._generation(), **fields}) + "\n")
        self.out.flush()

    def _parts(self, partitions: set[TopicPartition]) -> list[int]:
        return sorted(tp.partition for tp in partitions)

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.note("revoked", partitions=self._parts(partitions))

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.note("assigned", partitions=self._parts(partitions))
        # in the records file too: the records after it are a new stretch (they restart from
        # the committed offsets), the ones before it were consecutive per partition
        self.records.write(f"# assigned {','.join(map(str, self._parts(partitions)))}\n")

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.note("lost", partitions=self._parts(partitions))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bootstrap")
    ap.add_argument("topic")
    ap.add_argument("group")
    ap.add_argument("out_prefix")
    ap.add_argument("--max-poll-records", type=int, default=500)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    ap.add_argument("--heartbeat-interval-ms", type=int, default=1000)
    ap.add_argument("--group-protocol", default="classic", choices=("classic", "consumer"),
                    help="consumer: KIP-848 (the session and heartbeat settings are the broker's)")
    ap.add_argument("--work-ms", type=int, default=0,
                    help="time each batch takes after it is on disk and before its commit")
    ap.add_argument("--log-level", default="INFO", help="of the log on stderr")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")

    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    timing = {} if args.group_protocol == "consumer" else {
        "session_timeout_ms": args.session_timeout_ms,
        "heartbeat_interval_ms": args.heartbeat_interval_ms}
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap, group_id=args.group, client_id=os.path.basename(args.out_prefix),
        enable_auto_commit=False, auto_offset_reset="earliest", group_protocol=args.group_protocol,
        max_poll_records=args.max_poll_records, **timing)
    with open(args.out_prefix + ".records", "a", encoding="ascii") as records, \
            open(args.out_prefix + ".events", "a", encoding="utf-8") as events_file:
        events = Events(events_file, records, consumer)
        consumer.subscribe([args.topic], listener=events)
        events.note("started", pid=os.getpid())
        try:
            while not stopping:
                try:
                    got = consumer.poll(timeout_ms=200)
                except KafkaError as e:
                    # the mock answers a SyncGroup that arrives after the leader's with
                    # INVALID_REQUEST (a real broker returns the assignment); poll() raises it
                    # as Java does, and the next poll() rejoins. The test checks which errors.
                    events.note("poll_error", error=f"{type(e).__name__}: {e}")
                    continue
                if not got:
                    continue
                lines = [f"{tp.partition} {r.offset} {r.value.decode() if r.value is not None else '-'}\n"
                         for tp, recs in got.items() for r in recs]
                records.write("".join(lines))
                records.flush()
                os.fsync(records.fileno())        # processed = on disk, before the commit
                if args.work_ms:                  # the rest of the work, before the commit
                    time.sleep(args.work_ms / 1000)
                try:
                    consumer.commit()
                except (CommitFailedError, RebalanceInProgressError) as e:
                    # the group moved on (or is moving): delivered again elsewhere
                    events.note("commit_failed", error=str(e), records=len(lines))
                    records.write(f"# commit_failed {len(lines)}\n")
                except KafkaError as e:           # e.g. a timeout: the next commit covers it
                    events.note("commit_error", error=f"{type(e).__name__}: {e}", records=len(lines))
                    records.write(f"# commit_error {len(lines)}\n")
        finally:
            consumer.close()
            events.note("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
