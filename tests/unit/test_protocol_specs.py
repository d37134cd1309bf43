"""The declarations against Apache Kafka's own message specs.

tests/data/kafka_specs.txt is a digest of apache/kafka's
clients/src/main/resources/common/message/*.json at one commit (named in its header), made by
tools/kafka_spec_digest.py in the grammar of pyconsumer/protocol/declarations.py. Every
declared message, field, type, version range, nullable range, tag, default and the order of
fields on the wire must match it, except for the differences in ALLOWED, each with its reason
and both values (an entry that no longer applies fails too, so the list stays true).
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pyconsumer.protocol.schema import MESSAGES, NO_VERSIONS, Field, Message, parse

ROOT = Path(__file__).resolve().parents[2]
DIGEST = ROOT / "tests" / "data" / "kafka_specs.txt"
ALL = (0, 0x7FFF)

Mismatch = tuple[str, str]          # (Message.Field.Path, what)

ALLOWED: dict[Mismatch, tuple[Any, Any]] = {
    # (ours, Kafka's). Read as nullable: librdkafka's mock cluster sends nulls with an error
    # code (see the declarations' docstring).
    ("SyncGroupResponse.Assignment", "nullable"): (ALL, NO_VERSIONS),
    ("JoinGroupResponse.ProtocolName", "nullable"): (ALL, (7, 0x7FFF)),
    ("JoinGroupResponse.Leader", "nullable"): (ALL, NO_VERSIONS),
    ("JoinGroupResponse.MemberId", "nullable"): (ALL, NO_VERSIONS),
    # Metadata v13 (KIP-1102, Kafka 4.0: a top-level ErrorCode) is newer than the digested
    # commit; test_metadata_v13_matches_kafka_4 checks it against a Kafka 4 spec instead.
    ("MetadataRequest", "versions"): ((0, 13), (0, 12)),
    ("MetadataResponse", "versions"): ((0, 13), (0, 12)),
    ("MetadataResponse.ErrorCode", "declared, not in the spec"): ("int16 13+", None),
}


def load_digest(text: str) -> dict[str, Message]:
    return parse("\n".join(line for line in text.splitlines() if not line.startswith("#")))


def _describe(f: Field) -> str:
    lo, hi = f.versions
    return f"{f.type} {lo}{'+' if hi == 0x7FFF else '-' + str(hi) if hi != lo else ''}"


def _compare_fields(path: str, ours: list[Field], spec: list[Field],
                    out: dict[Mismatch, tuple[Any, Any]]) -> None:
    mine = {f.name: f for f in ours}
    theirs = {f.name: f for f in spec}
    for name in mine.keys() - theirs.keys():
        out[(f"{path}.{name}", "declared, not in the spec")] = (_describe(mine[name]), None)
    for name in theirs.keys() - mine.keys():
        out[(f"{path}.{name}", "in the spec, not declared")] = (None, _describe(theirs[name]))
    common_ours = [f.name for f in ours if f.name in theirs]
    common_spec = [f.name for f in spec if f.name in mine]
    if common_ours != common_spec:
        out[(path, "field order")] = (common_ours, common_spec)
    for name in common_ours:
        a, b = mine[name], theirs[name]
        where = f"{path}.{name}"
        for what, x, y in [
            ("type", a.type, b.type),
            ("versions", a.versions, b.versions),
            ("nullable", a.nullable, b.nullable),
            ("tag", (a.tag, a.tagged), (b.tag, b.tagged)),
            ("default", (a.has_default, a.default), (b.has_default, b.default)),
        ]:
            if x != y:
                out[(where, what)] = (x, y)
        _compare_fields(where, a.fields, b.fields, out)


def mismatches(ours: dict[str, Message], spec: dict[str, Message],
               names: list[str]) -> dict[Mismatch, tuple[Any, Any]]:
    out: dict[Mismatch, tuple[Any, Any]] = {}
    for name in names:
        if name not in spec:
            out[(name, "message not in the spec")] = (name, None)
            continue
        a, b = ours[name], spec[name]
        for what, x, y in [("api key", a.api_key, b.api_key), ("versions", a.versions, b.versions),
                           ("flexible", a.flexible, b.flexible)]:
            if x != y:
                out[(name, what)] = (x, y)
        _compare_fields(name, a.fields, b.fields, out)
    return out


def test_digest_names_its_kafka_commit_and_covers_every_declared_message() -> None:
    text = DIGEST.read_text(encoding="utf-8")
    assert re.search(r"^# apache/kafka commit [0-9a-f]{40} \(\d{4}-\d\d-\d\d\)$", text, re.M)
    assert list(load_digest(text)) == list(MESSAGES)


def test_declarations_match_kafkas_specs() -> None:
    spec = load_digest(DIGEST.read_text(encoding="utf-8"))
    found = mismatches(MESSAGES, spec, list(MESSAGES))
    unexpected = {k: v for k, v in found.items() if ALLOWED.get(k) != v}
    stale = {k: v for k, v in ALLOWED.items() if found.get(k) != v}
    assert not unexpected, "declarations differ from Kafka's specs (ours, Kafka's):\n" + \
        "\n".join(f"  {p} {what}: {v[0]!r} vs {v[1]!r}" for (p, what), v in unexpected.items())
    assert not stale, f"allowed differences no longer found: {stale}"


def test_the_comparison_sees_each_kind_of_difference() -> None:
    # the checker itself: a declaration edited in each attribute is reported
    base = """Msg 1 0-3 flexible=2+
  A int32 0+
  B []S 1+ nullable=1+
    C string 1+ default=x
  D int8 2+ tag=0@2+
