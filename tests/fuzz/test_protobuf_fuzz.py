"""The compiled Protobuf decoder on damaged messages of generated schemas, at length (the schemas
and messages of tests/unit/test_protobuf_decode.py): bytes flipped, cut, inserted or appended,
never a crash or a hang; every row decodes or is a bad row with a reason; a row that decodes
from bytes the protobuf runtime writes back unchanged (so nothing unknown or out of order in
them, where the runtimes may differ) equals the runtime's parse in Spark's rules."""
from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("google.protobuf")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pyconsumer.values.protobuf import ProtobufOptions, compile_program  # noqa: E402
from pyconsumer.values.protobuf_decode import decode_protobuf  # noqa: E402
from tests.unit.protobuf_oracle import expected, message_class, pool_of  # noqa: E402
from tests.unit.test_protobuf_decode import _normal, fill, schemas  # noqa: E402


def damage(data: st.DataObject, body: bytes) -> bytes:
    b = bytearray(body)
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.integers(0, 3))
        if op == 0 and b:
            b[data.draw(st.integers(0, len(b) - 1))] = data.draw(st.integers(0, 255))
        elif op == 1 and b:
            del b[data.draw(st.integers(0, len(b) - 1)):]
        elif op == 2:
            b.insert(data.draw(st.integers(0, len(b))), data.draw(st.integers(0, 255)))
        else:
            b += data.draw(st.binary(min_size=1, max_size=6))
    return bytes(b)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas(), st.data())
def test_damaged_messages_decode_as_the_runtime_or_are_bad_rows(
        sch: tuple[list[Any], str], data: st.DataObject) -> None:
    files, name = sch
    schema = pool_of(*files)
    cls = message_class(schema.message(name))
    msg = cls()
    fill(data.draw, msg)
    bodies = [damage(data, msg.SerializeToString()) for _ in range(8)]
    opts = ProtobufOptions()
    d = decode_protobuf(pa.array(bodies, pa.binary()), compile_program(schema.message(name), opts),
                        framing="none")
    rows = d.array.to_pylist()
    for i, body in enumerate(bodies):
        if i in d.errors:
            assert rows[i] is None and d.errors[i]
            continue
        try:
            parsed = cls.FromString(body)
            canonical = parsed.SerializeToString() == body
        except Exception:
            canonical = False
        if canonical:
            assert _normal(rows[i]) == expected(parsed, opts), body.hex()
