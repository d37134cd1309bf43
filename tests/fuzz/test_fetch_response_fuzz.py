"""The compiled Fetch response decoder on damaged bodies, at length: garbled and cut frames of
every version (hand-written flexible ones with unknown tagged fields too) and random bytes
decode to the generic codec's body or fail with its KafkaProtocolError, word for word (the
byte aside: the codec counts it from a tagged field's start), never a crash. The cases and
the oracle are tests/unit/test_fetch_response_decoder.py's."""
from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.test_fetch_response_decoder import (
    VERSIONS,
    bodies,
    compiled,
    damage,
    generic,
    outcome,
)


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(VERSIONS), bodies(), st.data())
def test_damaged_and_cut_bodies_fail_alike(version: int, body: dict[str, Any],
                                           data: st.DataObject) -> None:
    damaged = damage(version, body, data)
    assert outcome(compiled, version, damaged) == outcome(generic, version, damaged)


@settings(max_examples=1000, deadline=None)
@given(st.sampled_from(VERSIONS), st.binary(max_size=300))
def test_random_bytes_fail_alike(version: int, noise: bytes) -> None:
    frame = b"\x00\x00\x00\x05" + (b"\x00" if version >= 12 else b"") + noise
    assert outcome(compiled, version, frame) == outcome(generic, version, frame)
