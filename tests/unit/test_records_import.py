"""The compiled decoder, pyconsumer._records, imports nothing from pyconsumer (issue 10, item 3):
pyconsumer.records injects the error classes, so importing the extension first works, importing
pyconsumer first works, and loading the extension alone pulls in no pyconsumer module. Before,
``python -c "import pyext.records"`` failed on a circular import. Each check runs in a fresh
interpreter (a few hundred ms each).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pyconsumer

from tests import recordsets as rs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(pyconsumer.__file__)))
EXTENSION = importlib.util.find_spec("pyconsumer._records").origin  # type: ignore[union-attr]


def corrupt_set() -> bytes:
    """10 good records (offsets 0-9), then a batch at offset 10 with a flipped CRC-covered bit."""
    bad = bytearray(rs.aio_v2(rs.sample_records(10, seed=10), "none", 10))
    bad[-3] ^= 0x40
    return rs.aio_v2(rs.sample_records(10), "none", 0) + bytes(bad)


def run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, check=False,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


RAISE = f"""
    try:
        ext.decode_records(bytes.fromhex("{corrupt_set().hex()}"), "t", 3)
    except Exception as e:
        err = e
    import pyconsumer.errors as errors
    print(type(err) is errors.CorruptRecordError, err.topic, err.partition, err.offset)
"""


def test_extension_first() -> None:
    assert run("import pyconsumer._records as ext\n" + textwrap.dedent(RAISE)) == "True t 3 10"


def test_package_first() -> None:
    code = """
        import pyconsumer.errors
        import pyconsumer
        from pyconsumer.records import decode_records
        import pyconsumer._records as ext
        assert ext.decode_records is decode_records
    """
    assert run(textwrap.dedent(code) + textwrap.dedent(RAISE)) == "True t 3 10"


def test_extension_alone_imports_nothing_from_pyconsumer() -> None:
    # Loaded from its file without the package: no pyconsumer module may come along, and it
    # raises the classes it is given (before that, a RuntimeError that says what to import).
    code = f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("pyconsumer._records", {EXTENSION!r})
        ext = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ext)
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("pyconsumer", "pyext")))
        data = bytes.fromhex("{corrupt_set().hex()}")
        try:
            ext.decode_records(data, "t", 3)
        except RuntimeError as e:
            print(e)

        class Corrupt(Exception):
            def __init__(self, message, topic=None, partition=None, offset=None):
                super().__init__(message)
                self.where = (topic, partition, offset)

        class Codec(Corrupt):
            pass

        ext._set_error_classes(Corrupt, Codec, ValueError)
        try:
            ext.decode_records(data, "t", 3)
        except Corrupt as e:
            print(type(e).__name__, e.where, e)
    """
    lines = run(code).splitlines()
    assert lines[0] == "['pyconsumer._records']"
    assert lines[1] == "pyconsumer._records has no error classes: import pyconsumer.records"
    assert lines[2].startswith("Corrupt ('t', 3, 10) Record batch CRC32C mismatch: ")
    good = len(rs.aio_v2(rs.sample_records(10), "none", 0))       # the bad batch starts there
    assert lines[2].endswith(f" at byte {good} of the record set")
