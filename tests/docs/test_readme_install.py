"""The README's Install section stays true to pyproject.toml: every extra is in its table, and
the install hint the commands print is the one it shows."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pyconsumer._install import install_hint

ROOT = Path(__file__).resolve().parents[2]


def install_section() -> str:
    text = (ROOT / "README.md").read_text()
    found = re.search(r"^## Install\n(.*?)^## ", text, re.S | re.M)
    assert found is not None, "README.md has no Install section"
    return found.group(1)


def test_the_install_section_lists_every_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    listed = re.findall(r"^\| `(\w+)` \|", install_section(), re.M)
    assert sorted(listed) == sorted(extras)


def test_the_install_section_shows_the_hint_the_commands_print() -> None:
    section = " ".join(install_section().split())
    assert install_hint("spark") in section
    assert "pip install 'pyconsumer[" not in (ROOT / "README.md").read_text()
