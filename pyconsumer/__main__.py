"""``python -m pyconsumer``: the same command as ``pyconsumer``."""
from __future__ import annotations

import sys

from pyconsumer.cli import main

if __name__ == "__main__":
    sys.exit(main())
