#!/usr/bin/env bash
# Developer helper: build the extensions in place and run one test tier (unit, integration, spark, fuzz, packaging) or all.
set -euo pipefail
cd "$(dirname "$0")/.."
python setup.py build_ext --inplace -q
tier="${1:-}"
if [ -n "$tier" ]; then shift; exec python -m pytest "tests/$tier" "$@"; fi
exec python -m pytest "$@"
