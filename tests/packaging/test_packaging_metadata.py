"""Packaging facts checked without building anything: one version everywhere (pyproject,
CHANGELOG, the ApiVersions request), the license metadata, the cibuildwheel build matrix, and
the record batches of ci/smoke_test.py checked against independent writers and readers.
The builds themselves are in test_packaging_dists.py."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.devtools import missing_dev_tool

import pyconsumer
from pyconsumer import KafkaConsumer
from pyconsumer.net.client import _software_version
from pyconsumer.protocol import SUPPORTED_VERSIONS, ApiKey, encode_response

from tests import recordsets as rs
from tests.peers import PeerConnection, ScriptedPeer, advertised_api_keys

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# KIP-511: what a broker accepts as client_software_name/version (ApiVersionsRequest.isValid)
KIP_511 = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def load_smoke() -> ModuleType:
    spec = importlib.util.spec_from_file_location("smoke_test", ROOT / "ci" / "smoke_test.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_version_is_single_sourced_from_the_package() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "pyconsumer._version.__version__"}
    # setuptools reads the attribute without importing the package: it must be a literal
    literal = re.findall(r'^__version__ = "([^"]+)"$',
                         (ROOT / "pyconsumer" / "_version.py").read_text(), re.M)
    assert literal == [pyconsumer.__version__]


def test_changelog_names_the_current_version_first() -> None:
    headings = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings and headings[0] == pyconsumer.__version__


def test_software_version_is_the_package_version() -> None:
    assert _software_version() == pyconsumer.__version__
    assert KIP_511.fullmatch(_software_version())


@pytest.mark.parametrize("version, sent", [
    ("0.2.0.dev1+g1a2b.dirty", "0.2.0.dev1-g1a2b.dirty"),   # PEP 440 local version: no '+'
    ("1.0+", "1.0"),                                           # alphanumeric at both ends
    ("+", "0"),
])
def test_software_version_is_made_valid_for_kip_511(monkeypatch: pytest.MonkeyPatch,
                                                    version: str, sent: str) -> None:
    monkeypatch.setattr(pyconsumer._version, "__version__", version)
    assert _software_version() == sent
    assert KIP_511.fullmatch(sent)


def test_api_versions_request_carries_the_package_version() -> None:
    seen: list[tuple[int, dict[str, Any]]] = []

    def broker(conn: PeerConnection) -> None:
        request = conn.read_request()
        assert request is not None and request[0] == ApiKey.API_VERSIONS
        _, version, correlation_id, body = request
        seen.append((version, body))
        conn.send(encode_response(ApiKey.API_VERSIONS, version, correlation_id, {
            "error_code": 0, "api_keys": advertised_api_keys()}))
        conn.serve({ApiKey.METADATA: lambda v, b: conn.one_partition_metadata()})

    with ScriptedPeer([broker]) as peer:
        with KafkaConsumer(bootstrap_servers=peer.bootstrap) as consumer:
            assert list(consumer.topics()) == ["t"]
        assert peer.errors == []
    version, body = seen[0]
    assert version == SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1] >= 3
    assert body["client_software_name"] == "pyconsumer"
    assert body["client_software_version"] == pyconsumer.__version__


def test_license_is_apache_2_in_spdx_form() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # PEP 639
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text
    # license-files needs setuptools 77
    assert "setuptools>=77" in PYPROJECT["build-system"]["requires"]


@pytest.mark.parametrize("platform, identifiers", [
    ("linux", [f"cp3{v}-manylinux_{arch}" for arch in ("x86_64", "aarch64")
               for v in range(10, 15)]),
    ("windows", [f"cp3{v}-win_amd64" for v in range(10, 15)]),
])
def test_cibuildwheel_builds_cpython_3_10_to_3_14(platform: str, identifiers: list[str]) -> None:
    if importlib.util.find_spec("cibuildwheel") is None:
        missing_dev_tool("the build matrix check", "cibuildwheel")
    out = subprocess.run(
        [sys.executable, "-m", "cibuildwheel", "--print-build-identifiers",
         "--platform", platform, str(ROOT)],
        capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split()) == sorted(identifiers)


def test_cibuildwheel_test_command_runs_the_smoke_script_of_this_tree() -> None:
    python, script = PYPROJECT["tool"]["cibuildwheel"]["test-command"].split()
    assert python == "python"
    assert Path(script.replace("{project}", str(ROOT))) == ROOT / "ci" / "smoke_test.py"
    assert (ROOT / "ci" / "smoke_test.py").is_file()


def test_smoke_batches_are_what_independent_writers_and_readers_make() -> None:
    from kafka.record.memory_records import MemoryRecords

    smoke = load_smoke()
    # byte for byte what aiokafka writes for the same records (leader epoch -1)
    assert smoke.batch(100, smoke.CODEC_NONE) == rs.aio_v2(
        smoke.RECORDS, "none", base_offset=100, leader_epoch=-1)
    # zstd frames differ between writers: kafka-python reads the smoke batch back instead
    read = []
    records = MemoryRecords(smoke.batch(103, smoke.CODEC_ZSTD))
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc()
        read += [[r.offset, r.timestamp, r.key, r.value, [list(h) for h in r.headers]]
                 for r in batch]
    assert read == [[103 + d, ts, k, v, [list(h) for h in hs]]
                    for d, ts, k, v, hs in smoke.RECORDS]


def test_smoke_script_passes_on_this_tree(tmp_path: Path) -> None:
    # from outside the tree, against the extension built in place (ci/test.sh builds it)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, str(ROOT / "ci" / "smoke_test.py")],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["version"] == pyconsumer.__version__
    assert [r[0] for r in result["records"]] == list(range(100, 106))
    assert result["records"][1] == [101, 1_700_000_000_001, None, "", [["h", "1"], ["n", None]]]
