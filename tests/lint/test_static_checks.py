"""Static checks in the one test run: ruff (configured in pyproject.toml) clean over the tree,
mypy --strict clean over the package, import-linter's layer contracts (pyproject.toml) kept,
and stubtest: the extension's .pyi stub matches what the compiled module really exports (so
the stub cannot go stale)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path


from tests.devtools import missing_dev_tool

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env=env)


def need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        missing_dev_tool("the lint tier", module)


def test_ruff_clean() -> None:
    need("ruff")
    out = run("ruff", "check", ".")
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_strict_clean() -> None:
    need("mypy")
    out = run("mypy", "--strict", "pyconsumer")
    assert out.returncode == 0, out.stdout + out.stderr


def test_extension_stub_matches_the_module() -> None:
    need("mypy")
    from pyconsumer.records import decode_records

    module = decode_records.__module__
    out = run("mypy.stubtest", module, "--mypy-config-file", "pyproject.toml",
              "--allowlist", "tests/lint/stubtest_allowlist.txt")
    assert out.returncode == 0, out.stdout + out.stderr


def test_import_layers_kept() -> None:
    """Every import runs downward (the contracts in pyproject.toml's [tool.importlinter])."""
    need("importlinter")
    # the lint-imports command's entry point (the module has no __main__)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import "
                          "lint_imports_command; sys.exit(lint_imports_command())", "--no-cache"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
