"""Digest Apache Kafka's JSON message specs into the compact text form of our declarations.

Reads ``clients/src/main/resources/common/message/<Name>.json`` for every message declared in
:mod:`pyconsumer.protocol.declarations` from a git clone of apache/kafka (a checkout or a bare
mirror: files are read with ``git show <rev>:<path>``, so no checkout is needed) and prints
one block per message in the declarations' grammar::

    <Name> <api key> <valid versions> flexible=<versions>
      <Field> <type> <versions> [nullable=<v>] [tag=<n>@<v>] [default=<v>]

nested structs indented two more spaces (``commonStructs`` are inlined where used). Only what
the wire format depends on is kept; ``about`` texts, entity types and map keys are dropped.
The JSON itself is not committed; the digest (tests/data/kafka_specs.txt) is, and
tests/unit/test_protocol_specs.py checks the declarations against it.

Usage::

    python tools/kafka_spec_digest.py --kafka KAFKA_GIT [--rev REV] > tests/data/kafka_specs.txt
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterable
from typing import Any

SPEC_DIR = "clients/src/main/resources/common/message"
_ATTRS_KEPT = ("name", "type", "versions", "nullableVersions", "tag", "taggedVersions",
               "default", "fields", "flexibleVersions")


def strip_comments(text: str) -> str:
    """Kafka's specs are JSON with ``//`` line comments; drop them outside string literals."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def load_spec(repo: str, rev: str, name: str) -> dict[str, Any]:
    text = _git(repo, "show", f"{rev}:{SPEC_DIR}/{name}.json")
    spec: dict[str, Any] = json.loads(strip_comments(text))
    if spec.get("name") != name:
        raise SystemExit(f"{name}.json declares message {spec.get('name')!r}")
    return spec


def _token(value: str, what: str) -> str:
    if any(ch.isspace() for ch in value):
        raise SystemExit(f"{what} {value!r} contains whitespace; the digest grammar cannot hold it")
    return value


def _field_lines(fields: Iterable[dict[str, Any]], common: dict[str, dict[str, Any]],
                 depth: int) -> list[str]:
    lines: list[str] = []
    for f in fields:
        unknown = set(f) - set(_ATTRS_KEPT) - {"about", "entityType", "mapKey", "ignorable",
                                               "zeroCopy"}
        if unknown:
            raise SystemExit(f"field {f.get('name')}: unhandled attributes {sorted(unknown)}")
        if "flexibleVersions" in f:
            raise SystemExit(f"field {f['name']}: per-field flexibleVersions are not supported")
        parts = [_token(f["name"], "name"), _token(f["type"], "type"), f["versions"]]
        if f.get("nullableVersions", "none") != "none":
            parts.append(f"nullable={f['nullableVersions']}")
        if "tag" in f:
            parts.append(f"tag={f['tag']}@{f.get('taggedVersions', 'none')}")
        if "default" in f:
            parts.append(f"default={_token(str(f['default']), 'default of ' + f['name'])}")
        lines.append("  " * depth + " ".join(parts))
        nested = f.get("fields")
        if nested is None:
            element = f["type"].removeprefix("[]")
            if element in common:
                nested = common[element]["fields"]
        if nested is not None:
            lines.extend(_field_lines(nested, common, depth + 1))
    return lines


def digest_message(spec: dict[str, Any]) -> list[str]:
    common = {s["name"]: s for s in spec.get("commonStructs", [])}
    header = (f"{spec['name']} {spec.get('apiKey', -1)} {spec['validVersions']} "
              f"flexible={spec.get('flexibleVersions', 'none')}")
    lines = [header]
    if spec.get("latestVersionUnstable"):
        lines.insert(0, f"# {spec['name']}: latest version unstable")
    return lines + _field_lines(spec["fields"], common, 1)


def declared_names() -> list[str]:
    from pyconsumer.protocol.schema import MESSAGES
    return list(MESSAGES)


def digest(repo: str, rev: str, names: Iterable[str]) -> str:
    commit = _git(repo, "rev-parse", f"{rev}^{{commit}}").strip()
    date = _git(repo, "show", "-s", "--format=%cs", commit).strip()
    out = [
        f"# Apache Kafka message specs ({SPEC_DIR}/*.json), digested by",
        "# tools/kafka_spec_digest.py in the grammar of pyconsumer/protocol/declarations.py.",
        f"# apache/kafka commit {commit} ({date})",
    ]
    for name in names:
        out.append("")
        out.extend(digest_message(load_spec(repo, commit, name)))
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kafka", required=True, help="a git clone of apache/kafka (may be bare)")
    ap.add_argument("--rev", default="HEAD", help="the revision to read (default HEAD)")
    ap.add_argument("names", nargs="*", help="messages to digest (default: every declared one)")
    args = ap.parse_args(argv)
    sys.stdout.write(digest(args.kafka, args.rev, args.names or declared_names()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
