"""Incremental fetch sessions (KIP-227) as Kafka's FetchSession keeps them: the partitions a
session holds, in its fetch order, with what was last asked and answered of each. Opening,
closing and checking sessions is Kafka's FetchManager, in fetch.py."""
from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from .common import Body


@dataclasses.dataclass
class CachedPartition:
    """A partition of a fetch session: what the last request said of it, and the watermarks
    last answered (-1: answer it next time whatever happens)."""

    topic: str | None               # None when the session names topics by id
    topic_id: uuid.UUID
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int
    high_watermark: int = -1
    log_start_offset: int = -1


@dataclasses.dataclass
class FetchSession:
    """One incremental fetch session (Kafka's FetchSession) held by broker ``broker``."""

    session_id: int
    broker: int
    epoch: int                      # the epoch the next request must carry
    uses_topic_ids: bool
    #: (topic name or id, partition) -> cached partition, in the session's fetch order
    partitions: dict[tuple[Any, int], CachedPartition]

    def update(self, topics: list[Body], forgotten: list[Body], v: int) -> None:
        """Kafka's FetchSession.update: listed partitions are added (at the end) or updated,
        then the forgotten ones removed."""
        for t in topics:
            name, tid = (t["topic"], t["topic_id"]) if v <= 12 else (None, t["topic_id"])
            for fp in t["partitions"]:
                key = (name if v <= 12 else tid, fp["partition"])
                c = self.partitions.get(key)
                if c is None:
                    self.partitions[key] = CachedPartition(
                        name, tid, fp["partition"], fp["fetch_offset"],
                        fp["partition_max_bytes"], fp["current_leader_epoch"])
                else:
                    c.fetch_offset, c.max_bytes = fp["fetch_offset"], fp["partition_max_bytes"]
                    c.current_leader_epoch = fp["current_leader_epoch"]
        for f in forgotten:
            for index in f["partitions"]:
                self.partitions.pop((f["topic"] if v <= 12 else f["topic_id"], index), None)

    def to_read(self) -> list[Body]:
        """The session's partitions as a Fetch request's topics, in the session's order."""
        topics: list[Body] = []
        for c in self.partitions.values():
            fp = {"partition": c.partition, "fetch_offset": c.fetch_offset,
                  "partition_max_bytes": c.max_bytes,
                  "current_leader_epoch": c.current_leader_epoch}
            if topics and (topics[-1]["topic"], topics[-1]["topic_id"]) == (c.topic, c.topic_id):
                topics[-1]["partitions"].append(fp)
            else:
                topics.append({"topic": c.topic, "topic_id": c.topic_id, "partitions": [fp]})
        return topics

    def answered(self, answer: Body, v: int, full: bool) -> None:
        """Note the answered watermarks in the session; an incremental answer keeps only the
        partitions Kafka must send (records, an error, new watermarks, a read replica), and
        those with records move to the end of the session's order."""
        answer["session_id"] = self.session_id
        for t in answer["responses"]:
            kept = []
            for out in t["partitions"]:
                key = (t["topic"] if v <= 12 else t["topic_id"], out["partition_index"])
                c = self.partitions[key]
                must = (bool(out["records"]) or out["error_code"] != 0
                        or out["high_watermark"] != c.high_watermark
                        or out.get("log_start_offset", -1) != c.log_start_offset
                        or out.get("preferred_read_replica", -1) >= 0)
                c.high_watermark = -1 if out["error_code"] else out["high_watermark"]
                c.log_start_offset = out.get("log_start_offset", -1)
                if out["records"] and not full:
                    del self.partitions[key]
                    self.partitions[key] = c
                if must or full:
                    kept.append(out)
            t["partitions"] = kept
        answer["responses"] = [t for t in answer["responses"] if t["partitions"]]


__all__ = ["CachedPartition", "FetchSession"]
