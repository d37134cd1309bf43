"""Only the Cython extension modules; metadata lives in pyproject.toml."""
import glob
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("PYEXT_DEBUG") == "1"

extra_compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]
define_macros = [("PYEXT_DEBUG", "1" if DEBUG else "0")]

extensions = [
    Extension(
        "pyext." + os.path.splitext(os.path.basename(path))[0],
        [path],
        include_dirs=["pyext"],
        extra_compile_args=extra_compile_args,
        define_macros=define_macros,
    )
    for path in sorted(glob.glob(os.path.join("pyext", "*.pyx")))
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={
            "language_level": "3",
            "boundscheck": DEBUG,
            "wraparound": False,
            "cdivision": True,
            "embedsignature": True,
        },
        annotate=DEBUG,
    )
)
