"""The fuzz tier and the decoder's unit tests again, against an ASan/UBSan build of the extension.

A dedicated run in a copy of the tree: ``PYEXT_SANITIZE=address,undefined`` builds
``pyconsumer._records`` there (setup.py), and a child pytest runs the decoder tests with ASan's
runtime preloaded (the interpreter is not instrumented) and UBSan halting on the first report.
An out-of-bounds read, a use after free or undefined behaviour in the hot path fails this test
even where the plain build happens to survive it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# the decoder's tests: the fuzz tier plus every unit test of the records code
DECODER_TESTS = sorted(
    [str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "fuzz").glob("test_*.py")
     if p.name != Path(__file__).name]
    + [str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "unit").glob("test_records_*.py")]
    + ["tests/unit/test_completed_fetch_errors.py", "tests/unit/test_protobuf_decode.py"]
)

# what a sanitizer prints when it finds something; the child's exit status is the main check
SANITIZER_REPORTS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")


def _gcc_file(name: str) -> str | None:
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    out = subprocess.run([gcc, f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    return out if os.path.isabs(out) and os.path.exists(out) else None


@pytest.fixture(scope="module")
def sanitized_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if _gcc_file("libasan.so") is None or _gcc_file("libubsan.so") is None:
        pytest.skip("gcc's libasan/libubsan are not installed: no sanitizer build here")
    tree = tmp_path_factory.mktemp("sanitized")
    shutil.copy2(ROOT / "setup.py", tree)
    shutil.copy2(ROOT / "pyproject.toml", tree)
    ignore = shutil.ignore_patterns("*.so", "*.c", "__pycache__", "*.html", "build")
    for folder in ("pyext", "pyconsumer", "tests"):
        shutil.copytree(ROOT / folder, tree / folder, ignore=ignore)
    env = dict(os.environ, PYEXT_SANITIZE="address,undefined")
    build = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace", "--force"],
                           cwd=tree, env=env, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, f"sanitized build failed:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}"
    assert list((tree / "pyconsumer").glob("_records*.so")), "the sanitized build wrote no extension"
    return tree


def _sanitizer_env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYEXT_SANITIZE")}
    env.update(
        LD_PRELOAD=f"{_gcc_file('libasan.so')}:{_gcc_file('libubsan.so')}",
        # CPython's own allocations are never freed at exit; quarantine off for the RSS checks
        ASAN_OPTIONS="detect_leaks=0:quarantine_size_mb=0:abort_on_error=1",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
        # every object from malloc, so ASan sees past the end of small bytes objects too
        # (pymalloc's pools are not instrumented)
        PYTHONMALLOC="malloc",
        PYTHONPATH=str(tree),
    )
    return env


def _first_report(stderr: str) -> str:
    """The sanitizer's first report (what went wrong and where), else the end of stderr."""
    starts = [i for i in (stderr.find(r) for r in SANITIZER_REPORTS) if i >= 0]
    return stderr[min(starts):min(starts) + 6000] if starts else stderr[-6000:]


def test_the_child_imports_the_sanitized_extension(sanitized_tree: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", "import pyconsumer._records as r; print(r.__file__)"],
                          cwd=sanitized_tree, env=_sanitizer_env(sanitized_tree),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert Path(proc.stdout.strip()).resolve().parent == (sanitized_tree / "pyconsumer").resolve()
    # and that build really is instrumented: it cannot load without the preloaded runtime
    bare = subprocess.run([sys.executable, "-c", "import pyconsumer._records"], cwd=sanitized_tree,
                          env={k: v for k, v in _sanitizer_env(sanitized_tree).items() if k != "LD_PRELOAD"},
                          capture_output=True, text=True, timeout=120)
    assert bare.returncode != 0 and "asan" in bare.stderr.lower(), bare.stderr[-2000:]


def test_decoder_tests_pass_under_asan_and_ubsan(sanitized_tree: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                           *DECODER_TESTS],
                          cwd=sanitized_tree, env=_sanitizer_env(sanitized_tree),
                          capture_output=True, text=True, timeout=1200)
    output = proc.stdout[-4000:] + "\n" + _first_report(proc.stderr)
    assert proc.returncode == 0, output
    found = [r for r in SANITIZER_REPORTS if r in proc.stdout or r in proc.stderr]
    assert not found, output
    assert " passed" in proc.stdout, output