"""
    edits = {
        ("Msg", "versions"): base.replace("Msg 1 0-3", "Msg 1 0-4"),
        ("Msg", "flexible"): base.replace("flexible=2+", "flexible=3+"),
        ("Msg", "api key"): base.replace("Msg 1", "Msg 2"),
        ("Msg.A", "type"): base.replace("A int32", "A int64"),
        ("Msg.A", "versions"): base.replace("A int32 0+", "A int32 1+"),
        ("Msg.B", "nullable"): base.replace("nullable=1+", "nullable=2+"),
        ("Msg.B.C", "default"): base.replace("default=x", "default=y"),
        ("Msg.D", "tag"): base.replace("tag=0@2+", "tag=1@2+"),
        ("Msg", "field order"): base.replace("  A int32 0+\n", "") + "  A int32 0+\n",
        ("Msg.E", "declared, not in the spec"): base + "  E bool 3+\n",
        ("Msg.B.C", "in the spec, not declared"): base.replace("    C string 1+ default=x\n", ""),
    }
    spec = parse(base)
    assert mismatches(parse(base), spec, ["Msg"]) == {}
    for expected, text in edits.items():
        assert expected in mismatches(parse(text), spec, ["Msg"]), expected


def _digest_tool() -> ModuleType:
    loaded = importlib.util.spec_from_file_location(
        "kafka_spec_digest", ROOT / "tools" / "kafka_spec_digest.py")
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


def test_metadata_v13_matches_kafka_4() -> None:
    # kafka-python (a test dependency) bundles Kafka 4's specs, which have Metadata v13
    kafka = pytest.importorskip("kafka")
    resources = Path(kafka.__file__).parent / "protocol" / "schemas" / "resources"
    if not (resources / "MetadataResponse.json").exists():
        pytest.skip("this kafka-python bundles no message specs")
    tool = _digest_tool()
    import json
    lines: list[str] = []
    for name in ("MetadataRequest", "MetadataResponse"):
        raw = (resources / f"{name}.json").read_text(encoding="utf-8")
        lines += tool.digest_message(json.loads(tool.strip_comments(raw)))
    kafka4 = load_digest("\n".join(lines))
    assert mismatches(MESSAGES, kafka4, ["MetadataRequest", "MetadataResponse"]) == {}


def test_digest_tool_strips_comments_outside_strings_only() -> None:
    tool = _digest_tool()
    text = '{"a": "http://x // y", // gone\n "b": "\\"//\\""}'
    assert tool.strip_comments(text) == '{"a": "http://x // y", \n "b": "\\"//\\""}'
