"""Jars from Maven Central, fetched once with Maven into a per-user cache.

The real Apache Kafka broker and Spark's own Kafka connector are published only as jars. Maven
resolves an artifact with its runtime dependencies; :func:`fetch_jars` copies them into
``<cache>/<name>/libs`` once (a file lock keeps parallel test processes from fetching twice),
and later calls return that folder without touching the network.

The cache is ``$PYCONSUMER_CACHE`` if set, else ``$XDG_CACHE_HOME/pyconsumer`` or
``~/.cache/pyconsumer``.
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ._errors import BrokerStartError

__all__ = ["MissingToolError", "cache_dir", "fetch_jars", "require_tool"]

#: maven-dependency-plugin: 3.8.1 runs on the Maven 3.8 Debian ships
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

#: tool -> how to get it, in one sentence's tail
_INSTALL = {
    "java": "install Java 17 or newer (apt-get install openjdk-17-jre-headless)",
    "mvn": "install Maven (apt-get install maven) so the jars can be fetched from Maven Central",
}


#: the line of Maven's output that says why an artifact was not fetched
_MAVEN_REASON = re.compile(r"(Could not find artifact|Could not transfer artifact|Could not resolve "
                           r"dependencies)[^\n\x1b]*")


class MissingToolError(BrokerStartError):
    """A program a test helper runs (java, mvn) is not on PATH."""


def require_tool(user: str, tool: str) -> str:
    """The path of ``tool`` on PATH, or MissingToolError naming ``user`` and how to install it."""
    found = shutil.which(tool)
    if found is None:
        raise MissingToolError(f"{user} needs '{tool}' on PATH: {_INSTALL.get(tool, 'install it')}")
    return found


def cache_dir() -> Path:
    """The per-user cache of fetched jars (not created here)."""
    explicit = os.environ.get("PYCONSUMER_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pyconsumer"


def _pom(name: str, dependencies: Sequence[str]) -> str:
    deps = []
    for coordinate in dependencies:
        parts = coordinate.split(":")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"a Maven coordinate is group:artifact:version, got {coordinate!r}")
        group, artifact, version = parts
        deps.append(f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
                    f"<version>{version}</version></dependency>")
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>pyconsumer.cache</groupId><artifactId>{name}</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{''.join(deps)}</dependencies></project>\n"
    )


def fetch_jars(name: str, dependencies: Sequence[str], *, user: str = "fetch_jars",
               exclude_artifacts: Sequence[str] = (), include_artifacts: Sequence[str] = (),
               timeout: float = 900.0) -> Path:
    """The folder holding ``dependencies`` (``group:artifact:version``) and their runtime
    dependencies as jars, fetched with Maven the first time under ``<cache>/<name>/libs``.

    ``exclude_artifacts`` are artifact ids left out (what the caller's runtime already has);
    ``include_artifacts``, when given, are the only artifact ids kept.
    Raises MissingToolError without Maven, BrokerStartError naming the artifacts and showing
    Maven's output when the fetch fails.
    """
    root = cache_dir() / name
    libs = root / "libs"
    done = root / "complete"
    if done.is_file() and libs.is_dir():
        return libs
    mvn = require_tool(user, "mvn")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)        # another process may be fetching the same set
        if done.is_file() and libs.is_dir():
            return libs
        with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=root) as work:
            (Path(work) / "pom.xml").write_text(_pom(name, dependencies))
            staging = Path(work) / "libs"
            cmd = [mvn, "-B", "-q", f"{_DEPENDENCY_PLUGIN}:copy-dependencies", "-DincludeScope=runtime",
                   f"-DoutputDirectory={staging}"]
            if exclude_artifacts:
                cmd.append(f"-DexcludeArtifactIds={','.join(exclude_artifacts)}")
            if include_artifacts:
                cmd.append(f"-DincludeArtifactIds={','.join(include_artifacts)}")
            try:
                run = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                raise BrokerStartError(
                    f"Maven did not fetch {', '.join(dependencies)} within {timeout:.0f} s") from None
            if run.returncode != 0 or not staging.is_dir() or not any(staging.glob("*.jar")):
                output = (run.stdout + run.stderr).strip()[-3000:]
                # the first line says why (a one-line report keeps only it): Maven's own reason
                why = next((m.group(0) for m in [_MAVEN_REASON.search(output)] if m), None)
                raise BrokerStartError(
                    f"Maven could not fetch {', '.join(dependencies)} from Maven Central "
                    f"(exit {run.returncode}{'' if why is None else ': ' + why}):\n{output}")
            if libs.exists():
                shutil.rmtree(libs)
            staging.rename(libs)
        done.write_text("\n".join(dependencies) + "\n")
    return libs
