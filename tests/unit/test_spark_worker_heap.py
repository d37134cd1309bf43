"""settle_worker_heap: the Spark worker's import-time heap frozen once, so the collection PySpark
runs after each task walks only what tasks made (run in a fresh interpreter: it changes the GC)."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_first_call_freezes_the_heap_once_and_later_garbage_is_still_collected() -> None:
    script = textwrap.dedent("""
        import gc, weakref
        from pyconsumer.spark.reader import settle_worker_heap
        assert gc.get_freeze_count() == 0
        settle_worker_heap()
        frozen = gc.get_freeze_count()
        assert frozen > 1000, frozen                    # the imports' objects
        settle_worker_heap()                            # later tasks: nothing more frozen
        assert gc.get_freeze_count() == frozen

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a                         # a cycle made by a task
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None                           # still collected
        print("ok", frozen)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok ")
