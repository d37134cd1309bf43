"""How a user gets an optional part of pyconsumer (an extra), said the same way everywhere.

pyconsumer is installed from a clone of its repository (it is not on a package index), so the
hint is the editable install of the extra there."""
from __future__ import annotations

__all__ = ["install_hint"]


def install_hint(extra: str) -> str:
    """``pip install -e '.[spark]' (in pyconsumer's clone)`` for ``extra="spark"``."""
    return f"pip install -e '.[{extra}]' (in pyconsumer's clone)"
