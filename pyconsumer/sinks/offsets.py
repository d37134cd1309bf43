"""The exactly-once rule every sink applies before a commit, and offsets as table properties."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyconsumer.sinks.base import DataFile, OffsetConflictError, TopicPartitionKey

OFFSET_PREFIX = "pyconsumer.offset."
APP_ID_KEY = "pyconsumer.app-id"


def should_commit(
    held: Mapping[TopicPartitionKey, int],
    offsets: Mapping[TopicPartitionKey, int],
    files: Sequence[DataFile],
) -> bool:
    """True to commit, False when the table already holds these offsets (a rerun after a lost answer).

    held: the next offsets the table holds; offsets: those the commit would reach. Raises
    OffsetConflictError for anything that would write a record twice or leave a gap in the rule:
    some partitions already held and others not, or a file with records the table already holds.
    """
    if not offsets:
        raise ValueError("a commit needs the offsets it reaches: without them a rerun cannot be recognised")
    held_already = sorted(tp for tp, nxt in offsets.items() if tp in held and held[tp] >= nxt)
    if held_already:
        if len(held_already) == len(offsets):
            return False
        ahead = sorted(set(offsets) - set(held_already))
        raise OffsetConflictError(
            f"the table already holds offsets up to {_show(held, held_already)} but not {_show(held, ahead)}: "
            "this commit repeats part of another one; nothing was committed"
        )
    for f in files:
        for r in f.offsets:
            tp = (r.topic, r.partition)
            if tp not in offsets:
                raise OffsetConflictError(
                    f"{f.path} holds records of {r.topic}[{r.partition}], which the commit's offsets do not name"
                )
            if r.last >= offsets[tp]:
                raise OffsetConflictError(
                    f"{f.path} holds {r.topic}[{r.partition}] offset {r.last}, at or past the commit's "
                    f"next offset {offsets[tp]}"
                )
            if tp in held and r.first < held[tp]:
                raise OffsetConflictError(
                    f"{f.path} holds {r.topic}[{r.partition}] offsets from {r.first}, but the table already "
                    f"holds them up to {held[tp]} (next offset): committing it would write records twice"
                )
    return True


def _show(held: Mapping[TopicPartitionKey, int], tps: Sequence[TopicPartitionKey]) -> str:
    return ", ".join(f"{t}[{p}]={held.get((t, p), 'none')}" for t, p in tps)


def offset_properties(app_id: str, offsets: Mapping[TopicPartitionKey, int]) -> dict[str, str]:
    """The offsets as flat string properties (snapshot summaries and commit metadata take strings)."""
    props = {APP_ID_KEY: app_id}
    for (topic, partition), nxt in sorted(offsets.items()):
        props[f"{OFFSET_PREFIX}{topic}.{partition}"] = str(nxt)
    return props


def parse_offset_properties(props: Mapping[str, object]) -> dict[TopicPartitionKey, int]:
    """Back from offset_properties; a topic may contain dots, the partition is after the last one."""
    out: dict[TopicPartitionKey, int] = {}
    for key, value in props.items():
        if key.startswith(OFFSET_PREFIX):
            topic, _, partition = key[len(OFFSET_PREFIX):].rpartition(".")
            out[(topic, int(partition))] = int(str(value))
    return out
