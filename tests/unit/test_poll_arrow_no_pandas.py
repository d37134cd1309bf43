"""A process's first poll_arrow() builds its batches from the Arrow schema and the decoder, never
from Python values: pyarrow's conversion of Python objects imports pandas the first time (half a
second where it is installed). Checked in a fresh interpreter, with an import hook that records
any attempt to import pandas, installed or not."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_first_poll_arrow_never_tries_to_import_pandas() -> None:
    script = textwrap.dedent("""
        import sys

        tried = []

        class Probe:
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] == "pandas":
                    tried.append(name)
                return None

        sys.meta_path.insert(0, Probe())
        from pyconsumer import KafkaConsumer, TopicPartition
        from pyconsumer.testing import FakeCluster

        with FakeCluster(1, topics={"t": 2}) as cluster:
            for headers in (False, True):
                tp = TopicPartition("t", int(headers))
                with KafkaConsumer(bootstrap_servers=cluster.bootstrap,
                                   auto_offset_reset="earliest") as consumer:
                    consumer.assign([tp])
                    empty = consumer.poll_arrow(timeout_ms=50, include_headers=headers)
                    assert empty.num_rows == 0 and "offset" in empty.schema.names
                    cluster.produce(tp, [(b"k", b"v")])
                    got = 0
                    while not got:
                        got = consumer.poll_arrow(timeout_ms=2000, include_headers=headers).num_rows
            # typed values, a bad row among them, through poll_arrow() and poll()
            schema = ('{"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"},'
                      ' {"name": "b", "type": "string"}]}')
            tp = TopicPartition("t", 0)
            cluster.produce(tp, [(b"k", b"\\x02\\x02x"), (None, b"\\x02")])
            for how in ("poll_arrow", "poll"):
                with KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                                   value_format="avro", value_avro_framing="none",
                                   value_schema=schema) as consumer:
                    consumer.assign([tp])
                    rows = 0
                    while rows < 3:
                        if how == "poll_arrow":
                            rows += consumer.poll_arrow(timeout_ms=2000, include_headers=True).num_rows
                        else:
                            rows += sum(map(len, consumer.poll(timeout_ms=2000).values()))
                    assert rows == 3, rows
        assert tried == [] and "pandas" not in sys.modules, tried
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
