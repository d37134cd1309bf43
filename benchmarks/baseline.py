"""Another commit of pyconsumer beside this tree, timed in the same rounds (``--baseline REV``).

A refactoring must not make the hot path slower, and this machine drifts by +-20 % between
runs, so "before" and "after" are measured in the same run, interleaved, and compared per
round. The baseline is a copy of the commit's files (``git archive``, so the repository's
work tree and worktree list stay untouched) with its extension built in place, kept in the
user's cache by commit id. The decoder is compared in process (its extension file loaded next
to the current one, see bench_decode.baseline_contenders); the end-to-end contenders run the
whole consumer, so each build runs in its own fresh process with the same harness
(bench_consume's contender functions, timed inside the child, imports not counted).
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pyconsumer" / "baseline"

#: the end-to-end contenders compared between builds (bench_consume's function names)
E2E_COMPARED = ("pc_arrow", "pc_poll")


def resolve(rev: str) -> str:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"--baseline {rev}: not a commit of this repository ({out.stderr.strip()})")
    return out.stdout.strip()


def prepare(rev: str) -> Path:
    """The commit's tree with its extension built, built once per commit id."""
    sha = resolve(rev)
    tree = CACHE / sha
    if list(tree.glob("pyconsumer/_records*.so")):
        return tree
    CACHE.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{sha[:12]}-", dir=CACHE))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", sha],
                             capture_output=True, check=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(staging, filter="data")
    print(f"baseline {sha[:12]}: building its extension (a minute or two)", flush=True)
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=staging,
                           capture_output=True, text=True)
    if build.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise SystemExit(f"--baseline {rev}: its extension did not build:\n{build.stderr[-3000:]}")
    shutil.rmtree(tree, ignore_errors=True)
    staging.rename(tree)
    return tree


def extension(tree: Path) -> str:
    """The baseline's decoder extension file."""
    found = glob.glob(str(tree / "pyconsumer" / "_records*.so"))
    if not found:
        raise SystemExit(f"baseline tree {tree} has no built pyconsumer/_records extension")
    return found[0]


_CHILD = """
import sys, time
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import bench_consume
name, bootstrap, topic, partitions, n = sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), int(sys.argv[7])
t = time.perf_counter()
got = bench_consume.CONTENDERS[name](bootstrap, topic, partitions, n)
print(got, time.perf_counter() - t)
"""


def in_child(tree: Path, name: str) -> Callable[[str, str, int, int], tuple[int, float]]:
    """bench_consume's contender ``name`` run by the pyconsumer found in ``tree``, in a fresh
    process; returns (records, seconds timed inside the child)."""

    def run(bootstrap: str, topic: str, partitions: int, n: int) -> tuple[int, float]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        out = subprocess.run([sys.executable, "-c", _CHILD, str(tree), str(HERE), name, bootstrap, topic,
                              str(partitions), str(n)], capture_output=True, text=True, env=env,
                             cwd=tempfile.gettempdir())
        if out.returncode != 0:
            raise RuntimeError(f"{name} in {tree.name[:12]}: exit {out.returncode}\n{out.stderr[-3000:]}")
        got, seconds = out.stdout.split()[-2:]
        return int(got), float(seconds)

    return run


def e2e_contenders(tree: Path) -> dict[str, Callable[[str, str, int, int], tuple[int, float]]]:
    """``<name>@head`` (this tree) and ``<name>@base`` (the baseline), each in a fresh process."""
    out: dict[str, Callable[[str, str, int, int], tuple[int, float]]] = {}
    for name in E2E_COMPARED:
        out[f"{name}@head"] = in_child(ROOT, name)
        out[f"{name}@base"] = in_child(tree, name)
    return out
