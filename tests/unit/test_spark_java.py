"""The Java Spark would start is checked before Spark is: ``pyconsumer ingest`` / ``demo`` and
``local_session`` say in one sentence what is wrong (no java, a JAVA_HOME without bin/java, a
java too old or broken), instead of Spark's shell-script noise (``spark-class: line 71``,
``JAVA_GATEWAY_EXITED``)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pyconsumer.spark.java import JavaError, check_java, java_major

SPARK_NOISE = ("spark-class", "bad array subscript", "JAVA_GATEWAY_EXITED", "Traceback")


def fake_java(folder: Path, *, says: str, exit_code: int = 0) -> Path:
    """A ``bin/java`` under ``folder`` that prints ``says`` on stderr (as java -version does)."""
    java = folder / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho '{says}' >&2\nexit {exit_code}\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return java


def env_without_java(**extra: str) -> dict[str, str]:
    """This environment with no JAVA_HOME and a PATH that has python but no java."""
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = os.path.dirname(sys.executable)
    env.update(extra)
    return env


def test_java_major_reads_both_version_schemes() -> None:
    assert java_major('openjdk version "17.0.15" 2025-04-15') == 17
    assert java_major('java version "21" 2023-09-19 LTS') == 21
    assert java_major('java version "1.8.0_392"') == 8
    assert java_major('openjdk version "11.0.2" 2019-01-15') == 11
    assert java_major("Error: could not find libjava.so") is None


def test_check_java_names_what_is_wrong(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    with pytest.raises(JavaError) as info:
        check_java()
    assert str(info.value).startswith(
        f"needs Java 17+: JAVA_HOME={tmp_path / 'nowhere'} has no bin/java")

    old = fake_java(tmp_path / "jdk11", says='openjdk version "11.0.2" 2019-01-15')
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk11"))
    with pytest.raises(JavaError) as info:
        check_java()
    assert str(info.value) == f"needs Java 17+: {old} (from JAVA_HOME) is Java 11"

    broken = fake_java(tmp_path / "broken", says="Error: dl failure on line 542", exit_code=1)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "broken"))
    with pytest.raises(JavaError) as info:
        check_java()
    assert str(info.value) == (f"needs Java 17+: {broken} -version (from JAVA_HOME) failed: "
                               "Error: dl failure on line 542")

    good = fake_java(tmp_path / "jdk21", says='openjdk version "21.0.1" 2023-10-17')
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk21"))
    assert check_java() == str(good)

    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(JavaError) as info:
        check_java()
    assert str(info.value) == ("needs Java 17+: no java on PATH and JAVA_HOME is not set "
                               "(install a JDK 17 or later)")
    monkeypatch.setenv("PATH", str(tmp_path / "jdk11" / "bin"))
    with pytest.raises(JavaError) as info:
        check_java()
    assert str(info.value) == f"needs Java 17+: {old} (on PATH) is Java 11"


@pytest.mark.parametrize("command", ["ingest", "demo"])
@pytest.mark.parametrize("case", ["bad JAVA_HOME", "no java", "java 11"])
def test_commands_refuse_without_a_usable_java_in_one_line(command: str, case: str,
                                                           tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    if case == "bad JAVA_HOME":
        env = env_without_java(JAVA_HOME=str(tmp_path / "x"))
        expected = (f"pyconsumer {command}: needs Java 17+: JAVA_HOME={tmp_path / 'x'} has no "
                    "bin/java (point JAVA_HOME at a JDK, or unset it to use java on PATH)")
    elif case == "no java":
        env = env_without_java()
        expected = (f"pyconsumer {command}: needs Java 17+: no java on PATH and JAVA_HOME is not "
                    "set (install a JDK 17 or later)")
    else:
        java = fake_java(tmp_path / "jdk", says='openjdk version "11.0.2" 2019-01-15')
        env = env_without_java(PATH=f"{java.parent}{os.pathsep}{os.path.dirname(sys.executable)}")
        expected = f"pyconsumer {command}: needs Java 17+: {java} (on PATH) is Java 11"
    # a closed loopback port: the check comes before any broker is asked
    args = (["ingest", "-b", "127.0.0.1:9", "-t", "t", "--output", str(tmp_path / "out")]
            if command == "ingest" else ["demo", "--bootstrap", "127.0.0.1:9"])
    done = subprocess.run([sys.executable, "-m", "pyconsumer", *args], env=env,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert (done.returncode, done.stderr.strip(), done.stdout) == (1, expected, "")
    assert not any(noise in done.stderr for noise in SPARK_NOISE)
    assert not (tmp_path / "out").exists()


def test_local_session_checks_java_before_starting_spark(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    code = textwrap.dedent("""
        from pyconsumer.spark.java import JavaError
        from pyconsumer.spark.session import local_session
        try:
            local_session()
        except JavaError as exc:
            print("JavaError:", exc)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env_without_java(JAVA_HOME=str(tmp_path / "x")), timeout=60)
    assert done.stdout.strip() == (f"JavaError: needs Java 17+: JAVA_HOME={tmp_path / 'x'} has "
                                   "no bin/java (point JAVA_HOME at a JDK, or unset it to use "
                                   "java on PATH)"), done.stderr
    assert not any(noise in done.stderr for noise in SPARK_NOISE), done.stderr
