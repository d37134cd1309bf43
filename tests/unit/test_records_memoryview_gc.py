"""A cursor over a memoryview slice of a response frame, caught in a reference cycle, must
not leave the memoryview exported when the garbage collector clears it: CPython 3.11 drops
the managed buffer of a memoryview it clears even with exports, and freeing it afterwards
crashed the interpreter (seen with pytest.raises keeping a traceback cycle alive)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent('''
    import gc, sys
    sys.path.insert(0, sys.argv[1])
    from tests import recordsets as rs
    from pyconsumer.records import CompletedFetch
    data = rs.aio_v2(rs.sample_records(10), "none", 0)

    def make():
        frame = bytearray(b"xxxx" + data)
        mv = memoryview(frame)[4:]
        cf = CompletedFetch(mv, "t", 0, 0)
        cf.take_records(3)
        a = {"mv": mv}
        b = {"cf": cf, "a": a}
        a["b"] = b                       # a garbage cycle holding the view and the cursor

    for _ in range(300):
        make()
    gc.collect()
    print("survived")
''')


def test_cycle_with_a_cursor_over_a_memoryview_slice() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, ROOT], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "survived"
    assert "Exception ignored" not in proc.stderr, proc.stderr[-2000:]
