"""The compiled extension only; metadata lives in pyproject.toml.

One extension module, ``pyconsumer._records``, built from ``pyext/records.pyx`` (which
includes the job files next to it). There is no pure-Python fallback: without Cython or a C
compiler the build stops with an error instead of producing a wheel without the decoder.

Build switches (environment variables):

* ``PYEXT_DEBUG=1``: ``-O0 -g``, Cython bounds checks and an annotated HTML listing.
* ``PYEXT_SANITIZE=address,undefined`` (or either one): compile and link with
  ``-fsanitize=... -fno-omit-frame-pointer -O1 -g``. The interpreter itself is not
  instrumented, so ASan's runtime must be loaded first and leak reports (CPython's own
  allocations at exit) turned off, e.g. for the fuzz tier::

      PYEXT_SANITIZE=address,undefined python setup.py build_ext --inplace --force
      LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0 \\
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 python -m pytest tests/fuzz -p no:cacheprovider

  The RSS checks of tests/unit/test_records_leaks.py also need ``quarantine_size_mb=0`` in
  ASAN_OPTIONS (ASan keeps freed memory aside). Rebuild without the variable (``--force``)
  afterwards: a sanitized module does not load without the preloaded runtime.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

try:
    from Cython.Build import cythonize
except ImportError:
    sys.exit("error: building pyconsumer needs Cython >= 3 (pip install 'Cython>=3,<4'); "
             "pyconsumer has no pure-Python decoder to fall back to")

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("PYEXT_DEBUG") == "1"
SANITIZE = [s.strip() for s in os.environ.get("PYEXT_SANITIZE", "").split(",") if s.strip()]
_SANITIZERS = {"address", "undefined"}
if set(SANITIZE) - _SANITIZERS:
    sys.exit(f"error: PYEXT_SANITIZE takes {', '.join(sorted(_SANITIZERS))} (comma-separated), "
             f"got {os.environ['PYEXT_SANITIZE']!r}")

if SANITIZE:
    sanitize = ["-fsanitize=" + ",".join(SANITIZE), "-fno-omit-frame-pointer"]
    extra_compile_args = sanitize + ["-O1", "-g"]
    extra_link_args = sanitize
elif DEBUG:
    extra_compile_args, extra_link_args = ["-O0", "-g"], []
else:
    extra_compile_args, extra_link_args = ["-O3"], []


def _is_gcc(cc: str) -> bool:
    """Whether the C compiler is gcc (``cc`` often is; clang knows fewer -W options)."""
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "clang" not in out and ("gcc" in out or "GCC" in out or "Free Software" in out)


class BuildExt(build_ext):
    """build_ext that names a missing C compiler instead of failing deep in distutils."""

    def build_extensions(self) -> None:
        cc = getattr(self.compiler, "compiler_so", None)      # unix compilers only
        if cc and shutil.which(cc[0]) is None:
            sys.exit(f"error: building pyconsumer needs a C compiler; {cc[0]!r} was not "
                     f"found (install gcc or clang, or set CC)")
        if cc and _is_gcc(cc[0]):
            # every reader helper sets its out-parameter or raises; gcc cannot follow the
            # error path of Cython's C and warned "may be used uninitialized" ~30 times
            for ext in self.extensions:
                ext.extra_compile_args = [*ext.extra_compile_args, "-Wno-maybe-uninitialized"]
        super().build_extensions()


extensions = [
    Extension(
        "pyconsumer._records",
        ["pyext/records.pyx"],
        include_dirs=["pyext"],
        # the job files records.pyx includes and the C header: a change rebuilds, and sdists
        # carry them
        depends=sorted(glob.glob("pyext/*.pxd") + glob.glob("pyext/*.pyx") + glob.glob("pyext/*.h")
                       + ["pyext/pyconsumer/_records.pxd"]),
        extra_compile_args=extra_compile_args,
        extra_link_args=extra_link_args,
        define_macros=[("PYEXT_DEBUG", "1" if DEBUG else "0")],
    )
]

setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=cythonize(
        extensions,
        # pyext/ holds the job files records.pyx includes and the module's own contract,
        # pyext/pyconsumer/_records.pxd (Cython looks it up by the module's name)
        include_path=["pyext"],
        compiler_directives={
            "language_level": "3",
            "boundscheck": DEBUG,
            "wraparound": False,
            "cdivision": True,
            "embedsignature": True,
        },
        annotate=DEBUG,
    ),
)
