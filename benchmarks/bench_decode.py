"""Side-by-side decode benchmark, one process, interleaved rounds (decode-performance.md §0 noise handling)."""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from collections.abc import Callable


sys.path.insert(0, str(Path(__file__).parent))
import gen_data  # noqa: E402

from aiokafka.consumer.fetcher import PartitionRecords  # noqa: E402
from aiokafka.record._crecords import MemoryRecords as AioMR  # noqa: E402
from aiokafka.structs import TopicPartition  # noqa: E402
from kafka.record.memory_records import MemoryRecords as KpMR  # noqa: E402

from pyconsumer.records import CompletedFetch, decode_arrow, decode_records  # noqa: E402


def aio_raw(data: bytes, crc: bool) -> int:
    n, mr = 0, AioMR(data)
    while True:
        b = mr.next_batch()
        if b is None:
            return n
        if crc:
            b.validate_crc()
        for r in b:
            r.key; r.value; r.offset; r.timestamp  # noqa: B018
            n += 1


def aio_all(data: bytes, crc: bool) -> int:
    """aiokafka's reader with every record kept until the end, as decode_records keeps them:
    the same fresh memory per record, where aio_raw's records are freed one by one."""
    kept: list[object] = []
    mr = AioMR(data)
    while True:
        b = mr.next_batch()
        if b is None:
            break
        if crc:
            b.validate_crc()
        kept.extend(b)
    n = 0
    for r in kept:
        r.key; r.value; r.offset; r.timestamp  # type: ignore[attr-defined]  # noqa: B018
        n += 1
    return n


def aio_client(data: bytes, crc: bool) -> int:
    pr = PartitionRecords(TopicPartition("t", 0), AioMR(data), None, 0, None, None, crc, 0)
    n = 0
    for r in pr:  # yields ConsumerRecord objects
        r.key; r.value; r.offset; r.timestamp  # noqa: B018
        n += 1
    return n


def kp_raw(data: bytes, crc: bool) -> int:
    n, mr = 0, KpMR(data)
    while True:
        b = mr.next_batch()
        if b is None:
            return n
        if crc:
            b.validate_crc()
        for r in b:
            r.key; r.value; r.offset; r.timestamp  # noqa: B018
            n += 1


def pc_arrow(data: bytes, crc: bool) -> int:
    return decode_arrow(data, "t", 0, check_crcs=crc).num_rows


def pc_records(data: bytes, crc: bool) -> int:
    n = 0
    for r in decode_records(data, "t", 0, check_crcs=crc):
        r.key; r.value; r.offset; r.timestamp  # noqa: B018
        n += 1
    return n


def pc_fetch(data: bytes, crc: bool) -> int:
    f, n = CompletedFetch(data, "t", 0, 0, check_crcs=crc), 0
    while not f.is_drained:
        recs = f.take_records(500)
        if not recs:
            break
        for r in recs:
            r.key; r.value; r.offset; r.timestamp  # noqa: B018
        n += len(recs)
    return n


SLOW = {"aio_client", "kp_raw"}  # run on a slice, rates stay per-record comparable


def baseline_contenders(path: str) -> dict[str, Callable[[bytes, bool], int]]:
    """pc_arrow / pc_records / pc_fetch500 run by another build of the decoder (its extension
    file, e.g. one built from an older commit in a copy of the tree), loaded into this process
    next to the current one, so that both are timed in the same rounds: the machine's drift
    between processes (often +-20% here) cancels out of the per-round ratio."""
    import importlib.util

    # the module name must end as the file's init function expects (records, _records, ...)
    name = "pyconsumer_baseline." + Path(path).name.split(".")[0]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    if hasattr(m, "_set_error_classes"):  # builds that take their error classes injected
        from pyconsumer import errors
        m._set_error_classes(errors.CorruptRecordError, errors.UnsupportedCodecError,
                             errors.RecordDeserializationError)

    def arrow(data: bytes, crc: bool) -> int:
        return m.decode_arrow(data, "t", 0, check_crcs=crc).num_rows

    def records(data: bytes, crc: bool) -> int:
        n = 0
        for r in m.decode_records(data, "t", 0, check_crcs=crc):
            r.key; r.value; r.offset; r.timestamp  # noqa: B018
            n += 1
        return n

    def fetch(data: bytes, crc: bool) -> int:
        f, n = m.CompletedFetch(data, "t", 0, 0, check_crcs=crc), 0
        while not f.is_drained:
            recs = f.take_records(500)
            if not recs:
                break
            for r in recs:
                r.key; r.value; r.offset; r.timestamp  # noqa: B018
            n += len(recs)
        return n

    return {"base_arrow": arrow, "base_records": records, "base_fetch500": fetch}

