"""What a command's Spark session logs, and where: the JVM's log4j2 configuration at one
level, py4j's own records dropped while the session lives, and the JVM's start-up noise
filtered out of the stderr its processes inherit."""
from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


#: the log4j2 configuration of pyconsumer's sessions; its level is a system property
LOG4J2_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


def log4j2_java_options(level: str) -> str:
    """Driver JVM flags that make Spark log on stderr at ``level`` only (``error``,
    ``fatal``, ``warn``, ``info``...), without its start-up banner lines."""
    from pathlib import Path

    return (f"-Dlog4j2.configurationFile={Path(LOG4J2_FILE).as_uri()} "
            f"-Dpyconsumer.log.level={level}")


class QuietPy4J(logging.Filter):
    """While the CLI's session lives: py4j's own log records (tracebacks of a call cut short
    by Ctrl-C, "Error while sending or receiving") are dropped; the CLI reports the failure
    itself. py4j logs some on the root logger (``logging.exception``), some on ``py4j.*``."""

    installed: list[QuietPy4J] = []

    def filter(self, record: logging.LogRecord) -> bool:
        path = record.pathname.replace(os.sep, "/")
        return "/py4j/" not in path

    def install(self) -> None:
        logging.getLogger().addFilter(self)
        logging.getLogger("py4j").addFilter(self)
        for name in ("py4j.java_gateway", "py4j.clientserver"):
            logging.getLogger(name).addFilter(self)
        QuietPy4J.installed.append(self)

    @classmethod
    def uninstall_all(cls) -> None:
        while cls.installed:
            f = cls.installed.pop()
            for name in ("", "py4j", "py4j.java_gateway", "py4j.clientserver"):
                logging.getLogger(name).removeFilter(f)


#: what the JVM prints at every start that says nothing to a user: Spark 4 adds
#: --add-modules=jdk.incubator.vector, and the JVM announces it on stderr (no flag silences it)
JVM_NOISE = re.compile(r"WARNING: Using incubator modules: ")


@contextmanager
def jvm_stderr_without(noise: re.Pattern[str]) -> Iterator[None]:
    """Processes started inside get, as stderr, a pipe that a thread copies to this process's
    stderr minus the lines matching ``noise``; this process's own stderr is restored at once.
    The copy runs until the last process holding the pipe (the JVM, its Python workers)
    exits."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):          # no real stderr (embedded): nothing to filter
        yield
        return
    read_end, write_end = os.pipe()
    target = os.dup(saved)                 # the thread's own copy of the real stderr
    os.dup2(write_end, 2)
    os.close(write_end)

    def copy() -> None:
        with os.fdopen(read_end, "rb") as lines, os.fdopen(target, "wb", 0) as out:
            for line in lines:
                if not noise.match(line.decode("utf-8", "replace")):
                    out.write(line)

    thread = threading.Thread(target=copy, name="pyconsumer-jvm-stderr", daemon=True)
    try:
        yield
    finally:
        os.dup2(saved, 2)                  # the pipe's write end now lives in the children only
        os.close(saved)
        thread.start()
