"""The cluster's data: topics, their partitions (leader, leader epochs, followers) and each
partition's log of record batches, as Kafka's Partition and UnifiedLog keep them."""
from __future__ import annotations

import bisect
import dataclasses
import struct
import uuid


@dataclasses.dataclass
class Batch:
    base: int
    last: int
    data: bytes
    timestamps: list[int]           # per record, for ListOffsets by time


class Partition:
    def __init__(self, leader: int) -> None:
        self.batches: list[Batch] = []
        self.log_start = 0
        self.end = 0                # log end offset; the high watermark (no followers)
        self.leader = leader
        self.epoch = 0
        self.epochs: list[tuple[int, int]] = [(0, 0)]   # leader epoch -> its start offset
        #: follower node -> its end offset (None: in sync with the leader)
        self.followers: dict[int, int | None] = {}

    def end_on(self, node: int) -> int:
        """The end offset (and high watermark) as broker ``node`` serves the partition."""
        if node == self.leader:
            return self.end
        lag = self.followers.get(node)
        return self.end if lag is None else min(lag, self.end)

    def read(self, offset: int, limit: int, min_one: bool, hard_limit: bool,
             upto: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset``, then a cut piece of the next up to
        ``limit`` bytes (Kafka slices the log file). The first batch goes out whole when
        ``min_one`` (KIP-74); a lone incomplete batch becomes nothing unless ``hard_limit``
        (Fetch < v3), as ReplicaManager does. A follower reads only batches below ``upto``."""
        i = bisect.bisect_left([b.last for b in self.batches], offset)
        out = bytearray()
        for b in self.batches[i:]:
            if upto is not None and b.last >= upto:
                break
            if len(out) + len(b.data) <= limit or (not out and min_one):
                out += b.data
                continue
            if out or hard_limit:
                out += b.data[:max(0, limit - len(out))]
            break
        return bytes(out)

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, as Kafka's LeaderEpochFileCache."""
        if epoch < 0 or not self.epochs:
            return -1, -1
        if epoch == self.epochs[-1][0]:
            return epoch, self.end
        higher = next((e for e in self.epochs if e[0] > epoch), None)
        if higher is None:
            return -1, -1
        floor = [e for e in self.epochs if e[0] <= epoch]
        return (floor[-1][0] if floor else epoch), higher[1]

    def epoch_at(self, offset: int) -> int:
        return max((e for e, start in self.epochs if start <= offset), default=-1)

    # ------------------------------------------------------------------ changes

    def append(self, batch: bytes, timestamps: list[int] | None) -> int:
        """Append one magic-2 record batch as the leader would: its base offset and partition
        leader epoch are rewritten (both outside the CRC). Returns the base offset."""
        buf = bytearray(batch)
        struct.pack_into(">q", buf, 0, self.end)
        struct.pack_into(">i", buf, 12, self.epoch)
        count = struct.unpack_from(">i", buf, 23)[0] + 1
        max_ts = struct.unpack_from(">q", buf, 35)[0]
        base = self.end
        if not self.epochs or self.epochs[-1][0] != self.epoch:
            self.epochs.append((self.epoch, base))   # the epoch's first batch after a truncation
        self.batches.append(Batch(base, base + count - 1, bytes(buf),
                                  timestamps or [max_ts] * count))
        self.end += count
        return base

    def truncate(self, offset: int) -> None:
        """Cut the log at ``offset`` (a batch boundary); leader epochs starting at or past it
        are forgotten (Kafka's truncateFromEnd)."""
        self.batches = [b for b in self.batches if b.base < offset]
        self.end = offset
        self.epochs = [e for e in self.epochs if e[1] < offset]

    def delete_before(self, offset: int) -> None:
        """Move the log start offset to ``offset`` (DeleteRecords / retention)."""
        self.log_start = offset
        self.batches = [b for b in self.batches if b.last >= offset]

    def lead(self, node: int) -> int:
        """Make ``node`` the leader with a new leader epoch (returned)."""
        self.followers.pop(node, None)
        self.leader = node
        self.epoch += 1
        self.epochs.append((self.epoch, self.end))
        return self.epoch


@dataclasses.dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]


__all__ = ["Batch", "Partition", "Topic"]
