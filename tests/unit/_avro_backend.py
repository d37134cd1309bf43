"""The compiled Avro decoder the tests of pyconsumer.values.avro run against.

pyconsumer._records once it includes pyext/avro.pyx; until then a scratch build named by
``PYCONSUMER_AVRO_DEV``: a directory holding an ``_avro_dev`` module built from
pyext/errors.pyx, buffers.pyx and avro.pyx, or the path of a built extension file. Without
either the tests skip.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from types import ModuleType

import pytest

from pyconsumer.values.avro_decode import set_error_classes


def avro_backend() -> ModuleType:
    from pyconsumer import _records
    if hasattr(_records, "avro_decode"):
        set_error_classes(_records)
        return _records
    dev = os.environ.get("PYCONSUMER_AVRO_DEV")
    if not dev:
        pytest.skip("pyconsumer._records has no Avro decoder (rebuild it, or set "
                    "PYCONSUMER_AVRO_DEV to a scratch build)")
    if os.path.isfile(dev):
        # a built extension file (e.g. a whole scratch build of pyext/records.pyx)
        name = "avro_scratch." + os.path.basename(dev).split(".")[0]
        spec = importlib.util.spec_from_file_location(name, dev)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        set_error_classes(mod)
        return mod
    if dev not in sys.path:
        sys.path.insert(0, dev)
    mod = importlib.import_module("_avro_dev")
    set_error_classes(mod)
    return mod
