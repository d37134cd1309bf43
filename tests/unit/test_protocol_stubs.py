"""pyconsumer/protocol/bodies.py: generated from the declarations, current, and saying what
the codec does (keys, NotRequired for fields some versions lack, ``| None`` where nullable)."""
from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, NotRequired, Union

import pytest

from pyconsumer.protocol import bodies, generate_stubs
from pyconsumer.protocol.schema import MESSAGES, Field


def test_committed_stubs_are_current() -> None:
    assert generate_stubs.main(["--check"]) == 0, \
        "run: python -m pyconsumer.protocol.generate_stubs"


def test_check_fails_on_a_stale_or_missing_file(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bodies.py"
    assert generate_stubs.main(["--output", str(out)]) == 0
    assert generate_stubs.main(["--check", "--output", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    out.write_text(text.replace("    max_wait_ms: int\n", "    max_wait: int\n"), encoding="utf-8")
    assert generate_stubs.main(["--check", "--output", str(out)]) == 1
    assert "is stale: run python -m pyconsumer.protocol.generate_stubs" in capsys.readouterr().err
    out.unlink()
    assert generate_stubs.main(["--check", "--output", str(out)]) == 1


def _strip(hint: Any) -> tuple[Any, bool, bool]:
    """(inner type, required, nullable) of a TypedDict value annotation."""
    required = typing.get_origin(hint) is not NotRequired
    if not required:
        hint = typing.get_args(hint)[0]
    nullable = False
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(hint))
        hint = args[0] if len(args) == 1 else Union[tuple(args)]
    return hint, required, nullable


def _check_struct(cls: Any, fields: list[Field], scope: tuple[int, int], where: str,
                  seen: list[str]) -> None:
    seen.append(cls.__name__)
    hints = typing.get_type_hints(cls, include_extras=True)
    assert list(hints) == [f.key for f in fields], where
    for f in fields:
        inner, required, nullable = _strip(hints[f.key])
        lo, hi = max(scope[0], f.versions[0]), min(scope[1], f.versions[1])
        assert required == (f.versions[0] <= scope[0] and scope[1] <= f.versions[1]), \
            f"{where}.{f.key} NotRequired"
        nlo, nhi = max(lo, f.nullable[0]), min(hi, f.nullable[1])
        expect_null = nlo <= nhi or (f.has_default and f.default is None) or f.type == "records"
        assert nullable == expect_null, f"{where}.{f.key} | None"
        if f.is_array:
            assert typing.get_origin(inner) is list, f"{where}.{f.key}"
            inner = typing.get_args(inner)[0]
        if f.is_struct:
            _check_struct(inner, f.fields, (lo, hi), f"{where}.{f.key}", seen)


def test_every_message_and_struct_has_a_typeddict_matching_the_declarations() -> None:
    seen: list[str] = []
    for m in MESSAGES.values():
        _check_struct(getattr(bodies, m.name), m.fields, m.versions, m.name, seen)
    # one TypedDict per struct: only identical structs share (TopicPartition of the group
    # formats; TopicPartitions, Kafka's common struct of both ConsumerGroupHeartbeat messages)
    defined = [n for n, v in vars(bodies).items()
               if isinstance(v, type) and v.__module__ == bodies.__name__]
    assert sorted(set(seen)) == sorted(defined)
    assert sorted(n for n in set(seen) if seen.count(n) > 1) == ["TopicPartition",
                                                                  "TopicPartitions"]


def test_examples_read_as_the_brief_says() -> None:
    hints = typing.get_type_hints(bodies.FetchRequest, include_extras=True)
    assert hints["topics"] == list[bodies.FetchTopic]                        # every version
    assert hints["replica_id"] == NotRequired[int]                            # v0-14
    assert hints["cluster_id"] == NotRequired[Union[str, None]]               # v12+, nullable
    # v15+ in a struct that exists at v15+ only: required
    assert typing.get_type_hints(bodies.ReplicaState)["replica_id"] is int
    meta = typing.get_type_hints(bodies.MetadataRequest, include_extras=True)
    assert meta["topics"] == Union[list[bodies.MetadataRequestTopic], None]   # null at v1+
    # one declared name, two different structs: each prefixed with its message
    assert set(typing.get_type_hints(bodies.FetchResponseEpochEndOffset)) == {"epoch",
                                                                               "end_offset"}
    assert "error_code" in typing.get_type_hints(bodies.OffsetForLeaderEpochResponseEpochEndOffset)
    assert not hasattr(bodies, "EpochEndOffset")
