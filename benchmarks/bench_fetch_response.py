"""Time to decode one Fetch response of many partitions (issue 26): the body decoded and each
answered partition's record set indexed, as the fetch side does with an answer.

    python benchmarks/bench_fetch_response.py [--partitions 1000] [--version 12] [--repeat 200]

Two shapes: every partition with one small v2 batch (10 records of 100 B), and every partition
with no records. Prints the best time of ``--repeat`` runs in µs of the answer's path before
and after issue 26: ``generic``, the header and the per-field Python codec (protocol.codec,
the reference), then a RecordSetIndex per partition at its fetch offset (fetch/request.py
did that); ``compiled``, protocol.decode_response (pyconsumer.records.decode_fetch_response,
whose one pass builds the indexes too), then each index judged at its fetch offset.
"""
from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import best  # noqa: E402

from pyconsumer.protocol import (  # noqa: E402
    ApiKey,
    decode_response,
    encode_response,
    response_message,
)
from pyconsumer.protocol.codec import decode_body  # noqa: E402
from pyconsumer.protocol.primitives import Reader  # noqa: E402
from pyconsumer.records import RecordSetIndex  # noqa: E402
from pyconsumer.testing._encode import aio_v2  # noqa: E402


FETCH_OFFSET = 5003          # inside the batch (at 5000-5009): the index judges it


def response_frame(partitions: int, version: int, with_records: bool) -> bytes:
    """A Fetch response frame (no length prefix) answering ``partitions`` partitions of one
    topic."""
    batch = aio_v2([(i, 1_700_000_000_000 + i, None, bytes(100), []) for i in range(10)],
                   base_offset=5000) if with_records else None
    parts: list[dict[str, Any]] = [
        {"partition_index": p, "error_code": 0, "high_watermark": 6000,
         "last_stable_offset": 6000, "log_start_offset": 0, "aborted_transactions": None,
         "preferred_read_replica": -1, "records": batch if with_records else b""}
        for p in range(partitions)]
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 7,
            "responses": [{"topic": "bench", "topic_id": uuid.UUID(int=42),
                           "partitions": parts}]}
    return encode_response(ApiKey.FETCH, version, 1, body)[4:]


def generic(frame: bytes, version: int) -> None:
    r = Reader(frame)
    r.int32()
    if version >= 12:
        r.unsigned_varint()
    body = decode_body(response_message(ApiKey.FETCH), version, r)
    for t in body["responses"]:
        for p in t["partitions"]:
            RecordSetIndex(p["records"], FETCH_OFFSET)


def compiled(frame: bytes, version: int) -> None:
    body = decode_response(ApiKey.FETCH, version, frame)[1]
    for index in body.indexes.values():         # type: ignore[attr-defined]
        index.set_fetch_offset(FETCH_OFFSET)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--version", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    for with_records in (True, False):
        frame = response_frame(args.partitions, args.version, with_records)
        shape = "one small batch each" if with_records else "no records"
        t = best(lambda f=frame: generic(f, args.version), args.repeat)
        c = best(lambda f=frame: compiled(f, args.version), args.repeat)
        print(f"Fetch v{args.version}, {args.partitions} partitions, {shape} ({len(frame)} B): "
              f"generic {t * 1e6:,.0f} us, compiled {c * 1e6:,.0f} us ({t / c:.1f}x)")


if __name__ == "__main__":
    main()
