"""``local_session()`` (the README's Python examples) is as quiet as the commands: none of the
JVM's start-up lines (incubator modules, the log4j profile, ``Setting default log level``,
NativeCodeLoader) nor Spark's warnings about streaming plans (``ResolveWriteToStream``) reach
stderr. A fresh process: the JVM's start is what is checked."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from pyconsumer.testing import TansuBroker, produce, sample_records


def test_local_session_prints_nothing_on_stderr(tansu: TansuBroker,
                                                make_tansu_topic: Callable[..., str],
                                                tmp_path: Path) -> None:
    topic = make_tansu_topic(2)
    produce(tansu.bootstrap, topic, sample_records(50, partitions=2, seed=3))
    code = textwrap.dedent(f"""
        from pyconsumer.spark.session import local_session
        spark = local_session("local[1]")
        df = (spark.read.format("pyconsumer")
              .option("kafka.bootstrap.servers", {tansu.bootstrap!r})
              .option("subscribe", {topic!r}).load())
        print(df.count())
        q = (spark.readStream.format("pyconsumer")
             .option("kafka.bootstrap.servers", {tansu.bootstrap!r})
             .option("subscribe", {topic!r}).option("startingOffsets", "earliest").load()
             .writeStream.format("parquet").option("path", {str(tmp_path / "out")!r})
             .option("checkpointLocation", {str(tmp_path / "ck")!r})
             .trigger(availableNow=True).start())
        q.awaitTermination()
        print(spark.read.parquet({str(tmp_path / "out")!r}).count())
        spark.stop()
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert (done.returncode, done.stdout.split(), done.stderr) == (0, ["50", "50"], "")
