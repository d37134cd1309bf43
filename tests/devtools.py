"""The project's own checks (lint, packaging) need the ``dev`` extra: without it they skip,
saying what to install; under CI (``CI`` set) they fail, since CI must run them."""
from __future__ import annotations

import os

import pytest


def missing_dev_tool(what: str, package: str) -> None:
    """Skip (or, in CI, fail) because ``package`` of the dev extra is not installed."""
    message = f"{what} needs the '{package}' package (pip install -e '.[dev]')"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
