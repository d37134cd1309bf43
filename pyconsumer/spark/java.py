"""The Java that Spark will start, checked before it is started.

PySpark launches the JVM through Spark's shell scripts, which take ``$JAVA_HOME/bin/java``
when ``JAVA_HOME`` is set and ``java`` on ``PATH`` otherwise; when that fails the user sees
the scripts' own errors (``spark-class: line 71 ...``, ``JAVA_GATEWAY_EXITED``). The same
choice is made here first, and what is wrong is said in one sentence.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

__all__ = ["JavaError", "MIN_JAVA", "check_java", "java_major"]

#: Spark 4 runs on Java 17 and later
MIN_JAVA = 17

_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')
_checked: dict[tuple[str | None, str | None], str] = {}


class JavaError(RuntimeError):
    """No usable Java for Spark: the message names what is wrong (``needs Java 17+: ...``)."""


def java_major(version_output: str) -> int | None:
    """The major version in ``java -version``'s output: ``"17.0.15"`` -> 17, ``"1.8.0_392"``
    -> 8; None when it has no version line."""
    found = _VERSION.search(version_output)
    if found is None:
        return None
    major = int(found.group(1))
    if major == 1 and found.group(2) is not None:     # the 1.x scheme of Java 8 and older
        major = int(found.group(2))
    return major


def _java_binary() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
        if not os.path.isfile(java):
            raise JavaError(f"needs Java {MIN_JAVA}+: JAVA_HOME={java_home} has no bin/java "
                            "(point JAVA_HOME at a JDK, or unset it to use java on PATH)")
        if not os.access(java, os.X_OK):
            raise JavaError(f"needs Java {MIN_JAVA}+: {java} (from JAVA_HOME) is not "
                            "executable")
        return java
    found = shutil.which("java")
    if found is None:
        raise JavaError(f"needs Java {MIN_JAVA}+: no java on PATH and JAVA_HOME is not set "
                        f"(install a JDK {MIN_JAVA} or later)")
    return found


def check_java(minimum: int = MIN_JAVA) -> str:
    """The java binary Spark will run, after checking it starts and is ``minimum`` or later
    (raises :class:`JavaError`). Checked once per ``JAVA_HOME`` and ``PATH``."""
    key = (os.environ.get("JAVA_HOME"), os.environ.get("PATH"))
    if key in _checked:
        return _checked[key]
    java = _java_binary()
    source = "from JAVA_HOME" if os.environ.get("JAVA_HOME") else "on PATH"
    try:
        run = subprocess.run([java, "-version"], stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaError(f"needs Java {minimum}+: {java} ({source}) does not run: "
                        f"{exc}") from None
    text = (run.stderr + run.stdout).decode("utf-8", "replace")
    major = java_major(text)
    if run.returncode != 0 or major is None:
        first = text.strip().splitlines()[0] if text.strip() else f"exit {run.returncode}"
        raise JavaError(f"needs Java {minimum}+: {java} -version ({source}) failed: {first}")
    if major < minimum:
        raise JavaError(f"needs Java {minimum}+: {java} ({source}) is Java {major}")
    _checked[key] = java
    return java
