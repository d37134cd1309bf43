"""The check every sink makes of each batch against the schema it was made with."""

from __future__ import annotations

import pyarrow as pa

from pyconsumer.sinks.base import SchemaConflictError


def check_batch_schema(expected: pa.Schema, got: pa.Schema, location: str, *, got_name: str = "a batch") -> None:
    """A batch in the schema the sink was made with (names and types; nullability aside).

    got_name: what ``got`` is in the messages (a sink opening a table checks its own schema).
    """
    if got.equals(expected):
        return
    for f in expected:
        if f.name not in got.names:
            raise SchemaConflictError(f"{got_name} for {location} has no column {f.name!r} ({f.type})")
        if not got.field(f.name).type.equals(f.type):
            raise SchemaConflictError(
                f"column {f.name!r}: the table at {location} takes {f.type}, {got_name} has {got.field(f.name).type}"
            )
    extra = [n for n in got.names if n not in expected.names]
    if extra:
        raise SchemaConflictError(f"{got_name} for {location} has columns the table lacks: {', '.join(extra)}")