_MEMORY_PROBE = """
import sys, tracemalloc
from pathlib import Path
import pyarrow as pa
from pyconsumer.records import decode_arrow
from pyconsumer._records import native_memory, reset_native_peak
data = Path(sys.argv[1]).read_bytes()
decode_arrow(data[:1 << 20], "t", 0, include_headers=True)   # warm up pyarrow, the codecs
pool = pa.default_memory_pool()
base = pool.bytes_allocated()
native_base = native_memory()[0]
reset_native_peak()
tracemalloc.start()
batch = decode_arrow(data, "t", 0, include_headers=True)
py_peak = tracemalloc.get_traced_memory()[1]
# Arrow column buffers are the decoder's own (native_memory), the RecordBatch wrapping comes
# from pyarrow's pool, decompression buffers are Python bytearrays (tracemalloc)
extra = native_memory()[1] - native_base + pool.max_memory() - base + py_peak
print(extra, batch.nbytes)
"""


def peak_memory(path: Path) -> tuple[int, int]:
    """(peak extra memory while decode_arrow builds the batch: the decoder's own buffers,
    pyarrow's pool and Python allocations at their high-water marks, the batch's nbytes),
    measured in a fresh process so nothing else has raised the high-water marks."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(path)], check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1])


def run_order(names: list[str], rnd: int) -> list[str]:
    """Each base_x right after its pc_x, and the pair swapped every other round, so neither
    build always runs first (after the same neighbour, on the same cache state)."""
    out = []
    for name in names:
        if name.startswith("base_"):
            continue
        pair = [name, "base_" + name[3:]] if "base_" + name[3:] in names else [name]
        out += pair[::-1] if rnd % 2 else pair
    return out


#: every contender: (record set, check CRCs) -> records read
CONTENDERS: dict[str, Callable[[bytes, bool], int]] = {
    "aio_c": aio_raw, "aio_c_all": aio_all, "pc_arrow": pc_arrow, "pc_records": pc_records, "pc_fetch500": pc_fetch,
    "aio_client": aio_client, "kp_raw": kp_raw}


def measure(data: bytes, crc: bool, rounds: int,
            contenders: dict[str, Callable[[bytes, bool], int]]) -> tuple[dict[str, float], dict[str, list[float]]]:
    """(best records/s of each contender, its per-round speed ratios to aio_c), interleaved
    rounds in one process; SLOW contenders read the first 4 MB only (rates are per record)."""
    small = data[: 4 << 20]
    best: dict[str, float] = {}
    ratios: dict[str, list[float]] = {k: [] for k in contenders}
    for rnd in range(rounds):
        rates = {}
        for name in run_order(list(contenders), rnd):
            d = small if name in SLOW else data
            t = time.perf_counter()
            n = contenders[name](d, crc)
            rates[name] = n / (time.perf_counter() - t)
            best[name] = max(best.get(name, 0.0), rates[name])
        for k in contenders:
            ratios[k].append(rates[k] / rates["aio_c"])
    return best, ratios


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--kind", nargs="*", default=["v100"])
    ap.add_argument("--codec", nargs="*", default=["none", "lz4", "zstd"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--baseline", metavar="EXTENSION_FILE",
                    help="also time this build of the decoder (base_* rows) in the same rounds, "
                         "and print pc_*/base_* per-round speed ratios")
    a = ap.parse_args()
    mb = 20 if a.quick else a.mb
    contenders = dict(CONTENDERS)
    if a.baseline:
        contenders.update(baseline_contenders(a.baseline))
    print(f"{'dataset':14} crc {'contender':12} {'krec/s best':>12} {'x aio_c (median)':>17}")
    for kind in a.kind:
        for codec in a.codec:
            data = gen_data.build(kind, codec, mb).read_bytes()
            for crc in (True, False):
                best, ratios = measure(data, crc, a.rounds, contenders)
                for k in contenders:
                    print(f"{kind + '_' + codec:14} {int(crc):3} {k:12} {best[k] / 1e3:12,.0f} "
                          f"{statistics.median(ratios[k]):17.2f}", flush=True)
                for k in ("arrow", "records", "fetch500") if a.baseline else ():
                    vs = [p / b for p, b in zip(ratios["pc_" + k], ratios["base_" + k])]
                    print(f"{kind + '_' + codec:14} {int(crc):3} pc_{k} / base_{k} speed, median "
                          f"of {len(vs)} rounds: {statistics.median(vs):.3f} "
                          f"(min {min(vs):.3f}, max {max(vs):.3f})", flush=True)
            extra, nbytes = peak_memory(gen_data.build(kind, codec, mb))
            print(f"{kind + '_' + codec:14} decode_arrow peak extra memory {extra / 1e6:.1f} MB for a "
                  f"batch of {nbytes / 1e6:.1f} MB: {extra / max(nbytes, 1):.2f}x", flush=True)


if __name__ == "__main__":
    main()
